//! # rshmem-api-tests
//!
//! The test fixtures (`testing/kernels/fixtures`, `rshmem-test-kernels`, re-exported: their launchable
//! `Kernel` types, which the simulator runs on the host) and [`IMAGE`], their PTX and cubin
//! built by this package's `build.rs`; and, in `tests/`, the tests of rshmem's API that launch
//! them: `basics`, `streams`, `graphs`, `views`, `queue`.
//!
//! Nothing but `cargo test --workspace` (or `-p rshmem-api-tests`, or the ptx_image test of
//! `rshmem-device-tests`) builds this package: `rshmem` and its examples never build a fixture.

pub use rshmem_test_kernels::*;

/// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `testing/kernels/fixtures`.
pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-test-kernels");

/// The same kernels built in the checked device mode (`Builder::checked`): bounded waits,
/// PE numbers and symmetric addresses checked at every SHMEM call. sm_90 only. On the
/// simulator, which always checks, it runs the same code as [`IMAGE`].
pub static CHECKED_IMAGE: rshmem::KernelImage =
    rshmem::include_kernels!("rshmem-test-kernels-checked");
