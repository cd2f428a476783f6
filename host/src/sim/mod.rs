//! The CPU simulator, host side: PEs are threads of this process, kernels run on
//! `rshmem_device::sim` (whose documentation says what is modelled and how it differs from
//! a GPU).
//!
//! [`run`] creates the job (`npes` symmetric heaps), runs each PE's closure on its own
//! thread over a [`pe::SimPe`] (the job runner wraps it in the PE's `Shmem`), and reports the
//! first PE that failed. A
//! failing PE poisons the job, so PEs waiting for it in a collective (host or device side)
//! fail too instead of hanging, and `run` returns.
//!
//! Settings: `RSHMEM_NPES` (PEs, default 2, read by `rshmem_host::run`), `RSHMEM_SIM_HEAP`
//! (symmetric heap per PE, default 64M; `NVSHMEM_SYMMETRIC_SIZE` is used when it is unset),
//! `RSHMEM_SIM_MAX_THREADS` (simulated threads per launch, default 8192), `RSHMEM_SIM_P2P`
//! (`1`, the default: `shmem::ptr` maps every PE's memory, as on one NVLink node; `0`: only
//! the PE's own, as for PEs behind a network transport, to run kernels' paths for those).
//!
//! Host-side semantics: `alloc` is collective (sizes and heap state compared across PEs,
//! then a barrier after zeroing); `free` is local (see [`pe::SimPe`]); launches are
//! synchronous, so a kernel failure is returned by `Module::launch` itself. On-stream
//! operations are performed at once by the PE's thread (during a graph capture, launches and
//! operations on recording streams are recorded instead, see [`graph`], and run when the graph
//! is launched); team splits and host collectives
//! meet the team's members in the job's host-side rendezvous, and a split also compares
//! the members' arguments, so members that disagree all fail naming each other. Team
//! destruction is local (as NVSHMEM's).

mod config;
mod graph;
mod module;
mod pe;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rshmem_device::sim::{HeapError, World};

use crate::contract::{Error, PeMain, Result};
use config::SimConfig;
use pe::SimPe;

/// Runs `npes` PEs as threads of this process and returns the first PE's failure, if any.
pub(crate) fn run(npes: usize, pe_main: PeMain<'_>) -> Result<()> {
    let config = SimConfig::from_env()?;
    if npes == 0 {
        return Err(Error::BadEnv {
            var: "RSHMEM_NPES",
            value: "0".into(),
            expected: "a whole number of PEs >= 1".into(),
        });
    }
    let job = World::new(npes, config.heap_size).map_err(|e| reserve_error(&config, npes, e))?;
    let job = Arc::new(if config.peer_mappings {
        job
    } else {
        job.without_peer_mappings()
    });
    std::thread::scope(|s| {
        for pe in 0..npes {
            let (job_pe, config) = (Arc::clone(&job), config.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("rshmem-sim PE {pe}"))
                .spawn_scoped(s, move || pe_thread(job_pe, pe, config, pe_main));
            if let Err(e) = spawned {
                job.pe_failed(pe, format!("the host could not start its thread: {e}"));
            }
        }
    });
    match job.first_failure() {
        Some((pe, reason)) => Err(Error::PeFailed { pe, reason }),
        None => Ok(()),
    }
}

/// One PE: its closure, then its verdict for the job.
fn pe_thread(job: Arc<World>, pe: usize, config: SimConfig, pe_main: PeMain<'_>) {
    let sim_pe = Box::new(SimPe {
        job: Arc::clone(&job),
        pe,
        config,
        last_stream: Default::default(),
        capture: Default::default(),
    });
    let outcome = catch_unwind(AssertUnwindSafe(|| pe_main(sim_pe)));
    match outcome {
        Ok(Ok(())) => job.pe_finished(pe),
        Ok(Err(e)) => job.pe_failed(pe, e.to_string()),
        Err(payload) => {
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".into());
            job.pe_failed(pe, format!("panicked: {text}"));
        }
    }
}

/// The heaps could not be reserved: say which setting asked for how much.
fn reserve_error(config: &SimConfig, npes: usize, e: HeapError) -> Error {
    let (var, value) = match &config.heap_origin {
        Some(o) => (o.var, o.value.clone()),
        None => (
            "RSHMEM_SIM_HEAP",
            format!("(unset, default {} bytes)", config.heap_size),
        ),
    };
    Error::BadEnv {
        var,
        value,
        expected: format!(
            "a symmetric heap size this host can reserve {npes} times (one heap per PE) ({e:?}); set RSHMEM_SIM_HEAP lower, e.g. 64M"
        ),
    }
}
