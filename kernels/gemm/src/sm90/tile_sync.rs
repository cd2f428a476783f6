//! The tile-sync thread: the epilogue's waits and signals off the consumers' path.
//!
//! A GEMM + reduce-scatter waits for its peers' partial tiles before a tile's stores
//! ([`Epilogue::before_epilogue`]) and publishes a tile once every consumer has stored it
//! ([`Epilogue::tile_done`]). Done by consumer threads (a spin on a flag, a branch only one
//! thread takes), either made ptxas 13.0 give up the uniform datapath in the consumers' k-loop
//! (`WARPSYNC`, `VOTEU` and per-thread stage counters: 91 SASS instructions per k-step against
//! the plain GEMM's 81). So one thread of the producer warpgroup's second warp, idle
//! otherwise, does both, and the consumers only wait on and arrive at mbarriers, as they do
//! for their stages.

use super::smem::Smem;
use super::{Sm90Config, BM};
use crate::epilogue::Epilogue;
use crate::schedule::{Schedule, TileScheduler};

/// Whether the epilogue needs the tile-sync thread.
#[inline(always)]
pub(super) const fn wanted<E: Epilogue>() -> bool {
    E::TILE_DONE || E::BEFORE_EPILOGUE
}

/// For each of the block's tiles in order: `before_epilogue`, then `ready` (the consumers
/// may store); once every consumer has stored the tile (`stored`), `taken` (they may arrive
/// for the next), then `tile_done`.
///
/// Phases: each of the three barriers completes once per tile, and none can run two phases
/// ahead of its waiter: `ready` for tile `i + 1` follows `stored` of tile `i`, which follows
/// the consumers' wait for `ready` of tile `i`; `stored` of tile `i + 1` follows `taken` of
/// tile `i`, which follows this thread's wait for `stored` of tile `i`.
///
/// # Safety
///
/// One thread of the block, outside the consumer warpgroups, with `smem` initialised;
/// `tiles` the consumers' walk; the epilogue's own contract for `before_epilogue` and
/// `tile_done`.
#[inline(always)]
pub(super) unsafe fn run<C: Sm90Config, S: Schedule, E: Epilogue, const BN: u32, const BK: u32>(
    smem: Smem<C>,
    epilogue: &E,
    tiles: TileScheduler<S, BM, BN, BK>,
) {
    for (done, tile) in (0u32..).zip(tiles) {
        // SAFETY: the epilogue's contract; the barriers' phases as the docs above say. The
        // arrival on `ready` releases what `before_epilogue` acquired to the consumers (cta
        // scope); the wait on `stored` acquires their stores.
        unsafe {
            if E::BEFORE_EPILOGUE {
                epilogue.before_epilogue(tile);
                smem.ready().arrive();
            }
            smem.stored().wait_parity(done & 1);
            smem.taken().arrive();
            if E::TILE_DONE {
                // Every consumer's stores of `tile` precede the completion of `stored`.
                epilogue.tile_done(tile);
            }
        }
    }
}
