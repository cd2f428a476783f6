//! # rshmem-ops
//!
//! rshmem's own operations on symmetric buffers, re-exported by `rshmem` (feature `ops`) as
//! `rshmem::ops`: the collectives ([`coll`]) and the GEMM, `C = A · B` with bf16 or f16 inputs, f32 accumulation and
//! an f32 or input-typed output, on the Hopper kernel (TMA + `wgmma`, persistent,
//! warp-specialised: `kernels/gemm/src/sm90.rs`) or the Ampere one (`cp.async` + `mma.sync`).
//!
//! The crate is laid out by op family, each family one folder whose kernels are one module
//! of `kernels/ops` (`rshmem-ops-kernels`) built into an image of its own:
//!
//! | family | host side | kernels (images) | device blocks |
//! |---|---|---|---|
//! | GEMM | [`gemm`] | `gemm90`, `gemm80` | `rshmem_gemm` |
//! | fused tensor-parallel | [`fused`] | `tp90`, `tp80` | `rshmem_tp` over `rshmem_gemm` |
//! | collectives | [`coll`] | `coll` | `rshmem_coll` |
//! | mixture of experts | [`moe`] | `moe`, `moe90` (the fused layer's GEMMs) | `rshmem_moe` over `rshmem_coll` and `rshmem_gemm` |
//!
//! * [`Ops`]: made once per PE ([`Ops::new`], collective), it loads the kernel images and
//!   keeps what the families keep between calls; [`Ops::gemm`] queues a GEMM on a stream.
//! * [`GemmShape`], [`BLayout`]: what to compute, B N x K (`A · Bᵀ`) or K x N;
//!   [`GemmOptions`] / [`Kernel`] force a kernel.
//! * [`gemm::elem`]: the element types ([`GemmIn`], [`GemmOut`]) and their kernels.
//! * The fused tensor-parallel ops, the same GEMM computing while it communicates:
//!   [`Ops::all_gather_gemm`] (A sharded by rows, the other PEs' chunks copied in by the copy
//!   engine while the GEMM runs) and [`Ops::gemm_reduce_scatter`] (K sharded, partial tiles
//!   stored to their owners from the GEMM's epilogue); [`fused`] has their rules and
//!   [`FusedOptions`], `docs/fused.md` the design.
//! * [`Sm90Launch`], [`Sm80Launch`] ([`gemm::launch`]): your own kernel on the GEMM's mainloops
//!   (your `rshmem_gemm::Schedule` and `Epilogue`) gets its launch configuration and, for sm90, its
//!   operands' tensor maps from them, as `Ops::gemm` does; `docs/fused-kernels.md` is the
//!   guide.
//! * [`coll`]: the collectives — [`Ops::all_reduce`] (and `_in_place`),
//!   [`Ops::reduce_scatter`], [`Ops::all_gather`], [`Ops::all_gather_v`],
//!   [`Ops::all_reduce_rmsnorm`] — Rust kernels over peer mappings (`kernels/ops`' `coll` family,
//!   made of `rshmem_coll`'s blocks), with their [`Algorithm`]s.
//! * [`fp8`]: FP8 (e4m3, e5m2: `rshmem_device::fp8`'s types) quantisation with block scales
//!   (per token and 128 channels, per 128 × 128) or one per tensor, on the host, with the
//!   error bound they keep.
//! * [`moe`]: mixture-of-experts token dispatch and combine — [`Ops::moe_buffers`],
//!   [`Ops::moe_dispatch`] (each token to its experts' ranks, once per rank, grouped by expert
//!   there), [`Ops::moe_combine`] (the experts' rows back, weighted, summed once in f32); the
//!   low-latency mode ([`Ops::moe_ll_dispatch`], ...); the fused layer [`Ops::moe_layer`]
//!   (dispatch, gate/up GEMM with SwiGLU, down GEMM, combine in one call, kernels only).
//!
//! ```no_run
//! use rshmem_device::bf16;
//! use rshmem_ops::{BLayout, GemmOptions, GemmShape, Kernel, Ops};
//!
//! rshmem_host::run(|shmem| -> rshmem_host::Result<()> {
//!     let ops = Ops::new(shmem)?;
//!     let (m, n, k) = (67u32, 45u32, 40u32);
//!     let a = shmem.alloc_from(&vec![bf16::ONE; (m * k) as usize])?; // m x k
//!     let b = shmem.alloc_from(&vec![bf16::ONE; (n * k) as usize])?; // n x k
//!     let mut c = shmem.alloc_zeroed::<bf16>((m * n) as usize)?;
//!     let shape = GemmShape::new(m, n, k, BLayout::NK);
//!     ops.gemm(&shmem.stream(), &a, &b, &mut c, shape)?;
//!     // Or force the Hopper kernel (an error on other GPUs):
//!     let sm90 = GemmOptions::kernel(Kernel::Sm90);
//!     ops.gemm_with(&shmem.stream(), &a, &b, &mut c, shape, sm90)?;
//!     assert!(c.to_vec()?.iter().all(|&x| x == bf16::from_f32(40.0)));
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! Which kernel runs ([`Kernel::Auto`]): the sm90 one on an sm_90 GPU (and on the simulator,
//! which reports sm 90), the sm80 one on other GPUs. B K x N needs `n` a multiple of 8 (its
//! rows are copied in 16-byte pieces); N x K takes any `n`.
//! The sm90 kernel launches `min(tiles, multiprocessors)` persistent blocks
//! ([`rshmem_host::Shmem::device_info`]).
//!
//! The kernels are `rshmem_gemm`'s mainloops with its plain epilogue; a fused kernel reuses
//! the same mainloops with its own `rshmem_gemm::Schedule` (tile order, a wait before a tile's
//! loads) and `Epilogue` (the store of each value, a per-tile signal) instead of copying them.

pub mod coll;
pub mod fp8;
pub mod fused;
pub mod gemm;
mod handle;
pub mod moe;

pub use coll::{Algorithm, CollElem, NormElem};
pub use fused::{FusedOptions, Waits};
pub use gemm::elem::{Fp8In, Fp8Out, GemmIn, GemmOut};
pub use gemm::fp8::Fp8Scales;
pub use gemm::grouped::{GroupRows, GroupedShape};
pub use gemm::launch::{Sm80Launch, Sm90Launch};
pub use gemm::maps::MAP_SLOTS;
pub use gemm::plan::{GemmPlan, GemmTile};
pub use gemm::shape::{BLayout, GemmOptions, GemmShape, Kernel};
pub use gemm::split_k::SplitK;
pub use handle::Ops;
pub use moe::{
    MoeBuffers, MoeConfig, MoeLayerBuffers, MoeLayerConfig, MoeLayerWeights, MoeLayout,
    MoeLlBuffers, MoePayload,
};
