//! The seed's first program: every PE fills its copy of a symmetric buffer with
//! `my_pe * 1000 + i`; after a barrier, each PE reads its neighbour's first element.

use rshmem_device::prelude::*;

/// `buf[i] = my_pe * 1000 + i` for `i < len`, one element per thread.
///
/// # Safety
///
/// `buf` is valid for `len` writes of `i32`.
#[kernel]
pub unsafe fn hello_fill(buf: *mut i32, len: u32) {
    let i = thread::index_1d();
    if i < len {
        *buf.add(i as usize) = shmem::my_pe() * 1000 + i as i32;
    }
}

/// Thread 0 reads `buf[index]` on PE `from_pe` (a remote get) into the local `out`.
///
/// # Safety
///
/// `buf` is symmetric with more than `index` elements; `from_pe` is a PE; `out` is valid for
/// one `i32` write.
#[kernel]
pub unsafe fn hello_read(buf: *const i32, index: u32, from_pe: i32, out: *mut i32) {
    if thread::index_1d() == 0 {
        *out = shmem::g(buf.add(index as usize), from_pe);
    }
}
