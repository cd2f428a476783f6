use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub unsafe fn k<T: Copy>(x: T) {
    let _ = x;
}

fn main() {}
