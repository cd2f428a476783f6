//! GPU backend: the CUDA driver through cudarc (libcuda loaded at run time) and NVSHMEM's host
//! library through libloading — nothing is linked at build time, so the crate builds and its
//! GPU-free tests run on machines without CUDA.
//!
//! Layers, as in cudarc:
//! * [`nvshmem::sys`] raw symbols and `#[repr(C)]` structs → [`nvshmem::result`] checked calls
//!   → [`nvshmem::Nvshmem`] the loaded library;
//! * [`cuda`]: RAII types over cudarc's `driver::result`;
//! * [`heap_accounting`]: rshmem's own bookkeeping of NVSHMEM's symmetric heap;
//! * [`pe`]: the per-PE backend, the contract's traits (`crate::contract`) over all of the
//!   above; the safe API (`Shmem`, `SymBuffer`, `Module`) runs on it without naming it.
//!
//! # Finding NVSHMEM
//!
//! `NVSHMEM_HOME`, then the `nvidia.nvshmem` Python package, then the builder's cache, then
//! the dynamic loader (details in [`discover`]). The bitcode linked into the kernels must come
//! from the same NVSHMEM release as this host library; loading a module checks that.
//!
//! # What [`run`] does in each process
//!
//! * **Started plainly** (the launcher): counts the visible GPUs and re-runs this executable as
//!   `RSHMEM_NPES` PEs (default: one per GPU), waiting for all of them (`launch::launch_self`).
//! * **A PE of rshmem's launcher**: sets the NVSHMEM environment ([`mod@env`]: no NVLink
//!   multicast, no NCCL, no remote transport, the UID bootstrap plugin by absolute path), makes
//!   GPU `local_rank`'s primary context current, bootstraps NVSHMEM by unique ID (PE 0
//!   creates it, the launcher carries it to the others), checks NVSHMEM's PE numbering against
//!   the launcher's, runs the closure, waits for its GPU work, and finalises NVSHMEM.
//! * **A PE of srun/mpirun**: the same, but NVSHMEM bootstraps itself through the launcher's
//!   PMI/PMIx/MPI (`NVSHMEM_BOOTSTRAP`, set unless the user set it).
//!
//! If the closure fails (or panics, or left a kernel that faulted), the PE returns at once
//! without NVSHMEM's collective teardown — the other PEs may be blocked anywhere — and the
//! launcher ends the job.
//!
//! A PE of rshmem's launcher writes its error to the launcher's report file before it
//! returns, so the job's error carries it. Each PE runs a watchdog (`pe::watchdog`): work
//! pending without progress for the hang timeout (`Job::hang_timeout`, else
//! `RSHMEM_HANG_TIMEOUT`, default 300 s) ends the PE as hung, saying what was pending; a PE
//! the launcher ends (SIGTERM) says what it had pending first.

mod cuda;
mod discover;
mod env;
mod heap_accounting;
mod mps;
mod nvshmem;
mod pe;
mod tensor_map;

use crate::contract::{pe_error, Error, PeBackend, PeMain, Result};
use crate::launch::{self, External, PeGroup, PeInfo, PeReport, Role};
use nvshmem::{result as nv, sys, Nvshmem};
use std::time::Duration;

/// Whether a GPU can be used by this process; the reason if not: a CUDA driver (13.0+) with at
/// least one device, and NVSHMEM's host library.
pub(crate) fn probe() -> std::result::Result<(), String> {
    cuda::init_driver()?;
    match discover::locate_host_lib() {
        discover::Located::File(_) => Ok(()),
        // Only the dynamic loader can tell whether the soname resolves.
        discover::Located::Soname { .. } => Nvshmem::get().map(drop).map_err(|e| e.to_string()),
    }
}

/// Runs the job on GPUs: as the launcher (plain start), or as one PE. `hang_timeout` is
/// `Job::hang_timeout`'s setting (zero: off), else `RSHMEM_HANG_TIMEOUT` rules.
pub(crate) fn run(
    npes: Option<usize>,
    pe_args: Option<&[std::ffi::OsString]>,
    hang_timeout: Option<Duration>,
    pe_main: PeMain<'_>,
) -> Result<()> {
    match launch::role()? {
        Role::Launcher => {
            let visible = cuda::init_driver().map_err(Error::NoGpu)?;
            let npes = npes.unwrap_or(visible);
            // Detected only where PEs would share a GPU: it asks the MPS daemon.
            let sharing = mps::plan(
                npes,
                visible,
                oversubscribe(),
                npes > visible && mps::detect().is_some(),
                std::env::var(mps::PERCENTAGE_VAR).ok(),
            )?;
            if let Some(warning) = sharing.warning() {
                eprintln!("rshmem: {warning}");
            }
            let exe = std::env::current_exe().map_err(|source| Error::Io {
                context: "finding this program to start its PEs".into(),
                source,
            })?;
            let args = match pe_args {
                Some(args) => args.to_vec(),
                None => std::env::args_os().skip(1).collect(),
            };
            let mut group = PeGroup::new(npes, exe).args(args);
            for (key, value) in sharing.pe_env() {
                group = group.env(key, value);
            }
            if let Some(timeout) = hang_timeout {
                // The PEs run this program's `Job` too, but say it where a PE's program
                // would not (and where the user reads it back in `ps`).
                group = group.env(
                    launch::HANG_TIMEOUT_VAR,
                    format!("{}", timeout.as_secs_f64()),
                );
            }
            group.run()
        }
        Role::Pe(info) => {
            let (pe, npes, local_rank) = (info.pe, info.npes, info.local_rank);
            let outcome = hang_timeout_in_effect(hang_timeout).and_then(|timeout| {
                let watch = Watch {
                    timeout,
                    report: info.report_path(),
                };
                run_pe(
                    Start::UniqueId(&info),
                    pe,
                    npes,
                    local_rank,
                    &watch,
                    pe_main,
                )
            });
            if let Err(e) = &outcome {
                // So that the launcher's error says this, not only "exited with status 1".
                // Should the launcher be gone, nobody is left to read it.
                let _ = info.report(&PeReport::Failed(own_reason(pe, e)));
            }
            outcome
        }
        Role::External(kind) => {
            let (pe, npes, local_rank) = kind.placement()?;
            let watch = Watch {
                timeout: hang_timeout_in_effect(hang_timeout)?,
                report: None,
            };
            run_pe(Start::External(kind), pe, npes, local_rank, &watch, pe_main)
        }
    }
}

/// The hang timeout of this PE: the `Job`'s setting, else `RSHMEM_HANG_TIMEOUT`; `None`: off.
fn hang_timeout_in_effect(job: Option<Duration>) -> Result<Option<Duration>> {
    match job {
        Some(timeout) => Ok((!timeout.is_zero()).then_some(timeout)),
        None => launch::hang_timeout(&|k| std::env::var(k).ok()),
    }
}

/// What PE `pe`'s error says of it, without the `PE k failed: ` the launcher adds.
fn own_reason(pe: usize, e: &Error) -> String {
    match e {
        Error::PeFailed { pe: failed, reason } if *failed == pe => reason.clone(),
        other => other.to_string(),
    }
}

/// A PE's watchdog settings: the hang timeout (`None`: off) and the file the PE reports to
/// (rshmem's launcher's `RSHMEM_REPORT`; only then is SIGTERM caught).
pub(crate) struct Watch<'a> {
    pub(crate) timeout: Option<Duration>,
    pub(crate) report: Option<&'a std::path::Path>,
}

/// `RSHMEM_GPU_OVERSUBSCRIBE=1`: PEs beyond the visible GPUs share them round-robin without
/// MPS (NVSHMEM's limited multiple-processes-per-GPU mode: for testing on fewer GPUs; a GPU's
/// PEs time-slice, so timings mean little). Under MPS ([`mps`]) they share them anyway.
fn oversubscribe() -> bool {
    std::env::var_os("RSHMEM_GPU_OVERSUBSCRIBE").is_some_and(|v| v != "0" && !v.is_empty())
}

/// How NVSHMEM is bootstrapped.
enum Start<'a> {
    /// Unique ID exchanged through rshmem's launcher.
    UniqueId(&'a PeInfo),
    /// The external launcher's PMI/PMIx/MPI.
    External(External),
}

fn run_pe(
    start: Start<'_>,
    pe: usize,
    npes: usize,
    local_rank: usize,
    watch: &Watch<'_>,
    pe_main: PeMain<'_>,
) -> Result<()> {
    let nvshmem = Nvshmem::get()?;
    let started_by = match &start {
        Start::UniqueId(_) => env::StartedBy::Local,
        // The PMI flavour (PMI-2, PMIX) where the launcher has one, else the bootstrap (MPI).
        Start::External(kind) => env::StartedBy::External(
            kind.nvshmem_bootstrap_pmi()
                .unwrap_or(kind.nvshmem_bootstrap()),
        ),
    };
    apply_env(nvshmem, started_by);

    let visible = cuda::init_driver().map_err(Error::NoGpu)?;
    // Asked only where PEs may share a GPU (it asks the MPS daemon).
    let mps = (local_rank >= visible || npes > visible) && mps::active();
    if local_rank >= visible && !mps && !oversubscribe() {
        return Err(mps::unavailable(pe, local_rank, visible));
    }
    let device = local_rank % visible;
    // NVSHMEM adopts the context current on this thread at init.
    let ctx = mps::context(mps, device)?;

    let lib = nvshmem.lib();
    match start {
        Start::UniqueId(info) => {
            let uid = if pe == 0 {
                let uid = nv::get_uniqueid(lib)?;
                info.publish_uid(bytemuck::bytes_of(&uid))?;
                uid
            } else {
                uid_from_bytes(&info.fetch_uid()?)?
            };
            nv::init_with_uniqueid(lib, pe, npes, &uid)?;
        }
        Start::External(_) => nv::init_with_bootstrap_env(lib)?,
    }

    // `GpuPe::finish` decides, from the closure's verdict and the GPU's state, whether the
    // collective teardown runs when the PE is dropped at the end of `pe_main`.
    let gpu_pe = pe::GpuPe::new(nvshmem, ctx, pe, npes, watch)?;
    pe_main(Box::new(gpu_pe)).map_err(|e| pe_error(pe, e))
}

/// A fresh NVSHMEM unique ID (`nvshmemx_get_uniqueid`), as bytes to hand to every PE of a
/// job that [`attach`] starts: what PE 0 of a job started by another launcher makes.
pub(crate) fn unique_id() -> Result<Vec<u8>> {
    let nvshmem = Nvshmem::get()?;
    apply_env(nvshmem, env::StartedBy::Local);
    let uid = nv::get_uniqueid(nvshmem.lib())?;
    Ok(bytemuck::bytes_of(&uid).to_vec())
}

/// Starts PE `pe` of `npes` in this process, which another launcher started (a Python
/// interpreter under torchrun): NVSHMEM bootstrapped by the unique ID `uid` (from
/// [`unique_id`] on PE 0, carried by the caller), on GPU `device`'s primary context, the one
/// the CUDA runtime (torch) uses. Collective over the `npes` PEs.
pub(crate) fn attach(
    pe: usize,
    npes: usize,
    device: usize,
    uid: &[u8],
    hang_timeout: Option<Duration>,
) -> Result<Box<dyn PeBackend>> {
    let nvshmem = Nvshmem::get()?;
    apply_env(nvshmem, env::StartedBy::Local);
    let visible = cuda::init_driver().map_err(Error::NoGpu)?;
    if device >= visible {
        return Err(Error::Launcher(format!(
            "PE {pe} was asked to run on GPU {device}, but this process sees {visible} GPU(s) \
             (CUDA_VISIBLE_DEVICES); pass a device below {visible}"
        )));
    }
    let mps = npes > visible && mps::active();
    let ctx = mps::context(mps, device)?;
    let uid = uid_from_bytes(uid)?;
    nv::init_with_uniqueid(nvshmem.lib(), pe, npes, &uid)?;
    let watch = Watch {
        timeout: hang_timeout_in_effect(hang_timeout)?,
        report: None,
    };
    Ok(Box::new(pe::GpuPe::new(nvshmem, ctx, pe, npes, &watch)?))
}

/// Sets NVSHMEM's environment for a PE started by `started_by` (see [`env`]).
fn apply_env(nvshmem: &Nvshmem, started_by: env::StartedBy) {
    env::apply(&env::plan(
        &|k| std::env::var_os(k),
        started_by,
        nvshmem.dir(),
        &|p| p.is_file(),
    ));
}

/// The unique ID as PE 0 published it.
fn uid_from_bytes(bytes: &[u8]) -> Result<sys::nvshmemx_uniqueid_t> {
    bytemuck::try_pod_read_unaligned(bytes).map_err(|_| {
        Error::Launcher(format!(
            "the NVSHMEM unique ID received from PE 0 has {} bytes, expected {}",
            bytes.len(),
            std::mem::size_of::<sys::nvshmemx_uniqueid_t>()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_id_round_trips_as_bytes() {
        let mut uid = sys::nvshmemx_uniqueid_t::new();
        uid.internal[7] = 42;
        let bytes = bytemuck::bytes_of(&uid).to_vec();
        assert_eq!(bytes.len(), 128);
        let back = uid_from_bytes(&bytes).unwrap();
        assert_eq!((back.version, back.internal[7]), (uid.version, 42));
        let msg = uid_from_bytes(&bytes[..100]).unwrap_err().to_string();
        assert!(msg.contains("100 bytes") && msg.contains("128"), "{msg}");
    }
}
