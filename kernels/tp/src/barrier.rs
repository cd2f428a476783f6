//! The barrier every fused call starts with, and why it makes reusing buffers across calls
//! safe.
//!
//! **What it orders.** Each PE launches [`barrier`] on its stream before anything of the call
//! that writes to a peer (the all-gather's copies of A, the reduce-scatter's partial tiles).
//! Rank `r`'s barrier sets `flags[barrier_slot(r)]` on every peer to the epoch `e`, then
//! waits until every peer has set its own slot here. A kernel starts after the work queued
//! before it on its stream has finished, so when rank `q` passes its barrier of call `e`,
//! every peer `p` has finished everything it queued before call `e`: its GEMM of call
//! `e - 1` (which read the rows of A that peers copy into its buffer, and the partial tiles
//! peers stored into its workspace), its reduce-scatter fix-up, and whatever the program
//! queued in between (reads of the gathered A, say). Only then does `q` write into `p`'s
//! buffers for call `e`: its copy-engine pushes are queued behind the barrier (the
//! all-gather's side stream waits for it) and its GEMM is launched after it. The same holds
//! between two launches of a graph that recorded fused calls, and between a graph launch and
//! an eager call: a graph's barrier node runs after the work queued before the launch on its
//! stream and after the graph's earlier nodes, and the next work on that stream waits for the
//! whole graph (the side stream's branch was joined back into it).
//!
//! **The epoch, counted on the device.** Thread 0 first adds 1 to this PE's call counter
//! (`flags[EPOCH]`, which nothing else writes) and every thread uses the new value, `e`, as
//! the call's epoch; the call's later kernels read it there ([`TpCall::load_epoch`]). Every PE
//! runs the same sequence of fused calls on its `Ops`, eager or in graphs (the calls are
//! collective), so every PE's counter gives the same `e` to the same call. A graph recorded a
//! call's kernels with the host's arguments, which do not change between launches; the
//! counter does: launch `i + 1` of a graph is a new call with a new epoch, just as the next
//! eager call is, and eager calls and graph launches of the same `Ops` number their calls in
//! one sequence, in the order the PE runs them. Within a call the counter is not written
//! again: the next barrier runs after this call's kernels (the calls of an `Ops` run one
//! after another).
//!
//! **Why the barrier and tile flags need no reset.** A slot only grows: call `e` sets `e`, and
//! the waits are for `>= e`. A peer already in call `e + 1` may set `e + 1` while this PE
//! still waits in call `e`; that satisfies the wait, which is right, since the peer can only
//! be in call `e + 1` after passing barrier `e`, i.e. after this PE set its slot for call
//! `e`. Conversely no PE takes a flag of call `e + 1` for one of call `e`: a flag set before
//! call `e` holds an epoch below `e`.
//!
//! **Why the arrival flags are cleared here.** The all-gather's copy engine writes
//! [`flags::ARRIVED`] (a value fixed when the push is queued: a graph replays it) into the
//! target's `arrived_slot(q)`, so those flags cannot count calls and are cleared by their
//! reader instead: thread `q` of this PE's barrier clears `arrived_slot(q)` before it signals
//! rank `q`. Not too early: the last write into that slot, rank `q`'s push of an earlier
//! all-gather call, was seen by this PE's GEMM of that call (its tiles cover every row, so it
//! waited for every peer's chunk), which finished before this barrier. Not too late: rank `q`
//! pushes for this call only after its barrier has seen this thread's signal, which a
//! system-scope release orders after the clearing store, and its copy engine after its
//! barrier kernel (stream order on its side stream). A call that pushes nothing (the
//! reduce-scatter) clears them all the same.
//!
//! **Peers must be mapped.** The barrier also checks that every peer's memory is directly
//! addressable (`shmem::ptr`), which the reduce-scatter's epilogue stores rely on, and traps
//! with a message naming the PE otherwise (PEs on other nodes).
//!
//! **Why it cannot deadlock.** It waits only for the other PEs' barriers of the same call,
//! which each PE reaches after its own earlier work; nothing in a call waits for a later call.
//!
//! ```ignore
//! #[kernel]
//! pub unsafe fn tp_barrier(flags: *mut u64, call: TpCall) {
//!     // SAFETY: one block of at least `call.size` threads; the flags buffer (the contract).
//!     unsafe { rshmem_tp::barrier::barrier(flags, call) }
//! }
//! ```

use crate::call::TpCall;
use crate::flags;
use rshmem_coll::signal;
use rshmem_device::atomic::{self, Ordering, Sys};
use rshmem_device::{device_assert, shmem, thread};

/// Threads the barrier needs in its one block: one per rank (ranks past the team's size do
/// nothing).
pub const fn threads(size: u32) -> u32 {
    size.next_multiple_of(32)
}

/// The call's barrier (see the module docs): advances this PE's call counter, clears the
/// arrival flags, then signals every peer and waits for theirs. Thread `i` of the block
/// signals rank `i` and waits for it.
///
/// # Safety
///
/// One block of at least [`threads`]`(call.size)` threads; `flags` is this PE's copy of the
/// symmetric flag buffer of at least [`flags::words`] words for the team; every rank of the
/// team launches the barrier of the same call (the same call of its sequence), after every
/// kernel of its previous fused call in stream order.
#[inline(always)]
pub unsafe fn barrier(flags: *mut u64, call: TpCall) {
    let i = thread::thread_idx_x();
    let counter = flags.wrapping_add(flags::EPOCH);
    if i == 0 {
        // SAFETY: the counter lies in the buffer; only this PE's barriers write it, one at a
        // time (the contract), and this thread alone in this one.
        unsafe { counter.write_volatile(counter.read_volatile() + 1) };
    }
    // Every thread reads the new count after thread 0 wrote it.
    thread::sync_threads();
    // SAFETY: as above; the block barrier ordered thread 0's write before this read.
    let epoch = unsafe { counter.read_volatile() };
    if i >= call.size || i == call.rank {
        return;
    }
    // The fused ops store to and read from peers through their mappings (`shmem::ptr`).
    // SAFETY: `flags` is symmetric; rank i is a PE of the job.
    let mapped = unsafe { shmem::ptr(flags, call.world_pe(i)) };
    device_assert!(
        !mapped.is_null(),
        "rshmem's fused tensor-parallel ops need every PE of the team mapped (one node: NVLink \
         or one GPU); PE %d is reachable only through the network from PE %d",
        call.world_pe(i),
        shmem::my_pe()
    );
    let pe = call.world_pe(i);
    // SAFETY: slots `rank` and `i` lie in the buffer (`i`, `rank` < size), which only signals
    // write (and this thread clears rank i's arrival slot, before its release to rank i, which
    // pushes into it only after it has seen that release); rank `i` is a PE of the job and sets
    // our slot `i` in its own barrier of this call.
    unsafe {
        let arrived = flags.add(flags::arrived_slot(call.size, i));
        atomic::store::<Sys, u64>(arrived, 0, Ordering::Relaxed);
        signal::signal(flags.add(flags::barrier_slot(call.rank)), epoch, pe);
        signal::wait(flags.add(flags::barrier_slot(i)), epoch, pe);
    }
}
