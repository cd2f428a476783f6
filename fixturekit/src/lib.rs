//! # rshmem-fixturekit
//!
//! The test fixtures (`kernels/fixtures`, `rshmem-test-kernels`, re-exported: their launchable
//! `Kernel` types, which the simulator runs on the host) and [`IMAGE`], their PTX and cubin
//! built by this package's `build.rs`; and, in `tests/`, the tests of rshmem's API that launch
//! them: `basics`, `streams`, `graphs`, `views`, `queue`.
//!
//! Nothing but `cargo test --workspace` (or `-p rshmem-fixturekit`, or the ptx_image test of
//! `rshmem-testkit`) builds this package: `rshmem` and its examples never build a fixture.

pub use rshmem_test_kernels::*;

/// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `kernels/fixtures`.
pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-test-kernels");
