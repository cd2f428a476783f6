//! The Hopper GEMM: persistent, warp-specialised, `wgmma` fed by TMA through a multi-stage
//! mbarrier pipeline.
//!
//! A block of [`THREADS`] = 3 warpgroups stays on its SM for the whole problem and walks
//! tiles `blockIdx.x, blockIdx.x + gridDim.x, ...` of the [`Schedule`] ([`TileScheduler`]):
//!
//! * warpgroup 0 gives up registers (`setmaxnreg.dec` to 40); its first thread is the
//!   **producer** (`producer.rs`): for each k-step of each tile, once the consumers have
//!   released the next of [`STAGES`] stages ("empty" barrier), the TMA loads of a [`BM`] x
//!   [`BK`] box of A and a [`BN`] x [`BK`] box of B (128-byte swizzle), completing on the
//!   stage's "full" barrier;
//! * warpgroups 1 and 2, the **consumers**, take more registers (`setmaxnreg.inc` to 232)
//!   and each computes 64 rows of the 128 x 256 tile (`consumer.rs`): per stage four
//!   `wgmma.m64n256k16` from shared-memory descriptors, keeping one commit group in flight
//!   (the stage before is released once its group retired); then the tile's epilogue
//!   (`epilogue.rs`) through [`Epilogue::store`] straight from the accumulators, while the
//!   producer already loads the next tile;
//! * when the epilogue waits before its stores ([`Epilogue::before_epilogue`]) or signals
//!   after them ([`Epilogue::tile_done`]), one thread of warpgroup 0's second warp does both
//!   (`tile_sync.rs`): the consumers only wait on and arrive at mbarriers.
//!
//! Stages and barrier phases run on across tiles (each role's [`PipelineState`] advances
//! once per k-step), so the pipeline never drains between tiles. TMA's zero fill covers the
//! edges of M, N and K; the epilogue masks rows and columns outside C.

mod consumer;
mod epilogue;
mod producer;
mod smem;
mod tile_sync;

use crate::epilogue::Epilogue;
use crate::pipeline::PipelineState;
use crate::schedule::{Schedule, TileScheduler};
use crate::tile::{self, Problem};
use rshmem_device::hopper::wgmma::{WgmmaAcc, WgmmaElem};
use rshmem_device::hopper::{self, TensorMap};
use rshmem_device::thread;
use smem::Smem;

/// Rows of C per tile (64 per consumer warpgroup).
pub const BM: u32 = 128;
/// Columns of C per tile: one `wgmma.m64n256`.
pub const BN: u32 = 256;
/// K per stage: one 128-byte swizzled row of 16-bit elements.
pub const BK: u32 = 64;
/// Pipeline depth: 4 x 48 KiB of the 227 KiB of shared memory.
pub const STAGES: u32 = 4;
/// Threads per block: a producer and two consumer warpgroups.
pub const THREADS: u32 = 384;
/// Bytes of one stage's A box.
const A_BYTES: u32 = BM * BK * 2;
/// Bytes of one stage: A's box, then B's.
const STAGE_BYTES: u32 = (BM + BN) * BK * 2;
/// Consumer threads, which all arrive on each "empty" barrier.
const CONSUMERS: u32 = 256;
/// mbarriers: full[STAGES], empty[STAGES], the epilogue's "stored", "taken" and "ready".
const BARRIERS: u32 = 2 * STAGES + 3;
/// Dynamic shared memory a launch needs: barriers, alignment to 1024 (the swizzle's), stages.
pub const SHARED_BYTES: u32 = STAGES * STAGE_BYTES + 1024 + 8 * BARRIERS;

/// The maps [`gemm`] reads, all of 16-bit elements with 128-byte swizzle and zero fill (what
/// `rshmem::ops` encodes): A as a 2-D tensor {K, M} (K innermost) with boxes `A_BOX`;
/// B, when N x K, as {K, N} with boxes [`B_BOX_NK`]; B, when K x N, as {N, K} with boxes
/// [`B_BOX_KN`] (four per stage, side by side along N).
pub const A_BOX: [u32; 2] = [BK, BM];
/// See [`A_BOX`].
pub const B_BOX_NK: [u32; 2] = [BK, BN];
/// See [`A_BOX`]: 64 columns (one 128-byte swizzle row) by [`BK`] rows of K.
pub const B_BOX_KN: [u32; 2] = [64, BK];
/// Bytes of one K x N box of B in shared memory (the descriptors' LBO).
const B_KN_BOX_BYTES: u32 = 64 * BK * 2;

/// Tiles of `problem`.
#[inline(always)]
pub const fn tiles(problem: Problem) -> u32 {
    let (tm, tn) = tile::tiles(problem, BM, BN);
    tm * tn
}

/// `C = A · B` with A M x K and B K x N (`B_KN`) or `C = A · Bᵀ` with B N x K (elements `T`),
/// the tiles taken in `schedule`'s order and their values handed to `epilogue`. Called by
/// every thread of the block, with the same arguments.
///
/// # Safety
///
/// * The launch is 1-D blocks of [`THREADS`] threads (any grid: blocks share the tiles) with
///   [`SHARED_BYTES`] of dynamic shared memory, of code built for sm_90a, on an sm_90 GPU.
/// * `map_a` and `map_b` point to tensor maps in global memory as [`A_BOX`] describes (B's
///   for its layout), of tensors of at least `problem`'s extent, of element type `T`, that
///   nothing writes while the kernel runs. With a grouped schedule ([`Schedule::GROUPED`])
///   B's map is 3-D, its groups outermost: `{K, N, G}` or `{N, K, G}`, boxes [`B_BOX_NK`] or
///   [`B_BOX_KN`] with a third extent of 1.
/// * `schedule` and `epilogue` are valid for the problem (their own contracts).
#[inline(always)]
pub unsafe fn gemm<T: WgmmaElem, S: Schedule, E: Epilogue, const B_KN: bool>(
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    problem: Problem,
    schedule: S,
    epilogue: E,
) {
    // SAFETY: the launch's SHARED_BYTES (the contract).
    let smem = unsafe { Smem::init(CONSUMERS) };
    let tiles = TileScheduler::<S, BM, BN, BK>::new(schedule, problem);
    let tid = thread::thread_idx_x();
    let warpgroup = tid / 128;
    if warpgroup == 0 {
        // SAFETY: the whole warpgroup, together; the consumers' increase below fits the
        // 384-thread launch bound's budget (128 x 40 + 256 x 232 <= 65536).
        unsafe { hopper::setmaxnreg_dec::<40>() };
        if tid == 0 {
            // SAFETY: one thread; the maps and schedule as this function's contract says.
            unsafe { producer::produce::<S, B_KN>(smem, map_a, map_b, tiles) };
        } else if tile_sync::wanted::<E>() && tid == 32 {
            // SAFETY: one thread of another warp; the epilogue's contract.
            unsafe { tile_sync::run(smem, &epilogue, tiles) };
        }
        return;
    }
    // SAFETY: both consumer warpgroups, together, after the producer's decrease.
    unsafe { hopper::setmaxnreg_inc::<232>() };
    let (row0, lane_tid) = ((warpgroup - 1) * 64, tid % 128);
    let mut state = PipelineState::<STAGES>::consumer_start();
    let mut done = 0u32;
    let mut acc = WgmmaAcc::<128>::zero();
    // A counter, not `(0..).zip(tiles)`: with the zip the k-loop's stage state moved to
    // vector registers (87 non-uniform instructions instead of 83, SASS of gemm90).
    #[allow(clippy::explicit_counter_loop)]
    for tile in tiles {
        // SAFETY: both consumer warpgroups, at the producer's position for this tile (both
        // walk the same tiles and k-steps).
        unsafe { consumer::mma_tile::<T, B_KN>(smem, &mut state, tile.k_steps, row0, &mut acc) };
        // SAFETY: every consumer thread, once per tile; the epilogue's contract.
        unsafe {
            epilogue::store_tile(
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
