//! All-gather + GEMM: [`AgSchedule`], the schedule that turns rshmem-gemm's mainloops into
//! `C = all_gather(A) · B` (with the plain epilogue, `rshmem_gemm::StoreC`).
//!
//! **The data.** A is one symmetric buffer of `m x k` on every PE; rank `r` fills its chunk
//! (rows `r * rows() .. (r + 1) * rows()`) before the call, and the other ranks' chunks are
//! copied into the rest by the copy engine: rank `q` pushes its chunk into every peer's buffer
//! (`Stream::put_signal`: `cudaMemcpyAsync`, then `cuStreamWriteValue64` of
//! [`flags::ARRIVED`] into the peer's `flags[arrived_slot(q)]`, both on a side stream queued
//! after the call's barrier, which cleared that flag: see [`crate::barrier`]).
//! The GEMM reads the whole buffer through one tensor map (sm90) or pointer (sm80) and writes
//! C (`m x n`) locally.
//!
//! **Why a tile never reads a chunk before it has arrived.** The loads of a tile come after
//! [`Schedule::before_loads`], which every loading thread calls first (sm90: the one TMA thread;
//! sm80: every thread, each issuing its own `cp.async`s). There [`AgSchedule`] waits, for every
//! rank other than this one whose chunk meets the tile's rows (one, or two when the tile
//! straddles chunks), until `flags[arrived_slot(q)] >= ARRIVED`, then acquires at system
//! scope (`rshmem_coll::signal::wait`). The copy engine set that flag only after the chunk's copy had
//! completed (stream order on the pusher's side stream), so the acquire makes the chunk's
//! bytes visible to the waiting thread's loads; on sm90 a `fence.proxy.async.global` then
//! orders the TMA loads (async proxy) after that acquire (generic proxy). Rows of this rank's
//! own chunk were written before the call on this PE's stream, so they need no wait. Rows past
//! `m` are not read (TMA's zero fill, `cp.async`'s zero fill).
//!
//! **Why a chunk is not overwritten while a tile reads it.** Peers push the chunks of call `e`
//! only after the barrier of call `e` ([`crate::barrier`]), which this PE reaches after its
//! GEMM of call `e - 1` has finished reading them.
//!
//! **Order.** Tiles start in this rank's chunk and go on in arrival order
//! ([`crate::order::ag_first_band`]); a tile whose chunk is late only holds up the block that
//! took it.

use crate::call::TpCall;
use crate::flags;
use crate::order;
use rshmem_coll::signal;
use rshmem_device::hopper;
use rshmem_device::thread;
use rshmem_gemm::{Schedule, Tile};

/// The all-gather GEMM's schedule (see the module docs). `TMA`: the loads are TMA loads (the
/// sm90 mainloop), which need the proxy fence after the wait.
#[derive(Clone, Copy, Debug)]
pub struct AgSchedule<const TMA: bool> {
    /// The call.
    pub call: TpCall,
    /// Rows per tile of the mainloop that runs the schedule.
    pub bm: u32,
    /// This PE's copy of the symmetric flag buffer.
    pub flags: *const u64,
}

impl<const TMA: bool> Schedule for AgSchedule<TMA> {
    #[inline(always)]
    fn tile(&self, t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
        order::rotated(
            t,
            tiles_m,
            tiles_n,
            order::ag_first_band(&self.call, self.bm),
        )
    }

    #[inline(always)]
    unsafe fn before_loads(&self, tile: Tile) {
        let call = &self.call;
        let (first, last) = call.owners(tile.m0, self.bm);
        let mut waited = false;
        for q in first..=last {
            if q != call.rank {
                let flag = self.flags.wrapping_add(flags::arrived_slot(call.size, q));
                // SAFETY: the slot lies in the flag buffer (q < size), which only signals
                // write; our barrier of this call cleared it, and rank q's side stream sets it
                // after its barrier of this call, which waits for nothing of ours but our
                // barrier (queued before this kernel).
                unsafe { signal::wait(flag, flags::ARRIVED, call.world_pe(q)) };
                waited = true;
            }
        }
        if TMA && waited {
            hopper::fence_proxy_async_global();
        }
    }
}

/// Waits until every other rank's chunk of the call has arrived (each rank's arrival flag,
/// acquired at system scope): what a GEMM that must not wait (where PEs share a GPU) is
/// queued after, so that its tiles' waits in [`AgSchedule::before_loads`] find every flag
/// set. Every thread of the block calls it.
///
/// # Safety
///
/// `flags` is this PE's copy of the call's flag buffer, after the call's barrier; every rank
/// pushes its chunk with its arrival flag (the module docs).
pub unsafe fn wait_for_chunks(call: &TpCall, flags: *const u64) {
    let mut q = thread::thread_idx_x();
    while q < call.size {
        if q != call.rank {
            let flag = flags.wrapping_add(flags::arrived_slot(call.size, q));
            // SAFETY: as in `before_loads`: the slot lies in the buffer, set by rank q's side
            // stream after its barrier of this call.
            unsafe { signal::wait(flag, flags::ARRIVED, call.world_pe(q)) };
        }
        q += thread::block_dim_x();
    }
}
