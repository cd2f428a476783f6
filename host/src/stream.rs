//! Streams: a PE's queues of device work.
//!
//! Work queued on one stream runs in the order it was queued; work on different streams of a
//! PE may run at the same time, which is how a program overlaps independent kernels (a
//! compute kernel beside a communication kernel, two halves of a pipeline). Every PE has its
//! own stream, [`Shmem::stream`], where [`Module::launch`](crate::Module::launch) and the
//! `Shmem::*_on_stream` operations queue; [`Shmem::new_stream`] makes more, each destroyed
//! when its [`Stream`] is dropped (after its queued work is done).
//!
//! ```no_run
//! # use rshmem_host::{LaunchConfig, Shmem, Team};
//! # fn f(shmem: &Shmem, module: &rshmem_host::Module<'_>) -> rshmem_host::Result<()> {
//! let comm = shmem.new_stream()?;
//! let x = shmem.alloc_zeroed::<f32>(1 << 20)?;
//! let sum = shmem.alloc_zeroed::<f32>(1 << 20)?;
//! // ... launch the kernel that writes `x` on the PE's stream, then:
//! comm.wait_for(&shmem.stream())?; // `comm`'s later work waits for what is queued there
//! comm.reduce(Team::WORLD, rshmem_host::ReduceOp::Sum, &sum, &x)?;
//! // ... meanwhile, independent kernels on the PE's stream overlap the reduction.
//! comm.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! # Ordering across streams and PEs
//!
//! Nothing orders two streams unless the program says so: [`Stream::wait_for`] (an event on
//! GPUs), [`Stream::synchronize`], or [`Shmem::synchronize`] (every stream of the PE).
//! Buffer copies to and from the host ([`crate::SymBuffer::to_vec`]) wait for every stream of
//! the PE. Collectives over a team (barriers, reductions, ... whether queued from the host or
//! called in kernels) must be issued in the same order on every member and must not run at
//! the same time as another collective over the same team, whichever streams they are on: that
//! is NVSHMEM's rule, and two streams do not lift it.
//!
//! # Kernels that wait for each other
//!
//! CUDA does not promise that work on two streams runs at once, but on a GPU with room for
//! both it does, and fused communication kernels rely on it (a consumer spinning on what a
//! producer on another stream writes). One thing breaks it: CUDA loads a kernel's code lazily
//! (the default since CUDA 12.2), and loading may wait for the whole context, i.e. for the
//! kernel already running. [`Shmem::load`] therefore loads the code of every kernel of the
//! image up front; load the modules before launching such pairs. NVSHMEM's own on-stream
//! collectives are kernels of its host library, loaded at their first use: issue one of each
//! kind before a kernel that waits for it is running, or run with `CUDA_MODULE_LOADING=EAGER`.
//!
//! # Graphs
//!
//! A stream's work can be recorded once and launched many times for the price of one launch:
//! [`Stream::capture`] records what its closure queues (kernel launches, on-stream operations,
//! and other streams' work forked with [`Stream::wait_for`] and joined back) into a
//! [`Graph`](crate::Graph), which [`Graph::launch`](crate::Graph::launch) queues on any stream
//! of the PE. See [`crate::graph`].
//!
//! ```no_run
//! # use rshmem_host::Shmem;
//! # fn f(shmem: &Shmem) -> rshmem_host::Result<()> {
//! let stream = shmem.new_stream()?;
//! let graph = stream.capture(|| stream.barrier_all())?; // recorded, not run
//! // SAFETY: the graph's work (one barrier) touches no buffer; every PE launches it.
//! unsafe { graph.launch(&stream)? };
//! # Ok(()) }
//! ```
//!
//! # On the simulator
//!
//! The simulator runs every launch and on-stream operation to completion when it is queued, so
//! every stream's work runs in issue order — one of the schedules a GPU may pick (a capture
//! records instead, and a graph's launch runs what it recorded). A program that needs two
//! kernels to run at the same time (one waits for what the other does) is wrong on GPUs too
//! (CUDA does not promise concurrency), and hangs, or times out, there.

use crate::contract::{Error, Result, StreamId};
use crate::shmem::Shmem;
use std::time::Duration;

/// A queue of device work on one PE: kernel launches ([`crate::Module::launch_on`]) and
/// on-stream operations (puts, gets, barriers, collectives), run in the order queued.
///
/// Made by [`Shmem::new_stream`] (destroyed on drop, after its queued work has finished) or
/// [`Shmem::stream`] (a handle to the PE's own stream). Borrows the PE's [`Shmem`], so it
/// cannot outlive the runtime; it belongs to that PE and is refused by another PE's calls.
pub struct Stream<'s> {
    pub(crate) shmem: &'s Shmem,
    pub(crate) id: StreamId,
}

impl Shmem {
    /// The PE's own stream: where [`Module::launch`](crate::Module::launch), the
    /// `*_on_stream` operations and [`Shmem::time`] queue their work. Dropping this handle
    /// does nothing.
    pub fn stream(&self) -> Stream<'_> {
        Stream {
            shmem: self,
            id: StreamId::PE,
        }
    }

    /// Runs `f` and returns how long the PE's stream took for the work it launched (CUDA
    /// events on GPUs, wall time on the simulator): [`Stream::time`](crate::Stream::time) on
    /// [`Shmem::stream`].
    pub fn time(&self, f: impl FnMut() -> Result<()>) -> Result<Duration> {
        self.stream().time(f)
    }

    /// Makes a new stream of this PE (`cuStreamCreate`, non-blocking). Its work may overlap
    /// the work of the PE's other streams; see the [module docs](crate::stream).
    pub fn new_stream(&self) -> Result<Stream<'_>> {
        Ok(Stream {
            shmem: self,
            id: self.inner.create_stream()?,
        })
    }
}

impl<'s> Stream<'s> {
    /// The PE this stream belongs to.
    pub fn shmem(&self) -> &'s Shmem {
        self.shmem
    }

    /// A key naming this stream among its PE's streams: equal for every handle of the same
    /// stream, never given to a later stream of the PE (stream numbers are not reused). For
    /// state kept per stream beside rshmem: `rshmem::ops` keeps each stream's collective
    /// workspace under it.
    pub fn key(&self) -> StreamKey {
        StreamKey(self.id.0)
    }

    /// Whether this is the PE's own stream ([`Shmem::stream`]).
    pub fn is_pe_stream(&self) -> bool {
        self.id == StreamId::PE
    }

    /// Waits for the work queued on this stream; a kernel failure surfaces here, naming it.
    /// The PE's other streams are not waited for.
    pub fn synchronize(&self) -> Result<()> {
        self.shmem.refuse_recording(
            "Stream::synchronize",
            self.id,
            "its work runs only when the graph is launched: synchronize after Graph::launch",
        )?;
        self.shmem.inner.synchronize_stream(self.id)
    }

    /// Makes the work queued on this stream from now on wait until the work queued on
    /// `other` so far has finished (`cuEventRecord` + `cuStreamWaitEvent`); returns at once.
    /// Both streams must belong to the same PE.
    ///
    /// During a graph capture ([`Stream::capture`]) this is how work forks and joins: a stream
    /// that waits for a recording stream records too from then on (a fork), and must be
    /// joined back (the capturing stream waits for it) before the capture ends; a recording
    /// stream cannot wait for one that does not record.
    pub fn wait_for(&self, other: &Stream<'_>) -> Result<()> {
        const CALL: &str = "Stream::wait_for";
        self.same_pe(CALL, other.shmem)?;
        if other.id == self.id {
            return Ok(());
        }
        // Held across the backend's wait: checked before it orders anything, noted only if it
        // did.
        let mut book = self.shmem.capture_book();
        if let Some(book) = &*book {
            book.check_wait(self.id, other.id)
                .map_err(|message| Error::Capture {
                    call: CALL,
                    message,
                })?;
        }
        self.shmem.inner.stream_wait(self.id, other.id)?;
        if let Some(book) = &mut *book {
            book.note_wait(self.id, other.id);
        }
        Ok(())
    }

    /// Runs `f` and returns how long this stream took for the work `f` queued on it (CUDA
    /// events on GPUs, wall time on the simulator). Waits for that work.
    pub fn time(&self, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
        self.shmem.refuse_recording(
            "Stream::time",
            self.id,
            "its work runs only when the graph is launched: time the graph's launch instead \
             (stream.time(|| unsafe { graph.launch(&stream) }))",
        )?;
        self.shmem.inner.time(self.id, &mut f)
    }

    /// Refuses `shmem` unless it is the PE this stream belongs to: a stream is a handle of one
    /// PE (one GPU context), meaningless to another.
    pub(crate) fn same_pe(&self, call: &'static str, shmem: &Shmem) -> Result<()> {
        if std::ptr::eq(self.shmem, shmem) {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            call,
            message: format!(
                "a stream of PE {} was used with PE {}: each PE queues work on its own streams",
                self.shmem.my_pe(),
                shmem.my_pe()
            ),
        })
    }
}

/// What [`Stream::key`] returns: an opaque, comparable, hashable name of one of a PE's
/// streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey(u32);

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        if self.id != StreamId::PE {
            self.shmem.inner.destroy_stream(self.id);
        }
    }
}

impl std::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("pe", &self.shmem.my_pe())
            .field("id", &self.id.0)
            .finish()
    }
}
