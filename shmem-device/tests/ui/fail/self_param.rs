use rshmem_device::kernel;

pub struct Launcher;

impl Launcher {
    /// # Safety
    ///
    /// None needed.
    #[kernel]
    pub unsafe fn k(self) {}
}

fn main() {}
