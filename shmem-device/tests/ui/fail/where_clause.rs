use rshmem_device::kernel;

/// # Safety
///
/// None needed.
#[kernel]
pub unsafe fn k(x: u32)
where
    u32: Copy,
{
    let _ = x;
}

fn main() {}
