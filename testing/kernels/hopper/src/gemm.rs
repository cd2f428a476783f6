//! A tile GEMM of one warpgroup per block: C (M x N, f32) = A (M x K, bf16, row-major) *
//! B (N x K, bf16, row-major)^T, tiles of 64 x 128 x 64, a 3-stage TMA + mbarrier pipeline
//! with 128-byte swizzle, `wgmma.m64n128k16` from shared-memory descriptors. Edges in M, N
//! and K are handled by TMA's zero fill and masked stores. `docs/tensor-cores.md (## Hopper)`
//! walks through it.

use rshmem_device::bf16;
use rshmem_device::hopper::wgmma::{self, WgmmaAcc};
use rshmem_device::hopper::{
    self, dynamic_shared_aligned, tma, MBarrier, SmemDesc, Swizzle, TensorMap,
};
use rshmem_device::prelude::*;

/// Rows of A per block.
pub const BM: u32 = 64;
/// Rows of B (columns of C) per block.
pub const BN: u32 = 128;
/// K per stage: one 128-byte swizzled row of bf16.
pub const BK: u32 = 64;
/// Pipeline depth.
pub const STAGES: u32 = 3;
/// Bytes of one stage (A tile, then B tile).
pub const STAGE_BYTES: u32 = (BM + BN) * BK * 2;
/// Dynamic shared memory the kernel needs.
pub const SHARED_BYTES: u32 = STAGES * STAGE_BYTES + 2048;

/// `map_a`: 2-D bf16 map of A (K innermost) with boxes BK x BM and 128-byte swizzle;
/// `map_b`: the same for B with boxes BK x BN. Grid ceil(N / BN) * ceil(M / BM) blocks (N-tiles fastest), 128
/// threads, [`SHARED_BYTES`] of shared memory.
///
/// # Safety
///
/// The maps are as described above (in global memory, made for this backend), `c` has room for
/// M x N f32s, and the launch is the grid, block and shared memory above, on sm_90a code.
#[kernel]
pub unsafe fn gemm_bf16(
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let tid = thread::thread_idx_x();
    // One tile per block, N-tiles fastest.
    let tiles_n = n.div_ceil(BN);
    let (m0, n0) = (
        thread::block_idx_x() / tiles_n * BM,
        thread::block_idx_x() % tiles_n * BN,
    );
    // SAFETY: (all three closures) the launch gives SHARED_BYTES of shared memory; its first
    // `2 × STAGES` words are the "full" and "empty" barriers only (`s < STAGES` at every
    // call), then, past at most 1023 bytes of padding, the STAGES stages.
    let full = |s: u32| unsafe { MBarrier::in_dynamic_shared(s) };
    // SAFETY: as above.
    let empty = |s: u32| unsafe { MBarrier::in_dynamic_shared(STAGES + s) };
    // SAFETY: as above.
    let stage = |s: u32| unsafe {
        dynamic_shared_aligned(8 * 2 * STAGES, 1024).add((s * STAGE_BYTES) as usize)
    };
    if tid == 0 {
        for s in 0..STAGES {
            // SAFETY: one thread initialises each fresh barrier, published by the fence and
            // the `sync_threads` below before anyone uses it.
            unsafe {
                full(s).init(1);
                empty(s).init(128);
            }
        }
        hopper::fence_barrier_init();
    }
    thread::sync_threads();
    let k_tiles = k.div_ceil(BK);
    let issue = |kt: u32| {
        let s = kt % STAGES;
        let (sa, bar) = (stage(s), full(s));
        // SAFETY: thread 0 alone issues, after fencing both maps (below); the stage is free
        // (never used yet, or its "empty" barrier completed this round); A's box then B's
        // fill its STAGE_BYTES, which the "full" barrier expects with this one arrival.
        unsafe {
            bar.arrive_expect_tx(STAGE_BYTES);
            tma::load_2d(map_a, sa, bar, (kt * BK) as i32, m0 as i32);
            tma::load_2d(
                map_b,
                sa.add((BM * BK * 2) as usize),
                bar,
                (kt * BK) as i32,
                n0 as i32,
            );
        }
    };
    if tid == 0 {
        // SAFETY: the maps are tensor maps in global memory that nothing writes (the contract).
        unsafe {
            tma::fence_tensormap_acquire(map_a);
            tma::fence_tensormap_acquire(map_b);
        }
        for kt in 0..STAGES.min(k_tiles) {
            issue(kt);
        }
    }
    let mut acc = WgmmaAcc::<{ (BN / 2) as usize }>::zero();
    for kt in 0..k_tiles {
        let (s, round) = (kt % STAGES, kt / STAGES);
        // SAFETY: an initialised barrier; the phase awaited is the current one (the producer
        // refills stage `s` only after every consumer is done with the previous round).
        unsafe { full(s).wait_parity(round & 1) };
        let a = hopper::shared_address(stage(s));
        let b = a + BM * BK * 2;
        wgmma::fence();
        for ks in 0..BK / 16 {
            let ad = SmemDesc::new(a + 32 * ks, 16, 1024, Swizzle::B128);
            let bd = SmemDesc::new(b + 32 * ks, 16, 1024, Swizzle::B128);
            // SAFETY: the block's 128 threads (one warpgroup) issue it together after the
            // fence; both operands were loaded by TMA into this stage (waited for above), in
            // 128-byte swizzle on 1024-aligned tiles, and stay unwritten until the stage is
            // handed back after `wait_group`; sm_90a code.
            unsafe { acc.mma_ss::<bf16>(ad, bd, kt > 0 || ks > 0) };
        }
        wgmma::commit_group();
        wgmma::wait_group::<0>();
        // This stage's operands have been read: hand it back to the producer.
        // SAFETY: the "empty" barrier counts the 128 threads, each arriving once per round.
        unsafe { empty(s).arrive() };
        if tid == 0 && kt + STAGES < k_tiles {
            // SAFETY: an initialised barrier, awaited in its current phase.
            unsafe { empty(s).wait_parity(round & 1) };
            issue(kt + STAGES);
        }
    }
    acc.for_each(|i, v| {
        let (r, col) = WgmmaAcc::<{ (BN / 2) as usize }>::coords(tid, i);
        let (row, col) = (m0 + r, n0 + col);
        if row < m && col < n {
            // SAFETY: `row < m`, `col < n`: inside the M x N `c`.
            unsafe { *c.add((row * n + col) as usize) = v };
        }
    });
}
