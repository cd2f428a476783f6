//! Every kind of parameter a kernel takes, passed through the host handle's `run_sim` in
//! declaration order.
use rshmem_device::kernel::{Kernel, KernelArgs};
use rshmem_device::shmem::Team;

/// Writes a sum of its scalar arguments to `out`.
///
/// # Safety
///
/// `out` must be valid for writing an `f64`.
#[rshmem_device::kernel]
pub unsafe fn mix(out: *mut f64, a: i8, b: u16, c: i32, d: u64, e: f32, f: bool, t: Team) {
    let sum = a as f64 + b as f64 + c as f64 + d as f64 + e as f64 + f as u8 as f64;
    *out = sum * 10.0 + t.raw() as f64;
}

fn main() {
    assert_eq!(<mix as Kernel>::NAME, "mix");
    assert_eq!(<<mix as Kernel>::Args as KernelArgs>::COUNT, 8);
    let mut out = 0.0f64;
    // SAFETY: `out` is a live local; the kernel calls nothing of the device API.
    unsafe { mix::run_sim((&mut out, -1, 2, -3, 4, 0.5, true, Team::NODE)) };
    assert_eq!(out, 37.0);
}
