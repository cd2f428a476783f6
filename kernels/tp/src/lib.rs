//! # rshmem-tp
//!
//! The device side of rshmem's fused tensor-parallel ops (`rshmem::ops::Ops::all_gather_gemm`,
//! `Ops::gemm_reduce_scatter`): rshmem-gemm's mainloops, unchanged, run with the schedules and
//! epilogues of this crate, which decide the tile order, wait for data from peers before a
//! tile reads it, and send or reduce partial tiles in the epilogue. No kernels of its own: `kernels/ops`' `tp90`
//! (sm_90a, the wgmma mainloop) and `tp80` (sm_80 and sm_90, the mma.sync one)
//! instantiate them; a user's own fused kernel can too.
//!
//! * [`TpCall`]: the call as kernels see it (shape, team, and the epoch, which is counted on
//!   the device so that a graph's every launch is a new call).
//! * [`flags`]: the flag words (one symmetric buffer); they are set and waited for with
//!   rshmem-coll's per-chunk signal blocks (`rshmem_coll::signal`).
//! * [`barrier`]: the barrier that starts every call, and why buffers can be reused across
//!   calls.
//! * [`order`]: the tile orders (own chunk first for the all-gather, own rows last for the
//!   reduce-scatter).
//! * [`ag`]: [`AgSchedule`], all-gather + GEMM (the chunks of A arrive by copy engine), and
//!   [`ag::wait_for_chunks`] for a GEMM that must not wait (PEs sharing a GPU).
//! * [`rs`]: [`RsSchedule`], [`RsEpilogue`] and [`rs::fixup`], GEMM + reduce-scatter (partial
//!   tiles are stored to their owner in the epilogue and reduced there, or, where PEs share a
//!   GPU, after the GEMM: [`TpCall::reducing_after_gemm`], [`rs::wait_for_partials`]).
//!
//! Each module states the ordering argument for what it does: why a tile never reads a chunk
//! before it arrived ([`ag`]), why a reduction never reads a partial before it is complete
//! ([`rs`]), why a buffer is never overwritten while a peer still reads it, and why no flag
//! of one call (or one launch of a graph) is taken for another's ([`barrier`]).
//!
//! ```ignore
//! use rshmem_gemm::{sm90, StoreC};
//! use rshmem_tp::{AgSchedule, TpCall};
//! #[kernel(launch_bounds(384, 1))]
//! pub unsafe fn my_ag_gemm(map_a: *const TensorMap, map_b: *const TensorMap, c: *mut bf16,
//!                          flags: *const u64, call: TpCall) {
//!     // SAFETY: the flags buffer, after the call's barrier (the contract).
//!     let call = unsafe { call.load_epoch(flags) };
//!     let schedule = AgSchedule::<true> { call, bm: sm90::BM, flags };
//!     // SAFETY: `c` holds m x n (the contract).
//!     let epilogue = StoreC { c: unsafe { MatrixMut::from_raw_parts(c, call.m, call.n, call.n) } };
//!     // SAFETY: the launch and the maps as sm90::gemm requires; the flags buffer (the contract).
//!     unsafe { sm90::gemm::<bf16, _, _, false>(map_a, map_b, call.problem(), schedule, epilogue) }
//! }
//! ```

#![no_std]

#[cfg(test)]
extern crate std;

pub mod ag;
pub mod barrier;
pub mod call;
pub mod flags;
pub mod order;
pub mod rs;

pub use ag::AgSchedule;
pub use call::TpCall;
pub use rs::{RsEpilogue, RsSchedule};
