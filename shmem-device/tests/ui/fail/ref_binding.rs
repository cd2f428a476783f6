use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub unsafe fn k(ref x: u32) {
    let _ = x;
}

fn main() {}
