//! Kernels that pin the Hopper primitives of `rshmem_device::hopper` down, for
//! `testkit/tests/hopper.rs`: TMA loads into shared memory copied out raw (swizzle patterns,
//! out-of-bounds fill, 2-D and 3-D), TMA stores, an mbarrier pipeline of several stages and
//! phases, `wgmma` for several N with A from shared memory or registers, and a tile GEMM of
//! one warpgroup per block with TMA, mbarriers and `wgmma` together.
//!
//! Built for sm_90a only (`testkit/build.rs`): `wgmma` and `setmaxnreg` exist nowhere else.
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

use rshmem_device::hopper::{shared_address, MBarrier};
use rshmem_device::thread;

/// This block's dynamic shared memory from the first `align`-aligned shared address (the
/// alignment swizzle patterns are computed on), with `skip` bytes reserved before it.
///
/// # Safety
///
/// The launch gave at least `skip + align` more bytes than the caller uses.
#[inline(always)]
pub(crate) unsafe fn shared_from(skip: u32, align: u32) -> *mut u8 {
    let (base, _) = thread::dynamic_shared::<u8>();
    let at = shared_address(base) + skip;
    let pad = (align - at % align) % align;
    // SAFETY: within the launch's shared memory (the caller's contract).
    unsafe { base.add((skip + pad) as usize) }
}

/// The `i`-th mbarrier at the start of shared memory.
///
/// # Safety
///
/// The launch gave at least `8 * (i + 1)` bytes of shared memory; the kernel keeps barriers
/// there and nothing else.
#[inline(always)]
pub(crate) unsafe fn barrier(i: u32) -> &'static MBarrier {
    let (base, _) = thread::dynamic_shared::<MBarrier>();
    // SAFETY: 8-aligned (shared memory is 16-aligned), in bounds (the caller's contract).
    unsafe { &*base.add(i as usize) }
}
