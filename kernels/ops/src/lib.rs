//! # rshmem-ops-kernels
//!
//! The kernels behind `rshmem::ops`, one module per op family, each behind a cargo feature of
//! the same name and built into an image of its own by rshmem-ops' build script (so editing
//! one family relinks and reassembles only that image; see `docs/build.md`):
//!
//! | family | image | what |
//! |---|---|---|
//! | [`gemm90`] | `rshmem-ops-gemm90` (sm_90a) | the Hopper GEMM: `rshmem_gemm::sm90` with the plain epilogue |
//! | [`gemm80`] | `rshmem-ops-gemm80` (sm_80, sm_90) | the `mma.sync` GEMM: `rshmem_gemm::sm80` with the plain epilogue |
//! | [`tp90`] | `rshmem-ops-tp90` (sm_90a) | all-gather + GEMM and GEMM + reduce-scatter on the Hopper GEMM |
//! | [`tp80`] | `rshmem-ops-tp80` (sm_80, sm_90) | the same on the `mma.sync` GEMM, the fused calls' barrier and fix-up |
//! | [`coll`] | `rshmem-ops-coll` (sm_80, sm_90) | the collectives: `rshmem_coll`'s algorithms per type and reduction |
//! | [`moe`] | `rshmem-ops-moe` (sm_80, sm_90) | mixture-of-experts dispatch and combine: `rshmem_moe`'s steps |
//! | [`moe90`] | `rshmem-ops-moe90` (sm_90a) | the fused MoE layer's two grouped GEMMs on the Hopper GEMM |
//!
//! Each family writes each kernel's name once, in one table: the table's macro defines the
//! `#[kernel]` and, on the host, the trait impl through which rshmem-ops picks it by type
//! (for example [`gemm90::Gemm90`]: `<f32 as Gemm90<bf16, false>>::Kernel` is
//! `gemm90_bf16_f32_nk`), so the host side never repeats a kernel's name.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![allow(clippy::too_many_arguments)]

#[cfg(feature = "coll")]
pub mod coll;
#[cfg(feature = "gemm80")]
pub mod gemm80;
#[cfg(feature = "gemm90")]
pub mod gemm90;
#[cfg(feature = "moe")]
pub mod moe;
#[cfg(feature = "moe90")]
pub mod moe90;
#[cfg(feature = "tp80")]
pub mod tp80;
#[cfg(feature = "tp90")]
pub mod tp90;

/// A layout of B as a type, for the traits that name a family's kernel per layout: `B_KN`
/// true for B K x N (N contiguous), false for B N x K (K contiguous).
#[derive(Clone, Copy, Debug)]
pub struct Layout<const B_KN: bool>;

/// Host side: what to do with the kernel a family's table picks at run time. The table's
/// `match` calls `visit::<K>()` with the chosen kernel's type, so that the caller's generic
/// code (a launch, a name lookup) runs with the kernel as a type parameter.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Visit<Args> {
    /// What a visit gives.
    type Output;
    /// Runs with the picked kernel `K`.
    fn visit<K: rshmem_device::Kernel<Args = Args>>(self) -> Self::Output;
}
