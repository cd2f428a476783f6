//! Starting PEs as processes. OWNED BY THE LAUNCHER WORK: the signatures below are the
//! contract the GPU backend codes against; bodies to be implemented.

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::path::Path;

/// `RSHMEM_NPES`, if set: the number of PEs to start.
pub fn requested_npes() -> Result<Option<usize>> {
    match std::env::var("RSHMEM_NPES") {
        Err(_) => Ok(None),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(Error::Launcher(format!(
                "RSHMEM_NPES={v:?} is not a PE count: use a whole number >= 1"
            ))),
        },
    }
}

/// What this process is in a GPU job.
#[derive(Debug)]
pub(crate) enum Role {
    /// Started plainly: start the PEs (`launch_self`) and wait for them.
    Launcher,
    /// A PE started by our launcher (`launch_self` or `rshmem-run`).
    Pe(PeInfo),
    /// A PE started by an external launcher (srun, mpirun, ...): NVSHMEM bootstraps itself.
    External(External),
}

/// A PE started by rshmem's launcher: its place in the job and the way to exchange
/// NVSHMEM's unique ID.
#[derive(Debug)]
pub(crate) struct PeInfo {
    pub pe: usize,
    pub npes: usize,
    /// Index among the PEs on this node: the GPU this PE drives.
    pub local_rank: usize,
}

/// The external launcher detected from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum External {
    /// Slurm `srun` (PMI-2 or PMIx variables).
    Slurm,
    /// Open MPI / MPICH `mpirun`.
    Mpi,
    /// A PMIx server without Slurm.
    Pmix,
}

impl External {
    /// The `NVSHMEM_BOOTSTRAP` value to use, e.g. `"PMI"`, `"PMIX"`, `"MPI"`.
    pub fn nvshmem_bootstrap(self) -> &'static str {
        todo!()
    }
    /// `(pe, npes, local_rank)` as the launcher's variables say.
    pub fn placement(self) -> Result<(usize, usize, usize)> {
        todo!()
    }
}

/// Decides this process's role from the environment.
pub(crate) fn role() -> Result<Role> {
    todo!()
}

impl PeInfo {
    /// PE 0 hands NVSHMEM's unique ID (opaque bytes) to the others.
    pub fn publish_uid(&self, _uid: &[u8]) -> Result<()> {
        todo!()
    }
    /// PEs other than 0 wait for the unique ID PE 0 published.
    pub fn fetch_uid(&self) -> Result<Vec<u8>> {
        todo!()
    }
}

/// Re-executes this program as `npes` PEs and waits: `Ok` if every PE exits 0, else the
/// first failure as [`Error::PeFailed`], after ending the others.
pub fn launch_self(_npes: usize) -> Result<()> {
    todo!()
}

/// Starts `program args...` as `npes` PEs (the `rshmem-run` binary) and waits, as
/// [`launch_self`].
pub fn launch(_npes: usize, _program: &Path, _args: &[OsString]) -> Result<()> {
    todo!()
}
