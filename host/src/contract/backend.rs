//! The traits a backend implements for one PE, one per concern: [`PeBackend`] (the PE itself:
//! its number, barrier, module loading, end), [`HeapBackend`] (the symmetric heap and host
//! copies), [`StreamBackend`] (streams, waits, timing), [`TeamBackend`] (team splits and
//! queries), [`OnStreamBackend`] (puts, gets, barriers and collectives queued on a stream),
//! [`GraphBackend`] (capturing a stream's work into a graph); [`ModuleBackend`] for a module
//! loaded on it and [`GraphExecBackend`] for a captured graph. The safe types (`Shmem`, `SymBuffer`,
//! `Module`, `Stream`, `TeamHandle`) are thin wrappers that check arguments and call these.

use super::coll::{CollOp, ElemKind};
use super::device_info::DeviceInfo;
use super::error::{BoxError, Result};
use super::image::KernelImage;
use super::launch::KernelCall;
use super::stream_id::StreamId;
use super::team_split::split_2d_triplets;
use super::tensor_map::{Checked, TiledSpec};
use rshmem_device::shmem::Team;
use std::time::Duration;

/// One PE's life as a backend runs it: given the PE's backend, it runs the program's closure
/// for that PE and returns its verdict. Made by the job runner (`Job::run`), called once per
/// PE by `gpu::run` or `sim::run`, which never see the safe API.
pub(crate) type PeMain<'a> = &'a (dyn Fn(Box<dyn PeBackend>) -> Result<(), BoxError> + Sync);

/// What each backend implements for one PE.
pub(crate) trait PeBackend:
    HeapBackend + StreamBackend + TeamBackend + OnStreamBackend + GraphBackend + Send + Sync
{
    fn my_pe(&self) -> usize;
    fn n_pes(&self) -> usize;
    fn barrier_all(&self) -> Result<()>;
    fn load(&self, image: &KernelImage) -> Result<Box<dyn ModuleBackend>>;
    /// The device this PE runs on: its compute capability and multiprocessor count (what the
    /// simulator pretends to be on the simulator).
    fn device_info(&self) -> DeviceInfo;
    /// Encodes a tensor map (`spec`, already `check`ed as `checked`) in the form this
    /// backend's bulk tensor copies read: `cuTensorMapEncodeTiled`'s on GPUs.
    fn encode_tensor_map(
        &self,
        spec: &TiledSpec<'_>,
        checked: &Checked,
    ) -> Result<rshmem_device::hopper::TensorMap>;
    /// Called once, after the PE's closure returned `outcome` (not if it panicked) and before
    /// the backend is dropped: waits for the PE's outstanding work and returns the PE's
    /// verdict, with a failure of that work the closure was not told about.
    fn finish(&self, outcome: Result<(), BoxError>) -> Result<(), BoxError>;
}

/// The symmetric heap of one PE.
pub(crate) trait HeapBackend {
    /// Collective: every PE calls with the same `bytes`, or every PE gets
    /// [`Error::AsymmetricAlloc`](super::Error::AsymmetricAlloc). Returns the local address of
    /// the allocation (a device address on GPUs), holding `init` (exactly `bytes` long) or
    /// zero-filled. The contents are in place on every PE before the allocation's closing
    /// barrier, so when `alloc` returns on any PE, every peer's copy already holds its data.
    fn alloc(&self, bytes: usize, init: Option<&[u8]>) -> Result<u64>;
    /// Collective free of an address returned by `alloc`.
    fn free(&self, addr: u64);
    fn copy_to_host(&self, addr: u64, dst: &mut [u8]) -> Result<()>;
    fn copy_from_host(&self, addr: u64, src: &[u8]) -> Result<()>;
    /// Whether the `bytes` bytes at `addr` (not null, not wrapping) are memory this PE's
    /// kernels reach locally, symmetric or not; the message says where they are if not. GPUs:
    /// device memory of the PE's GPU at the first and the last byte. The simulator runs
    /// kernels on host memory, which it cannot tell from any other: it takes every range.
    fn check_device_memory(&self, addr: u64, bytes: usize) -> std::result::Result<(), String>;
}

/// The streams of one PE. `StreamId::PE` always exists; `Shmem` passes other ids only between
/// their `create_stream` and `destroy_stream`.
pub(crate) trait StreamBackend {
    /// Waits for all work of this PE, on every stream, surfacing a kernel failure.
    fn synchronize(&self) -> Result<()>;
    /// Makes a new stream of this PE.
    fn create_stream(&self) -> Result<StreamId>;
    /// Names a stream the program made outside rshmem (`raw`: a `CUstream` on GPUs, a name
    /// on the simulator) as a stream of this PE; `destroy_stream` forgets it without
    /// destroying it.
    ///
    /// # Safety
    ///
    /// On GPUs `raw` is a live stream of the PE's context, alive until `destroy_stream` and
    /// until the work queued on it through rshmem is done (the contract of
    /// `Shmem::adopt_stream`).
    unsafe fn adopt_stream(&self, raw: u64) -> Result<StreamId>;
    /// Destroys a stream made by `create_stream` once its queued work is done; a failure in
    /// that work is reported by a later `synchronize`.
    fn destroy_stream(&self, stream: StreamId);
    /// Waits for the work queued on `stream`, surfacing a kernel failure.
    fn synchronize_stream(&self, stream: StreamId) -> Result<()>;
    /// Makes the work queued on `waiter` from now on wait for the work queued on `on` so far.
    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()>;
    /// Runs `f` between two timing points of `stream` (events on GPUs).
    fn time(&self, stream: StreamId, f: &mut dyn FnMut() -> Result<()>) -> Result<Duration>;
    /// Whether the device records `stream`'s work into a graph now, whoever began the capture
    /// (`cuStreamIsCapturing` on GPUs: rshmem's capture, or another library's on an adopted
    /// stream, e.g. `torch.cuda.graph`; on the simulator only rshmem's recordings exist, which
    /// `Shmem` knows itself: false).
    fn stream_is_captured(&self, stream: StreamId) -> Result<bool>;
}

/// Teams. `Shmem` passes only teams this PE holds (predefined, or split and not yet
/// destroyed) and arguments it has checked; see `team.rs`.
pub(crate) trait TeamBackend {
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
        for (axis, triplet) in split_2d_triplets(self.team_n_pes(parent), xrange) {
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
}

/// On-stream operations: queued on `stream` after the work queued there before (done at once
/// on the simulator). Addresses are checked by `Stream`.
pub(crate) trait OnStreamBackend {
    /// Copies `bytes` bytes from local symmetric `src` to symmetric `dest` on `pe` (`put`),
    /// or from symmetric `src` on `pe` to local symmetric `dest`.
    fn rma_on_stream(
        &self,
        stream: StreamId,
        put: bool,
        dest: u64,
        src: u64,
        bytes: usize,
        pe: usize,
    ) -> Result<()>;
    /// Copies `bytes` bytes from local symmetric `src` to symmetric `dest` on `pe`, then sets
    /// the symmetric `u64` at `sig` on `pe` to `value`: whoever sees the value sees the data.
    #[allow(clippy::too_many_arguments)]
    fn put_signal_on_stream(
        &self,
        stream: StreamId,
        dest: u64,
        src: u64,
        bytes: usize,
        sig: u64,
        value: u64,
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

/// Graph capture on one PE. `Shmem` runs at most one capture per PE at a time, ends every
/// capture it begins (also when the program's closure fails or panics), and refuses, while one
/// runs, the calls that would wait for the PE's streams; a backend still makes its waits (in
/// `Drop`s: buffers, modules, streams) correct during a capture.
pub(crate) trait GraphBackend {
    /// From now on the work queued on `stream` is recorded, not run; a stream that then waits
    /// for a recording stream (`stream_wait`) records too (a fork), until the capture ends.
    fn begin_capture(&self, stream: StreamId) -> Result<()>;
    /// Ends the capture begun on `stream`: every stream that recorded runs its work again
    /// (whatever the outcome). Returns the recorded work as a graph ready to launch, or why
    /// none could be made.
    fn end_capture(&self, stream: StreamId) -> Result<Box<dyn GraphExecBackend>>;
}

/// A captured graph, per backend: released on drop, after the work of its launches is done.
pub(crate) trait GraphExecBackend: Send + Sync {
    /// Queues the recorded work, with the arguments it was recorded with, on `stream` (of the
    /// PE the graph was captured on) after the work queued there before: on GPUs one graph
    /// launch, on the simulator the recorded operations in the order they were recorded, run
    /// to completion.
    ///
    /// # Safety
    ///
    /// What the recorded work points to must be valid for what it does with it, now as when
    /// it was recorded (the contract of `Graph::launch`).
    unsafe fn launch(&self, stream: StreamId) -> Result<()>;
}

/// One loaded module, per backend.
pub(crate) trait ModuleBackend: Send + Sync {
    /// Queues `call` on its stream: on GPUs the kernel with the call's parameter buffer, on
    /// the simulator the call's body on every simulated thread (run to completion).
    ///
    /// # Safety
    ///
    /// The call's arguments must be valid for what its kernel does with them, for as long as
    /// it runs (the contract of `Module::launch`).
    unsafe fn launch(&self, call: &KernelCall<'_>) -> Result<()>;
}
