//! A kernel with `MAX_KERNEL_ARGS` parameters is accepted, and its arguments arrive in order.
use rshmem_device::kernel::{Kernel, KernelArgs, MAX_KERNEL_ARGS};

/// Writes its arguments, as digits, into `out`.
///
/// # Safety
///
/// `out` must be valid for writing a `u64`.
#[rshmem_device::kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn twelve(
    out: *mut u64,
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    e: u8,
    f: u8,
    g: u8,
    h: u8,
    i: u8,
    j: u8,
    k: u8,
) {
    *out = [a, b, c, d, e, f, g, h, i, j, k]
        .iter()
        .fold(0, |n, &digit| n * 10 + digit as u64);
}

fn main() {
    assert_eq!(MAX_KERNEL_ARGS, 12);
    assert_eq!(<<twelve as Kernel>::Args as KernelArgs>::COUNT, MAX_KERNEL_ARGS);
    let mut out = 0;
    // SAFETY: `out` is a live local; the kernel calls nothing of the device API.
    unsafe { twelve::run_sim((&mut out, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1)) };
    assert_eq!(out, 12_345_678_901);
}
