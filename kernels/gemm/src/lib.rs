//! # rshmem-gemm
//!
//! The GEMM of rshmem's kernels, `C = A · B` with bf16 or f16 inputs and f32 accumulation,
//! as device functions a kernel instantiates with its own [`Hooks`]: what each tile of C
//! becomes (stored, added, sent to a peer's symmetric buffer, signalled) and in which order
//! tiles are computed. The same mainloops serve rshmem's `ops::gemm` (whose hooks store C)
//! and the fused communication kernels (whose hooks put C's tiles on peers or wait for A's
//! tiles to arrive), so a fused kernel changes hooks, never the GEMM.
//!
//! * [`sm90`]: Hopper (sm_90a): persistent, warp-specialised — one producer warpgroup feeds
//!   a multi-stage TMA + mbarrier pipeline, two consumer warpgroups run `wgmma` on 128 x 256
//!   tiles; B either N x K or K x N (`wgmma`'s MN-major B).
//! * [`sm80`]: Ampere and later: `cp.async` + `ldmatrix` + `mma.sync` on 128 x 128 tiles, B
//!   either N x K or K x N.
//!
//! Layouts: A is M x K row-major with rows `lda` elements apart; C is M x N row-major.
//! M and N are arbitrary; K must be a multiple of 8 (TMA needs 16-byte row strides; the
//! `sm80` kernel copies 16-byte chunks). Edges are handled inside (zero-filled loads, masked
//! stores), never by padding.
//!
//! ```ignore
//! use rshmem_gemm::{hooks::StoreC, sm90};
//! #[kernel(launch_bounds(384, 1))]
//! pub unsafe fn my_gemm(map_a: *const TensorMap, map_b: *const TensorMap, c: *mut bf16, m: u32, n: u32, k: u32) {
//!     // SAFETY: the launch is sm90::THREADS threads with sm90::SHARED_BYTES (the caller's contract).
//!     unsafe { sm90::gemm::<bf16, _>(map_a, map_b, Problem { m, n, k }, StoreC { c, ldc: n }) }
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
pub mod hooks;
pub mod maps;
pub mod sm80;
pub mod sm90;

pub use hooks::{Hooks, OutElem, Problem, StoreC, Tile};
pub use maps::Sm90Maps;
