//! [`Shmem`]: one PE's handle to the runtime, over the PE's backend.

use crate::contract::{DeviceInfo, PeBackend, Result};
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

    /// The device this PE runs on: compute capability (`sm`, 90 for Hopper) and
    /// multiprocessor count, e.g. to size a persistent kernel's grid. The simulator reports
    /// [`DeviceInfo::SIM`] (sm 90, two multiprocessors, so such grids stay small there).
    pub fn device_info(&self) -> DeviceInfo {
        self.inner.device_info()
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
