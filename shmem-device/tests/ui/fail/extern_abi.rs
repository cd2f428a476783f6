use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub unsafe extern "C" fn k() {}

fn main() {}
