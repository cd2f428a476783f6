//! PEs in processes that rshmem did not start: a program (a Python interpreter under
//! torchrun, a server with its own workers) that runs each PE itself and wants a [`Shmem`] it
//! owns, instead of a closure run by [`run`](crate::run).
//!
//! * **GPU**: PE 0 makes a unique ID ([`unique_id`]), the program hands its bytes to every PE
//!   (torch's process-group store, a file, ...), and each PE calls [`Shmem::attach_gpu`] with
//!   its number, the PE count and its GPU: NVSHMEM starts by that unique ID on the GPU's
//!   primary context (the one the CUDA runtime, and so torch, uses). [`Shmem::finalize`] ends
//!   the PE (NVSHMEM's collective teardown); dropping the `Shmem` without it ends it as a failed
//!   PE would (no collective teardown).
//! * **Simulator**: [`SimJob::new`] reserves the heaps of `npes` PEs in this process and
//!   [`SimJob::pe`] hands out each PE's `Shmem`; the program runs each PE on a thread of its
//!   own and says how it ended ([`SimJob::finished`]), so that a failure makes the PEs waiting
//!   for it fail too, naming it, instead of hanging.
//!
//! Everything else (buffers, modules, streams, ops) is the same API as under `run`.

use crate::contract::{BoxError, Error, Result};
use crate::select::Backend;
use crate::shmem::Shmem;
use crate::stream::Stream;
use std::sync::Mutex;
use std::time::Duration;

/// A fresh NVSHMEM unique ID, as bytes: made by PE 0 of a job that [`Shmem::attach_gpu`]
/// starts, and handed by the program to every PE. Loads NVSHMEM's host library and sets
/// NVSHMEM's environment for a one-node job (see `docs/python.md`) where the user has not.
pub fn unique_id() -> Result<Vec<u8>> {
    crate::gpu::probe().map_err(Error::NoGpu)?;
    crate::gpu::unique_id()
}

/// Where and how [`Shmem::attach_gpu`] starts a PE.
#[derive(Clone, Debug)]
pub struct GpuAttach {
    /// This PE's number, `0..npes`.
    pub pe: usize,
    /// The number of PEs, every one attaching with the same unique ID.
    pub npes: usize,
    /// The CUDA device ordinal this PE runs on (its primary context is used).
    pub device: usize,
    /// The bytes of PE 0's [`unique_id`].
    pub unique_id: Vec<u8>,
    /// The hang watchdog's timeout (`None`: `RSHMEM_HANG_TIMEOUT`, default 300 s; zero: off).
    pub hang_timeout: Option<Duration>,
}

impl Shmem {
    /// Starts this process's PE on a GPU, NVSHMEM bootstrapped by unique ID (see
    /// [`crate::attach`]). Collective: every PE of the job calls it with the same unique ID and
    /// PE count. Returns the PE's `Shmem`, owned by the caller.
    ///
    /// Errors name what is missing: no GPU or NVSHMEM ([`Error::NoGpu`]), a device this
    /// process does not see, a unique ID of the wrong size, NVSHMEM numbering the PE
    /// differently.
    pub fn attach_gpu(config: &GpuAttach) -> Result<Shmem> {
        let GpuAttach {
            pe, npes, device, ..
        } = *config;
        if npes == 0 || pe >= npes {
            return Err(Error::Launcher(format!(
                "Shmem::attach_gpu: PE {pe} of {npes} PEs: the PE number must be below a PE \
                 count of at least 1"
            )));
        }
        crate::gpu::probe().map_err(Error::NoGpu)?;
        let backend = crate::gpu::attach(pe, npes, device, &config.unique_id, config.hang_timeout)?;
        Ok(Shmem::new(backend, Backend::Gpu))
    }

    /// Ends this PE: waits for its work and, if it and its device are healthy, runs the
    /// backend's collective teardown (NVSHMEM's finalize: every PE must call it). Returns the
    /// failure of work it waited for. For a `Shmem` the program owns ([`Shmem::attach_gpu`],
    /// [`SimJob::pe`]); every buffer, module and stream of the PE is gone by then (they
    /// borrow it).
    pub fn finalize(self) -> Result<()> {
        let outcome = self.inner.finish(Ok(())).map_err(to_error);
        drop(self);
        outcome
    }

    /// Ends this PE without the backend's collective teardown, as a failed PE ends (NVSHMEM
    /// stays initialised until the process exits): for a program that cannot tell whether
    /// every PE reaches its [`Shmem::finalize`] (an interpreter shutting down). Never blocks on
    /// other PEs.
    pub fn abandon(self, reason: &str) {
        let _ = self.inner.finish(Err(reason.into()));
        drop(self);
    }

    /// A handle to a stream this PE's program made outside rshmem (torch's current stream):
    /// rshmem queues work on it as on its own streams, and never destroys it.
    ///
    /// # Safety
    ///
    /// On GPUs, `raw` must be a `CUstream` of this PE's context (its device's primary
    /// context), and it must stay alive as long as the returned handle and any graph or
    /// workspace that recorded work on it. On the simulator `raw` is only a name.
    pub unsafe fn adopt_stream(&self, raw: u64) -> Result<Stream<'_>> {
        // SAFETY: forwarded from this function's contract.
        let id = unsafe { self.inner.adopt_stream(raw) }?;
        Ok(Stream { shmem: self, id })
    }
}

/// A boxed PE verdict as the typed error.
fn to_error(e: BoxError) -> Error {
    match e.downcast::<Error>() {
        Ok(e) => *e,
        Err(other) => Error::Launcher(other.to_string()),
    }
}

/// A simulated job whose PEs the program runs on threads of its own (see [`crate::attach`]).
pub struct SimJob {
    job: crate::sim::SimJob,
    /// Which PEs' `Shmem`s were handed out.
    taken: Mutex<Vec<bool>>,
}

impl SimJob {
    /// Reserves the heaps of `npes` PEs (`RSHMEM_SIM_HEAP` each, default 64 MiB).
    pub fn new(npes: usize) -> Result<SimJob> {
        let job = crate::sim::SimJob::new(npes)?;
        Ok(SimJob {
            taken: Mutex::new(vec![false; job.n_pes()]),
            job,
        })
    }

    /// The number of PEs.
    pub fn n_pes(&self) -> usize {
        self.job.n_pes()
    }

    /// PE `pe`'s `Shmem`, once per PE. Its thread runs the PE's work and then calls
    /// [`SimJob::finished`].
    pub fn pe(&self, pe: usize) -> Result<Shmem> {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        match taken.get_mut(pe) {
            None => Err(Error::Launcher(format!(
                "SimJob::pe: PE {pe} of a job of {} PEs",
                self.n_pes()
            ))),
            Some(true) => Err(Error::Launcher(format!(
                "SimJob::pe: PE {pe}'s Shmem was already handed out"
            ))),
            Some(slot) => {
                *slot = true;
                Ok(Shmem::new(self.job.pe(pe), Backend::Sim))
            }
        }
    }

    /// Runs PE `pe`'s work on this thread: `work` with the PE's `Shmem`, its error or panic
    /// becoming the PE's failure ([`SimJob::finished`]). Returns what `work` returned, if it
    /// succeeded.
    pub fn run_pe<R>(
        &self,
        pe: usize,
        work: impl FnOnce(Shmem) -> std::result::Result<R, String>,
    ) -> Option<R> {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            work(self.pe(pe).map_err(|e| e.to_string())?)
        }));
        match crate::sim::outcome_text(outcome) {
            Ok(value) => {
                self.finished(pe, Ok(()));
                Some(value)
            }
            Err(reason) => {
                self.finished(pe, Err(reason));
                None
            }
        }
    }

    /// PE `pe` ended, well or with its error's text: a failure makes the PEs waiting for it
    /// (in collectives, device waits, allocations) fail, naming it.
    pub fn finished(&self, pe: usize, outcome: std::result::Result<(), String>) {
        self.job.finished(pe, outcome)
    }

    /// The job's verdict once every PE has finished: the PE whose failure ended it (followed
    /// to its cause: a PE that failed waiting for another names that one), if any.
    pub fn verdict(&self) -> Result<()> {
        self.job.verdict()
    }
}
