//! Tensor-core kernels: one per primitive of `rshmem_device::mma` and `rshmem_device::half`,
//! launched by `testing/device-tests/tests/tensor.rs` on the simulator and the GPU against host references,
//! and [`gemm::gemm_bf16`], the one-warp tile GEMM of `docs/tensor-cores.md`.
//!
//! Built for sm_90 alone (`stmatrix` needs it; `mma.sync`, `ldmatrix` and `cp.async` run on
//! sm_80 too). Every warp-collective kernel is launched with whole warps.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![allow(clippy::too_many_arguments)]

pub mod cvt;
pub mod gemm;
pub mod matrix;
pub mod mma;

/// `ty` of [`mma::mma_one`] and [`mma::frag_layout`]: m16n8k16 bf16.
pub const BF16: u32 = 0;
/// m16n8k16 f16.
pub const F16: u32 = 1;
/// m16n8k8 tf32.
pub const TF32: u32 = 2;
