//! The tile-done thread: [`Epilogue::tile_done`] off the consumers' path.
//!
//! A tile's signal (a GEMM + reduce-scatter publishes the tile to its rows' owners) waits
//! for every consumer's stores of it. Waited for by a consumer thread, in a branch the other
//! consumers skip, it made ptxas 13.0 give up the uniform datapath in the *next* tile's
//! mainloop (`WARPSYNC`, `VOTEU` and per-thread stage counters in the k-loop: 91 instructions
//! against the plain GEMM's 81). So one thread of the producer warpgroup's second warp, idle
//! otherwise, waits and signals instead, and the consumers only arrive.

use super::smem::Smem;
use super::{BM, BN};
use crate::epilogue::Epilogue;
use crate::schedule::{Schedule, TileScheduler};

/// For each of the block's tiles in order: waits until every consumer has stored it
/// (`stored`), tells the consumers it has seen that (`taken`), then calls
/// [`Epilogue::tile_done`].
///
/// # Safety
///
/// One thread of the block, outside the consumer warpgroups, with `smem` initialised;
/// `tiles` the consumers' walk; the epilogue's own contract for `tile_done`.
#[inline(always)]
pub(super) unsafe fn announce<S: Schedule, E: Epilogue>(
    smem: Smem,
    epilogue: &E,
    tiles: TileScheduler<S, BM, BN>,
) {
    for (done, tile) in (0u32..).zip(tiles) {
        // SAFETY: the consumers arrive on `stored` once per tile, and on its phase `done`
        // only after `taken`'s phase `done - 1`, so the phase awaited is the current one or
        // the one before. The wait acquires their stores (cta scope).
        unsafe {
            smem.stored().wait_parity(done & 1);
            smem.taken().arrive();
            // Every consumer's stores of `tile` precede the completion of `stored`.
            epilogue.tile_done(tile);
        }
    }
}
