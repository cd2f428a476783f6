//! Kernels that break the asynchronous contracts on purpose, so the tests can check that the
//! simulator does not hide the bug (it poisons or fails where a GPU would race). Never run
//! them on a GPU: their results there are undefined.

use crate::mma::{load_operand, operand_desc, swizzle_of};
use rshmem_device::bf16;
use rshmem_device::hopper::wgmma::{self, WgmmaAcc};
use rshmem_device::hopper::{self, dynamic_shared_aligned, tma, MBarrier, TensorMap};
use rshmem_device::prelude::*;

/// Reads a TMA box before waiting on its mbarrier (then waits, to end cleanly): the block
/// copies what shared memory holds at that moment into `out`.
///
/// # Safety
///
/// `map` is a tensor map in global memory whose box is `bytes` bytes; `out` has room for
/// `bytes`; one block with `bytes + 2048` bytes of shared memory.
#[kernel]
pub unsafe fn read_before_wait(map: *const TensorMap, out: *mut u8, bytes: u32) {
    let tid = thread::thread_idx_x();
    // SAFETY: the launch gives `bytes + 2048` bytes of shared memory; the first 8 hold this
    // barrier only.
    let bar = unsafe { MBarrier::in_dynamic_shared(0) };
    // SAFETY: past the barrier, the padding (< 1024) and the `bytes` of the tile fit.
    let tile = unsafe { dynamic_shared_aligned(8, 1024) };
    if tid == 0 {
        // SAFETY: one thread initialises the fresh barrier, fenced and published by the
        // `sync_threads` below; `map` is a tensor map in global memory (the contract), fenced
        // before its copy into the tile, which the barrier expects.
        unsafe {
            bar.init(1);
            hopper::fence_barrier_init();
            tma::fence_tensormap_acquire(map);
            bar.arrive_expect_tx(bytes);
            tma::load_2d(map, tile, bar, 0, 0);
        }
    }
    thread::sync_threads();
    let mut i = tid;
    while i < bytes {
        // SAFETY: `i < bytes`: inside the tile and `out`. The read races with the copy on
        // purpose (the bug under test): the bytes are plain data whatever they hold, and the
        // kernel is documented as simulator-only, where the tile is poisoned until the wait.
        unsafe { *out.add(i as usize) = *tile.add(i as usize) };
        i += thread::block_dim_x();
    }
    // Every thread has read before any waits (a wait lands the data on the simulator).
    thread::sync_threads();
    // SAFETY: the barrier is initialised; its first phase (parity 0) is the current one.
    unsafe { bar.wait_parity(0) };
}

/// One m64n8k16 `wgmma` from 128-byte swizzled operands, then the bug `which` selects:
/// 0 none, 1 the accumulators taken before `wait_group` (committed), 2 no `wgmma::fence`
/// before the mma, 3 never committed (but waited for).
///
/// # Safety
///
/// The maps describe 128-byte swizzled bf16 operands as `wgmma_n8` takes them and `out` has
/// room for the 64 x 8 result; one block of 128 threads. Cases 1-3 break `wgmma`'s contract on
/// purpose: run them only on the simulator, which stops the thread.
#[kernel]
pub unsafe fn wgmma_misuse(
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    which: u32,
    out: *mut f32,
) {
    let tid = thread::thread_idx_x();
    let sw = swizzle_of(3);
    // SAFETY: the launch gives `(64 + 8) * 128 + 2048` bytes of shared memory (as `wgmma_n8`
    // with k = 64); the first 8 hold this barrier only.
    let bar = unsafe { MBarrier::in_dynamic_shared(0) };
    // SAFETY: past the barrier, the padding (< 1024) and both operands fit.
    let sa = unsafe { dynamic_shared_aligned(8, 1024) };
    // SAFETY: B follows A's 64 x 64 bf16 (8 KiB), inside the same allocation.
    let sb = unsafe { sa.add(64 * 128) };
    if tid == 0 {
        // SAFETY: one thread initialises the fresh barrier, published by the fence and the
        // `sync_threads` below before anyone uses it.
        unsafe {
            bar.init(1);
            hopper::fence_barrier_init();
        }
    }
    thread::sync_threads();
    if tid == 0 {
        // SAFETY: both maps are tensor maps in global memory as `wgmma_n8` takes them (the
        // contract), fenced before their copies into `sa`/`sb`, which the barrier expects.
        unsafe {
            tma::fence_tensormap_acquire(map_a);
            tma::fence_tensormap_acquire(map_b);
            bar.arrive_expect_tx((64 + 8) * 128);
            load_operand(map_a, sa, bar, (64, 64, 2), sw, 0, 0);
            load_operand(map_b, sb, bar, (8, 64, 2), sw, 0, 0);
        }
    }
    // SAFETY: the barrier is initialised; its first phase (parity 0) is the current one.
    unsafe { bar.wait_parity(0) };
    let mut acc = WgmmaAcc::<4>::zero();
    if which != 2 {
        wgmma::fence();
    }
    let (a, b) = (hopper::shared_address(sa), hopper::shared_address(sb));
    // SAFETY: the 128 threads (one warpgroup) issue it together on the loaded, swizzled
    // operands. Cases 1-3 break the fence/commit/wait rule on purpose: the kernel's contract
    // confines them to the simulator, which stops the offending thread instead of racing.
    unsafe { acc.mma_ss::<bf16>(operand_desc(a, 64, sw, 0), operand_desc(b, 8, sw, 0), false) };
    if which != 3 {
        wgmma::commit_group();
    }
    if which != 1 {
        wgmma::wait_group::<0>();
    }
    let d = acc.regs();
    // SAFETY: `tid < 128`: inside the 64 x 8 `out`.
    unsafe { *out.add(tid as usize) = d[0] };
}

/// Every thread calls `setmaxnreg.dec 232` then `setmaxnreg.inc 240` and writes 1 to
/// `out[t]`: on the simulator a warpgroup meeting each (a block that is not whole warpgroups
/// fails). Not run on a GPU: register counts there depend on the launch's allocation.
///
/// # Safety
///
/// `out` has room for one u32 per thread; blocks of whole warpgroups (128 threads).
#[kernel]
pub unsafe fn setmaxnreg_meeting(out: *mut u32) {
    // SAFETY: blocks are whole warpgroups (the contract), so every warpgroup's 128 threads
    // call each together; 232 then 240 registers stay within what the simulator models
    // (the kernel is not run on GPUs); `out` holds a u32 per thread.
    unsafe {
        hopper::setmaxnreg_dec::<232>();
        hopper::setmaxnreg_inc::<240>();
        *out.add(thread::thread_idx_x() as usize) = 1;
    }
}
