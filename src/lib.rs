//! # rshmem
//!
//! Write GPU kernels in Rust that talk to other GPUs from inside the kernel — put/get,
//! atomics, signals, barriers, collectives — on a symmetric heap set up through NVSHMEM; run
//! the same program on GPUs or, where there are none, on the CPU simulator.
//!
//! This crate is what applications depend on: it re-exports the host API of
//! [`rshmem_host`]. Kernel crates depend on [`rshmem_device`] (re-exported as [`device`]) and
//! are built by `rshmem-builder` from the application's `build.rs`; this crate builds no
//! kernel of its own. The examples below launch the examples' kernels (`testing/kernels/examples`,
//! whose image `rshmem-examples-image` builds: a dev-dependency, as an application's own kernel
//! crate would be a dependency).
//!
//! ```no_run
//! use rshmem::{LaunchConfig, Shmem};
//! use rshmem_examples_image as kernels;
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

//! Launch arguments are checked against the kernel's signature at compile time. A wrong type
//! (here `u32` where `ring` takes `*mut i32`) does not compile:
//!
//! ```compile_fail,E0308
//! # fn f(module: &rshmem::Module<'_>) -> rshmem::Result<()> {
//! unsafe { module.launch::<rshmem_examples_image::ring::ring>(rshmem::LaunchConfig::new(1, 1), (7u32,)) }
//! # }
//! ```
//!
//! nor does a wrong count:
//!
//! ```compile_fail,E0308
//! # fn f(module: &rshmem::Module<'_>, p: *mut i32) -> rshmem::Result<()> {
//! unsafe { module.launch::<rshmem_examples_image::ring::ring>(rshmem::LaunchConfig::new(1, 1), (p, 1u32)) }
//! # }
//! ```
//!
//! while the right arguments do:
//!
//! ```no_run
//! # fn f(module: &rshmem::Module<'_>, p: *mut i32) -> rshmem::Result<()> {
//! unsafe { module.launch::<rshmem_examples_image::ring::ring>(rshmem::LaunchConfig::new(1, 1), (p,)) }
//! # }
//! ```

pub use rshmem_device as device;
/// bf16/f16 (the `half` crate's types): `SymBuffer<bf16>`, kernel arguments, RMA.
pub use rshmem_device::half::{bf16, f16};
pub use rshmem_host::*;
/// rshmem's own operations (the GEMM): [`rshmem_ops`], with the feature `ops`.
#[cfg(feature = "ops")]
pub use rshmem_ops as ops;
