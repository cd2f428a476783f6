//! The mixture-of-experts kernels behind `rshmem::ops::Ops::moe_dispatch` and
//! `Ops::moe_combine`: [`rshmem_moe`]'s steps; rows of bf16 or of FP8 bytes with their
//! scales (the call says which), the combine's rows bf16. Every kernel takes the call
//! ([`MoeCall`]) and its buffers ([`MoeBufs`]); the host queues them in this order:
//!
//! | kernel | step | launch |
//! |---|---|---|
//! | `moe_barrier` | [`rshmem_moe::barrier`] | one block of `barrier::threads(size)` |
//! | `moe_route` | [`rshmem_moe::route`] | whole warps, up to one per `route::keys` |
//! | `moe_send` | [`dispatch::send`] | any grid |
//! | `moe_signal` | [`dispatch::signal`] (`Announce::Data`) | one block of `barrier::threads(size)` |
//! | `moe_layout` | [`dispatch::layout`] | one block of `barrier::threads(size)` |
//! | `moe_scatter` | [`dispatch::scatter`] | any grid |
//! | `moe_combine_send` | [`combine::send`] | any grid |
//! | `moe_signal` | (`Announce::Combine`) | one block of `barrier::threads(size)` |
//! | `moe_combine_reduce` | [`combine::reduce`] | any grid |

use rshmem_device::bf16;
use rshmem_device::prelude::*;
pub use rshmem_moe::dispatch::Announce;
use rshmem_moe::{barrier, combine, dispatch, route};
pub use rshmem_moe::{MoeBufs, MoeCall};

/// The dispatch's barrier ([`barrier::barrier`]).
///
/// # Safety
///
/// The contract of [`barrier::barrier`].
#[kernel]
pub unsafe fn moe_barrier(team: Team, bufs: MoeBufs, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { barrier::barrier(team, bufs, call) }
}

/// The routing ([`route::route`]).
///
/// # Safety
///
/// The contract of [`route::route`].
#[kernel]
pub unsafe fn moe_route(bufs: MoeBufs, topk: *const i32, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { route::route(bufs, topk, call) }
}

/// The sends of the dispatch ([`dispatch::send`]).
///
/// # Safety
///
/// The contract of [`dispatch::send`].
#[kernel]
pub unsafe fn moe_send(
    team: Team,
    bufs: MoeBufs,
    x: *const u8,
    scales: *const f32,
    topk: *const i32,
    weights: *const f32,
    call: MoeCall,
) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { dispatch::send(team, bufs, x, scales, topk, weights, call) }
}

/// The announcement of the dispatch's or the combine's data ([`dispatch::signal`]; `what` an
/// [`Announce`] as `u32`).
///
/// # Safety
///
/// The contract of [`dispatch::signal`].
#[kernel]
pub unsafe fn moe_signal(team: Team, bufs: MoeBufs, what: u32, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { dispatch::signal(team, bufs, what, call) }
}

/// The receive layout ([`dispatch::layout`]).
///
/// # Safety
///
/// The contract of [`dispatch::layout`].
#[kernel]
pub unsafe fn moe_layout(team: Team, bufs: MoeBufs, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { dispatch::layout(team, bufs, call) }
}

/// The received tokens into their experts' rows ([`dispatch::scatter`]).
///
/// # Safety
///
/// The contract of [`dispatch::scatter`].
#[kernel]
pub unsafe fn moe_scatter(bufs: MoeBufs, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { dispatch::scatter(bufs, call) }
}

/// The combine's weighted partials back to their tokens' ranks ([`combine::send`]).
///
/// # Safety
///
/// The contract of [`combine::send`].
#[kernel]
pub unsafe fn moe_combine_send(team: Team, bufs: MoeBufs, expert_out: *const bf16, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { combine::send(team, bufs, expert_out, call) }
}

/// The combine's sum per token ([`combine::reduce`]).
///
/// # Safety
///
/// The contract of [`combine::reduce`].
#[kernel]
pub unsafe fn moe_combine_reduce(team: Team, bufs: MoeBufs, out: *mut bf16, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { combine::reduce(team, bufs, out, call) }
}
