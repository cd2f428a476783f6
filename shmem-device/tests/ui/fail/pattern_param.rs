use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub unsafe fn k((a, b): (u32, u32)) {
    let _ = (a, b);
}

fn main() {}
