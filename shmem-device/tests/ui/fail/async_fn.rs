use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub async unsafe fn k() {}

fn main() {}
