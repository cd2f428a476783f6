//! Each PE puts its id into its right neighbour's `dst`, then all PEs meet in a barrier,
//! after which `dst` on PE `k` holds `k - 1` (mod n). Launch with one block, cooperatively.

use rshmem_device::prelude::*;

/// Thread 0 of block 0 does `p(dst, me, (me + 1) % n)`; then a device-wide barrier.
///
/// # Safety
///
/// Every PE launches it; `dst` is a symmetric `i32`.
#[kernel]
pub unsafe fn ring(dst: *mut i32) {
    if thread::index_1d() == 0 {
        let (me, n) = (shmem::my_pe(), shmem::n_pes());
        shmem::p(dst, me, (me + 1) % n);
        shmem::barrier_all::<Thread>();
    }
}
