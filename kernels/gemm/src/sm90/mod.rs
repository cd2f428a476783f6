//! The Hopper GEMM: persistent, warp-specialised, `wgmma` fed by TMA through a multi-stage
//! mbarrier pipeline, generic over its tile configuration ([`Sm90Config`]).
//!
//! A block of [`THREADS`] = 3 warpgroups stays on its SM for the whole problem and walks
//! tiles `blockIdx.x, blockIdx.x + gridDim.x, ...` of the [`Schedule`] ([`TileScheduler`]):
//!
//! * warpgroup 0 gives up registers (`setmaxnreg.dec` to 40); its first thread is the
//!   **producer** (`producer.rs`): for each k-step of each tile, once the consumers have
//!   released the next of the configuration's stages ("empty" barrier), the TMA loads of a
//!   `BM x BK` box of A and a `BN x BK` box of B (128-byte swizzle), completing on the stage's
//!   "full" barrier;
//! * warpgroups 1 and 2, the **consumers**, take more registers (`setmaxnreg.inc` to 232)
//!   and each computes 64 rows of the `BM x BN` tile (`consumer.rs`): per stage the
//!   `wgmma.m64nBN` of one 128-byte row of K (four instructions), accumulated as the
//!   [`Accumulate`] policy says — in the tensor cores across all of K ([`InTensorCore`],
//!   keeping one commit group in flight), or promoted into f32 registers at each k-step
//!   with per-block scales ([`BlockScaled`], FP8) — then the tile's epilogue (`epilogue.rs`)
//!   through [`Epilogue::store`] straight from the accumulators, while the producer already
//!   loads the next tile;
//! * when the epilogue waits before its stores ([`Epilogue::before_epilogue`]) or signals
//!   after them ([`Epilogue::tile_done`]), one thread of warpgroup 0's second warp does both
//!   (`tile_sync.rs`): the consumers only wait on and arrive at mbarriers.
//!
//! Stages and barrier phases run on across tiles (each role's [`PipelineState`] advances
//! once per k-step), so the pipeline never drains between tiles. TMA's zero fill covers the
//! edges of M, N and K; the epilogue masks rows and columns outside C.
//!
//! **Configurations** are types, as CUTLASS's tile shapes are template parameters:
//! [`Sm90Tile`]`<T, BN, BK, STAGES, R>` (`BK` one 128-byte swizzled row of `T`, `R = BN / 2`
//! accumulators per thread, `STAGES` what the shared memory holds: [`stages_for`]), named by
//! [`Tile256`] (the default: bf16/f16, 128 x 256 x 64, 4 stages), [`Tile128`] (bf16/f16,
//! 128 x 128, 7 stages), [`Fp8Tile256`] and [`Fp8Tile128`] (e4m3/e5m2, K 128 per stage). The
//! module's constants ([`BN`], [`SHARED_BYTES`], ...) and [`gemm`] are the default's.

mod accumulate;
mod consumer;
mod epilogue;
mod producer;
mod smem;
mod tile_sync;

pub use accumulate::{Accumulate, BlockScaled, BlockScales, InTensorCore};

use crate::epilogue::Epilogue;
use crate::pipeline::PipelineState;
use crate::schedule::{Schedule, TileScheduler};
use crate::tile::{self, Problem};
use core::marker::PhantomData;
use rshmem_device::hopper::wgmma::{WgmmaAcc, WgmmaElem};
use rshmem_device::hopper::{self, TensorMap};
use rshmem_device::thread;
use smem::Smem;

/// Threads per block: a producer and two consumer warpgroups.
pub const THREADS: u32 = 384;
/// Consumer threads, which all arrive on each "empty" barrier.
const CONSUMERS: u32 = 256;
/// The most dynamic shared memory a block can have on sm_90 (227 KiB).
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;
/// Bytes of one 128-byte swizzled row: a stage's K of every configuration.
const ROW_BYTES: u32 = 128;

/// Rows of C per tile (64 per consumer warpgroup), in every configuration.
pub const BM: u32 = 128;
/// Columns of C per tile of the default configuration ([`Tile256`]): one `wgmma.m64n256`.
pub const BN: u32 = <Tile256<rshmem_device::bf16> as Sm90Config>::BN;
/// K per stage of the default configuration: one 128-byte swizzled row of 16-bit elements.
pub const BK: u32 = <Tile256<rshmem_device::bf16> as Sm90Config>::BK;
/// Pipeline depth of the default configuration: 4 x 48 KiB of the 227 KiB of shared memory.
pub const STAGES: u32 = <Tile256<rshmem_device::bf16> as Sm90Config>::STAGES;
/// Dynamic shared memory a launch of the default configuration needs.
pub const SHARED_BYTES: u32 = <Tile256<rshmem_device::bf16> as Sm90Config>::SHARED_BYTES;

/// The maps [`gemm`] reads, all of 16-bit elements with 128-byte swizzle and zero fill (what
/// `rshmem::ops` encodes): A as a 2-D tensor {K, M} (K innermost) with boxes `A_BOX`;
/// B, when N x K, as {K, N} with boxes [`B_BOX_NK`]; B, when K x N, as {N, K} with boxes
/// [`B_BOX_KN`] (four per stage, side by side along N). Other configurations:
/// [`Sm90Config::A_BOX`], ...
pub const A_BOX: [u32; 2] = <Tile256<rshmem_device::bf16> as Sm90Config>::A_BOX;
/// See [`A_BOX`].
pub const B_BOX_NK: [u32; 2] = <Tile256<rshmem_device::bf16> as Sm90Config>::B_BOX_NK;
/// See [`A_BOX`]: 64 columns (one 128-byte swizzle row) by [`BK`] rows of K.
pub const B_BOX_KN: [u32; 2] = <Tile256<rshmem_device::bf16> as Sm90Config>::B_BOX_KN;

/// Dynamic shared memory of `stages` stages of `stage_bytes`: the barriers (`full` and
/// `empty` per stage, the epilogue's three), alignment to 1024 (the swizzle's), the stages.
pub const fn shared_bytes(stages: u32, stage_bytes: u32) -> u32 {
    stages * stage_bytes + 1024 + 8 * (2 * stages + 3)
}

/// The most stages of `BM x bk_bytes` of A and `bn x bk_bytes` of B that fit in
/// [`MAX_SHARED_BYTES`] (at most 8).
pub const fn stages_for(bn: u32, bk_bytes: u32) -> u32 {
    let stage = (BM + bn) * bk_bytes;
    let mut s = 1;
    while s < 8 && shared_bytes(s + 1, stage) <= MAX_SHARED_BYTES {
        s += 1;
    }
    s
}

/// A tile configuration of the mainloop: element type, tile, stages, and the maps' boxes
/// that follow from them. Implemented by [`Sm90Tile`]; use its aliases ([`Tile256`], ...).
pub trait Sm90Config: Copy + 'static {
    /// The input element type (A and B).
    type In: WgmmaElem;
    /// Columns of C per tile.
    const BN: u32;
    /// K per stage: one 128-byte swizzled row (64 16-bit or 128 8-bit elements).
    const BK: u32;
    /// Pipeline depth.
    const STAGES: u32;
    /// Bytes of one stage's A box.
    const A_BYTES: u32 = BM * ROW_BYTES;
    /// Bytes of one stage: A's box, then B's.
    const STAGE_BYTES: u32 = (BM + Self::BN) * ROW_BYTES;
    /// Dynamic shared memory a launch needs.
    const SHARED_BYTES: u32 = shared_bytes(Self::STAGES, Self::STAGE_BYTES);
    /// A's box: {BK, BM} (K innermost) of a 2-D map {K, M}.
    const A_BOX: [u32; 2] = [Self::BK, BM];
    /// B's box when B is N x K: {BK, BN} of a map {K, N}.
    const B_BOX_NK: [u32; 2] = [Self::BK, Self::BN];
    /// B's box when B is K x N (16-bit only): {64, BK} of a map {N, K}, `BN / 64` per stage.
    const B_BOX_KN: [u32; 2] = [ROW_BYTES / 2, Self::BK];
    /// Bytes of one K x N box of B in shared memory (the descriptors' LBO).
    const B_KN_BOX_BYTES: u32 = ROW_BYTES * Self::BK;

    /// Tiles of `problem`.
    #[inline(always)]
    fn tiles(problem: Problem) -> u32 {
        let (tm, tn) = tile::tiles(problem, BM, Self::BN);
        tm * tn
    }

    /// `C = A · B` (B K x N when `B_KN`, else `A · Bᵀ` with B N x K) in this configuration,
    /// accumulated as `accumulate` says: see [`gemm_with`].
    ///
    /// # Safety
    ///
    /// As [`gemm_with`].
    unsafe fn gemm<S: Schedule, E: Epilogue, K: Accumulate, const B_KN: bool>(
        map_a: *const TensorMap,
        map_b: *const TensorMap,
        problem: Problem,
        schedule: S,
        epilogue: E,
        accumulate: K,
    );
}

/// The configuration `BM x BN` tiles (BM = 128), K `BK` per stage, `STAGES` stages, of input
/// `T`, `R = BN / 2` accumulators per consumer thread. The parameters are checked when the
/// mainloop is instantiated: `BK` one 128-byte row of `T`, `BN` a multiple of 64 up to 256,
/// `R = BN / 2`, the stages within [`MAX_SHARED_BYTES`].
#[derive(Debug)]
pub struct Sm90Tile<T, const BN: u32, const BK: u32, const STAGES: u32, const R: usize>(
    PhantomData<T>,
);

impl<T, const BN: u32, const BK: u32, const STAGES: u32, const R: usize> Clone
    for Sm90Tile<T, BN, BK, STAGES, R>
{
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const BN: u32, const BK: u32, const STAGES: u32, const R: usize> Copy
    for Sm90Tile<T, BN, BK, STAGES, R>
{
}

/// 128 x 256 tiles of bf16/f16, K 64 per stage, 4 stages: the default ([`gemm`]).
pub type Tile256<T> = Sm90Tile<T, 256, 64, { stages_for(256, ROW_BYTES) }, 128>;
/// 128 x 128 tiles of bf16/f16, K 64 per stage, 7 stages.
pub type Tile128<T> = Sm90Tile<T, 128, 64, { stages_for(128, ROW_BYTES) }, 64>;
/// 128 x 256 tiles of e4m3/e5m2, K 128 per stage, 4 stages.
pub type Fp8Tile256<T> = Sm90Tile<T, 256, 128, { stages_for(256, ROW_BYTES) }, 128>;
/// 128 x 128 tiles of e4m3/e5m2, K 128 per stage (one block of a 128 x 128 block scale), 7
/// stages: the block-scaled GEMM's ([`BlockScaled`] keeps two sets of accumulators).
pub type Fp8Tile128<T> = Sm90Tile<T, 128, 128, { stages_for(128, ROW_BYTES) }, 64>;

impl<
        T: WgmmaElem + 'static,
        const BN_: u32,
        const BK_: u32,
        const STAGES_: u32,
        const R: usize,
    > Sm90Config for Sm90Tile<T, BN_, BK_, STAGES_, R>
{
    type In = T;
    const BN: u32 = BN_;
    const BK: u32 = BK_;
    const STAGES: u32 = STAGES_;

    #[inline(always)]
    unsafe fn gemm<S: Schedule, E: Epilogue, K: Accumulate, const B_KN: bool>(
        map_a: *const TensorMap,
        map_b: *const TensorMap,
        problem: Problem,
        schedule: S,
        epilogue: E,
        accumulate: K,
    ) {
        // The parameters' rules, checked where the mainloop is instantiated.
        const {
            assert!(
                BK_ * T::BYTES == ROW_BYTES,
                "Sm90Tile: BK must be one 128-byte row of T"
            );
            assert!(
                BN_ % 64 == 0 && BN_ >= 64 && BN_ <= 256,
                "Sm90Tile: BN must be 64, 128, 192 or 256"
            );
            assert!(2 * R as u32 == BN_, "Sm90Tile: R must be BN / 2");
            assert!(
                STAGES_ >= 2 && shared_bytes(STAGES_, (BM + BN_) * ROW_BYTES) <= MAX_SHARED_BYTES,
                "Sm90Tile: the stages must be at least 2 and fit in 227 KiB of shared memory"
            );
        };
        // SAFETY: the launch's SHARED_BYTES (the contract).
        let smem = unsafe { Smem::<Self>::init(CONSUMERS) };
        let tiles = TileScheduler::<S, BM, BN_, BK_>::new(schedule, problem);
        let tid = thread::thread_idx_x();
        let warpgroup = tid / 128;
        if warpgroup == 0 {
            // SAFETY: the whole warpgroup, together; the consumers' increase below fits the
            // 384-thread launch bound's budget (128 x 40 + 256 x 232 <= 65536).
            unsafe { hopper::setmaxnreg_dec::<40>() };
            if tid == 0 {
                let state = PipelineState::<STAGES_>::producer_start();
                // SAFETY: one thread; the maps and schedule as this function's contract says.
                unsafe {
                    producer::produce::<Self, S, B_KN, STAGES_, BN_, BK_>(
                        smem, map_a, map_b, tiles, state,
                    )
                };
            } else if tile_sync::wanted::<E>() && tid == 32 {
                // SAFETY: one thread of another warp; the epilogue's contract.
                unsafe { tile_sync::run(smem, &epilogue, tiles) };
            }
            return;
        }
        // SAFETY: both consumer warpgroups, together, after the producer's decrease.
        unsafe { hopper::setmaxnreg_inc::<232>() };
        let (row0, lane_tid) = ((warpgroup - 1) * 64, tid % 128);
        let mut state = PipelineState::<STAGES_>::consumer_start();
        let mut done = 0u32;
        let mut acc = WgmmaAcc::<R>::zero();
        // A counter, not `(0..).zip(tiles)`: with the zip the k-loop's stage state moved to
        // vector registers (87 non-uniform instructions instead of 83, SASS of gemm90).
        #[allow(clippy::explicit_counter_loop)]
        for tile in tiles {
            // SAFETY: both consumer warpgroups, at the producer's position for this tile (both
            // walk the same tiles and k-steps); the policy's own contract.
            unsafe {
                if K::PROMOTE {
                    consumer::mma_promoted::<Self, K, STAGES_, R>(
                        smem,
                        &mut state,
                        &accumulate,
                        (problem, tile),
                        (row0, lane_tid),
                        &mut acc,
                    )
                } else {
                    consumer::mma_tile::<Self, B_KN, STAGES_, R>(
                        smem,
                        &mut state,
                        tile.k_steps,
                        row0,
                        &mut acc,
                    )
                }
            };
            // SAFETY: every consumer thread, once per tile; the epilogue's contract.
            unsafe {
                epilogue::store_tile::<Self, E, R>(
                    smem,
                    &epilogue,
                    &mut acc,
                    problem,
                    tile,
                    (row0, lane_tid),
                    done,
                )
            };
            done += 1;
        }
    }
}

/// Tiles of `problem` in the default configuration.
#[inline(always)]
pub fn tiles(problem: Problem) -> u32 {
    <Tile256<rshmem_device::bf16> as Sm90Config>::tiles(problem)
}

/// `C = A · B` with A M x K and B K x N (`B_KN`) or `C = A · Bᵀ` with B N x K (elements `T`,
/// 16-bit), in the default configuration ([`Tile256`]), accumulated in the tensor cores:
/// [`gemm_with`] with [`InTensorCore`].
///
/// # Safety
///
/// As [`gemm_with`] for [`Tile256`]`<T>` (its [`SHARED_BYTES`], [`A_BOX`], [`B_BOX_NK`] /
/// [`B_BOX_KN`]).
#[inline(always)]
pub unsafe fn gemm<T: WgmmaElem + 'static, S: Schedule, E: Epilogue, const B_KN: bool>(
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    problem: Problem,
    schedule: S,
    epilogue: E,
) {
    // SAFETY: forwarded contract.
    unsafe {
        gemm_with::<Tile256<T>, S, E, InTensorCore, B_KN>(
            map_a,
            map_b,
            problem,
            schedule,
            epilogue,
            InTensorCore,
        )
    }
}

/// `C = A · B` with A M x K and B K x N (`B_KN`, 16-bit inputs only) or `C = A · Bᵀ` with B
/// N x K, in configuration `C`, the tiles taken in `schedule`'s order, accumulated as
/// `accumulate` says, and their values handed to `epilogue`. Called by every thread of the
/// block, with the same arguments.
///
/// # Safety
///
/// * The launch is 1-D blocks of [`THREADS`] threads (any grid: blocks share the tiles) with
///   `C::SHARED_BYTES` of dynamic shared memory, of code built for sm_90a, on an sm_90 GPU.
/// * `map_a` and `map_b` point to tensor maps in global memory as `C::A_BOX` describes (B's
///   for its layout: `C::B_BOX_NK`, `C::B_BOX_KN`), 128-byte swizzle, of tensors of at least
///   `problem`'s extent, of `C::In`'s width, that nothing writes while the kernel runs. With
///   a grouped schedule ([`Schedule::GROUPED`]) B's map is 3-D, its groups outermost: `{K, N,
///   G}` or `{N, K, G}`, boxes `B_BOX_NK` or `B_BOX_KN` with a third extent of 1.
/// * `schedule`, `epilogue` and `accumulate` are valid for the problem (their own contracts).
#[inline(always)]
pub unsafe fn gemm_with<
    C: Sm90Config,
    S: Schedule,
    E: Epilogue,
    K: Accumulate,
    const B_KN: bool,
>(
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    problem: Problem,
    schedule: S,
    epilogue: E,
    accumulate: K,
) {
    // SAFETY: forwarded contract.
    unsafe { C::gemm::<S, E, K, B_KN>(map_a, map_b, problem, schedule, epilogue, accumulate) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_device::{bf16, E4m3};

    #[test]
    fn configurations_fill_the_shared_memory() {
        assert_eq!((BN, BK, STAGES), (256, 64, 4));
        assert_eq!(SHARED_BYTES, 4 * 48 * 1024 + 1024 + 8 * 11);
        assert_eq!(<Tile128<bf16> as Sm90Config>::STAGES, 7);
        assert_eq!(<Fp8Tile256<E4m3> as Sm90Config>::BK, 128);
        assert_eq!(<Fp8Tile256<E4m3> as Sm90Config>::STAGES, 4);
        assert_eq!(<Fp8Tile128<E4m3> as Sm90Config>::A_BOX, [128, 128]);
        assert_eq!(<Fp8Tile128<E4m3> as Sm90Config>::B_BOX_NK, [128, 128]);
        for (bn, stages) in [(256, 4), (128, 7), (64, 8)] {
            let stage = (BM + bn) * ROW_BYTES;
            assert_eq!(stages_for(bn, ROW_BYTES), stages);
            assert!(shared_bytes(stages, stage) <= MAX_SHARED_BYTES);
            assert!(stages == 8 || shared_bytes(stages + 1, stage) > MAX_SHARED_BYTES);
        }
    }
}
