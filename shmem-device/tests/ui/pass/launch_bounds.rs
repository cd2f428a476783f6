//! `#[kernel(launch_bounds(..))]` sets the handle's `MAX_THREADS` (the host's launch check);
//! without it a kernel may take the hardware's 1024.
use rshmem_device::kernel::Kernel;

/// # Safety
///
/// None needed.
#[rshmem_device::kernel(launch_bounds(384, 1))]
pub unsafe fn bounded(_x: u32) {}

/// # Safety
///
/// None needed.
#[rshmem_device::kernel(launch_bounds(256))]
pub unsafe fn bounded_threads_only() {}

/// # Safety
///
/// None needed.
#[rshmem_device::kernel]
pub unsafe fn unbounded() {}

fn main() {
    assert_eq!(<bounded as Kernel>::MAX_THREADS, 384);
    assert_eq!(<bounded_threads_only as Kernel>::MAX_THREADS, 256);
    assert_eq!(<unbounded as Kernel>::MAX_THREADS, 1024);
}
