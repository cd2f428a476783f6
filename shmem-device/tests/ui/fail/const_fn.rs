use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub const unsafe fn k() {}

fn main() {}
