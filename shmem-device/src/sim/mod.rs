//! The CPU simulator, device side: runs kernels compiled for the host, one host thread per
//! GPU thread and one group of threads per PE, over symmetric heaps that are host memory.
//!
//! rshmem-host drives it (its `sim` module starts the PEs and launches kernels); kernels
//! reach it through the ordinary device API. The public items here are simulator
//! internals for rshmem-host, not an API for kernels.
//!
//! # What is modelled
//!
//! * **World and PEs.** A [`World`] holds `npes` PEs, each with a [`SymHeap`]: one zeroed host
//!   allocation of the same size on every PE (rshmem-host: `RSHMEM_SIM_HEAP`). Allocation is
//!   collective and deterministic, so a buffer has the same offset in every PE's heap, and a
//!   remote access translates a local symmetric address by offset:
//!   `remote = base(pe) + (addr - base(my_pe))`.
//! * **Launch.** [`World::launch`] runs every thread of every block at once, each on its own
//!   host thread with its coordinates in a thread-local, so cooperative launches and
//!   kernels that wait for other blocks or PEs work (the host side caps the threads per
//!   launch). Dynamic shared memory is a zeroed allocation per block.
//! * **Barriers.** `sync_threads` is a barrier of the block; warp-scope calls use a barrier
//!   of the warp (32 consecutive thread ranks). A thread that leaves the kernel while others
//!   wait in a barrier it never reaches makes the barrier fail as *divergent*, naming both.
//! * **PE-wide calls.** `barrier_all`/`sync_all` meet one participant from every PE: the
//!   calling thread (`Thread`), lane 0 of the calling warp (`Warp`) or thread 0 of the
//!   calling block (`Block`); warp and block calls are bracketed by barriers of the group,
//!   so every member returns after the PEs have met, as on a GPU. As with NVSHMEM, one
//!   thread, warp or block per PE calls them; a second caller entering while the first
//!   waits is reported. Kernel barriers and host-side barriers are separate rendezvous
//!   (NVSHMEM's would pair with each other; a program that relies on that fails here).
//! * **Teams.** `WORLD`, `SHARED` and `NODE` hold every PE (all share memory here) and meet
//!   in the PE-wide rendezvous. Split teams are strided ranges of PEs in the job's table,
//!   made by the host's collective splits and numbered from [`FIRST_SPLIT_TEAM`] in the
//!   order the splits complete (the same handle on every member; NVSHMEM's handles are per
//!   PE, so a program must pass each PE its own). Each split team's barriers and collectives
//!   meet in a rendezvous of its own, so disjoint teams proceed independently. Using a
//!   handle the job never made, a team the PE is not a member of, or one it destroyed fails
//!   the thread, naming it; a collective waiting for a member that destroyed the team fails.
//! * **Collectives** (kernels' and the host's on-stream ones) read the members' heaps
//!   directly between meetings of the team, with the RMA checks on every span.
//! * **RMA.** Every put and get (blocking or `_nbi`) is performed completely before the call
//!   returns. Warp and block variants are checked to be called with the same arguments by
//!   every member, performed once by lane/thread 0 and bracketed by barriers of the group,
//!   so their results equal the GPU's. `p`/`g` are single atomic accesses.
//!
//! # Memory ordering
//!
//! Sequentially consistent per operation: `p`/`g` are `SeqCst` atomic accesses; a byte copy
//! (`putmem`, `getmem`, typed `put`/`get`) is made of relaxed atomic loads and stores with a
//! `SeqCst` fence before and after, so its bytes may land in any order but the operation as a
//! whole is ordered with everything else the thread does. `fence` and `quiet` are `SeqCst`
//! fences (operations are already complete when they return). Barriers synchronise through
//! mutexes. A GPU is weaker: `_nbi` operations complete only at `quiet`, `fence` orders only
//! per target PE, and plain stores can be seen late by peers. Code correct on a GPU is
//! correct here; code that forgets a `fence` or `quiet` may pass here and fail on a GPU.
//!
//! Concurrent accesses through the simulator never race in Rust's sense. A kernel's own
//! loads and stores through raw pointers are plain accesses, exactly as it wrote them:
//! racing them with a peer's put is a data race, as it is on a GPU.
//!
//! # Checks (a GPU would fault, hang or corrupt memory)
//!
//! The launch fails with the kernel, PE, block and thread named when a thread: passes a PE
//! outside `0..n_pes()`; passes a symmetric address that is not inside one live symmetric
//! allocation, or a range that overruns it; passes a misaligned address to `p`/`g`; calls a
//! warp or block variant with arguments differing from the group's; waits in a divergent
//! barrier; panics. A failed kernel poisons the job's device-side barriers, which then fail
//! on every PE instead of waiting for a thread that is gone (on a GPU the trapped kernel
//! leaves the context unusable; here host-side calls keep working).
//!
//! # Files, bottom up
//!
//! Each imports only files of the lines above its own (and `crate::contract`); within the
//! device side, `rma`, `atomic` and `team` serve the others, never the reverse:
//!
//! * `mem` (atomic byte copies), `sym_heap` (one PE's heap), `barrier` (group barriers);
//! * `world` (every PE of the run: heaps, teams, rendezvous, failures);
//! * `launch` (one launch's state), `context` (the current simulated thread), `run` (running
//!   a grid), `export` (kernels of a simulator library, loaded at run time);
//! * `scope` (calls made by a warp or block, PE-wide meetings);
//! * the device side, one file per family: `device` (threads, ordering, byte-wise RMA),
//!   `rma`, `amo`, `atomic`, `wait`, `coll`, `team`, `warp`, `printf` — what
//!   `crate::backend` calls;
//! * `host` (rshmem-host's side: host-initiated puts, gets and collectives).
//!
//! # Limits
//!
//! Each simulated thread is a host thread with a 512 KiB stack (address space, mostly
//! untouched): starting one costs tens of microseconds, so a 4096-thread launch takes a few
//! hundred milliseconds, a block-wide barrier some microseconds per thread, and grids of
//! millions of threads are out of reach. Warps do not run in lockstep: each shuffle or vote is
//! a meeting of the whole warp (every existing lane must call it; partial masks fail). Waits
//! (`wait_until`, `signal_wait_until`, ...) poll with back-off and fail when a PE or kernel of
//! the job has failed, or after `RSHMEM_SIM_WAIT_TIMEOUT` seconds (default 120); a kernel
//! spinning on plain loads of memory a failed thread should have written cannot be
//! interrupted. A panic in a kernel is
//! caught only when panics unwind (the default for host builds).

pub(crate) mod amo;
pub(crate) mod atomic;
mod barrier;
pub(crate) mod coll;
mod context;
pub(crate) mod cvt;
pub(crate) mod device;
mod export;
pub(crate) mod hopper;
mod host;
mod launch;
pub(crate) mod math;
mod mem;
pub(crate) mod mma;
mod printf;
pub(crate) mod rma;
mod run;
mod scope;
mod sym_heap;
pub(crate) mod team;
pub(crate) mod wait;
mod warp;
mod world;

pub use coll::{Coll, Reducible};
pub use export::{SimExport, Text, ABI as SIM_ABI, SYMBOL_PREFIX as SIM_SYMBOL_PREFIX};
pub use hopper::encode_tensor_map;
pub use host::HostOpError;
pub use launch::{LaunchFailure, LaunchSpec};
pub(crate) use printf::printf;
pub use printf::render_packed;
pub use sym_heap::{HeapError, HeapSummary, SymHeap, ALLOC_ALIGN};
pub use world::{CollectiveError, Split, TeamShape, World, FIRST_SPLIT_TEAM};

pub use crate::contract::WARP_SIZE;
