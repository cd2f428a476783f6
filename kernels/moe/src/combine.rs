//! Combine: every expert output row back to its token, weighted and summed. Three kernels
//! after the dispatch, in stream order:
//!
//! 1. [`send`] (any grid): per received token (rank `s`, slot), the f32 sum over its entries
//!    on this PE, in entry order, of `weight × expert_out[row]`, into `combine_stage`, then
//!    to rank `s`'s `combine_recv` row of this PE for that token (stores or puts, as the
//!    dispatch); then `quiet`.
//! 2. [`crate::dispatch::signal`] with [`crate::dispatch::Announce::Combine`].
//! 3. [`reduce`] (any grid): waits for every rank's combine flag, then for each of this PE's
//!    tokens sums the partials of the ranks it went to (its send slots), in rank order, in f32, and rounds
//!    once to bf16 (a token with no valid entry gets zeros). The result does not depend on
//!    the grid or on timing: every sum has a fixed order.

use crate::call::{combine_slot, MoeBufs, MoeCall, NONE};
use crate::dispatch::Received;
use crate::weighted::{bf16_pack, Sum};
use rshmem_coll::pack::{self, Pack};
use rshmem_coll::peers::Peers;
use rshmem_coll::{signal as sig, tile};
use rshmem_device::bf16;
use rshmem_device::half::Half;
use rshmem_device::shmem::{self, Team};
use rshmem_device::thread;

/// Step 1 (module docs). Where token's rank has a peer mapping the sums are stored straight
/// into its `combine_recv` row; elsewhere into `combine_stage`, then put.
///
/// # Safety
///
/// After this PE's dispatch of the call in stream order; `expert_out` holds the dispatch's
/// rows (`capacity × hidden`, the same rows as `recv_x`); `bufs` as for
/// [`crate::dispatch::send`].
#[inline(always)]
pub unsafe fn send(team: Team, bufs: MoeBufs, expert_out: *const bf16, call: MoeCall) {
    let peers = Peers::of(team);
    // SAFETY: after the dispatch's layout (the contract).
    let got = unsafe { Received::of(&bufs, &call) };
    let (h, r) = (got.h, call.max_tokens as usize);
    let out_aligned = pack::aligned(bufs.combine_recv) && pack::aligned(bufs.combine_stage);
    let mut i = thread::block_idx_x();
    while i < got.count {
        // SAFETY: i < count: its record is in `meta`; its rows in `expert_out`; its stage
        // row in `combine_stage`; rank s's `combine_recv` row for (this rank, token) is
        // written by nobody else.
        unsafe {
            let token = got.token(i);
            let t = token.record.read() as usize;
            let dst = bufs.combine_recv.add((peers.rank as usize * r + t) * h);
            let pe = peers.world(token.s);
            let mapped = shmem::ptr(dst, pe);
            let out = if mapped.is_null() {
                bufs.combine_stage.add(token.at * h)
            } else {
                mapped
            };
            let sum = Sum::new(call.top_k, expert_out, h, |kk| got.row(&token, kk));
            // Packs of eight where every row starts on 16 bytes (out's rows on 32).
            tile::by_packs::<bf16>(
                h,
                sum.packed() && out_aligned,
                |g| {
                    let acc = sum.pack(g);
                    let o = out.add(8 * g).cast::<Pack>();
                    pack::store(o, pack::from_lanes(&acc[..4]));
                    pack::store(o.add(1), pack::from_lanes(&acc[4..]));
                },
                |e| out.add(e).write(sum.element(e)),
            );
            if mapped.is_null() {
                thread::sync_threads();
                tile::push_tile(dst, out, h, pe);
            }
        }
        i += thread::grid_dim_x();
    }
    thread::sync_threads();
    if thread::thread_idx_x() == 0 {
        shmem::quiet();
    }
}

/// Step 3 (module docs): `out[t] = bf16(Σ partials of t)`.
///
/// # Safety
///
/// `out` holds `tokens × hidden` elements; after this PE's combine [`send`] and signal of the
/// call; every member signals its combine of this call.
#[inline(always)]
pub unsafe fn reduce(team: Team, bufs: MoeBufs, out: *mut bf16, call: MoeCall) {
    let peers = Peers::of(team);
    let s = thread::thread_idx_x();
    if s < peers.n {
        // SAFETY: the flag word lies in the buffer; rank s signals it for this call.
        unsafe { sig::wait(bufs.flags.add(combine_slot(s)), call.epoch, peers.world(s)) };
    }
    thread::sync_threads();
    let (h, r) = (call.hidden as usize, call.max_tokens as usize);
    let aligned = h % 8 == 0 && pack::aligned(out) && pack::aligned(bufs.combine_recv);
    let mut t = thread::block_idx_x();
    while t < call.tokens {
        // SAFETY: t < tokens: its send slots are the route's of this call; the partials of
        // t's ranks arrived (their flags, above).
        unsafe {
            let slots = bufs.send_slot.add(t as usize * call.size as usize);
            let partial = |d: u32| bufs.combine_recv.add((d as usize * r + t as usize) * h);
            tile::by_packs::<bf16>(
                h,
                aligned,
                |g| {
                    let mut acc = [0.0f32; 8];
                    for d in 0..call.size {
                        if slots.add(d as usize).read() != NONE {
                            let p = partial(d).add(8 * g).cast::<Pack>();
                            let (lo, hi) = (pack::load(p), pack::load(p.add(1)));
                            rshmem_coll::unroll8!(l < 4 => {
                                acc[l] += pack::lane::<f32>(&lo, l);
                                acc[l + 4] += pack::lane::<f32>(&hi, l);
                            });
                        }
                    }
                    let o = out.add(t as usize * h + 8 * g).cast::<Pack>();
                    pack::store(o, bf16_pack(&acc));
                },
                |e| {
                    let mut acc = 0.0f32;
                    for d in 0..call.size {
                        if slots.add(d as usize).read() != NONE {
                            acc += partial(d).add(e).read();
                        }
                    }
                    out.add(t as usize * h + e).write(bf16::from_f32_rn(acc));
                },
            );
        }
        t += thread::grid_dim_x();
    }
}
