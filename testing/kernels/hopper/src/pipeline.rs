//! An mbarrier pipeline: a producer thread streams tiles through `stages` shared-memory
//! buffers, the whole block consumes them; "full" barriers carry TMA bytes, "empty" ones the
//! consumers' arrivals, and both cycle through several phases.

use rshmem_device::hopper::{self, dynamic_shared_aligned, tma, MBarrier, TensorMap};
use rshmem_device::prelude::*;

/// Tile `t` (0..tiles) is the box at (0, `t * box_rows`) of `map` (a 2-D f32 tensor, boxes of
/// `box_bytes`); the block sums each tile's column `c` for c = thread index into
/// `out[t * block + c]`. Stages `1..=4`; shared memory `stages * box_bytes + 2048`.
///
/// # Safety
///
/// `map` is a tensor map in global memory of a 2-D f32 tensor of at least `tiles` boxes; `out`
/// has room for `tiles * blockDim` f32s; stages 1..=4 and the shared memory above.
#[kernel]
pub unsafe fn pipeline_sum(
    map: *const TensorMap,
    tiles: u32,
    stages: u32,
    box_rows: u32,
    box_cols: u32,
    out: *mut f32,
) {
    let tid = thread::thread_idx_x();
    let threads = thread::block_dim_x();
    let box_bytes = box_rows * box_cols * 4;
    // Barriers 0..4 are "full", 4..8 "empty".
    // SAFETY: (all three closures) the launch gives `stages * box_bytes + 2048` bytes of
    // shared memory; its first 64 hold the eight barriers only (`s < stages <= 4` at every
    // call), then, past at most 1023 bytes of padding, the stages' buffers.
    let full = |s: u32| unsafe { MBarrier::in_dynamic_shared(s) };
    // SAFETY: as above.
    let empty = |s: u32| unsafe { MBarrier::in_dynamic_shared(4 + s) };
    // SAFETY: as above.
    let buf = |s: u32| unsafe { dynamic_shared_aligned(64, 1024).add((s * box_bytes) as usize) };
    if tid == 0 {
        for s in 0..stages {
            // SAFETY: one thread initialises each fresh barrier, published by the fence and
            // the `sync_threads` below before anyone uses it.
            unsafe {
                full(s).init(1);
                empty(s).init(threads);
            }
        }
        hopper::fence_barrier_init();
    }
    thread::sync_threads();
    let issue = |t: u32| {
        let s = t % stages;
        // SAFETY: thread 0 alone issues, after fencing the map (below); the buffer is free
        // (never used, or its "empty" barrier completed); the box fills its `box_bytes`,
        // which the "full" barrier expects with this one arrival.
        unsafe {
            full(s).arrive_expect_tx(box_bytes);
            tma::load_2d(map, buf(s), full(s), 0, (t * box_rows) as i32);
        }
    };
    if tid == 0 {
        // SAFETY: `map` is a tensor map in global memory that nothing writes (the contract).
        unsafe { tma::fence_tensormap_acquire(map) };
        for t in 0..stages.min(tiles) {
            issue(t);
        }
    }
    for t in 0..tiles {
        let (s, round) = (t % stages, t / stages);
        // SAFETY: an initialised barrier, awaited in its current phase (the buffer is
        // refilled only after every consumer has arrived for the previous round).
        unsafe { full(s).wait_parity(round & 1) };
        let tile = buf(s) as *const f32;
        if tid < box_cols {
            let mut sum = 0.0f32;
            for r in 0..box_rows {
                // SAFETY: `r < box_rows`, `tid < box_cols`: inside the loaded box.
                sum += unsafe { *tile.add((r * box_cols + tid) as usize) };
            }
            // SAFETY: `t < tiles`, `tid < threads`: inside `out` (the contract).
            unsafe { *out.add((t * threads + tid) as usize) = sum };
        }
        // SAFETY: the "empty" barrier counts every thread of the block, once per round.
        unsafe { empty(s).arrive() };
        if tid == 0 && t + stages < tiles {
            // The stage is free once every consumer has arrived for this round.
            // SAFETY: an initialised barrier, awaited in its current phase.
            unsafe { empty(s).wait_parity(round & 1) };
            issue(t + stages);
        }
    }
}
