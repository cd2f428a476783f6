//! # rshmem
//!
//! Write GPU kernels in Rust that talk to other GPUs from inside the kernel — put/get,
//! atomics, signals, barriers, collectives — on a symmetric heap set up through NVSHMEM; run
//! the same program on GPUs or, where there are none, on the CPU simulator.
//!
//! This crate is what applications depend on: it re-exports the host API of
//! [`rshmem_host`] and ships the project's own kernels in [`kernels`]. Kernel crates depend on
//! [`rshmem_device`] (re-exported as [`device`]) and are built by `rshmem-builder`.
//!
//! ```no_run
//! use rshmem::{kernels, LaunchConfig, Shmem};
//!
//! fn main() -> Result<(), rshmem::BoxError> {
//!     rshmem::run(|shmem: &Shmem| -> Result<(), rshmem::BoxError> {
//!         let module = shmem.load(&kernels::IMAGE)?;
//!         let mut dst = shmem.alloc_zeroed::<i32>(1)?;
//!         // SAFETY: `dst` is a symmetric i32, as `ring` expects; every PE launches it.
//!         unsafe { module.launch::<kernels::ring::ring>(LaunchConfig::new(1, 1).cooperative(), (dst.as_mut_ptr(),))? };
//!         let got = dst.to_vec()?[0] as usize;
//!         assert_eq!(got, (shmem.my_pe() + shmem.n_pes() - 1) % shmem.n_pes());
//!         Ok(())
//!     })?;
//!     Ok(())
//! }
//! ```

pub use rshmem_device as device;
pub use rshmem_host::*;

/// The kernels rshmem ships, and [`kernels::IMAGE`], their PTX/cubin built by `build.rs`.
pub mod kernels {
    pub use rshmem_kernels::*;

    /// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `kernels/`.
    pub static IMAGE: crate::KernelImage = crate::include_kernels!("rshmem-kernels");
}
