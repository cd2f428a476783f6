//! Put bandwidth: PE `from` writes `bytes` bytes of `src` into `dst` on PE `to`, `iters`
//! times, the grid's blocks each taking an equal, contiguous share with block-scoped
//! non-blocking puts, then one `quiet`.

use rshmem_device::prelude::*;

/// Block `b` puts bytes `[b * chunk, (b + 1) * chunk)` (the last block takes the rest),
/// `chunk` rounded up to 16 bytes: NVSHMEM's block copy moves 16-byte vectors only where both
/// addresses are 16-byte aligned, and falls back to 8, 4 or 1 byte otherwise.
/// Only PE `from` does anything; the host times the launch with events.
///
/// # Safety
///
/// `dst` is symmetric and `src` valid on PE `from`, both for `bytes` bytes; `to` is a PE.
#[kernel]
pub unsafe fn put_bw(dst: *mut u8, src: *const u8, bytes: u64, iters: u32, from: i32, to: i32) {
    if shmem::my_pe() != from {
        return;
    }
    let blocks = thread::grid_dim_x() as u64;
    let b = thread::block_idx_x() as u64;
    let chunk = bytes.div_ceil(blocks).next_multiple_of(16);
    let start = (b * chunk).min(bytes);
    let len = chunk.min(bytes - start) as usize;
    for _ in 0..iters {
        if len > 0 {
            shmem::putmem_nbi::<Block>(dst.add(start as usize), src.add(start as usize), len, to);
        }
    }
    thread::sync_threads();
    if thread::thread_idx_x() == 0 {
        shmem::quiet();
    }
}
