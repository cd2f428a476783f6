//! The consumers' mainloop: one tile's k-steps of `wgmma` on the landed stages.

use super::smem::Smem;
use super::{A_BYTES, BK, B_KN_BOX_BYTES, STAGES};
use crate::pipeline::PipelineState;
use rshmem_device::hopper::wgmma::{self, WgmmaAcc, WgmmaElem};
use rshmem_device::hopper::{SmemDesc, Swizzle};

/// This warpgroup's 64 rows (from `row0` of the tile) of one tile's `A · B`, over `k_steps`
/// stages from `state` on: per stage four `wgmma.m64n256k16` from shared-memory descriptors,
/// one commit group kept in flight, the stage before released once its group retired.
///
/// # Safety
///
/// Both consumer warpgroups, together, with `smem` initialised and `state` where the
/// producer's loads of this tile start.
#[inline(always)]
pub(super) unsafe fn mma_tile<T: WgmmaElem, const B_KN: bool>(
    smem: Smem,
    state: &mut PipelineState<STAGES>,
    k_steps: u32,
    row0: u32,
    acc: &mut WgmmaAcc<128>,
) {
    // The caller's accumulators, not a value returned: the simulator keeps an in-flight
    // wgmma's result by the accumulators' address until they are read.
    *acc = WgmmaAcc::zero();
    // The stage released after each k-step's MMAs are issued is computed from the state, not
    // carried from the previous k-step: a carried form (whose first value is undefined) came
    // out of ptxas 13.0 releasing the *current* stage and never stage 0 (SASS of 2026-12-01;
    // the producer then waited forever once K needed more k-steps than stages).
    for kt in 0..k_steps {
        let s = state.stage();
        // SAFETY: the producer arms every stage it fills.
        unsafe { smem.full(s).wait_parity(state.phase()) };
        let a = smem.stage_address(s) + row0 * BK * 2;
        let b = smem.stage_address(s) + A_BYTES;
        wgmma::fence();
        for ks in 0..BK / 16 {
            let ad = SmemDesc::new(a + 32 * ks, 16, 1024, Swizzle::B128);
            // N x K: 256 rows of 128 bytes, 16 K-elements = 32 bytes on; K x N: four boxes
            // of 64 K-rows x 64 columns, B_KN_BOX_BYTES apart (LBO), 16 K-rows = 2048 bytes
            // on.
            let bd = if B_KN {
                SmemDesc::new(b + 2048 * ks, B_KN_BOX_BYTES, 1024, Swizzle::B128)
            } else {
                SmemDesc::new(b + 32 * ks, 16, 1024, Swizzle::B128)
            };
            // SAFETY: the warpgroup together; the stage holds A's 64 rows and B's 256
            // columns, swizzled as the descriptors say, loaded (full barrier) and not
            // refilled before this group retires (released below only after it).
            unsafe { acc.mma_ss_b::<T, B_KN>(ad, bd, kt > 0 || ks > 0) };
        }
        wgmma::commit_group();
        // The group before this one has retired: its stage can be refilled.
        wgmma::wait_group::<1>();
        if kt > 0 {
            // SAFETY: every consumer thread arrives once per round of each stage.
            unsafe { smem.empty(state.previous_stage()).arrive() };
        }
        state.advance();
    }
    wgmma::wait_group::<0>();
    if k_steps > 0 {
        // SAFETY: as above.
        unsafe { smem.empty(state.previous_stage()).arrive() };
    }
}
