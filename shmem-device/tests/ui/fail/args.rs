use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel(fast)]
pub unsafe fn k() {}

fn main() {}
