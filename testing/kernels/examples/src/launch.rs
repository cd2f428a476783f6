//! The launch-overhead example's kernel: as small as a kernel gets, so that timing it times the
//! launch.

use rshmem_device::prelude::*;

/// `x[t] += 1` for `t < n`.
///
/// # Safety
///
/// `x` is valid for `n` reads and writes of `u32`.
#[kernel]
pub unsafe fn bump(x: *mut u32, n: u32) {
    let t = thread::index_1d();
    if t < n {
        *x.add(t as usize) += 1;
    }
}
