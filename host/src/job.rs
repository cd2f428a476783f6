//! Starting the PEs: [`run`] and [`Job`], the job's settings. The runner picks the backend,
//! and hands it a [`PeMain`] that wraps each PE's backend in a [`Shmem`] and runs the
//! program's closure on it.

use crate::contract::{BoxError, Error, PeBackend, PeMain, Result};
use crate::select::Backend;
use crate::shmem::Shmem;

/// Runs `pe_main` once on every PE and returns when all have finished: `Job::new().run(..)`,
/// with the backend and PE count from the environment.
///
/// * GPU backend, started plainly: spawns one process per visible GPU (or `RSHMEM_NPES`) from
///   this executable, bootstraps NVSHMEM by unique ID, prefixes their output with
///   `[PE k]`, and returns the first failure, ending the others (see [`crate::launch`]).
///   Under `srun`/`mpirun`, or in a process started by the launcher, it runs this PE only.
/// * Simulator: runs `RSHMEM_NPES` (default 2) PEs as threads of this process.
///
/// Code before `run` executes in every process; keep it free of side effects.
pub fn run<F, E>(pe_main: F) -> Result<()>
where
    F: Fn(&Shmem) -> std::result::Result<(), E> + Send + Sync,
    E: Into<BoxError>,
{
    Job::new().run(pe_main)
}

/// A job's settings, where the environment's defaults are not wanted (tests that run one
/// suite on each backend, programs that pick their PE count).
///
/// ```no_run
/// use rshmem_host::{Backend, Job, Shmem};
/// Job::new().backend(Backend::Sim).npes(4).run(|shmem: &Shmem| {
///     assert_eq!(shmem.n_pes(), 4);
///     Ok::<(), rshmem_host::Error>(())
/// })?;
/// # Ok::<(), rshmem_host::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Job {
    backend: Option<Backend>,
    npes: Option<usize>,
    pe_args: Option<Vec<std::ffi::OsString>>,
    hang_timeout: Option<std::time::Duration>,
}

impl Job {
    /// Backend and PE count from the environment (`RSHMEM_BACKEND`, `RSHMEM_NPES`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs on this backend whatever `RSHMEM_BACKEND` says. [`Backend::Gpu`] without a
    /// usable GPU is an error ([`Error::NoGpu`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Runs this many PEs whatever `RSHMEM_NPES` says (a GPU job needs as many GPUs).
    pub fn npes(mut self, npes: usize) -> Self {
        self.npes = Some(npes);
        self
    }

    /// The arguments the PE processes get when this program starts them on GPUs (default: this
    /// process's own). A test harness passes the filter that selects the one test, so each PE
    /// runs that test alone.
    pub fn pe_args<I, A>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<std::ffi::OsString>,
    {
        self.pe_args = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// How long a GPU PE may have work pending (kernels launched and not complete, or a
    /// blocking call such as `synchronize` or `barrier_all` under way) with nothing completing
    /// before its watchdog ends the job as hung, whatever `RSHMEM_HANG_TIMEOUT` says (default
    /// [`crate::launch::DEFAULT_HANG_TIMEOUT`], 300 s; [`Duration::ZERO`] turns the watchdog
    /// off). A hung PE reports what was pending, per stream, and the blocking call; the
    /// launcher ends the other PEs, which report theirs, and the job's error is
    /// [`Error::PeHung`] naming the PE. A single kernel that legitimately runs longer needs a
    /// longer timeout.
    ///
    /// The simulator bounds its device waits by `RSHMEM_SIM_WAIT_TIMEOUT` instead (see
    /// `docs/faults.md`).
    ///
    /// [`Duration::ZERO`]: std::time::Duration::ZERO
    pub fn hang_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.hang_timeout = Some(timeout);
        self
    }

    /// Runs `pe_main` once on every PE; see [`run`].
    pub fn run<F, E>(self, pe_main: F) -> Result<()>
    where
        F: Fn(&Shmem) -> std::result::Result<(), E> + Send + Sync,
        E: Into<BoxError>,
    {
        let pe_main = |shmem: &Shmem| pe_main(shmem).map_err(Into::into);
        let backend = match self.backend {
            Some(Backend::Gpu) => {
                crate::gpu::probe().map_err(Error::NoGpu)?;
                Backend::Gpu
            }
            Some(b) => b,
            None => Backend::current()?,
        };
        let npes = match self.npes {
            Some(0) => return Err(Error::Launcher("a job needs at least one PE".into())),
            Some(n) => Some(n),
            None => crate::launch::requested_npes()?,
        };
        let on_pe = |pe: Box<dyn PeBackend>| {
            let shmem = Shmem::new(pe, backend);
            let outcome = pe_main(&shmem);
            // Before `shmem` is dropped: the backend's teardown depends on the verdict.
            let outcome = shmem.inner.finish(outcome);
            drop(shmem);
            outcome
        };
        let on_pe: PeMain<'_> = &on_pe;
        match backend {
            Backend::Sim => crate::sim::run(npes.unwrap_or(2), on_pe),
            Backend::Gpu => {
                crate::gpu::run(npes, self.pe_args.as_deref(), self.hang_timeout, on_pe)
            }
        }
    }
}
