//! Simulator backend, host side. OWNED BY THE SIMULATOR WORK: to be implemented.

use crate::error::Result;
use crate::runtime::{BoxError, Shmem};

/// Runs `npes` PEs as threads of this process.
pub(crate) fn run(
    _npes: usize,
    _pe_main: &(dyn Fn(&Shmem) -> std::result::Result<(), BoxError> + Sync),
) -> Result<()> {
    todo!("simulator")
}
