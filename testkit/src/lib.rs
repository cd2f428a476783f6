//! # rshmem-testkit
//!
//! The kernel images that take minutes to build — kernels that inline NVSHMEM's collectives
//! at many types and scopes — and the tests and the perftest that launch them. The kernels
//! that build in seconds have light images of their own (`rshmem-examplekit`,
//! `rshmem-fixturekit`); this package's `build.rs` builds the heavy ones, so only
//! `cargo test --workspace` (or `-p rshmem-testkit`) pays for them.
//!
//! Each module re-exports a kernel crate (the launchable `Kernel` types, run by the simulator
//! on the host) and holds its `IMAGE` (PTX and cubin for sm_90 and sm_80, unless said):
//!
//! * [`conformance`]: the OpenSHMEM conformance table (`tests/conformance.rs`);
//! * [`teams`]: kernels over host-split teams (`tests/teams.rs`);
//! * [`perftest`]: the perftest (`examples/perftest.rs`), built for sm_90 alone;
//! * [`tensor`]: tensor cores and bf16/f16 (`tests/tensor.rs`), built for sm_90 alone;
//! * [`hopper`]: the Hopper primitives and a tile GEMM (`tests/hopper.rs`), built for sm_90a alone.

/// The conformance kernels (`kernels/conformance`) and their image.
pub mod conformance {
    pub use rshmem_conformance_kernels::*;

    /// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `kernels/conformance`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-conformance-kernels");
}

/// The team kernels (`kernels/teams`) and their image.
pub mod teams {
    pub use rshmem_teams_kernels::*;

    /// PTX for sm_90 and sm_80 (and cubins where ptxas was available) of `kernels/teams`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-teams-kernels");
}

/// The perftest kernels (`kernels/perftest`) and their image.
pub mod perftest {
    pub use rshmem_perftest_kernels::*;

    /// PTX and cubin for sm_90 alone (an H200 benchmark) of `kernels/perftest`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-perftest-kernels");
}

/// The tensor-core kernels (`kernels/tensor`) and their image.
pub mod tensor {
    pub use rshmem_tensor_kernels::*;

    /// PTX and cubin for sm_90 alone (`stmatrix` needs it) of `kernels/tensor`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-tensor-kernels");
}

/// The Hopper kernels (`kernels/hopper`: wgmma, TMA, mbarrier, a tile GEMM) and their image.
pub mod hopper {
    pub use rshmem_hopper_kernels::*;

    /// PTX and cubin for sm_90a alone (runs on sm_90 GPUs only) of `kernels/hopper`.
    pub static IMAGE: rshmem::KernelImage = rshmem::include_kernels!("rshmem-hopper-kernels");
}
