//! # rshmem-examples-image
//!
//! The kernels of rshmem's examples (`testing/kernels/examples`, re-exported: the launchable `Kernel`
//! types, which the simulator runs on the host) and [`IMAGE`], their PTX and cubin built by
//! this package's `build.rs`; and [`USER_IMAGE`], a stand-in for a user's image that no test
//! is compiled with (`testing/kernels/user`), with its simulator library.
//!
//! `rshmem` lists this package as a dev-dependency, so its examples, integration tests and
//! doctests launch these kernels while a build of the library — what applications depend on —
//! builds no kernel at all.
//!
//! ```no_run
//! // `rshmem_host` is what `rshmem` re-exports (this package cannot depend on `rshmem`,
//! // which dev-depends on it).
//! use rshmem_examples_image::{ring, IMAGE};
//! use rshmem_host::{LaunchConfig, Shmem};
//!
//! rshmem_host::run(|shmem: &Shmem| -> Result<(), rshmem_host::BoxError> {
//!     let module = shmem.load(&IMAGE)?;
//!     let mut dst = shmem.alloc_zeroed::<i32>(1)?;
//!     // SAFETY: `dst` is a symmetric i32, as `ring` expects; every PE launches it.
//!     unsafe { module.launch::<ring::ring>(LaunchConfig::new(1, 1).cooperative(), (dst.as_mut_ptr(),))? };
//!     Ok(())
//! })?;
//! # Ok::<(), rshmem_host::BoxError>(())
//! ```

pub use rshmem_example_kernels::*;

/// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `testing/kernels/examples`.
pub static IMAGE: rshmem_host::KernelImage =
    rshmem_host::include_kernels!("rshmem-example-kernels");

/// The same image as the JSON manifest rshmem-builder wrote beside it: what a program loads
/// at run time (the Python bindings' `rshmem.load_kernels`, whose tests use this one).
pub const MANIFEST: &str = concat!(env!("OUT_DIR"), "/rshmem-image-rshmem-example-kernels.json");

/// The image of `testing/kernels/user`, whose kernels no test is compiled with: on the
/// simulator they run from [`USER_SIM_LIBRARY`] (`rshmem_host::SimLibrary`).
pub static USER_IMAGE: rshmem_host::KernelImage =
    rshmem_host::include_kernels!("rshmem-user-kernels");

/// Its manifest (which names the simulator library).
pub const USER_MANIFEST: &str = concat!(env!("OUT_DIR"), "/rshmem-image-rshmem-user-kernels.json");

/// Its simulator library (`rshmem_builder::Builder::sim_library`).
pub const USER_SIM_LIBRARY: &str = concat!(env!("OUT_DIR"), "/librshmem-user-kernels.sim.so");
