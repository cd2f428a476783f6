//! [`run`] starts the PEs; [`Shmem`] is one PE's handle to the runtime.

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::heap::SymBuffer;
use crate::module::{KernelImage, Module};
use crate::stream::StreamId;
use crate::stream_ops::{CollOp, ElemKind};
use bytemuck::Pod;
use rshmem_device::shmem::Team;
use std::sync::Mutex;
use std::time::Duration;

/// The error type a PE's closure may return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What each backend implements for one PE. `Shmem`, `SymBuffer` and `Module` are thin safe
/// wrappers over it.
pub(crate) trait PeBackend: Send + Sync {
    fn my_pe(&self) -> usize;
    fn n_pes(&self) -> usize;
    fn barrier_all(&self) -> Result<()>;
    /// Collective: every PE calls with the same `bytes`, or every PE gets
    /// [`Error::AsymmetricAlloc`]. Returns the local address of the allocation (a device
    /// address on GPUs), holding `init` (exactly `bytes` long) or zero-filled. The contents
    /// are in place on every PE before the allocation's closing barrier, so when `alloc`
    /// returns on any PE, every peer's copy already holds its data.
    fn alloc(&self, bytes: usize, init: Option<&[u8]>) -> Result<u64>;
    /// Collective free of an address returned by `alloc`.
    fn free(&self, addr: u64);
    fn copy_to_host(&self, addr: u64, dst: &mut [u8]) -> Result<()>;
    fn copy_from_host(&self, addr: u64, src: &[u8]) -> Result<()>;
    fn load(&self, image: &KernelImage) -> Result<Box<dyn ModuleBackend>>;
    /// Waits for all work of this PE, on every stream, surfacing a kernel failure.
    fn synchronize(&self) -> Result<()>;

    // Streams. `StreamId::PE` always exists; `Shmem` passes other ids only between their
    // `create_stream` and `destroy_stream`.

    /// Makes a new stream of this PE.
    fn create_stream(&self) -> Result<StreamId>;
    /// Destroys a stream made by `create_stream` once its queued work is done; a failure in
    /// that work is reported by a later `synchronize`.
    fn destroy_stream(&self, stream: StreamId);
    /// Waits for the work queued on `stream`, surfacing a kernel failure.
    fn synchronize_stream(&self, stream: StreamId) -> Result<()>;
    /// Makes the work queued on `waiter` from now on wait for the work queued on `on` so far.
    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()>;
    /// Runs `f` between two timing points of `stream` (events on GPUs).
    fn time(&self, stream: StreamId, f: &mut dyn FnMut() -> Result<()>) -> Result<Duration>;

    // Teams. `Shmem` passes only teams this PE holds (predefined, or split and not yet
    // destroyed) and arguments it has checked; see `team.rs`.

    /// Collective over the members of `parent`: makes the team of its members `start +
    /// stride * i` (`i < size`) and returns its handle here, or `Team::INVALID` where this PE
    /// is not a member. `verdict` is `Shmem`'s check of the arguments against the parent: a
    /// backend returns it if it is an error, after whatever it needs to report the same
    /// error on every PE.
    fn team_split_strided(
        &self,
        parent: Team,
        triplet: [usize; 3],
        verdict: Result<()>,
    ) -> Result<Team>;
    /// Collective over `parent`: this PE's row team (`xrange` consecutive parent members)
    /// and column team. The default makes them as NVSHMEM does, by strided splits over the
    /// parent, rows first.
    fn team_split_2d(&self, parent: Team, xrange: usize) -> Result<(Team, Team)> {
        let mut mine = [Team::INVALID; 2];
        for (axis, triplet) in crate::team::split_2d_triplets(self.team_n_pes(parent), xrange) {
            match self.team_split_strided(parent, triplet, Ok(())) {
                Ok(team) if team != Team::INVALID => mine[axis as usize] = team,
                Ok(_) => {}
                Err(e) => {
                    for team in mine.into_iter().filter(|&t| t != Team::INVALID) {
                        self.team_destroy(team);
                    }
                    return Err(e);
                }
            }
        }
        Ok((mine[0], mine[1]))
    }
    /// Releases this PE's part of split team `team` (local).
    fn team_destroy(&self, team: Team);
    /// This PE's rank in `team`, if it is a member.
    fn team_my_pe(&self, team: Team) -> Option<usize>;
    /// The number of members of `team`.
    fn team_n_pes(&self, team: Team) -> usize;
    /// The rank in `dest` of the PE ranked `pe` in `src`, if it is a member of `dest`.
    fn team_translate_pe(&self, src: Team, pe: usize, dest: Team) -> Option<usize>;

    // On-stream operations: queued on `stream` after the work queued there before (done at
    // once on the simulator). Addresses are checked by `Stream`.

    /// Copies `bytes` bytes from local symmetric `src` to symmetric `dest` on `pe` (`put`),
    /// or from symmetric `src` on `pe` to local symmetric `dest`.
    #[allow(clippy::too_many_arguments)]
    fn rma_on_stream(
        &self,
        stream: StreamId,
        put: bool,
        dest: u64,
        src: u64,
        bytes: usize,
        pe: usize,
    ) -> Result<()>;
    /// Barrier over all PEs, ordered after the stream's earlier work. Collective.
    fn barrier_all_on_stream(&self, stream: StreamId) -> Result<()>;
    /// Barrier over `team`'s members. Collective over the team.
    fn barrier_on_stream(&self, stream: StreamId, team: Team) -> Result<()>;
    /// Collective `op` on `elem` elements over `team`; `n` counts elements as NVSHMEM does
    /// (per member for fcollect/alltoall/reducescatter, in all for broadcast/reduce).
    #[allow(clippy::too_many_arguments)]
    fn collective_on_stream(
        &self,
        stream: StreamId,
        team: Team,
        op: CollOp,
        elem: ElemKind,
        dest: u64,
        src: u64,
        n: usize,
    ) -> Result<()>;
}

/// One loaded module, per backend.
pub(crate) trait ModuleBackend: Send + Sync {
    /// Launches `kernel` on `stream`. `params` points at each argument (GPU); `sim_thread`
    /// runs the body as one simulated thread (simulator).
    ///
    /// # Safety
    ///
    /// `params` must match the kernel's parameter list; the kernel's own contract holds.
    unsafe fn launch(
        &self,
        stream: StreamId,
        kernel: &'static str,
        config: &crate::module::LaunchConfig,
        params: &mut [*mut std::ffi::c_void],
        sim_thread: &(dyn Fn() + Sync),
    ) -> Result<()>;
}

/// One PE's view of the runtime: its number, the symmetric heap, modules and launches.
///
/// Created by [`run`] for each PE; everything allocated through it borrows it, so nothing
/// outlives the runtime (NVSHMEM is finalised when the PE's closure returns).
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

    /// Allocates `len` elements on the symmetric heap, zero-filled. Collective: every PE must
    /// call it with the same `len`, in the same order.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<SymBuffer<'_, T>> {
        SymBuffer::new_zeroed(self, len)
    }

    /// Allocates a symmetric buffer holding a copy of `data`. Collective, like
    /// [`Shmem::alloc_zeroed`]: every PE passes a slice of the same length (its own values).
    ///
    /// Every PE's data is in place before the allocation's closing barrier: when this returns
    /// on any PE, a kernel it launches may read any peer's copy without a further barrier.
    pub fn alloc_from<T: Pod>(&self, data: &[T]) -> Result<SymBuffer<'_, T>> {
        SymBuffer::new_from(self, data)
    }

    /// Loads a kernel image on this PE (cubin for this GPU, else PTX; NVSHMEM version
    /// checked). On the simulator it checks the image and runs the host-compiled kernels.
    pub fn load(&self, image: &KernelImage) -> Result<Module<'_>> {
        Ok(Module::new(self, image, self.inner.load(image)?))
    }

    /// Runs `f` and returns how long the PE's stream took for the work it launched (CUDA
    /// events on GPUs, wall time on the simulator): [`Stream::time`](crate::Stream::time) on
    /// [`Shmem::stream`].
    pub fn time(&self, f: impl FnMut() -> Result<()>) -> Result<Duration> {
        self.stream().time(f)
    }
}

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
        match backend {
            Backend::Sim => crate::sim::run(npes.unwrap_or(2), &pe_main),
            Backend::Gpu => crate::gpu::run(npes, self.pe_args.as_deref(), &pe_main),
        }
    }
}

/// Converts a PE closure's error into the runtime's, naming the PE.
pub(crate) fn pe_error(pe: usize, err: BoxError) -> Error {
    Error::PeFailed {
        pe,
        reason: err.to_string(),
    }
}
