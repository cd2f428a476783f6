//! Routing: which ranks each token goes to, and where its rows land there.
//!
//! A *key* is an expert (`0 .. experts`) or a destination rank (`experts .. experts +
//! size`). [`route`] numbers each key's matches in token order:
//!
//! * expert `e`: each entry `(t, kk)` with `topk[t][kk] = e` gets its position among this
//!   PE's rows for `e` (`pos`, in token then entry order), and the count is this PE's row
//!   count for `e` on its owner (`counts_out[owner][1 + local(e)]`);
//! * rank `d`: each token with an entry on `d` gets its slot in `d`'s region for this PE
//!   (`send_slot`, in token order; a token crosses to `d` once, whatever its entries there),
//!   and the count is its tokens for `d` (`counts_out[d][0]`).
//!
//! Each block of the grid takes a contiguous run of tokens ([`block_tokens`]), and does its
//! run in two walks over the entries: each warp takes a contiguous run of the block's entries
//! (for the experts; of its tokens, a group of lanes per token, for the ranks) and counts its
//! matches per key into its own row of shared memory; the rows are scanned
//! across warps (each warp's first number per key), from the block's first number (the
//! counts of the blocks before it, which [`count`] left in `RouteBufs::blocks`); then each
//! warp walks again and numbers its matches from there. A grid of one block needs no
//! [`count`]; more blocks ([`blocks`]: one per [`BLOCK_ENTRIES`] entries) spread the walks,
//! which one block did alone (106 µs at 4096 tokens of top-8, ncu, H100, 2026-12-06).
//! Within a warp 32 consecutive entries are numbered at once
//! (lanes holding the same key find each other with `warp::match_any`), so the numbering is the
//! entry order whatever the launch, and a routing gives the same layout every run. Experts
//! go through in chunks that fit the shared memory ([`SHARED_WORDS`]), each chunk one more
//! pair of walks.
//!
//! Entries outside `-1 .. experts` are skipped everywhere, and the first (lowest `t × top_k
//! + kk`) is recorded in the layout's bad-entry word for the host to report.

use crate::call::{MoeCall, RouteBufs, NONE};
use rshmem_device::atomic::{self, Gpu, Ordering};
use rshmem_device::{thread, warp};

/// Threads of [`route`]'s (and [`count`]'s) blocks.
pub const THREADS: u32 = 512;

/// Entries (tokens × top_k) per block of the routing's grid ([`blocks`]).
pub const BLOCK_ENTRIES: u32 = 1024;

/// Blocks of the routing's grid for `tokens` tokens of `top_k` entries: at least one, one per
/// [`BLOCK_ENTRIES`] entries (and at most one per token).
pub const fn blocks(tokens: u32, top_k: u32) -> u32 {
    let b = (tokens * top_k).div_ceil(BLOCK_ENTRIES);
    let b = if b < tokens { b } else { tokens };
    if b > 1 {
        b
    } else {
        1
    }
}

/// Words of `RouteBufs::blocks` for calls of up to `max_tokens` tokens: a count per key
/// (experts, then ranks) per block.
pub const fn blocks_words(call: &MoeCall) -> u32 {
    blocks(call.max_tokens, call.top_k) * (call.experts + call.size)
}

/// This block's tokens, `first .. last`: the grid's blocks take contiguous runs in order.
#[inline(always)]
pub fn block_tokens(tokens: u32) -> (u32, u32) {
    let (b, n) = (thread::block_idx_x(), thread::grid_dim_x());
    let per = tokens.div_ceil(n);
    ((b * per).min(tokens), ((b + 1) * per).min(tokens))
}

/// The most shared memory [`route`] asks for, in words (48 KiB: no opt-in needed).
pub const SHARED_WORDS: u32 = 12 * 1024;

/// Keys [`route`] counts at once: one shared row of this many per warp.
pub const fn chunk(call: &MoeCall) -> u32 {
    let room = SHARED_WORDS / (THREADS / 32);
    let widest = if call.experts > call.size {
        call.experts
    } else {
        call.size
    };
    if widest < room {
        widest
    } else {
        room
    }
}

/// The dynamic shared memory [`route`]'s launch gives it, in bytes.
pub const fn shared_bytes(call: &MoeCall) -> u32 {
    4 * (THREADS / 32) * chunk(call)
}

/// The lanes of a step that hold one token's entries on the ranks' walk: the power of two
/// at or above `top_k` (at most 16, so a step takes at least two tokens).
#[inline(always)]
pub const fn group(top_k: u32) -> u32 {
    top_k.next_power_of_two()
}

/// What both passes set up: the shared rows, this warp's entries and tokens, and its row.
struct Walk {
    shared: *mut u32,
    warps: u32,
    chunk: u32,
    entries: (u32, u32),
    tokens: (u32, u32),
    row: *mut u32,
}

impl Walk {
    /// Checks the launch and finds this warp's runs, in order across warps: of the block's
    /// entries and of its tokens, in whole steps of each walk (32 entries; `32 / group`
    /// tokens). Both go over every warp, so that a block's walk is a step or two per warp: its
    /// time is each warp's chain of dependent instructions, not the work.
    #[inline(always)]
    fn new(call: &MoeCall) -> Walk {
        let threads = thread::block_dim_x();
        let (shared, room) = thread::dynamic_shared::<u32>();
        let (warps, w) = (threads / 32, warp::warp_id());
        let chunk = chunk(call);
        rshmem_device::device_assert!(
            threads == THREADS && room as u32 >= warps * chunk,
            "rshmem-moe: route launched with %u threads and %u shared words",
            threads,
            room as u32
        );
        let run = |(start, end): (u32, u32), step: u32| {
            let per = (end - start).div_ceil(warps).next_multiple_of(step);
            ((start + w * per).min(end), (start + (w + 1) * per).min(end))
        };
        let (start, end) = block_tokens(call.tokens);
        let (entries, tokens) = (
            run((start * call.top_k, end * call.top_k), 32),
            run((start, end), 32 / group(call.top_k)),
        );
        // SAFETY: this warp's row of `chunk` words lies in the shared memory (checked above).
        let row = unsafe { shared.add((w * chunk) as usize) };
        Walk {
            shared,
            warps,
            chunk,
            entries,
            tokens,
            row,
        }
    }
}

/// A chunk of keys: experts `lo .. lo + keys`, or the ranks.
#[derive(Clone, Copy)]
enum Keys {
    Experts { lo: u32, keys: u32 },
    Ranks,
}

impl Keys {
    /// The chunk's first key among all keys (experts, then ranks) and its number of keys.
    #[inline(always)]
    fn span(self, call: &MoeCall) -> (u32, u32) {
        match self {
            Keys::Experts { lo, keys } => (lo, keys),
            Keys::Ranks => (call.experts, call.size),
        }
    }
}

impl Walk {
    /// Each chunk of keys in order (the experts a chunk of shared memory at a time, then the
    /// ranks): every warp's matches counted into its row, a block barrier, then `then(keys)`,
    /// which reads the rows and ends with a block barrier of its own (the next chunk clears
    /// them). With `bad`, the first chunk's count records the lowest bad entry there.
    ///
    /// # Safety
    ///
    /// `topk` holds the call's entries; `bad` (if any) a word only atomics touch.
    #[inline(always)]
    unsafe fn chunks(
        &self,
        topk: *const i32,
        call: &MoeCall,
        bad: Option<*mut u32>,
        mut then: impl FnMut(Keys),
    ) {
        let entries = self.entries;
        let mut lo = 0;
        while lo < call.experts {
            let keys = self.chunk.min(call.experts - lo);
            let bad = bad.filter(|_| lo == 0).map(|word| (word, call.experts));
            // SAFETY: this warp's row lies in the shared memory (`Walk::new`); the caller's.
            unsafe {
                clear(self.row, keys);
                walk_experts(self.row, topk, entries, (lo, keys), None, bad);
            }
            thread::sync_threads();
            then(Keys::Experts { lo, keys });
            lo += keys;
        }
        // SAFETY: as above.
        unsafe {
            clear(self.row, call.size);
            walk_ranks(self.row, topk, self.tokens, call, None);
        }
        thread::sync_threads();
        then(Keys::Ranks);
    }
}

/// The first pass of a grid of more than one block: each block's count per key (experts,
/// then ranks) into `bufs.blocks`, row `block`, for [`route`]'s blocks after it.
///
/// # Safety
///
/// [`route`]'s launch, grid and `topk`; `bufs.blocks` holds [`blocks_words`] words.
#[inline(always)]
pub unsafe fn count(bufs: RouteBufs, topk: *const i32, call: MoeCall) {
    let walk = Walk::new(&call);
    let keys_all = call.experts + call.size;
    // SAFETY: the block's row of `blocks` (the contract).
    let out = unsafe { bufs.blocks.add((thread::block_idx_x() * keys_all) as usize) };
    // Each chunk's keys summed over the warps into `out`.
    let sum = |keys: Keys| {
        let (lo, keys) = keys.span(&call);
        let mut j = thread::thread_idx_x();
        while j < keys {
            let total = (0..walk.warps)
                // SAFETY: w < warps, j < keys <= chunk.
                .map(|w| unsafe { walk.shared.add((w * walk.chunk + j) as usize).read() })
                .sum::<u32>();
            // SAFETY: lo + j < keys_all: this block's row.
            unsafe { out.add((lo + j) as usize).write(total) };
            j += thread::block_dim_x();
        }
        thread::sync_threads();
    };
    // SAFETY: the contract.
    unsafe { walk.chunks(topk, &call, None, sum) }
}

/// Routes this PE's `call.tokens` tokens (see the module docs).
///
/// # Safety
///
/// A grid of [`blocks`]`(tokens, top_k)` blocks (or one) of [`THREADS`] threads with
/// [`shared_bytes`] of dynamic shared memory, after [`count`] on the same grid where it has
/// more than one block; `topk` holds `tokens × top_k` entries; `bufs` this PE's routing
/// buffers of the call's shape, its bad-entry word cleared before this kernel (by the call's
/// barrier, or the low-latency call's begin).
#[inline(always)]
pub unsafe fn route(bufs: RouteBufs, topk: *const i32, call: MoeCall) {
    let walk = Walk::new(&call);
    let number = |keys: Keys| {
        // SAFETY: the contract; `pos` holds max_tokens × top_k entries, `send_slot`
        // max_tokens × size.
        unsafe {
            scan(&walk, keys, &bufs, &call);
            match keys {
                Keys::Experts { lo, keys } => walk_experts(
                    walk.row,
                    topk,
                    walk.entries,
                    (lo, keys),
                    Some(bufs.pos),
                    None,
                ),
                Keys::Ranks => walk_ranks(walk.row, topk, walk.tokens, &call, Some(bufs.send_slot)),
            }
        }
        thread::sync_threads();
    };
    // SAFETY: the contract.
    unsafe { walk.chunks(topk, &call, Some(bufs.bad_entry), number) }
}

/// Zeroes this warp's first `keys` counts.
///
/// # Safety
///
/// `row` holds `keys` words of this warp's.
#[inline(always)]
unsafe fn clear(row: *mut u32, keys: u32) {
    let mut j = warp::lane_id();
    while j < keys {
        // SAFETY: j < keys.
        unsafe { row.add(j as usize).write(0) };
        j += 32;
    }
    warp::sync_warp(u32::MAX);
}

/// Walks entries `first .. last` 32 at a time, counting those of experts `lo .. lo + keys`
/// into `row`; with `pos`, numbers them from `row` (each warp's start, after [`scan`]); with
/// `bad` (the bad-entry word and the expert count), records the lowest entry outside `-1 ..
/// experts`.
///
/// # Safety
///
/// `row` holds `keys` words of this warp's; `topk` the entries; `pos` (if any) as many; `bad`
/// (if any) a word only atomics touch.
#[inline(always)]
unsafe fn walk_experts(
    row: *mut u32,
    topk: *const i32,
    (first, last): (u32, u32),
    (lo, keys): (u32, u32),
    pos: Option<*mut u32>,
    bad: Option<(*mut u32, u32)>,
) {
    let lane = warp::lane_id();
    let below = (1u32 << lane) - 1;
    let mut i0 = first;
    while i0 < last {
        // Four steps' entries loaded before any is numbered, so their loads overlap.
        let entries: [i32; 4] = core::array::from_fn(|step| {
            let i = i0 + 32 * step as u32 + lane;
            if i < last {
                // SAFETY: read only below `last` (the caller's).
                unsafe { topk.add(i as usize).read() }
            } else {
                -1
            }
        });
        for (step, e) in entries.into_iter().enumerate() {
            let i = i0 + 32 * step as u32 + lane;
            if let Some((word, experts)) = bad {
                if i < last && (e < -1 || e >= experts as i32) {
                    // SAFETY: the caller's.
                    unsafe { atomic::fetch_min::<Gpu, u32>(word, i, Ordering::Relaxed) };
                }
            }
            let j = (e as u32).wrapping_sub(lo);
            let mine = e >= 0 && j < keys;
            // Lanes of one key find each other in one instruction (the others hold no key).
            let same = warp::match_any(u32::MAX, if mine { j } else { u32::MAX });
            let count = if mine {
                // SAFETY: j < keys: this warp's word.
                unsafe { row.add(j as usize).read() }
            } else {
                0
            };
            if let (Some(pos), true) = (pos, mine) {
                // SAFETY: `pos` holds entry i (below `last`).
                unsafe {
                    pos.add(i as usize)
                        .write(count + (same & below).count_ones())
                };
            }
            // Every lane of the key has read its count before the highest one moves it on.
            warp::sync_warp(u32::MAX);
            if mine && lane == 31 - same.leading_zeros() {
                // SAFETY: as above.
                unsafe { row.add(j as usize).write(count + same.count_ones()) };
            }
            warp::sync_warp(u32::MAX);
        }
        i0 += 4 * 32;
    }
}

/// As [`walk_experts`] for the ranks: tokens `first .. last`, a match per token and rank it
/// has an entry on; with `slots`, each token's slot per rank (or [`NONE`]). A step takes `32 /
/// g` tokens (`g` = [`group`]): lane `l` loads entry `l % g` of token `l / g` and the token's
/// lanes OR their ranks together, one load and `log2 g` shuffles where a lane per token
/// walked its `top_k` entries one after another; the token's first lane speaks for it.
///
/// # Safety
///
/// `row` holds `size` words of this warp's; `topk` the tokens' entries; `slots` (if any)
/// `size` words per token.
#[inline(always)]
unsafe fn walk_ranks(
    row: *mut u32,
    topk: *const i32,
    (first, last): (u32, u32),
    call: &MoeCall,
    slots: Option<*mut u32>,
) {
    let lane = warp::lane_id();
    let below = (1u32 << lane) - 1;
    let g = group(call.top_k);
    let (of, kk) = (lane / g, lane % g);
    let mut t0 = first;
    while t0 < last {
        let t = t0 + of;
        let e = if t < last && kk < call.top_k {
            // SAFETY: entry kk < top_k of token t < last <= tokens.
            unsafe { topk.add((t * call.top_k + kk) as usize).read() }
        } else {
            -1
        };
        let mut mask = call.expert(e).map_or(0, |e| 1u64 << call.owner(e));
        let mut span = 1;
        while span < g {
            mask |= warp::shfl_xor(u32::MAX, mask, span);
            span *= 2;
        }
        let token = kk == 0 && t < last;
        for d in 0..call.size {
            let hit = token && mask >> d & 1 == 1;
            let lanes = warp::ballot(u32::MAX, hit);
            // SAFETY: d < size: this warp's word; the slot lies in `slots`.
            unsafe {
                let count = row.add(d as usize).read();
                if let (Some(slots), true) = (slots, token) {
                    let slot = if hit {
                        count + (lanes & below).count_ones()
                    } else {
                        NONE
                    };
                    slots.add((t * call.size + d) as usize).write(slot);
                }
                warp::sync_warp(u32::MAX);
                if lane == 0 {
                    row.add(d as usize).write(count + lanes.count_ones());
                }
                warp::sync_warp(u32::MAX);
            }
        }
        t0 += 32 / g;
    }
}

/// Turns the warps' counts of the chunk `keys` into each warp's first number (an exclusive
/// scan across warps, per key, from the counts of the blocks before this one) and, in the
/// last block, writes each key's total to `counts_out` (an expert's in its owner's row, a
/// rank's in the rank's token column); ends with a block barrier.
///
/// # Safety
///
/// The warps' rows counted by every warp (block barrier since); with more than one block,
/// `bufs.blocks` holds every block's counts ([`count`]).
#[inline(always)]
unsafe fn scan(walk: &Walk, keys: Keys, bufs: &RouteBufs, call: &MoeCall) {
    let (lo, n) = keys.span(call);
    let place = |j: u32| match keys {
        Keys::Experts { lo, .. } => (call.owner(lo + j), 1 + call.local(lo + j)),
        Keys::Ranks => (j, 0),
    };
    let (b, blocks) = (thread::block_idx_x(), thread::grid_dim_x());
    let keys_all = (call.experts + call.size) as usize;
    let mut j = thread::thread_idx_x();
    while j < n {
        let before = (0..b as usize)
            // SAFETY: row `c` of `blocks`, key `lo + j` (the contract).
            .map(|c| unsafe { bufs.blocks.add(c * keys_all + (lo + j) as usize).read() })
            .sum::<u32>();
        let mut total = before;
        for w in 0..walk.warps {
            // SAFETY: w < warps, j < n <= chunk.
            unsafe {
                let at = walk.shared.add((w * walk.chunk + j) as usize);
                let count = at.read();
                at.write(total);
                total += count;
            }
        }
        if b + 1 == blocks {
            let (r, col) = place(j);
            // SAFETY: the caller's.
            unsafe {
                bufs.counts_out
                    .add((r * call.count_words() + col) as usize)
                    .write(total)
            };
        }
        j += thread::block_dim_x();
    }
    thread::sync_threads();
}
