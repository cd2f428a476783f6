//! `#[kernel]` accepts a signature without `unsafe` and `mut` bindings; the host function is
//! `unsafe` all the same (every entry point trusts its launcher's arguments), so calling it
//! needs an `unsafe` block, and the handle launches it like any other kernel.
use rshmem_device::kernel::Kernel;

/// Adds one to `*counter`, counting down a copy of `n` to show the binding is mutable.
///
/// # Safety
///
/// `counter` must be valid for reading and writing a `u32`.
#[rshmem_device::kernel]
pub fn bump(counter: *mut u32, mut n: u32) {
    while n > 0 {
        *counter += 1;
        n -= 1;
    }
}

fn main() {
    assert_eq!(<bump as Kernel>::NAME, "bump");
    let mut counter = 0;
    // SAFETY: `counter` is a live local.
    unsafe { bump(&mut counter, 2) };
    // SAFETY: as above.
    unsafe { bump::run_sim((&mut counter, 3)) };
    assert_eq!(counter, 5);
}
