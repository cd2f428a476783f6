//! Routing: which ranks each token goes to, and where its rows land there.
//!
//! [`route`] runs one warp per *key*: a key is an expert (`0 .. experts`) or a destination
//! rank (`experts .. experts + size`). A warp walks this PE's tokens in order, 32 at a time,
//! and numbers the matches:
//!
//! * expert `e`: each entry `(t, kk)` with `topk[t][kk] = e` gets its position among this
//!   PE's rows for `e` (`pos`, in token then entry order: a warp prefix sum of each token's
//!   matches), and the count is this PE's row
//!   count for `e` on its owner (`counts_out[owner][1 + local(e)]`);
//! * rank `d`: each token with an entry on `d` gets its slot in `d`'s region for this PE
//!   (`send_slot`, in token order; a token crosses to `d` once, whatever its entries there),
//!   and the count is its tokens for `d` (`counts_out[d][0]`).
//!
//! Everything is numbered in token order, so a routing gives the same layout every run.
//! Entries outside `-1 .. experts` are skipped everywhere, and the first (lowest `t × top_k
//! + kk`) is recorded in the layout's bad-entry word for the host to report.

use crate::call::{MoeCall, RouteBufs, NONE};
use rshmem_device::atomic::{self, Gpu, Ordering};
use rshmem_device::{thread, warp};

/// The sum of `v` over the lanes below this one, and over the whole warp (every lane calls).
#[inline(always)]
fn warp_scan(v: u32) -> (u32, u32) {
    let lane = warp::lane_id();
    let mut inclusive = v;
    for d in [1, 2, 4, 8, 16] {
        let below = warp::shfl_up(u32::MAX, inclusive, d);
        if lane >= d {
            inclusive += below;
        }
    }
    (inclusive - v, warp::shfl_idx(u32::MAX, inclusive, 31))
}

/// Keys [`route`] numbers: every expert, then every rank.
pub const fn keys(call: &MoeCall) -> u32 {
    call.experts + call.size
}

/// Routes this PE's `call.tokens` tokens (see the module docs). Any 1-D launch of whole warps;
/// one warp per key is the most that helps ([`keys`]).
///
/// # Safety
///
/// `topk` holds `tokens × top_k` entries; `bufs` this PE's routing buffers of the call's
/// shape, its bad-entry word cleared before this kernel (by the call's barrier, or the
/// low-latency call's begin).
#[inline(always)]
pub unsafe fn route(bufs: RouteBufs, topk: *const i32, call: MoeCall) {
    let tid = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let threads = thread::grid_dim_x() * thread::block_dim_x();
    let (k, tokens) = (call.top_k, call.tokens);
    // Bad entries: every thread checks some.
    let mut i = tid;
    while i < tokens * k {
        // SAFETY: `i < tokens × top_k` (the contract).
        let e = unsafe { topk.add(i as usize).read() };
        if e < -1 || e >= call.experts as i32 {
            // SAFETY: the word lies in `layout`; only atomics touch it in this kernel.
            unsafe { atomic::fetch_min::<Gpu, u32>(bufs.bad_entry, i, Ordering::Relaxed) };
        }
        i += threads;
    }
    let lane = warp::lane_id();
    let below = (1u32 << lane) - 1;
    let mut key = tid / 32;
    while key < keys(&call) {
        let mut count = 0u32;
        let mut t0 = 0u32;
        while t0 < tokens {
            let t = t0 + lane;
            if key < call.experts {
                // This token's matches (several if it lists the expert more than once),
                // numbered after the lanes below it: a warp prefix sum.
                let mut matches = 0u32;
                if t < tokens {
                    for kk in 0..k {
                        // SAFETY: t < tokens.
                        matches += (unsafe { topk.add((t * k + kk) as usize).read() } == key as i32)
                            as u32;
                    }
                }
                let (before, total) = warp_scan(matches);
                let mut p = count + before;
                for kk in 0..k {
                    // SAFETY: read only for `t < tokens`.
                    if t < tokens && unsafe { topk.add((t * k + kk) as usize).read() } == key as i32
                    {
                        // SAFETY: `pos` holds max_tokens × top_k entries, t < tokens.
                        unsafe { bufs.pos.add((t * k + kk) as usize).write(p) };
                        p += 1;
                    }
                }
                count += total;
            } else {
                let d = key - call.experts;
                let hit = if t < tokens {
                    // SAFETY: t < tokens.
                    (unsafe { crate::call::destinations(&call, topk, t) }) >> d & 1 == 1
                } else {
                    false
                };
                let ballot = warp::ballot(u32::MAX, hit);
                if t < tokens {
                    let slot = if hit {
                        count + (ballot & below).count_ones()
                    } else {
                        NONE
                    };
                    // SAFETY: `send_slot` holds max_tokens × size entries.
                    unsafe { bufs.send_slot.add((t * call.size + d) as usize).write(slot) };
                }
                count += ballot.count_ones();
            }
            t0 += 32;
        }
        if lane == 0 {
            let (row, col) = if key < call.experts {
                (call.owner(key), 1 + call.local(key))
            } else {
                (key - call.experts, 0)
            };
            // SAFETY: `counts_out` holds size rows of count_words.
            unsafe {
                bufs.counts_out
                    .add((row * call.count_words() + col) as usize)
                    .write(count)
            };
        }
        key += threads / 32;
    }
}
