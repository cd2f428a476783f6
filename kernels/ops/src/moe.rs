//! The mixture-of-experts kernels behind `rshmem::ops::Ops::moe_dispatch` and
//! `Ops::moe_combine`: [`rshmem_moe`]'s steps; rows of bf16 or of FP8 bytes with their
//! scales (the call says which), the combine's rows bf16. Every kernel takes the call
//! ([`MoeCall`]) and its buffers ([`MoeBufs`]); the host queues them in this order:
//!
//! | kernel | step | launch |
//! |---|---|---|
//! | `moe_barrier` | [`rshmem_moe::barrier`] | one block of `barrier::threads(size)` |
//! | `moe_route_count` (grids of more than one block) | [`route::count`] | `route::blocks(tokens, top_k)` blocks of `route::THREADS`, `route::shared_bytes` |
//! | `moe_route` | [`rshmem_moe::route`] | as `moe_route_count` (where it ran: the same grid) |
//! | `moe_send` | [`dispatch::send`] | any grid, blocks of at least `top_k` threads |
//! | `moe_signal` | [`dispatch::signal`] (`Announce::Data`) | one block of `barrier::threads(size)` |
//! | `moe_layout` | [`dispatch::layout`] | one block of `barrier::threads(size)` |
//! | `moe_scatter` | [`dispatch::scatter`] | any grid |
//! | `moe_combine_send` | [`combine::send`] | any grid |
//! | `moe_signal` | (`Announce::Combine`) | one block of `barrier::threads(size)` |
//! | `moe_combine_reduce` | [`combine::reduce`] | any grid |
//!
//! The low-latency mode ([`low_latency`]; rows of bf16 or FP8 with their scales, as the
//! call says), every step on the device:
//!
//! | kernel | step | launch |
//! |---|---|---|
//! | `moe_ll_begin` | [`low_latency::begin`] | one thread |
//! | `moe_ll_route_count`, `moe_ll_route` | as `moe_route_count`, `moe_route` | as they |
//! | `moe_ll_send` | [`low_latency::send`] | any grid |
//! | `moe_ll_signal_counts` | [`low_latency::signal_counts`] | any grid |
//! | `moe_ll_recv` | [`low_latency::recv`] | blocks of at least `size` threads |
//! | `moe_ll_combine_send` | [`low_latency::combine_send`] | any grid of whole-warp blocks |
//! | `moe_ll_signal_combine` | [`low_latency::signal_combine`] | one block of `barrier::threads(size)` |
//! | `moe_ll_combine_reduce` | [`low_latency::combine_reduce`] | blocks of at least `size` threads |
//!
//! The fused layer ([`layer`]; its two GEMMs are `moe90`'s): `moe_ll_begin`, the route
//! (`moe_ll_route_count` where its grid has more than one block, `moe_ll_route`) on its
//! `LayerBufs::ll`, then
//!
//! | kernel | step | launch |
//! |---|---|---|
//! | `moe_layer_prepare` | [`layer::prepare`] | any grid, block 0 at least `size` threads |
//! | `moe_layer_send` | [`layer::send`] | blocks of whole warps, at least `size` threads |
//! | (`moe_gate_up90`, `moe_down90`) | the GEMMs | `crate::moe90` |
//! | `moe_layer_push` | [`layer::push_unmapped`] | any grid |
//!
//! and `moe_ll_signal_combine`, `moe_ll_combine_reduce` on `LayerBufs::ll`.

use rshmem_device::bf16;
use rshmem_device::prelude::*;
pub use rshmem_moe::dispatch::Announce;
pub use rshmem_moe::layer::{LayerBufs, Ranks};
pub use rshmem_moe::low_latency::LlBufs;
use rshmem_moe::{barrier, combine, dispatch, layer, low_latency, route};
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

/// The routing's counts per block ([`route::count`]).
///
/// # Safety
///
/// The contract of [`route::count`].
#[kernel]
pub unsafe fn moe_route_count(bufs: MoeBufs, topk: *const i32, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { route::count(bufs.route(&call), topk, call) }
}

/// The routing ([`route::route`]).
///
/// # Safety
///
/// The contract of [`route::route`].
#[kernel]
pub unsafe fn moe_route(bufs: MoeBufs, topk: *const i32, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { route::route(bufs.route(&call), topk, call) }
}

/// The sends of the dispatch ([`dispatch::send`]). Its blocks walk their tokens one after
/// another, so two blocks per SM (128 registers a thread; unbounded it used 250, one block)
/// keep twice the rows in flight: 175 -> 121 us under ncu at 4096 x 7168 top-8 (H100). Four
/// blocks (64 registers) spill, and the same bounds made `moe_scatter` slower (322 -> 435 us).
///
/// # Safety
///
/// The contract of [`dispatch::send`]; blocks of at most 256 threads.
#[kernel(launch_bounds(256, 2))]
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

/// The low-latency call's start ([`low_latency::begin`]).
///
/// # Safety
///
/// The contract of [`low_latency::begin`].
#[kernel]
pub unsafe fn moe_ll_begin(ll: LlBufs) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { low_latency::begin(ll) }
}

/// The low-latency routing's counts per block ([`route::count`] into [`LlBufs::route`]).
///
/// # Safety
///
/// The contract of [`route::count`], after [`moe_ll_begin`].
#[kernel]
pub unsafe fn moe_ll_route_count(ll: LlBufs, topk: *const i32, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { route::count(ll.route(), topk, call) }
}

/// The low-latency routing ([`route::route`] into [`LlBufs::route`]).
///
/// # Safety
///
/// The contract of [`route::route`], after [`moe_ll_begin`].
#[kernel]
pub unsafe fn moe_ll_route(ll: LlBufs, topk: *const i32, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { route::route(ll.route(), topk, call) }
}

/// The low-latency sends ([`low_latency::send`]).
///
/// # Safety
///
/// The contract of [`low_latency::send`].
#[kernel]
pub unsafe fn moe_ll_send(
    team: Team,
    ll: LlBufs,
    x: *const u8,
    scales: *const f32,
    topk: *const i32,
    call: MoeCall,
) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { low_latency::send(team, ll, x, scales, topk, call) }
}

/// The low-latency counts ([`low_latency::signal_counts`]).
///
/// # Safety
///
/// The contract of [`low_latency::signal_counts`].
#[kernel]
pub unsafe fn moe_ll_signal_counts(team: Team, ll: LlBufs, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { low_latency::signal_counts(team, ll, call) }
}

/// The low-latency receive ([`low_latency::recv`]).
///
/// # Safety
///
/// The contract of [`low_latency::recv`].
#[kernel]
pub unsafe fn moe_ll_recv(team: Team, ll: LlBufs, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { low_latency::recv(team, ll, call) }
}

/// The low-latency combine's sends ([`low_latency::combine_send`]).
///
/// # Safety
///
/// The contract of [`low_latency::combine_send`].
#[kernel]
pub unsafe fn moe_ll_combine_send(team: Team, ll: LlBufs, expert_out: *const bf16, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { low_latency::combine_send(team, ll, expert_out, call) }
}

/// The low-latency combine's announcement ([`low_latency::signal_combine`]).
///
/// # Safety
///
/// The contract of [`low_latency::signal_combine`].
#[kernel]
pub unsafe fn moe_ll_signal_combine(team: Team, ll: LlBufs, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { low_latency::signal_combine(team, ll, call) }
}

/// The low-latency combine's sums ([`low_latency::combine_reduce`]).
///
/// Bounded to two blocks per SM: with its sums' rows in registers it needs 164 (one block
/// per SM, half the loads in flight); at 128 it spills 24 bytes. Before, it used 86 with the
/// rows in a local-memory frame reread for every pack. Not yet timed on a GPU.
///
/// # Safety
///
/// The contract of [`low_latency::combine_reduce`]; blocks of at most 256 threads.
#[kernel(launch_bounds(256, 2))]
pub unsafe fn moe_ll_combine_reduce(
    team: Team,
    ll: LlBufs,
    topk: *const i32,
    weights: *const f32,
    out: *mut bf16,
    call: MoeCall,
) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { low_latency::combine_reduce(team, ll, topk, weights, out, call) }
}

/// The fused layer's count exchange and entry index ([`layer::prepare`]).
///
/// # Safety
///
/// The contract of [`layer::prepare`].
#[kernel]
pub unsafe fn moe_layer_prepare(team: Team, lb: LayerBufs, topk: *const i32, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { layer::prepare(team, lb, topk, call) }
}

/// The fused layer's rows to their experts' ranks ([`layer::send`]).
///
/// # Safety
///
/// The contract of [`layer::send`].
#[kernel]
pub unsafe fn moe_layer_send(team: Team, lb: LayerBufs, x: *const bf16, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { layer::send(team, lb, x, call) }
}

/// The fused layer's rows for ranks the down GEMM cannot store to ([`layer::push_unmapped`]).
///
/// # Safety
///
/// The contract of [`layer::push_unmapped`].
#[kernel]
pub unsafe fn moe_layer_push(ranks: Ranks, lb: LayerBufs, call: MoeCall) {
    // SAFETY: this kernel's contract is the step's.
    unsafe { layer::push_unmapped(ranks, lb, call) }
}
