use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub unsafe fn k(x: u32, _: ...) {
    let _ = x;
}

fn main() {}
