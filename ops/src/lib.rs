//! # rshmem-ops
//!
//! rshmem's own operations on device buffers, re-exported by `rshmem` as `rshmem::ops`.

/// The sm_90a image of `kernels/ops-sm90` (the Hopper GEMM).
pub static SM90: rshmem_host::KernelImage =
    rshmem_host::include_kernels!("rshmem-ops-sm90-kernels");

/// The sm_80 and sm_90 image of `kernels/ops-sm80` (the `cp.async` + `mma.sync` GEMM, for
/// Ampere and later).
pub static SM80: rshmem_host::KernelImage =
    rshmem_host::include_kernels!("rshmem-ops-sm80-kernels");
