//! The Ampere GEMM (sm_80 and later): a multi-stage `cp.async` pipeline into padded shared
//! memory, `ldmatrix` into fragments, `mma.sync.m16n8k16` into f32 accumulators.
//!
//! **Tiles.** A block of [`THREADS`] = 8 warps computes one [`BM`] x [`BN`] = 128 x 128 tile
//! of C at a time, walking the [`Schedule`] persistently ([`TileScheduler`]): tiles `blockIdx.x`,
//! `blockIdx.x + gridDim.x`, ... so that any grid covers the problem. The warps are arranged
//! 2 (along M) x 4 (along N), each owning 64 x 32 of the tile: 4 x 4 `m16n8` accumulators,
//! 64 f32 registers per thread.
//!
//! **Pipeline.** K advances [`BK`] = 32 at a time through [`STAGES`] = 3 shared-memory stages.
//! Each stage holds A's 128 x 32 slice and B's slice; every thread copies two 16-byte chunks of
//! each with `cp.async.cg` (zero-filling what lies past M, N or K, so edges need no other
//! care), one commit group per k-step. The loop waits for the oldest group
//! (`cp.async.wait_group 1`), meets the block at one `bar.sync` (the stage is visible to all
//! warps, and every warp is done with the stage about to be refilled), issues the copies of
//! the k-step `STAGES - 1` ahead and then computes on the landed stage: per 16 of K, four
//! `ldmatrix.x4` of A, two `ldmatrix.x4` of B and 16 `mma.sync`. A barrier ends each tile (the
//! next tile's first copies reuse the stages; [`Epilogue::tile_done`] follows it).
//!
//! **B's layouts, one body.** With `B_KN = false` B is N x K row-major (C = A · Bᵀ, K
//! contiguous): its slice is stored like A's, [`BN`] rows of [`BK`], and read with `ldmatrix`.
//! With `B_KN = true` B is K x N row-major (N contiguous): its slice is [`BK`] rows of [`BN`],
//! read with `ldmatrix.trans`. Both come from the same two helpers — a copy of a row-major
//! tile of any extent (`copy_tile`) and the address each lane gives `ldmatrix` — so the
//! mainloop is written once.
//!
//! **Bank conflicts.** Rows in shared memory are padded by 8 elements (16 bytes): K-major
//! rows are 40 elements (80 bytes) apart, N-major rows of B 136 (272 bytes). The 8 row
//! addresses of each 8 x 8 matrix of an `ldmatrix` then fall into 8 distinct 16-byte slots
//! of a 128-byte line (80 and 272 are odd multiples of 16), so each phase of the instruction
//! is conflict-free, and every row stays 16-byte aligned for `cp.async` and `ldmatrix`.
//!
//! **Epilogue.** Straight from the accumulators: each thread hands [`Epilogue::store`] pairs of
//! adjacent columns (`c0, c1` and `c2, c3` of each fragment), masked to `row < m`,
//! `col < n`, with `both = col + 1 < n`.

use crate::epilogue::Epilogue;
use crate::schedule::{Schedule, TileScheduler};
use crate::tile::Problem;
use rshmem_device::half::{bf16, f16};
use rshmem_device::matrix::Matrix;
use rshmem_device::mma::{
    commit_group, cp_async_cg_zfill, ldmatrix, ldmatrix_trans, mma_sync, wait_group, FragA, FragB,
    FragC, Operand, M16N8K16,
};
use rshmem_device::thread;

/// Rows of C per tile (2 warps of 64).
pub const BM: u32 = 128;
/// Columns of C per tile (4 warps of 32).
pub const BN: u32 = 128;
/// K per pipeline stage (two `m16n8k16` deep).
pub const BK: u32 = 32;
/// Pipeline depth: copies run two k-steps ahead of the tensor cores.
pub const STAGES: u32 = 3;
/// Threads per block: 8 warps.
pub const THREADS: u32 = 256;

/// Padding of each row in shared memory, in elements (16 bytes: see the module docs).
const PAD: u32 = 8;
/// Elements between rows of a K-major slice (A's, and B's when N x K).
const K_MAJOR_LD: u32 = BK + PAD;
/// Elements between rows of B's N-major slice (B K x N).
const N_MAJOR_LD: u32 = BN + PAD;
/// Elements of A's slice in one stage.
const A_ELEMS: u32 = BM * K_MAJOR_LD;
/// Elements of B's slice in one stage: room for either layout.
const B_ELEMS: u32 = if BN * K_MAJOR_LD > BK * N_MAJOR_LD {
    BN * K_MAJOR_LD
} else {
    BK * N_MAJOR_LD
};
/// Elements of one stage: A's slice, then B's.
const STAGE_ELEMS: u32 = A_ELEMS + B_ELEMS;
/// Dynamic shared memory a launch needs: the stages (60 KiB; opt in above 48 KiB, which the
/// host's launch does).
pub const SHARED_BYTES: u32 = STAGES * STAGE_ELEMS * 2;

// The shapes the index arithmetic below relies on.
const _: () = {
    assert!(STAGES == 3, "the loop's wait_group count is STAGES - 2");
    assert!(BM == 2 * 64 && BN == 4 * 32 && THREADS == 8 * 32);
    assert!(BK % 16 == 0);
    // Whole 16-byte chunks per thread for every slice.
    assert!((BM * BK / 8) % THREADS == 0 && (BN * BK / 8) % THREADS == 0);
    // Rows 16-byte aligned, an odd number of 16-byte slots apart.
    assert!(K_MAJOR_LD % 8 == 0 && (K_MAJOR_LD / 8) % 2 == 1);
    assert!(N_MAJOR_LD % 8 == 0 && (N_MAJOR_LD / 8) % 2 == 1);
    assert!(STAGE_ELEMS % 8 == 0 && A_ELEMS % 8 == 0);
};

/// The input element types: bf16 and f16, as `m16n8k16` operands.
pub trait Input: Operand<M16N8K16, A = [u32; 4], B = [u32; 2]> {}
impl Input for bf16 {}
impl Input for f16 {}

/// Tiles of `problem`: the grid that gives every block one tile (any smaller grid works too).
#[inline(always)]
pub const fn tiles(problem: Problem) -> u32 {
    let (tm, tn) = crate::tile::tiles(problem, BM, BN);
    tm * tn
}

/// Issues this thread's `cp.async` copies of the `ROWS x COLS` tile at (`row0`, `col0`) of the
/// row-major matrix `src` (rows `ld` apart, `rows x cols` in all) into `dst` (rows `DST_LD`
/// apart), zero-filling what lies outside the matrix. The block's threads share the
/// `ROWS * COLS / 8` chunks of 16 bytes, consecutive threads along a row.
///
/// # Safety
///
/// Called by each of the block's [`THREADS`] threads (`tid` its index) with the same other
/// arguments; `dst` is 16-byte aligned in shared memory with `ROWS` rows of `DST_LD` elements
/// that nobody accesses until the copies' group is waited for; `src` is 16-byte aligned in
/// global memory, `ld` and `col0` are multiples of 8, and every element `(r, c)`, `r < rows`,
/// `c < cols`, is readable at `src[r * ld + c]`.
#[inline(always)]
unsafe fn copy_tile<const ROWS: u32, const COLS: u32, const DST_LD: u32>(
    dst: *mut u16,
    src: *const u16,
    ld: u32,
    (row0, rows): (u32, u32),
    (col0, cols): (u32, u32),
    tid: u32,
) {
    let per_row = COLS / 8;
    for i in 0..ROWS * per_row / THREADS {
        let chunk = tid + i * THREADS;
        let (r, c) = (chunk / per_row, chunk % per_row * 8);
        let (gr, gc) = (row0 + r, col0 + c);
        let inside = gr < rows && gc < cols;
        // Elements of the chunk inside the matrix: 8, fewer at a ragged right edge, or none.
        let elems = if inside { (cols - gc).min(8) } else { 0 };
        let from = if inside {
            // SAFETY: element (gr, gc) is in the matrix (the caller's contract).
            unsafe { src.add(gr as usize * ld as usize + gc as usize) }
        } else {
            // Nothing is read; any aligned global address will do.
            src
        };
        // SAFETY: `dst` row `r` chunk `c` lies in the slice, 16-byte aligned (DST_LD and `c`
        // multiples of 8); `from` is 16-byte aligned (`ld`, `gc` multiples of 8) and readable
        // for `2 * elems` bytes (the row holds `cols - gc` more elements).
        unsafe {
            cp_async_cg_zfill(
                dst.add((r * DST_LD + c) as usize).cast(),
                from.cast(),
                2 * elems as usize,
            )
        };
    }
}

/// `C = A · Bᵀ` (`B_KN = false`: B is N x K row-major) or `C = A · B` (`B_KN = true`: B is
/// K x N row-major), A M x K row-major, elements `T`, accumulated in f32; the tiles' values
/// are taken in `schedule`'s order and their values handed to `epilogue`. Called by every
/// thread of the block, with the same arguments.
///
/// # Safety
///
/// * The launch is 1-D blocks of [`THREADS`] threads (any 1-D grid: blocks share the tiles)
///   with [`SHARED_BYTES`] of dynamic shared memory, of code built for sm_80 or later.
/// * `problem.k` is a multiple of 8; `a` and `b` start 16-byte aligned, their leading
///   dimensions are multiples of 8, A holds at least `m x k` and B `n x k` (`B_KN = false`)
///   or `k x n` (`B_KN = true`) of `problem`, in global memory that nothing writes while the
///   kernel runs. With a grouped schedule ([`Schedule::GROUPED`]) B holds one such matrix per
///   group, stacked (group `g`'s first row is row `g n`, or `g k`, of `b`).
/// * `schedule` and `epilogue` are valid for the problem (their own contracts).
#[inline(always)]
pub unsafe fn gemm<T: Input, S: Schedule, E: Epilogue, const B_KN: bool>(
    a: Matrix<T>,
    b: Matrix<T>,
    problem: Problem,
    schedule: S,
    epilogue: E,
) {
    let Problem { n, k, .. } = problem;
    let (lda, ldb) = (a.ld(), b.ld());
    let (a, b) = (a.as_ptr().cast::<u16>(), b.as_ptr().cast::<u16>());
    let tid = thread::thread_idx_x();
    let lane = tid % 32;
    let warp = tid / 32;
    // This warp's 64 x 32 of the tile.
    let (warp_m, warp_n) = (warp / 4 * 64, warp % 4 * 32);
    let smem = thread::dynamic_shared::<u16>().0;
    // SAFETY: stage `s < STAGES` lies in the launch's SHARED_BYTES of dynamic shared memory.
    let slice_a = |s: u32| unsafe { smem.add((s * STAGE_ELEMS) as usize) };
    // SAFETY: as above.
    let slice_b = |s: u32| unsafe { smem.add((s * STAGE_ELEMS + A_ELEMS) as usize) };

    // The lane's row and 8-column block within each 8 x 8 matrix of an `ldmatrix.x4`.
    let (quad, row8) = (lane / 8, lane % 8);

    // A grouped B: one matrix per group, stacked.
    let b_group = if B_KN { k } else { n } as usize * ldb as usize;

    for tile in TileScheduler::<S, BM, BN, BK>::new(schedule, problem) {
        // SAFETY: the schedule's contract; every thread, before its first copy of the tile.
        unsafe { schedule.before_loads(tile) };
        // Rows end at the tile's group's end (the problem's m when not grouped).
        let m = tile.m_end;
        let b = if S::GROUPED {
            // SAFETY: B holds `groups` matrices (the caller's contract), `tile.group` below.
            unsafe { b.add(tile.group as usize * b_group) }
        } else {
            b
        };

        // Copies of the tile's `kt`-th k-step into stage `kt % STAGES`.
        let k_steps = tile.k_steps;
        let load = |kt: u32| {
            let s = kt % STAGES;
            let k0 = (tile.k_step0 + kt) * BK;
            // SAFETY: the slices hold BM (BN) rows of K_MAJOR_LD or BK rows of N_MAJOR_LD;
            // the stage is free (the barrier before this call in the loop, or the one ending
            // the previous tile); the matrices' extents and alignment are the caller's
            // contract.
            unsafe {
                copy_tile::<BM, BK, K_MAJOR_LD>(slice_a(s), a, lda, (tile.m0, m), (k0, k), tid);
                if B_KN {
                    copy_tile::<BK, BN, N_MAJOR_LD>(slice_b(s), b, ldb, (k0, k), (tile.n0, n), tid);
                } else {
                    copy_tile::<BN, BK, K_MAJOR_LD>(slice_b(s), b, ldb, (tile.n0, n), (k0, k), tid);
                }
            }
        };

        // Prologue: the first STAGES - 1 k-steps in flight, one group each (empty past K).
        for kt in 0..STAGES - 1 {
            if kt < k_steps {
                load(kt);
            }
            commit_group();
        }

        let mut acc = [[FragC::<M16N8K16>::zero(); 4]; 4];
        for kt in 0..k_steps {
            // Groups 0..=kt+1 are committed: all but the newest have landed, k-step kt's too.
            wait_group::<1>();
            // Everyone's copies of k-step kt are visible, and every warp is done computing on
            // k-step kt - 1, whose stage the copies below refill.
            thread::sync_threads();
            if kt + STAGES - 1 < k_steps {
                load(kt + STAGES - 1);
            }
            // Always a group, so that the count above holds to the end.
            commit_group();

            let (sa, sb) = (slice_a(kt % STAGES), slice_b(kt % STAGES));
            for ks in 0..BK / 16 {
                let kk = 16 * ks;
                // A: four 16 x 16 fragments; matrices (rows 0-7 | 8-15) x (cols 0-7 | 8-15).
                let fa: [FragA<M16N8K16, T>; 4] = core::array::from_fn(|i| {
                    let row = warp_m + 16 * i as u32 + row8 + 8 * (quad % 2);
                    let col = kk + 8 * (quad / 2);
                    // SAFETY: the warp together (every lane runs this loop); the row lies in
                    // A's landed slice, 16-byte aligned.
                    FragA::from_regs(unsafe {
                        ldmatrix::<4>(sa.add((row * K_MAJOR_LD + col) as usize))
                    })
                });
                // B: four 16 x 8 fragments, two per `ldmatrix.x4`; matrix q covers K rows
                // 8 (q % 2).. and N columns 8 (q / 2).. of 16 columns.
                let mut fb = [FragB::<M16N8K16, T>::zero(); 4];
                unroll!(p in [0, 1] {
                    let nn = warp_n + 16 * p as u32 + 8 * (quad / 2);
                    let kq = kk + 8 * (quad % 2);
                    // SAFETY: the warp together; the row lies in B's landed slice, 16-byte
                    // aligned (N-major: row `kq + row8`; K-major: row `nn + row8`).
                    let r = unsafe {
                        if B_KN {
                            ldmatrix_trans::<4>(sb.add(((kq + row8) * N_MAJOR_LD + nn) as usize))
                        } else {
                            ldmatrix::<4>(sb.add(((nn + row8) * K_MAJOR_LD + kq) as usize))
                        }
                    };
                    fb[2 * p] = FragB::from_regs([r[0], r[1]]);
                    fb[2 * p + 1] = FragB::from_regs([r[2], r[3]]);
                });
                unroll!(i in [0, 1, 2, 3] {
                    unroll!(j in [0, 1, 2, 3] {
                        // SAFETY: the warp together, converged (no lane branches off in
                        // the mainloop); sm_80 (the caller's contract).
                        acc[i][j] = unsafe { mma_sync(&fa[i], &fb[j], &acc[i][j]) };
                    });
                });
            }
        }

        // Epilogue: rows g and g + 8, columns 2t and 2t + 1 of each 16 x 8 fragment. Unrolled
        // by hand: indexed by loop counters, the accumulators would live in local memory.
        let (g, t4) = (lane / 4, lane % 4);
        if E::BEFORE_EPILOGUE {
            // SAFETY: the epilogue's contract; every thread, before its stores of `tile`.
            unsafe { epilogue.before_epilogue(tile) };
        }
        unroll!(i in [0, 1, 2, 3] {
            unroll!(h in [0, 1] {
                let r = tile.m0 + warp_m + 16 * i as u32 + g + 8 * h as u32;
                // The row's context, once for its four fragments (a row past m gets the
                // last row's and stores nothing).
                // SAFETY: a row < m, as the epilogue's contract asks.
                let row = unsafe { epilogue.row(tile, r.min(m - 1)) };
                unroll!(j in [0, 1, 2, 3] {
                    let col = tile.n0 + warp_n + 8 * j as u32 + 2 * t4;
                    if r < m && col < n {
                        let mut v = [acc[i][j].regs[2 * h], acc[i][j].regs[2 * h + 1]];
                        for a in 0..epilogue.addends(row) {
                            // SAFETY: in C's bounds, below the row's addends.
                            let add = unsafe { epilogue.addend(row, a, col, col + 1 < n) };
                            v = [v[0] + add[0], v[1] + add[1]];
                        }
                        // SAFETY: in C's bounds, as the epilogue's contract asks; `row` is r's.
                        unsafe { epilogue.store(row, col, v, col + 1 < n) };
                    }
                });
            });
        });

        // Every warp is done with the stages (the next tile's prologue refills them) and has
        // stored its part of the tile.
        thread::sync_threads();
        if E::TILE_DONE && tid == 0 {
            // SAFETY: the epilogue's contract; every thread's stores of `tile` precede the
            // barrier.
            unsafe { epilogue.tile_done(tile) };
        }
    }
}
