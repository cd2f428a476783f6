//! [`Shmem`]: one PE's handle to the runtime, over the PE's backend.

use crate::contract::{PeBackend, Result};
use crate::select::Backend;
use rshmem_device::shmem::Team;
use std::sync::Mutex;

/// One PE's view of the runtime: its number, the symmetric heap, modules and launches.
///
/// Created by [`run`](crate::run) for each PE; everything allocated through it borrows it, so
/// nothing outlives the runtime (NVSHMEM is finalised when the PE's closure returns).
pub struct Shmem {
    pub(crate) inner: Box<dyn PeBackend>,
    backend: Backend,
    /// The split teams this PE holds (handles not yet destroyed): only these and the
    /// predefined teams reach the backend, which may not survive others (NVSHMEM indexes its
    /// team table with the handle unchecked).
    pub(crate) teams: Mutex<Vec<Team>>,
}

impl Shmem {
    pub(crate) fn new(inner: Box<dyn PeBackend>, backend: Backend) -> Self {
        Self {
            inner,
            backend,
            teams: Mutex::new(Vec::new()),
        }
    }

    /// This PE's number, `0..n_pes()`.
    pub fn my_pe(&self) -> usize {
        self.inner.my_pe()
    }

    /// The number of PEs.
    pub fn n_pes(&self) -> usize {
        self.inner.n_pes()
    }

    /// Which backend runs this PE.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Host-side barrier across all PEs; also completes this PE's outstanding work
    /// (launches and heap writes) first, so data written before it is visible after it.
    pub fn barrier_all(&self) -> Result<()> {
        self.inner.synchronize()?;
        self.inner.barrier_all()
    }

    /// Waits for all launched work of this PE, on every one of its streams; a kernel failure
    /// surfaces here, naming it.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }
}
