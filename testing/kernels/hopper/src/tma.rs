//! TMA loads and stores, observed raw.

use rshmem_device::hopper::{self, dynamic_shared_aligned, tma, MBarrier, TensorMap};
use rshmem_device::prelude::*;

/// Thread 0 loads the box of `map` at (`x`, `y`, `z`) (`rank` 2 or 3) into shared memory
/// (1024-aligned, after one mbarrier), every thread waits for it, then the block copies the
/// `bytes` of shared memory unchanged to `out`: the host sees the swizzle and the
/// out-of-bounds fill as TMA wrote them. One block; shared memory `bytes + 2048`.
///
/// # Safety
///
/// `map` is a tensor map in global memory whose box is `bytes` bytes; `out` has room for
/// `bytes`; one block with `bytes + 2048` bytes of shared memory.
#[kernel]
pub unsafe fn tma_load_raw(
    map: *const TensorMap,
    rank: u32,
    x: i32,
    y: i32,
    z: i32,
    out: *mut u8,
    bytes: u32,
) {
    let tid = thread::thread_idx_x();
    // SAFETY: the launch gives `bytes + 2048` bytes of shared memory (the contract); its
    // first 8 hold this barrier and nothing else.
    let bar = unsafe { MBarrier::in_dynamic_shared(0) };
    // SAFETY: past the barrier, at most 1023 bytes of padding and the `bytes` of the tile fit.
    let tile = unsafe { dynamic_shared_aligned(8, 1024) };
    if tid == 0 {
        // SAFETY: one thread initialises the fresh barrier; the others wait for it at the
        // `sync_threads` below, after the init fence.
        unsafe {
            bar.init(1);
            hopper::fence_barrier_init();
        }
    }
    thread::sync_threads();
    if tid == 0 {
        // SAFETY: `map` is a tensor map in global memory (the contract), fenced before the
        // copy; its box of `bytes` fits the 1024-aligned tile; the barrier is initialised and
        // expects this one arrival and the copy's bytes.
        unsafe {
            tma::fence_tensormap_acquire(map);
            bar.arrive_expect_tx(bytes);
            if rank == 2 {
                tma::load_2d(map, tile, bar, x, y);
            } else {
                tma::load_3d(map, tile, bar, x, y, z);
            }
        }
    }
    // SAFETY: the barrier is initialised and its first phase (parity 0) is the current one.
    unsafe { bar.wait_parity(0) };
    let mut i = tid;
    while i < bytes {
        // SAFETY: `i < bytes`: inside the tile (written by the completed copy) and `out`.
        unsafe { *out.add(i as usize) = *tile.add(i as usize) };
        i += thread::block_dim_x();
    }
    thread::sync_threads();
    if tid == 0 {
        // SAFETY: every thread has passed its wait (the barrier above); nothing uses it again.
        unsafe { bar.inval() };
    }
}

/// The block writes `bytes` of `src` into shared memory (1024-aligned) unchanged, fences
/// them for the async proxy, and thread 0 stores the box to (`x`, `y`, `z`) of `map`
/// (`rank` 2 or 3) and waits for it: the host sees which elements TMA wrote (clipped at the
/// tensor's edges) and how it un-swizzled them. One block; shared memory `bytes + 1024`.
///
/// # Safety
///
/// `map` is a tensor map in global memory whose box is `bytes` bytes; `src` holds `bytes`; one
/// block with `bytes + 1024` bytes of shared memory.
#[kernel]
pub unsafe fn tma_store_raw(
    map: *const TensorMap,
    rank: u32,
    x: i32,
    y: i32,
    z: i32,
    src: *const u8,
    bytes: u32,
) {
    let tid = thread::thread_idx_x();
    // SAFETY: the launch gives `bytes + 1024` bytes of shared memory: padding and the tile.
    let tile = unsafe { dynamic_shared_aligned(0, 1024) };
    let mut i = tid;
    while i < bytes {
        // SAFETY: `i < bytes`: inside `src` (the contract) and the tile.
        unsafe { *tile.add(i as usize) = *src.add(i as usize) };
        i += thread::block_dim_x();
    }
    hopper::fence_proxy_async_shared();
    thread::sync_threads();
    if tid == 0 {
        // SAFETY: `map` is a tensor map in global memory, fenced; the tile holds its box,
        // written by every thread before the async-proxy fence and the barrier above; the
        // wait below keeps the tile alive until the store has read it.
        unsafe {
            tma::fence_tensormap_acquire(map);
            if rank == 2 {
                tma::store_2d(map, tile, x, y);
            } else {
                tma::store_3d(map, tile, x, y, z);
            }
        }
        tma::commit_group();
        tma::wait_group::<0>();
    }
}
