use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel(launch_bounds(2048))]
pub unsafe fn too_wide() {}

/// # Safety
///
/// None needed.
#[kernel(launch_bounds(threads))]
pub unsafe fn not_a_number() {}

/// # Safety
///
/// None needed.
#[kernel(launch_bounds(128, 1, 1))]
pub unsafe fn three() {}

fn main() {}
