//! The producer: one thread of warpgroup 0 issuing the TMA loads of every k-step.

use super::smem::Smem;
use super::{Sm90Config, BM};
use crate::pipeline::PipelineState;
use crate::schedule::{Schedule, TileScheduler};
use rshmem_device::hopper::{tma, TensorMap};

/// For each of the block's tiles and each of its k-steps, once the consumers have released
/// the next stage, the TMA loads of A's `BM x BK` box and B's (one N x K box, or `BN / 64`
/// K x N boxes side by side along N), completing on the stage's "full" barrier.
///
/// # Safety
///
/// One thread of the block, with `smem` initialised; the maps as [`super::gemm_with`]
/// requires; `tiles` this block's walk (the consumers walk the same tiles); `STAGES` is
/// `C::STAGES` and `state` the producer's start.
#[inline(always)]
pub(super) unsafe fn produce<
    C: Sm90Config,
    S: Schedule,
    const B_KN: bool,
    const STAGES: u32,
    const BN: u32,
    const BK: u32,
>(
    smem: Smem<C>,
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    tiles: TileScheduler<S, BM, BN, BK>,
    mut state: PipelineState<STAGES>,
) {
    // SAFETY: the maps are in global memory (the caller's contract).
    unsafe {
        tma::fence_tensormap_acquire(map_a);
        tma::fence_tensormap_acquire(map_b);
    }
    let schedule = *tiles.schedule();
    for tile in tiles {
        // SAFETY: the schedule's contract.
        unsafe { schedule.before_loads(tile) };
        for kt in tile.k_step0..tile.k_step0 + tile.k_steps {
            let (s, full) = (state.stage(), smem.full(state.stage()));
            // SAFETY: stage `s` lies in the launch's shared memory; it is refilled only once
            // every consumer released its previous round; the boxes are STAGE_BYTES (TMA
            // counts zero-filled bytes too).
            unsafe {
                smem.empty(s).wait_parity(state.phase());
                let a = smem.stage(s);
                full.arrive_expect_tx(C::STAGE_BYTES);
                let k0 = (kt * C::BK) as i32;
                tma::load_2d(map_a, a, full, k0, tile.m0 as i32);
                let b = a.add(C::A_BYTES as usize);
                // A grouped B is 3-D, its group outermost: each group's edges zero-fill.
                let load_b = |at: *mut u8, x: i32, y: i32| {
                    if S::GROUPED {
                        tma::load_3d(map_b, at, full, x, y, tile.group as i32)
                    } else {
                        tma::load_2d(map_b, at, full, x, y)
                    }
                };
                if B_KN {
                    let cols = C::B_BOX_KN[0];
                    for j in 0..C::BN / cols {
                        let at = b.add((j * C::B_KN_BOX_BYTES) as usize);
                        load_b(at, (tile.n0 + cols * j) as i32, k0);
                    }
                } else {
                    load_b(b, k0, tile.n0 as i32);
                }
            }
            state.advance();
        }
    }
}
