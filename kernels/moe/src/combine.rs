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
use crate::dispatch::{Received, Token};
use rshmem_coll::pack::{self, Pack};
use rshmem_coll::peers::Peers;
use rshmem_coll::{signal as sig, tile};
use rshmem_device::bf16;
use rshmem_device::half::Half;
use rshmem_device::shmem::{self, Team};
use rshmem_device::thread;

/// A received token's rows here and their weights, entries `8 × half ..` (at most eight;
/// [`NONE`] where the entry's expert is elsewhere or past `top_k`).
///
/// # Safety
///
/// As [`Received::row`].
#[inline(always)]
unsafe fn entries(got: &Received, token: &Token, top_k: u32, half: u32) -> ([u32; 8], [f32; 8]) {
    let (mut rows, mut weights) = ([NONE; 8], [0.0f32; 8]);
    rshmem_coll::unroll8!(slot < 8 => {
        let kk = 8 * half + slot as u32;
        if kk < top_k {
            // SAFETY: the caller's; kk < top_k.
            if let Some((row, w)) = unsafe { got.row(token, kk) } {
                (rows[slot], weights[slot]) = (row, w);
            }
        }
    });
    (rows, weights)
}

/// Adds `weights[j] × expert_out[rows[j]]` over the entries, in their order, to the eight
/// elements of pack `g` (`acc`); each row's pack is one load.
///
/// # Safety
///
/// The rows are `expert_out`'s, `h` elements each, 16-byte aligned, pack `g` inside.
#[inline(always)]
unsafe fn add_packs(
    acc: &mut [f32; 8],
    (rows, weights): &([u32; 8], [f32; 8]),
    expert_out: *const bf16,
    h: usize,
    g: usize,
) {
    rshmem_coll::unroll8!(j < 8 => {
        if rows[j] != NONE {
            // SAFETY: the caller's.
            let p = unsafe { pack::load(expert_out.add(rows[j] as usize * h).cast::<Pack>().add(g)) };
            rshmem_coll::unroll8!(l < 8 => {
                acc[l] += weights[j] * pack::lane::<bf16>(&p, l).to_f32_exact();
            });
        }
    });
}

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
    let (tid, nt) = tile::block_lanes();
    // Packs of eight elements where every row starts on 16 bytes (out's rows on 32).
    let aligned = h % 8 == 0
        && pack::aligned(expert_out)
        && pack::aligned(bufs.combine_recv)
        && pack::aligned(bufs.combine_stage);
    let groups = if aligned { h / 8 } else { 0 };
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
            let first = entries(&got, &token, call.top_k, 0);
            let second = entries(&got, &token, call.top_k, 1);
            let mut g = tid;
            while g < groups {
                let mut acc = [0.0f32; 8];
                add_packs(&mut acc, &first, expert_out, h, g);
                if call.top_k > 8 {
                    add_packs(&mut acc, &second, expert_out, h, g);
                }
                let o = out.add(8 * g).cast::<Pack>();
                pack::store(o, pack::from_lanes(&acc[..4]));
                pack::store(o.add(1), pack::from_lanes(&acc[4..]));
                g += nt;
            }
            let mut e = groups * 8 + tid;
            while e < h {
                let mut acc = 0.0f32;
                for (rows, weights) in [&first, &second] {
                    rshmem_coll::unroll8!(j < 8 => {
                        if rows[j] != NONE {
                            acc += weights[j] * expert_out.add(rows[j] as usize * h + e).read().to_f32_exact();
                        }
                    });
                }
                out.add(e).write(acc);
                e += nt;
            }
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
    let (tid, nt) = tile::block_lanes();
    let aligned = h % 8 == 0 && pack::aligned(out) && pack::aligned(bufs.combine_recv);
    let groups = if aligned { h / 8 } else { 0 };
    let mut t = thread::block_idx_x();
    while t < call.tokens {
        // SAFETY: t < tokens: its send slots are the route's of this call; the partials of
        // t's ranks arrived (their flags, above).
        unsafe {
            let slots = bufs.send_slot.add(t as usize * call.size as usize);
            let partial = |d: u32| bufs.combine_recv.add((d as usize * r + t as usize) * h);
            let mut g = tid;
            while g < groups {
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
                let mut v = Pack::default();
                rshmem_coll::unroll8!(l < 8 => {
                    pack::set_lane::<bf16>(&mut v, l, bf16::from_f32_rn(acc[l]));
                });
                pack::store(out.add(t as usize * h + 8 * g).cast::<Pack>(), v);
                g += nt;
            }
            let mut e = groups * 8 + tid;
            while e < h {
                let mut acc = 0.0f32;
                for d in 0..call.size {
                    if slots.add(d as usize).read() != NONE {
                        acc += partial(d).add(e).read();
                    }
                }
                out.add(t as usize * h + e).write(bf16::from_f32_rn(acc));
                e += nt;
            }
        }
        t += thread::grid_dim_x();
    }
}
