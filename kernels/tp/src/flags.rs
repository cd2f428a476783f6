//! The flag words of the fused calls and the two operations on them: [`wait`] (until a local
//! flag reaches the call's epoch, then acquire) and [`publish`] (release this block's writes,
//! then set a flag on a peer).
//!
//! One symmetric `u64` buffer per `Ops` holds them, in three regions indexed by the *sender's*
//! team rank (each slot has one writer per call):
//!
//! | word | what | set by |
//! |---|---|---|
//! | [`barrier_slot`]`(s)` | rank `s` has started the call ([`crate::barrier`]) | the barrier kernel of rank `s` |
//! | [`arrived_slot`]`(size, s)` | rank `s`'s chunk of A is here (all-gather) | rank `s`'s copy engine, after the chunk (`Stream::put_signal`) |
//! | [`tile_slot`]`(size, tiles, s, t)` | rank `s`'s partial of tile `t` is here (reduce-scatter) | rank `s`'s GEMM, after its stores of the tile ([`crate::rs`]) |
//!
//! [`words`] is the buffer's length. Flags hold epochs ([`crate::TpCall::epoch`]) and only
//! grow, so they are never reset.
//!
//! These are the per-chunk signal and wait blocks the tile-level communication crate
//! (`rshmem-coll`) is to provide; they stay here until it does.
//!
//! ```
//! use rshmem_tp::flags;
//! // 4 PEs and 6 tiles of C: 8 words of barrier and arrival flags, 24 tile flags.
//! assert_eq!((flags::arrived_slot(4, 0), flags::tile_slot(4, 6, 0, 0)), (4, 8));
//! assert_eq!((flags::tile_slot(4, 6, 3, 5), flags::words(4, 6)), (31, 32));
//! ```

use rshmem_device::atomic::{self, Ordering, Sys};
use rshmem_device::shmem::{self, Cmp, SignalOp};

/// The word where rank `s` signals that it has started the call.
pub const fn barrier_slot(s: u32) -> usize {
    s as usize
}

/// The word where rank `s` (of `size`) signals that its chunk of A has arrived here.
pub const fn arrived_slot(size: u32, s: u32) -> usize {
    size as usize + s as usize
}

/// The word where rank `s` (of `size`) signals that its partial of tile `t` (of `tiles`) has
/// arrived here.
pub const fn tile_slot(size: u32, tiles: u32, s: u32, t: u32) -> usize {
    2 * size as usize + s as usize * tiles as usize + t as usize
}

/// Words of the flag buffer for a team of `size` PEs and `tiles` tiles of C.
pub const fn words(size: u32, tiles: u32) -> usize {
    tile_slot(size, tiles, size, 0)
}

/// Waits until this PE's flag at `flag` holds at least `epoch`, then acquires at system
/// scope: what the flag's setter published before setting it ([`publish`], or the copy
/// engine's data before its signal) is visible to this thread's later loads. For TMA loads
/// (the async proxy) add `hopper::fence_proxy_async_global()` after it.
///
/// # Safety
///
/// `flag` is an 8-byte aligned word of this PE's copy of the symmetric flag buffer; someone
/// sets it to `epoch` or more without waiting for this thread (else this waits forever).
#[inline(always)]
pub unsafe fn wait(flag: *const u64, epoch: u64) {
    // SAFETY: the caller's contract.
    unsafe { shmem::signal_wait_until(flag, Cmp::Ge, epoch) };
    // `signal_wait_until` returns after a plain (volatile) poll: the fence makes it an
    // acquire, ordering the reads after it behind the setter's release.
    atomic::fence::<Sys>(Ordering::AcqRel);
}

/// Sets the flag at `flag` on world PE `pe` to `epoch`, after this thread's earlier writes
/// and every write this thread has observed (the block's, ordered to it by a block barrier
/// or an mbarrier wait) are visible to `pe`: a reader that [`wait`]s for the flag sees them.
///
/// # Safety
///
/// `flag` is an 8-byte aligned word of the symmetric flag buffer; `pe` a PE of the job.
#[inline(always)]
pub unsafe fn publish(flag: *mut u64, epoch: u64, pe: i32) {
    // A cumulative release at system scope: covers what the block barrier made this thread
    // observe, not only its own stores.
    atomic::fence::<Sys>(Ordering::SeqCst);
    // SAFETY: the caller's contract.
    unsafe { shmem::signal_op(flag, epoch, SignalOp::Set, pe) };
}
