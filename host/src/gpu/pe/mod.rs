//! One PE on one GPU: [`GpuPe`] implements the contract's `PeBackend` and the traits it
//! gathers, one file each, and `module::GpuModule` its `ModuleBackend`:
//!
//! * [`state`]: what the PE holds and shares with its modules (imports only [`fault`]);
//! * [`fault`]: the fault mailbox: where a faulting thread leaves its facts, read into the error;
//! * [`lifecycle`]: start on an initialised NVSHMEM, the verdict after the closure, teardown;
//! * [`streams`]: streams, waits, timing, and which kernel a fault is pinned on;
//! * [`alloc`]: the symmetric heap: the size exchange before each allocation, frees, copies;
//! * [`module`]: module load (code for this GPU, NVSHMEM version) and kernel launch;
//! * [`teams`]: team splits and queries; [`on_stream`]: puts, gets, barriers, collectives;
//! * [`graph`]: graph capture (CUDA's stream capture) and the captured graphs;
//! * [`watchdog`]: the hang watchdog, and what the PE had pending when it was ended;
//!   [`term`]: its handle and the SIGTERM self-pipe.
//!
//! Threading: NVSHMEM is initialised `NVSHMEM_THREAD_SERIALIZED`, so every NVSHMEM call is made
//! under one lock (which also guards the heap accounting); CUDA handles bind the PE's context
//! on whichever thread uses them.
//!
//! Streams: the PE's own stream (`StreamId::PE`, where heap copies and the allocation's
//! barrier go) and those the program makes (`create_stream`), kept by id.
//!
//! Failures of device code surface asynchronously, and, the context being dead from then on,
//! on whichever stream is waited for next; the PE remembers the last kernel queued on each
//! stream since that stream was last synchronised without error and names it in
//! [`Error::KernelFailed`](crate::Error::KernelFailed) (with those in flight on its other
//! streams, which may be the culprits).

mod alloc;
mod fault;
mod graph;
mod lifecycle;
mod module;
mod on_stream;
mod state;
mod streams;
mod teams;
mod term;
mod watchdog;

pub(crate) use state::GpuPe;
