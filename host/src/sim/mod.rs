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

use crate::contract::{Error, PeBackend, PeMain, Result};
use config::SimConfig;
use pe::SimPe;

/// Runs `npes` PEs as threads of this process and returns the first PE's failure, if any.
pub(crate) fn run(npes: usize, pe_main: PeMain<'_>) -> Result<()> {
    let job = SimJob::new(npes)?;
    std::thread::scope(|s| {
        for pe in 0..npes {
            let job = &job;
            let spawned = std::thread::Builder::new()
                .name(format!("rshmem-sim PE {pe}"))
                .spawn_scoped(s, move || {
                    let outcome = catch_unwind(AssertUnwindSafe(|| pe_main(job.pe(pe))));
                    job.finished(
                        pe,
                        outcome_text(outcome.map(|r| r.map_err(|e| e.to_string()))),
                    );
                });
            if let Err(e) = spawned {
                job.finished(pe, Err(format!("the host could not start its thread: {e}")));
            }
        }
    });
    job.verdict()
}

/// A simulated job whose PEs the caller runs on threads of its own (the job runner's, or a
/// Python interpreter's): the heaps, and each PE's verdict.
pub(crate) struct SimJob {
    world: Arc<World>,
    config: SimConfig,
}

impl SimJob {
    /// Reserves `npes` heaps with the settings of the environment (`RSHMEM_SIM_HEAP`, ...).
    pub(crate) fn new(npes: usize) -> Result<SimJob> {
        let config = SimConfig::from_env()?;
        if npes == 0 {
            return Err(Error::BadEnv {
                var: "RSHMEM_NPES",
                value: "0".into(),
                expected: "a whole number of PEs >= 1".into(),
            });
        }
        let world =
            World::new(npes, config.heap_size).map_err(|e| reserve_error(&config, npes, e))?;
        let world = Arc::new(if config.peer_mappings {
            world
        } else {
            world.without_peer_mappings()
        });
        Ok(SimJob { world, config })
    }

    /// The PEs of the job.
    pub(crate) fn n_pes(&self) -> usize {
        self.world.n_pes()
    }

    /// PE `pe`'s backend (`pe < n_pes()`; one per PE).
    pub(crate) fn pe(&self, pe: usize) -> Box<dyn PeBackend> {
        Box::new(SimPe {
            job: Arc::clone(&self.world),
            pe,
            config: self.config.clone(),
            last_stream: Default::default(),
            capture: Default::default(),
        })
    }

    /// PE `pe` ended, well or with the error text: a failure makes the PEs waiting for it
    /// (collectives, device waits) fail too, naming it.
    pub(crate) fn finished(&self, pe: usize, outcome: std::result::Result<(), String>) {
        match outcome {
            Ok(()) => self.world.pe_finished(pe),
            Err(reason) => self.world.pe_failed(pe, reason),
        }
    }

    /// The PE whose failure ended the job (followed to its cause), if one failed.
    pub(crate) fn verdict(&self) -> Result<()> {
        match self.world.first_failure() {
            Some((pe, reason)) => Err(Error::PeFailed { pe, reason }),
            None => Ok(()),
        }
    }
}

/// A PE closure's outcome as its verdict's text: its error, or its panic's message.
pub(crate) fn outcome_text<R>(
    outcome: std::thread::Result<std::result::Result<R, String>>,
) -> std::result::Result<R, String> {
    outcome.unwrap_or_else(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string payload".into());
        Err(format!("panicked: {text}"))
    })
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
