//! # rshmem-device-tests
//!
//! The kernel images that take minutes to build — kernels that inline NVSHMEM's collectives
//! at many types and scopes — and the tests and the perftest that launch them. The kernels
//! that build in seconds have light images of their own (`rshmem-examples-image`,
//! `rshmem-api-tests`); this package's `build.rs` builds the heavy ones, so only
//! `cargo test --workspace` (or `-p rshmem-device-tests`) pays for them.
//!
//! Each module re-exports a kernel crate (the launchable `Kernel` types, run by the simulator
//! on the host) and holds its `IMAGE` (PTX and cubin for sm_90 and sm_80, unless said):
//!
//! * [`conformance`]: the OpenSHMEM conformance table (`tests/conformance.rs`);
//! * [`teams`]: kernels over host-split teams (`tests/teams.rs`);
//! * [`perftest`]: the perftest (`examples/perftest.rs`), built for sm_90 alone;
//! * [`tensor`]: tensor cores and bf16/f16 (`tests/tensor.rs`), built for sm_90 alone;
//! * [`hopper`]: the Hopper primitives and a tile GEMM (`tests/hopper.rs`), built for sm_90a alone.

/// The conformance kernels (`testing/kernels/conformance`) and their image.
pub mod conformance {
    pub use rshmem_conformance_kernels::*;

    /// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `testing/kernels/conformance`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-conformance-kernels");
}

/// The team kernels (`testing/kernels/teams`) and their image.
pub mod teams {
    pub use rshmem_teams_kernels::*;

    /// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `testing/kernels/teams`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-teams-kernels");
}

/// The perftest kernels (`testing/kernels/perftest`) and their image.
pub mod perftest {
    pub use rshmem_perftest_kernels::*;

    /// PTX and cubin for sm_90 alone (an H200 benchmark) of `testing/kernels/perftest`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-perftest-kernels");
}

/// The tensor-core kernels (`testing/kernels/tensor`) and their image.
pub mod tensor {
    pub use rshmem_tensor_test_kernels::*;

    /// PTX and cubin for sm_90 alone (`stmatrix` needs it) of `testing/kernels/tensor`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-tensor-test-kernels");
}

/// The Hopper kernels (`testing/kernels/hopper`: wgmma, TMA, mbarrier, a tile GEMM) and their image.
pub mod hopper {
    pub use rshmem_hopper_test_kernels::*;

    /// PTX and cubin for sm_90a alone (runs on sm_90 GPUs only) of `testing/kernels/hopper`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-hopper-test-kernels");
}
