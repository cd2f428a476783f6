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
//! all-gather's side stream waits for it) and its GEMM is launched after it.
//!
//! **Why flags need no reset.** A slot only grows: call `e` sets `e`, and the waits are for
//! `>= e`. A peer already in call `e + 1` may set `e + 1` while this PE still waits in call
//! `e`; that satisfies the wait, which is right, since the peer can only be in call `e + 1`
//! after passing barrier `e`, i.e. after this PE set its slot for call `e`.
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
use rshmem_device::{device_assert, shmem, thread};

/// Threads the barrier needs in its one block: one per rank (ranks past the team's size do
/// nothing).
pub const fn threads(size: u32) -> u32 {
    size.next_multiple_of(32)
}

/// The call's barrier (see the module docs). Thread `i` of the block signals rank `i` and
/// waits for it.
///
/// # Safety
///
/// One block of at least [`threads`]`(call.size)` threads; `flags` is this PE's copy of the
/// symmetric flag buffer of at least [`flags::words`] words for the team; every rank of the
/// team launches the barrier of the same call (same epoch).
#[inline(always)]
pub unsafe fn barrier(flags: *mut u64, call: TpCall) {
    let i = thread::thread_idx_x();
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
    // write; rank `i` is a PE of the job and sets our slot `i` in its own barrier of this call.
    unsafe {
        signal::signal(flags.add(flags::barrier_slot(call.rank)), call.epoch, pe);
        signal::wait(flags.add(flags::barrier_slot(i)), call.epoch, pe);
    }
}
