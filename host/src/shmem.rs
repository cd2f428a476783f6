//! [`Shmem`]: one PE's handle to the runtime, over the PE's backend.

use crate::capture::CaptureBook;
use crate::contract::{DeviceInfo, Error, PeBackend, Result, StreamId};
use crate::select::Backend;
use rshmem_device::shmem::Team;
use std::sync::{Mutex, MutexGuard, PoisonError};

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
    /// The graph capture running on this PE, if one is (`Stream::capture`).
    capture: Mutex<Option<CaptureBook>>,
}

impl Shmem {
    pub(crate) fn new(inner: Box<dyn PeBackend>, backend: Backend) -> Self {
        Self {
            inner,
            backend,
            teams: Mutex::new(Vec::new()),
            capture: Mutex::new(None),
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
        self.refuse_during_capture(
            "Shmem::barrier_all",
            "it waits for the PE's streams and meets the other PEs on the host, which a graph \
             does not record. Call it before Stream::capture or after the graph's launch, or \
             record a barrier on the stream (Stream::barrier_all)",
        )?;
        self.inner.synchronize()?;
        self.inner.barrier_all()
    }

    /// Waits for all launched work of this PE, on every one of its streams; a kernel failure
    /// surfaces here, naming it.
    pub fn synchronize(&self) -> Result<()> {
        self.refuse_during_capture(
            "Shmem::synchronize",
            "it waits for every stream of the PE, and recorded work runs only when the graph is \
             launched: synchronize after Graph::launch",
        )?;
        self.inner.synchronize()
    }

    /// The capture running on this PE (`None` if none is), locked.
    pub(crate) fn capture_book(&self) -> MutexGuard<'_, Option<CaptureBook>> {
        // Plain bookkeeping, consistent after any panic.
        self.capture.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses `call` while a graph capture runs on this PE: `why` says why it cannot run
    /// then, and what to do instead.
    pub(crate) fn refuse_during_capture(&self, call: &'static str, why: &str) -> Result<()> {
        match &*self.capture_book() {
            None => Ok(()),
            Some(book) => Err(Error::Capture {
                call,
                message: format!(
                    "cannot run while PE {} captures a graph (Stream::capture on its stream \
                     {}): {why}",
                    self.my_pe(),
                    book.origin().0
                ),
            }),
        }
    }

    /// Refuses `call` on `stream` while that stream records a graph; see
    /// [`Shmem::refuse_during_capture`].
    pub(crate) fn refuse_recording(
        &self,
        call: &'static str,
        stream: StreamId,
        why: &str,
    ) -> Result<()> {
        match &*self.capture_book() {
            Some(book) if book.records(stream) => Err(Error::Capture {
                call,
                message: format!(
                    "stream {} of PE {} records a graph (Stream::capture): {why}",
                    stream.0,
                    self.my_pe()
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Notes an operation queued on `stream` (recorded, if the stream records), and the split
    /// team it uses, if any.
    pub(crate) fn note_queued(&self, stream: StreamId, team: Option<Team>) {
        if let Some(book) = &mut *self.capture_book() {
            if book.records(stream) {
                book.queued(stream);
                if let Some(team) = team {
                    book.uses_team(team);
                }
            }
        }
    }
}
