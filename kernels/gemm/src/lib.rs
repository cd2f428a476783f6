//! # rshmem-gemm
//!
//! The GEMM of rshmem's kernels, `C = A · B` with bf16, f16 or FP8 (e4m3, e5m2; sm90) inputs
//! and f32 accumulation,
//! as device functions a kernel instantiates with its own [`Schedule`] (in which order tiles
//! are computed, and what a tile's loads wait for) and [`Epilogue`] (what each tile of C
//! becomes: stored, added to, sent to a peer's symmetric buffer, signalled), as CUTLASS
//! separates its tile scheduler, collective mainloop and epilogue. The same mainloops serve
//! rshmem's `ops::gemm` ([`GroupM`], [`StoreC`]) and the fused communication kernels (whose
//! schedules wait for A's tiles to arrive and whose epilogues put C's tiles on peers), so a
//! fused kernel changes its schedule and epilogue, never the GEMM.
//!
//! * [`tile`]: [`Problem`] (a kernel argument) and [`Tile`];
//! * [`schedule`]: [`Schedule`], [`GroupM`], [`TileScheduler`] (a persistent block's tiles);
//! * [`grouped`]: [`Grouped`], the schedule of a grouped GEMM (G GEMMs sharing N and K, each
//!   its rows of A and its own B, rows per group in [`GroupRows`] on the device);
//! * [`split_k`]: [`SplitK`] and [`StorePartial`], a GEMM whose K is split over blocks
//!   (decode-sized M), and [`split_k::reduce`], which adds the parts in a fixed order;
//! * [`pipeline`]: [`PipelineState`] (stage and phase of a multi-stage pipeline);
//! * [`epilogue`]: [`Epilogue`], [`OutElem`], [`StoreC`], [`Scaled`] (per-tensor scales);
//! * [`act`]: activations for epilogues; [`glu`]: [`SwiGlu`], a gated MLP's `silu(gate) ×
//!   up` as the epilogue of its first GEMM; [`maps`]: the sm90 kernel's operand maps.
//!
//! * [`sm90`]: Hopper (sm_90a): persistent, warp-specialised — one producer warpgroup feeds
//!   a multi-stage TMA + mbarrier pipeline, two consumer warpgroups run `wgmma` on 128 x 256
//!   tiles (by default; the tile configuration is a type, [`sm90::Sm90Config`]); B either
//!   N x K or K x N (`wgmma`'s MN-major B, 16-bit inputs); FP8 with block scales promoted per
//!   128 of K ([`sm90::BlockScaled`]).
//! * [`sm80`]: Ampere and later: `cp.async` + `ldmatrix` + `mma.sync` on 128 x 128 tiles, B
//!   either N x K or K x N.
//!
//! Layouts: A is M x K row-major, C M x N row-major, each a typed view with its own leading
//! dimension (`rshmem_device::matrix::{Matrix, MatrixMut}`).
//! M and N are arbitrary; K must be a multiple of 8 (16 for FP8: TMA needs 16-byte row
//! strides; the `sm80` kernel copies 16-byte chunks). Edges are handled inside (zero-filled loads, masked
//! stores), never by padding.
//!
//! ```ignore
//! use rshmem_gemm::{sm90, GroupM, Problem, Sm90Maps, StoreC};
//! #[kernel(launch_bounds(384, 1))]
//! pub unsafe fn my_gemm(maps: Sm90Maps, problem: Problem, c: MatrixMut<bf16>) {
//!     // SAFETY: the launch is sm90::THREADS threads with sm90::SHARED_BYTES (the caller's contract).
//!     unsafe { sm90::gemm::<bf16, _, _, false>(maps.a, maps.b, problem, GroupM, StoreC { c }) }
//! }
//! ```

#![no_std]
#![allow(clippy::too_many_arguments)]

#[cfg(test)]
extern crate std;

/// `body` once for each of the literal values, `$i` bound to it (a `usize`): a loop unrolled
/// before the optimiser sees it, so that arrays indexed by `$i` stay in registers.
macro_rules! unroll {
    ($i:ident in [$($v:literal),*] $body:block) => {
        $({
            let $i: usize = $v;
            $body
        })*
    };
}

pub mod act;
pub mod epilogue;
pub mod glu;
pub mod grouped;
pub mod maps;
pub mod pipeline;
pub mod schedule;
pub mod sm80;
pub mod sm90;
pub mod split_k;
pub mod tile;

pub use epilogue::{Epilogue, OutElem, Scaled, StoreC};
pub use glu::SwiGlu;
pub use grouped::{GroupRows, Grouped};
pub use maps::Sm90Maps;
pub use pipeline::PipelineState;
pub use schedule::{GroupM, Schedule, TileScheduler};
pub use split_k::{SplitK, StorePartial};
pub use tile::{Problem, Tile};
