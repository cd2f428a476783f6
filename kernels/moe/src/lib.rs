//! # rshmem-moe
//!
//! The device side of rshmem's mixture-of-experts ops (`rshmem::ops::Ops::moe_dispatch`,
//! `Ops::moe_combine`): each token is sent to the ranks that hold its top-k experts — once
//! per rank, whatever its entries there — and lands grouped by expert, each expert's rows
//! contiguous and padded for the grouped GEMM; combine sends each expert output row's
//! weighted share back and sums it per token, in f32, rounding once. No kernels of its own:
//! `kernels/ops`' `moe` family instantiates them; a user's own kernel can too.
//!
//! * [`MoeCall`], [`MoeBufs`] ([`call`]): the call and its buffers as kernels see them;
//! * [`barrier`]: the barrier every dispatch starts with (why buffers can be reused);
//! * [`route`]: who gets each token, where each row lands (one block: per-warp counts, a
//!   scan, entries numbered in token order: the same layout every run);
//! * [`dispatch`]: send, announce, lay out, scatter;
//! * [`combine`]: weighted partials back, summed per token (the weighted sums of both
//!   modes' combines are one private block, `weighted`);
//! * [`low_latency`]: the decode-time mode — fixed receive buffers, counts with the data, no
//!   host synchronisation, the epoch counted on the device (graphs);
//! * [`walk`]: the expert of a row or piece numbered across experts, counts read 32 at a time;
//! * [`layer`]: the fused MoE layer on the low-latency mode's buffers — rows straight into
//!   their experts' rows, the gate/up GEMM waiting per expert and source rank
//!   ([`layer::ArrivalSchedule`]), SwiGLU in its epilogue, the down GEMM storing each row on
//!   its source ([`layer::SendRows`]).
//!
//! Peers are reached through their mappings (NVLink, one GPU) or, where a rank has none (other
//! nodes), by NVSHMEM puts and signals: `rshmem_coll`'s `push_tile` and `signal` choose per
//! rank. Each module states the ordering argument of its step.

#![no_std]

pub mod barrier;
pub mod call;
pub mod combine;
pub mod dispatch;
pub mod layer;
pub mod low_latency;
pub mod route;
pub mod walk;
mod weighted;

pub use call::{MoeBufs, MoeCall, NONE};
