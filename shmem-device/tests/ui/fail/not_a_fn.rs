use rshmem_device::kernel;

#[kernel]
pub struct NotAKernel;

fn main() {}
