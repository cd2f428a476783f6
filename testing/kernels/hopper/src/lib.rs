//! Kernels that pin the Hopper primitives of `rshmem_device::hopper` down, for
//! `testing/device-tests/tests/hopper.rs`: TMA loads into shared memory copied out raw (swizzle patterns,
//! out-of-bounds fill, 2-D and 3-D), TMA stores, an mbarrier pipeline of several stages and
//! phases, `wgmma` for several N with A from shared memory or registers, and a tile GEMM of
//! one warpgroup per block with TMA, mbarriers and `wgmma` together.
//!
//! Built for sm_90a only (`testing/device-tests/build.rs`): `wgmma` and `setmaxnreg` exist nowhere else.
//! Every kernel takes its tensor maps as `*const TensorMap` in global memory and fences them
//! with `tma::fence_tensormap_acquire` before the first copy.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![allow(clippy::too_many_arguments)]

pub mod bugs;
pub mod gemm;
pub mod mma;
pub mod pipeline;
pub mod tma;
