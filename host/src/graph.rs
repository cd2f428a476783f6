//! Graphs: a stream's work recorded once ([`Stream::capture`]) and launched many times
//! ([`Graph::launch`]), at the cost of one launch (CUDA graphs on GPUs). A small collective
//! or a chain of short kernels spends most of its time being launched; a graph pays that once.
//!
//! ```no_run
//! # use rshmem_host::{LaunchConfig, Module, Shmem};
//! # mod k { pub struct scale; impl rshmem_host::Kernel for scale {
//! #     const NAME: &'static str = "scale"; type Args = (*mut f32, u32, f32);
//! #     unsafe fn run_sim(_: Self::Args) {} } }
//! # fn f(shmem: &Shmem, module: &Module<'_>) -> rshmem_host::Result<()> {
//! let stream = shmem.new_stream()?;
//! let mut x = shmem.alloc_from(&[1.0f32; 1000])?;
//! let cfg = LaunchConfig::for_num_elems(1000, 256);
//! let graph = stream.capture(|| {
//!     // Recorded, not run: the arguments are kept as they are now.
//!     // SAFETY: `x` holds 1000 f32s.
//!     unsafe { module.launch_on::<k::scale>(&stream, cfg, (x.as_mut_ptr(), 1000, 2.0))? };
//!     stream.barrier_all() // NVSHMEM's on-stream barrier, recorded too
//! })?;
//! for _ in 0..10 {
//!     // SAFETY: `x` is still allocated (it outlives the graph).
//!     unsafe { graph.launch(&stream)? };
//! }
//! assert!(x.to_vec()?.iter().all(|&v| v == 1024.0));
//! # Ok(()) }
//! ```
//!
//! # What a capture records
//!
//! Everything queued on the capturing stream while the closure runs: kernel launches
//! ([`Module::launch_on`](crate::Module::launch_on)) with their arguments' values at that
//! moment, and on-stream operations ([`Stream::put`], [`Stream::get`],
//! [`Stream::barrier_all`], [`Stream::barrier`], and the collectives `broadcast`, `fcollect`,
//! `alltoall`, `reduce`, `reducescatter`). Work forks to other streams of the PE and joins back
//! with [`Stream::wait_for`]: a stream that waits for a recording stream records too, and must
//! be joined back (the capturing stream waits for it) before the closure returns. Work queued
//! on streams that do not record runs as usual.
//!
//! Arguments are recorded by value: what a kernel finds behind a pointer is read at each
//! launch (fresh data in the same buffers is what a graph is for), but a value computed on the
//! host per call — a sequence number, the parity of a double buffer, a flag value — is the
//! same at every launch of the graph. Work meant to run in graphs keeps such state on the
//! device (a counter the kernel advances), and a library whose recorded work relies on host
//! state hands it to the graph with [`Stream::keep_with_graph`] (rshmem's GEMM pins the
//! tensor-map slot its launch reads), or refuses to record (checking
//! [`Stream::is_capturing`]).
//!
//! Refused while a capture runs on the PE, with [`Error::Capture`] naming the call and what to
//! do instead (nothing is queued, and the capture goes on): what waits for the PE's streams or
//! runs on the host — [`Shmem::synchronize`], [`Shmem::barrier_all`], host copies
//! ([`SymBuffer::to_vec`](crate::SymBuffer::to_vec),
//! [`copy_from_host`](crate::SymBuffer::copy_from_host)), allocations, [`Shmem::load`], team
//! splits —, [`Stream::synchronize`] and [`Stream::time`] on a recording stream, a recording
//! stream waiting for one that does not record, a second capture, and a graph launched on a
//! recording stream. rshmem's ops refuse what they cannot record (the GEMM's first call on new
//! operands fills a tensor-map slot from the host: call it once before capturing it).
//!
//! The capture always ends when the closure returns, with an error or not, or panics: the
//! streams run their work again, and the error (or panic) is the caller's. A capture whose
//! forks were not joined back ends without a graph ([`Error::Capture`] names the streams).
//!
//! # Lifetimes
//!
//! A [`Graph`] borrows its PE's [`Shmem`] (Rust ends it before the runtime), keeps the modules
//! whose kernels it launches loaded (dropping a [`Module`](crate::Module) before the graph is
//! fine), and checks at each launch that the split teams its collectives use are still held.
//! What Rust cannot see is what the recorded arguments point to: kernel arguments are
//! addresses, so [`Graph::launch`] is `unsafe`, and its contract is the launch's — every buffer
//! the recorded work touches must still be allocated (drop buffers only after the graph's last
//! launch) and hold what the kernels expect, at each launch.
//!
//! ```compile_fail
//! # use rshmem_host::{Graph, Shmem};
//! // A graph cannot leave the PE's closure: it borrows the PE's `Shmem`.
//! fn escape(shmem: &Shmem) -> Graph<'static> {
//!     shmem.stream().capture(|| Ok(())).unwrap()
//! }
//! ```
//!
//! # On GPUs
//!
//! The capture is CUDA's stream capture (`cuStreamBeginCapture`, relaxed mode: rshmem refuses
//! the host calls itself), instantiated once (`cuGraphInstantiate`) and launched with
//! `cuGraphLaunch`; dropping the graph waits for the PE's streams, then destroys it. NVSHMEM's
//! on-stream calls are capturable (NVSHMEM 3.4.5 queues puts and gets between mapped PEs as
//! device copies, else as a proxy kernel, and barriers and collectives as kernels that check
//! for a capture and adapt) — except `nvshmemx_barrier_all_on_stream` in NVSHMEM's limited
//! multi-process-per-GPU mode (several PEs on one GPU without MPS), which meets the PEs
//! sharing the GPU on the host, at the call: refused there ([`Error::Unsupported`]). NVSHMEM
//! loads and sizes a collective's kernel at its first use: issue each kind once outside the
//! capture first (as for kernels that must run at once, see [`crate::stream`]). A kernel
//! fault in a graph is pinned on the graph, naming its kernels.
//!
//! # On the simulator
//!
//! The capture records each operation (its arguments copied) instead of running it; a launch
//! of the graph runs the recorded operations to completion, in the order they were recorded
//! (one of the orders a GPU may run the graph in), before it returns.

use crate::capture::CaptureBook;
use crate::contract::{Error, GraphExecBackend, Result, StreamId};
use crate::shmem::Shmem;
use crate::stream::Stream;
use rshmem_device::shmem::Team;
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Work recorded from a stream by [`Stream::capture`], launched with [`Graph::launch`] on any
/// stream of the same PE, any number of times. Released on drop (after the work of its
/// launches is done). See the [module docs](crate::graph).
pub struct Graph<'s> {
    shmem: &'s Shmem,
    /// Declared before what the recorded work relies on, so released first.
    inner: Box<dyn GraphExecBackend>,
    operations: usize,
    teams: Vec<Team>,
    _holds: Vec<Box<dyn Any + Send + Sync>>,
}

impl<'s> Stream<'s> {
    /// Records the work that `f` queues on this stream (and on the streams that fork from it)
    /// into a [`Graph`], instead of running it. See the [module docs](crate::graph) for what
    /// is recorded, what is refused, and how the capture ends when `f` fails or panics.
    pub fn capture(&self, f: impl FnOnce() -> Result<()>) -> Result<Graph<'s>> {
        const CALL: &str = "Stream::capture";
        {
            let mut book = self.shmem.capture_book();
            if let Some(running) = &*book {
                return Err(Error::Capture {
                    call: CALL,
                    message: format!(
                        "PE {} already captures a graph on its stream {}: captures do not nest; \
                         capture on stream {} after that capture's closure has returned",
                        self.shmem.my_pe(),
                        running.origin().0,
                        self.id.0
                    ),
                });
            }
            self.shmem.inner.begin_capture(self.id)?;
            *book = Some(CaptureBook::new(self.id));
        }
        // Ends the capture however `f` leaves: returning or unwinding.
        let outcome = catch_unwind(AssertUnwindSafe(f));
        let (book, unjoined, ended) = self.end_capture();
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(panic) => resume_unwind(panic),
        };
        outcome?;
        if !unjoined.is_empty() {
            let names: Vec<String> = unjoined.iter().map(|s| s.0.to_string()).collect();
            return Err(Error::Capture {
                call: CALL,
                message: format!(
                    "stream(s) {} forked from the capture (waited for a recording stream) but \
                     were not joined back: make the capturing stream {} wait for each of them \
                     (Stream::wait_for) after its last work, before the closure returns",
                    names.join(", "),
                    self.id.0
                ),
            });
        }
        let inner = ended?;
        let recorded = book.into_recorded();
        Ok(Graph {
            shmem: self.shmem,
            inner,
            operations: recorded.operations,
            teams: recorded.teams,
            _holds: recorded.holds,
        })
    }

    /// Ends the backend's capture and takes the bookkeeping (the capture is over on return):
    /// also the streams that forked and were not joined back (they are joined now, so that the
    /// backend ends the capture cleanly whatever the closure left; the graph is not used).
    fn end_capture(
        &self,
    ) -> (
        CaptureBook,
        Vec<StreamId>,
        Result<Box<dyn GraphExecBackend>>,
    ) {
        let mut book = self.shmem.capture_book();
        let unjoined = book.as_ref().map(CaptureBook::unjoined).unwrap_or_default();
        for &stream in &unjoined {
            // A failure here shows as the backend's failure to end the capture.
            let _ = self.shmem.inner.stream_wait(self.id, stream);
        }
        let ended = self.shmem.inner.end_capture(self.id);
        let book = book
            .take()
            .expect("rshmem: the capture's bookkeeping vanished while it ran");
        (book, unjoined, ended)
    }

    /// Whether this stream records a graph now: it began a capture ([`Stream::capture`]) or
    /// forked from one ([`Stream::wait_for`] on a recording stream), and the capture runs.
    pub fn is_capturing(&self) -> bool {
        self.shmem
            .capture_book()
            .as_ref()
            .is_some_and(|book| book.records(self.id))
    }

    /// Whether this stream's work is recorded into a graph now, by rshmem's capture
    /// ([`Stream::capture`]) or by one rshmem did not begin (CUDA's stream capture of an
    /// adopted stream: `torch.cuda.graph` around rshmem calls). A library checks it before
    /// queueing work that involves streams of its own, which a capture it did not begin cannot
    /// reach (rshmem's split-K GEMMs record the unsplit kernel instead).
    pub fn is_recorded(&self) -> Result<bool> {
        if self.is_capturing() {
            return Ok(true);
        }
        self.shmem.inner.stream_is_captured(self.id)
    }

    /// While this stream records a graph: keeps `value` alive as long as that graph (it is
    /// dropped with the [`Graph`]). For libraries whose recorded work relies on host-side
    /// state they must not reuse while a graph may still launch it (rshmem's GEMM pins the
    /// tensor-map slot its recorded launch reads). An [`Error::Capture`] if the stream does
    /// not record.
    pub fn keep_with_graph(&self, value: impl Any + Send + Sync) -> Result<()> {
        let mut book = self.shmem.capture_book();
        match &mut *book {
            Some(book) if book.records(self.id) => {
                book.hold(Box::new(value));
                Ok(())
            }
            _ => Err(Error::Capture {
                call: "Stream::keep_with_graph",
                message: format!(
                    "stream {} of PE {} does not record a graph: call it inside \
                     Stream::capture's closure, on the capturing stream or one forked from it",
                    self.id.0,
                    self.shmem.my_pe()
                ),
            }),
        }
    }
}

impl<'s> Graph<'s> {
    /// Queues the recorded work on `stream` (a stream of the PE the graph was captured on,
    /// not one that records), after the work queued there before; returns once queued, like a
    /// kernel launch. On the simulator the work runs to completion first.
    ///
    /// Refused ([`Error::Capture`]) if a split team the recorded collectives use is no longer
    /// held (its [`TeamHandle`](crate::TeamHandle) was dropped).
    ///
    /// # Safety
    ///
    /// The contract of [`Module::launch`](crate::Module::launch) for every recorded launch,
    /// at each launch of the graph, with the arguments as they were recorded: every buffer
    /// the recorded work reads or writes (kernel arguments, on-stream ranges) must still be
    /// allocated and valid for what the work does with it, and recorded collectives must be
    /// launched on every PE of their team, in the same order as the PEs' other collectives.
    pub unsafe fn launch(&self, stream: &Stream<'_>) -> Result<()> {
        const CALL: &str = "Graph::launch";
        stream.same_pe(CALL, self.shmem)?;
        self.shmem.refuse_recording(
            CALL,
            stream.id,
            "graphs do not nest: launch the graph on a stream that does not record, or after \
             the capture",
        )?;
        if let Some(team) = self.teams.iter().find(|&&t| !self.shmem.holds(t)) {
            return Err(Error::Capture {
                call: CALL,
                message: format!(
                    "the graph's recorded collectives use team {}, whose TeamHandle was dropped \
                     after the capture: keep the handle as long as the graph is launched",
                    team.raw()
                ),
            });
        }
        // SAFETY: this function's contract.
        unsafe { self.inner.launch(stream.id) }
    }

    /// How many launches and on-stream operations were recorded (forks and joins not
    /// counted).
    pub fn operations(&self) -> usize {
        self.operations
    }

    /// The PE the graph belongs to.
    pub fn shmem(&self) -> &'s Shmem {
        self.shmem
    }
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("pe", &self.shmem.my_pe())
            .field("operations", &self.operations)
            .finish()
    }
}
