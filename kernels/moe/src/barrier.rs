//! The barrier every dispatch starts with, and why the buffers can be reused call after call.
//!
//! Rank `r`'s barrier of call `e` sets `flags[barrier_slot(r)]` to `e` on every member, then
//! waits until every member has set its own slot here. A kernel starts after the work queued
//! before it on its stream, so when rank `q` passes barrier `e`, every member `p` has
//! finished everything it queued before dispatch `e`: the previous call's scatter, which read
//! the tokens rank `q` stored into `p`'s staging rows, and the previous combine, which read
//! the partials `q` sent into `p`'s `combine_recv`. Only then does `q` write into `p`'s
//! buffers for call `e` (its sends are queued after its barrier). A combine writes only after
//! its own dispatch's barrier, and the next dispatch's barrier waits for it in turn, so one
//! barrier per dispatch + combine pair is enough.
//!
//! The flags hold epochs and every wait is for `>= e`: they are never reset, and a member
//! already in call `e + 1` (possible only once this PE set its slot for call `e`) satisfies a
//! wait of call `e`.

use crate::call::{barrier_slot, LayoutWords, MoeBufs, MoeCall, NONE};
use rshmem_coll::peers::Peers;
use rshmem_coll::signal;
use rshmem_device::shmem::Team;
use rshmem_device::thread;

/// Threads the barrier needs in its one block: one per rank.
pub const fn threads(size: u32) -> u32 {
    size.next_multiple_of(32)
}

/// The call's barrier (see the module docs); it also clears this PE's bad-entry word for the
/// route that follows. Thread `i` of the block signals rank `i` and waits for it.
///
/// # Safety
///
/// One block of at least [`threads`]`(call.size)` threads; `bufs` this PE's buffers of the
/// call's shape; every member of `team` (of `call.size` PEs, this PE among them) launches the
/// barrier of the same call, after every kernel of its previous dispatch and combine in
/// stream order.
#[inline(always)]
pub unsafe fn barrier(team: Team, bufs: MoeBufs, call: MoeCall) {
    let peers = Peers::of(team);
    let i = thread::thread_idx_x();
    if i == 0 {
        let words = LayoutWords::new(call.size, call.local_experts());
        // SAFETY: the word lies in `layout`, which only this PE's kernels use, in stream order.
        unsafe { bufs.layout.add(words.bad_entry).write_volatile(NONE) };
    }
    if i >= peers.n || i == peers.rank {
        return;
    }
    let pe = peers.world(i);
    // SAFETY: slots `rank` and `i` lie in the flag buffer (both < size); only barriers write
    // them; rank `i` is a PE of the job and sets our slot `i` in its barrier of this call.
    unsafe {
        signal::signal(bufs.flags.add(barrier_slot(peers.rank)), call.epoch, pe);
        signal::wait(bufs.flags.add(barrier_slot(i)), call.epoch, pe);
    }
}
