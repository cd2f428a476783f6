use rshmem_device::kernel;

/// A parameter type that is not plain data: its bytes mean nothing on the device.
#[derive(Clone, Copy)]
pub struct Handle(u32);

/// # Safety
///
/// None needed.
#[kernel]
pub unsafe fn k(h: Handle) {
    let _ = h;
}

fn main() {}
