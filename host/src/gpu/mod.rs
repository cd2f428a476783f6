//! GPU backend: CUDA driver (cudarc, loaded at run time) and NVSHMEM's host library
//! (libloading). OWNED BY THE GPU-RUNTIME WORK: to be implemented.

use crate::error::Result;
use crate::runtime::{BoxError, Shmem};

/// Whether a GPU can be used by this process; the reason if not.
pub(crate) fn probe() -> std::result::Result<(), String> {
    Err("GPU backend not implemented yet".into())
}

/// Runs the job on GPUs: as the launcher (plain start), or as one PE.
pub(crate) fn run(
    _npes: Option<usize>,
    _pe_main: &(dyn Fn(&Shmem) -> std::result::Result<(), BoxError> + Sync),
) -> Result<()> {
    todo!("GPU backend")
}
