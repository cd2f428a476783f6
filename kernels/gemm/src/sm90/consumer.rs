//! The consumers' mainloop: one tile's k-steps of `wgmma` on the landed stages.

use super::accumulate::Accumulate;
use super::smem::Smem;
use super::{Sm90Config, ROW_BYTES};
use crate::pipeline::PipelineState;
use crate::tile::{Problem, Tile};
use rshmem_device::hopper::wgmma::{self, WgmmaAcc};
use rshmem_device::hopper::{SmemDesc, Swizzle};
use rshmem_device::thread;

/// This warpgroup's A rows and B in stage `s`: shared addresses.
#[inline(always)]
fn operands<C: Sm90Config>(smem: Smem<C>, s: u32, row0: u32) -> (u32, u32) {
    let a = smem.stage_address(s) + row0 * ROW_BYTES;
    (a, smem.stage_address(s) + C::A_BYTES)
}

/// The descriptors of K slice `ks` (32 bytes) of a stage whose A rows and B are at `(a, b)`
/// ([`operands`]).
#[inline(always)]
fn descriptors<C: Sm90Config, const B_KN: bool>(
    (a, b): (u32, u32),
    ks: u32,
) -> (SmemDesc, SmemDesc) {
    let ad = SmemDesc::new(a + 32 * ks, 16, 1024, Swizzle::B128);
    // N x K: BN rows of 128 bytes, K = 32 bytes on; K x N: BN / 64 boxes of 64 K-rows x 64
    // columns, B_KN_BOX_BYTES apart (LBO), 16 K-rows = 2048 bytes on.
    let bd = if B_KN {
        SmemDesc::new(b + 2048 * ks, C::B_KN_BOX_BYTES, 1024, Swizzle::B128)
    } else {
        SmemDesc::new(b + 32 * ks, 16, 1024, Swizzle::B128)
    };
    (ad, bd)
}

/// This warpgroup's 64 rows (from `row0` of the tile) of one tile's `A · B` into `acc`, over
/// `k_steps` stages from `state` on, accumulated in the tensor cores ([`super::InTensorCore`]):
/// per stage its `wgmma`s, one commit group kept in flight, the stage before released once
/// its group retired.
///
/// # Safety
///
/// Both consumer warpgroups, together, with `smem` initialised and `state` where the
/// producer's loads of this tile start; `STAGES` and `R` are `C`'s.
#[inline(always)]
pub(super) unsafe fn mma_tile<
    C: Sm90Config,
    const B_KN: bool,
    const STAGES: u32,
    const R: usize,
>(
    smem: Smem<C>,
    state: &mut PipelineState<STAGES>,
    k_steps: u32,
    row0: u32,
    acc: &mut WgmmaAcc<R>,
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
        let ab = operands(smem, s, row0);
        wgmma::fence();
        for ks in 0..ROW_BYTES / 32 {
            let (ad, bd) = descriptors::<C, B_KN>(ab, ks);
            // SAFETY: the warpgroup together; the stage holds A's 64 rows and B's BN
            // columns, swizzled as the descriptors say, loaded (full barrier) and not
            // refilled before this group retires (released below only after it).
            unsafe { acc.mma_ss_b::<C::In, B_KN>(ad, bd, kt > 0 || ks > 0) };
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

/// As [`mma_tile`], promoted ([`Accumulate::PROMOTE`]): each k-step's `wgmma`s into fresh
/// accumulators, waited for (the stage is released at once), then added into f32 registers
/// times the step's factors; `acc` holds the sums at the end (B N x K: 8-bit operands are
/// K-major).
///
/// # Safety
///
/// As [`mma_tile`]; `accumulate`'s contract.
#[inline(always)]
pub(super) unsafe fn mma_promoted<
    C: Sm90Config,
    K: Accumulate,
    const STAGES: u32,
    const R: usize,
>(
    smem: Smem<C>,
    state: &mut PipelineState<STAGES>,
    accumulate: &K,
    (problem, tile): (Problem, Tile),
    (row0, lane_tid): (u32, u32),
    acc: &mut WgmmaAcc<R>,
) {
    const {
        assert!(
            !K::PROMOTE || (C::BN == 128 && C::BK == 128),
            "promoted accumulation runs on 128 x 128 tiles of K 128 per step (Fp8Tile128)"
        )
    };
    // The thread's two rows of C (registers i with (i / 2) % 2 = 0 and 1), clamped into A.
    let row_of = |half: u32| {
        let r = tile.m0 + row0 + WgmmaAcc::<R>::coords(lane_tid, 2 * half).0;
        r.min(problem.m - 1)
    };
    let rows = [row_of(0), row_of(1)];
    // A k-step's factors are loaded two k-steps ahead: their global loads take longer than one
    // k-step's wgmmas, and loaded in the same k-step they stalled the consumers (ncu on an
    // H100, 2026-12-05: 37 % of the warps' stall cycles waited on them).
    let factors = |kt: u32| match kt < tile.k_steps {
        // SAFETY: the policy's contract; `kt` is a k-step of the tile.
        true => unsafe { accumulate.factors(tile, tile.k_step0 + kt, rows) },
        false => [0.0; 2],
    };
    let (mut f, mut f_next) = (factors(0), factors(1));
    let mut sums = [0.0f32; R];
    let mut part = WgmmaAcc::<R>::zero();
    for kt in 0..tile.k_steps {
        let s = state.stage();
        let f_later = factors(kt + 2);
        // SAFETY: the producer arms every stage it fills.
        unsafe { smem.full(s).wait_parity(state.phase()) };
        let ab = operands(smem, s, row0);
        wgmma::fence();
        for ks in 0..ROW_BYTES / 32 {
            let (ad, bd) = descriptors::<C, false>(ab, ks);
            // SAFETY: as in `mma_steps`; the stage is released only after the wait below.
            unsafe { part.mma_ss_b::<C::In, false>(ad, bd, ks > 0) };
        }
        wgmma::commit_group();
        wgmma::wait_group::<0>();
        // SAFETY: every consumer thread arrives once per round of each stage; the stage's
        // wgmmas have completed.
        unsafe { smem.empty(s).arrive() };
        // Straight-line, constant indices: `sums` stays in registers; one FFMA each.
        part.for_each(|i, v| {
            let i = i as usize;
            sums[i] = thread::fma(v, f[(i / 2) % 2], sums[i]);
        });
        (f, f_next) = (f_next, f_later);
        state.advance();
    }
    *acc = WgmmaAcc::from_regs(sums);
}
