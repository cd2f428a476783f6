use rshmem_device::kernel;

/// # Safety
///
/// `x` must be valid.
#[kernel]
pub unsafe fn k(x: &u32) {
    let _ = x;
}

fn main() {}
