//! The Hopper GEMM: persistent, warp-specialised, `wgmma` fed by TMA through a multi-stage
//! mbarrier pipeline.
//!
//! A block of [`THREADS`] = 3 warpgroups stays on its SM for the whole problem and walks
//! tiles `blockIdx.x, blockIdx.x + gridDim.x, ...` of the schedule ([`Hooks::tile`]):
//!
//! * warpgroup 0, the **producer**, gives up registers (`setmaxnreg.dec` to 40) and one
//!   thread of it issues, for each k-step of each tile, the TMA loads of a [`BM`] x [`BK`]
//!   box of A and a [`BN`] x [`BK`] box of B (128-byte swizzle) into the next of [`STAGES`]
//!   stages, once the consumers have released it ("empty" barrier); the copies complete on
//!   that stage's "full" barrier;
//! * warpgroups 1 and 2, the **consumers**, take more registers (`setmaxnreg.inc` to 232)
//!   and each computes 64 rows of the 128 x 256 tile: per stage four
//!   `wgmma.m64n256k16` from shared-memory descriptors, keeping one commit group in flight
//!   (the stage before is released once its group retired), then the tile's epilogue
//!   through [`Hooks::store`] straight from the accumulators, while the producer already
//!   loads the next tile.
//!
//! Stages and barrier phases run on across tiles (a k-step counter shared by both roles), so
//! the pipeline never drains between tiles. TMA's zero fill covers the edges of M, N and K;
//! the epilogue masks rows and columns outside C.

use crate::hooks::{self, Hooks, Problem, Tile};
use rshmem_device::hopper::wgmma::{self, WgmmaAcc, WgmmaElem};
use rshmem_device::hopper::{self, tma, MBarrier, SmemDesc, Swizzle, TensorMap};
use rshmem_device::thread;

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
/// mbarriers: full[STAGES], empty[STAGES], the epilogue's.
const BARRIERS: u32 = 2 * STAGES + 1;
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
    let (tm, tn) = hooks::tiles(problem, BM, BN);
    tm * tn
}

/// `C = A · B` with A M x K and B K x N (`B_KN`) or `C = A · Bᵀ` with B N x K (elements `T`),
/// the tiles' values handed to `hooks`. Called by every thread of the block, with the same
/// arguments.
///
/// # Safety
///
/// * The launch is 1-D blocks of [`THREADS`] threads (any grid: blocks share the tiles) with
///   [`SHARED_BYTES`] of dynamic shared memory, of code built for sm_90a, on an sm_90 GPU.
/// * `map_a` and `map_b` point to tensor maps in global memory as [`A_BOX`] describes (B's
///   for its layout), of tensors of at least `problem`'s extent, of element type `T`, that
///   nothing writes while the kernel runs.
/// * `hooks` is valid for the problem (its own contract).
#[inline(always)]
pub unsafe fn gemm<T: WgmmaElem, H: Hooks, const B_KN: bool>(
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    problem: Problem,
    hooks: H,
) {
    let tid = thread::thread_idx_x();
    // SAFETY: barriers 0..BARRIERS at the start of shared memory, the stages after them
    // (the launch's SHARED_BYTES).
    let bar = |i: u32| unsafe { MBarrier::in_dynamic_shared(i) };
    let (full, empty, epilogue) = (|s: u32| bar(s), |s: u32| bar(STAGES + s), bar(2 * STAGES));
    // SAFETY: as above.
    let stages = unsafe { hopper::dynamic_shared_aligned(8 * BARRIERS, 1024) };
    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: each barrier initialised once, before any use (the sync below).
            unsafe {
                full(s).init(1);
                empty(s).init(CONSUMERS);
            }
        }
        // SAFETY: as above.
        unsafe { epilogue.init(CONSUMERS) };
        hopper::fence_barrier_init();
    }
    thread::sync_threads();

    let (tiles_m, tiles_n) = hooks::tiles(problem, BM, BN);
    let total = tiles_m * tiles_n;
    let k_steps = problem.k.div_ceil(BK);
    let tile_at = |t: u32| {
        let (i, j) = hooks.tile(t, tiles_m, tiles_n);
        Tile {
            index: t,
            m0: i * BM,
            n0: j * BN,
        }
    };
    let (first, step) = (thread::block_idx_x(), thread::grid_dim_x());
    let warpgroup = tid / 128;

    if warpgroup == 0 {
        // SAFETY: the whole warpgroup, together; the consumers' increase below fits the
        // 384-thread launch bound's budget (128 x 40 + 256 x 232 <= 65536).
        unsafe { hopper::setmaxnreg_dec::<40>() };
        if tid != 0 {
            return;
        }
        // SAFETY: the maps are in global memory (the caller's contract).
        unsafe {
            tma::fence_tensormap_acquire(map_a);
            tma::fence_tensormap_acquire(map_b);
        }
        let mut it = 0u32;
        let mut t = first;
        while t < total {
            let tile = tile_at(t);
            // SAFETY: the hooks' contract.
            unsafe { hooks.before_loads(tile) };
            for kt in 0..k_steps {
                let (s, round) = (it % STAGES, it / STAGES);
                // SAFETY: stage `s` lies in the launch's shared memory; a stage is refilled
                // only once all consumers released its previous round; the box sizes are
                // STAGE_BYTES (TMA counts zero-filled bytes too).
                unsafe {
                    if round > 0 {
                        empty(s).wait_parity((round - 1) & 1);
                    }
                    let a = stages.add((s * STAGE_BYTES) as usize);
                    full(s).arrive_expect_tx(STAGE_BYTES);
                    let k0 = (kt * BK) as i32;
                    tma::load_2d(map_a, a, full(s), k0, tile.m0 as i32);
                    let b = a.add(A_BYTES as usize);
                    if B_KN {
                        for j in 0..BN / 64 {
                            let at = b.add((j * B_KN_BOX_BYTES) as usize);
                            tma::load_2d(map_b, at, full(s), (tile.n0 + 64 * j) as i32, k0);
                        }
                    } else {
                        tma::load_2d(map_b, b, full(s), k0, tile.n0 as i32);
                    }
                }
                it += 1;
            }
            t += step;
        }
        return;
    }

    // SAFETY: both consumer warpgroups, together, after the producer's decrease.
    unsafe { hopper::setmaxnreg_inc::<232>() };
    let row0 = (warpgroup - 1) * 64;
    let lane_tid = tid % 128;
    let stage_addr = hopper::shared_address(stages);
    let mut it = 0u32;
    let mut done = 0u32;
    let mut t = first;
    while t < total {
        let tile = tile_at(t);
        let mut acc = WgmmaAcc::<128>::zero();
        // The stage before this k-step's is released once its group retired. It is computed
        // from the counter, not carried in an `Option` from the previous k-step: the carried
        // form (whose first value is undefined) came out of ptxas 13.0 releasing the *current*
        // stage and never stage 0 (SASS of 2026-12-01; the producer then waited forever once
        // K needed more k-steps than stages).
        for kt in 0..k_steps {
            let (s, round) = (it % STAGES, it / STAGES);
            // SAFETY: the producer arms every stage it fills.
            unsafe { full(s).wait_parity(round & 1) };
            let a = stage_addr + s * STAGE_BYTES + row0 * BK * 2;
            let b = stage_addr + s * STAGE_BYTES + A_BYTES;
            wgmma::fence();
            for ks in 0..BK / 16 {
                let ad = SmemDesc::new(a + 32 * ks, 16, 1024, Swizzle::B128);
                // N x K: 256 rows of 128 bytes, 16 K-elements = 32 bytes on; K x N: four
                // boxes of 64 K-rows x 64 columns, B_KN_BOX_BYTES apart (LBO), 16 K-rows =
                // 2048 bytes on.
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
                unsafe { empty((it - 1) % STAGES).arrive() };
            }
            it += 1;
        }
        wgmma::wait_group::<0>();
        if k_steps > 0 {
            // SAFETY: as above.
            unsafe { empty((it - 1) % STAGES).arrive() };
        }
        // SAFETY: the hooks' contract; every consumer thread, before its stores of `tile`.
        unsafe { hooks.before_epilogue(tile) };
        let (m, n) = (problem.m, problem.n);
        // The thread's two rows (registers i with (i / 2) % 2 = 0 and 1), each worked out by
        // the hooks once; a row past m gets the last row's context and stores nothing.
        let row_of = |half: u32| tile.m0 + row0 + WgmmaAcc::<128>::coords(lane_tid, 2 * half).0;
        // SAFETY: rows < m, as the hook's contract asks.
        let rows = unsafe {
            [
                hooks.row(row_of(0).min(m - 1)),
                hooks.row(row_of(1).min(m - 1)),
            ]
        };
        // The addends: one straight-line pass over the fragment per addend (registers 2p and
        // 2p + 1 hold columns c and c + 1 of row half p % 2).
        let most = hooks.addends(rows[0]).max(hooks.addends(rows[1]));
        if most > 0 {
            let regs = acc.regs();
            for a in 0..most {
                unroll!(hi in [0, 1, 2, 3, 4, 5, 6, 7] {
                    unroll!(lo in [0, 1, 2, 3, 4, 5, 6, 7] {
                        let i = 2 * (8 * hi + lo);
                        let (r, c) = WgmmaAcc::<128>::coords(lane_tid, i as u32);
                        let (row, col) = (tile.m0 + row0 + r, tile.n0 + c);
                        let ctx = rows[i / 2 % 2];
                        if row < m && col < n && a < hooks.addends(ctx) {
                            // SAFETY: in C's bounds, `a` below the row's addends, as the
                            // hook's contract asks.
                            let add = unsafe { hooks.addend(ctx, a, col, col + 1 < n) };
                            regs[i] += add[0];
                            regs[i + 1] += add[1];
                        }
                    });
                });
            }
        }
        let mut pending = 0.0f32;
        acc.for_each(|i, v| {
            if i % 2 == 0 {
                pending = v;
                return;
            }
            let (r, c) = WgmmaAcc::<128>::coords(lane_tid, i - 1);
            let (row, col) = (tile.m0 + row0 + r, tile.n0 + c);
            if row < m && col < n {
                // SAFETY: in C's bounds, as the hook's contract asks; `rows[..]` is this
                // row's context (coords' row is row_of((i / 2) % 2)).
                unsafe {
                    hooks.store(
                        rows[((i - 1) / 2 % 2) as usize],
                        col,
                        [pending, v],
                        col + 1 < n,
                    )
                };
            }
        });
        if H::TILE_DONE {
            // Every consumer waits, so that no thread's arrival for the next tile can count
            // towards this one.
            // SAFETY: all 256 consumer threads arrive once per tile.
            unsafe {
                epilogue.arrive();
                epilogue.wait_parity(done & 1);
            }
            if tid == 128 {
                // SAFETY: the hook's contract; every consumer's stores of `tile` precede the
                // barrier's completion.
                unsafe { hooks.tile_done(tile) };
            }
        }
        done += 1;
        t += step;
    }
}
