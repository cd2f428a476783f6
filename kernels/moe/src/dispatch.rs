//! Dispatch: each token to the ranks of its experts, once per rank, then grouped by expert
//! there. Four kernels after the [`crate::barrier`] and [`crate::route`], in stream order:
//!
//! 1. [`send`] (any grid of blocks of at least `top_k` threads): per token and destination
//!    rank `d`, its record (token index; per entry the local expert on `d`, its position, its
//!    weight) and its row into `d`'s staging region for this PE, at the token's slot: stores
//!    through the peer mapping, or NVSHMEM puts where `d` has none
//!    (`rshmem_coll::tile::push_tile`); then `quiet`.
//! 2. [`signal`] (one block, [`crate::barrier::threads`]): thread `d` sends rank `d` this
//!    PE's count row (tokens, rows per expert of `d`), then sets `d`'s data flag of this PE
//!    to the epoch (`rshmem_coll::signal`). The sends of step 1 finished before this kernel
//!    started (and their puts were quieted), so a rank that sees the flag sees the rows.
//! 3. [`layout`] (one block): waits for every rank's data flag, then works out where each
//!    expert's rows start (padded to `align`), where each rank's rows start within each
//!    expert (rank order), and where each rank's records start.
//! 4. [`scatter`] (any grid): copies each received token into the rows of its local experts
//!    (`expert base + rank base + position`: the order of (rank, token, entry)), with its
//!    source and weight, and zeroes the padding rows.
//!
//! The combine's kernels ([`crate::combine`]) read the records and the layout this leaves.

use crate::call::{data_slot, destinations, LayoutWords, MoeBufs, MoeCall, NONE};
use rshmem_coll::peers::Peers;
use rshmem_coll::{signal as sig, tile, MAX_PEERS};
use rshmem_device::shmem::{self, Team, Thread};
use rshmem_device::{device_assert, thread, warp};

/// What [`signal`] announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Announce {
    /// The dispatch's tokens and counts (the data flag).
    Data = 0,
    /// The combine's partials (the combine flag).
    Combine = 1,
}

/// Step 1 (module docs): this PE's tokens and records into their ranks' staging rows.
///
/// # Safety
///
/// Blocks of at least `top_k` threads (a thread writes each entry of a record); `x` holds
/// `tokens` rows of `data_bytes` and `scales` `tokens × call.scales` f32 (unused when 0), in
/// symmetric memory (an NVSHMEM put's source where a rank has no peer mapping);
/// `topk` and `weights` hold `tokens × top_k`; `bufs` this PE's buffers
/// of the call's shape (every member's at the same symmetric addresses), after this call's
/// route; every member of `team` runs the same call.
#[inline(always)]
pub unsafe fn send(
    team: Team,
    bufs: MoeBufs,
    x: *const u8,
    scales: *const f32,
    topk: *const i32,
    weights: *const f32,
    call: MoeCall,
) {
    let peers = Peers::of(team);
    let (w, r) = (call.record_words() as usize, call.max_tokens as usize);
    let staged = call.staged_bytes() as usize;
    let mut t = thread::block_idx_x();
    while t < call.tokens {
        // SAFETY: t < tokens (the contract).
        let mask = unsafe { destinations(&call, topk, t) };
        for d in 0..call.size {
            if mask >> d & 1 == 0 {
                continue;
            }
            let at = (t * call.size + d) as usize;
            // SAFETY: `send_slot` and `meta_out` hold max_tokens × size entries (records).
            let (slot, record) =
                unsafe { (bufs.send_slot.add(at).read(), bufs.meta_out.add(at * w)) };
            let kk = thread::thread_idx_x();
            if kk < call.top_k {
                // SAFETY: the record lies in `meta_out`; `topk`, `weights` and `pos` hold t's
                // entries.
                unsafe { write_entry(&call, record, (topk, weights, bufs.pos), t, d, kk) };
            }
            thread::sync_threads();
            let region = peers.rank as usize * r + slot as usize;
            // SAFETY: the slot lies in d's region (route numbered it below its count, which
            // is at most max_tokens); nothing else writes those rows in this call.
            unsafe {
                let pe = peers.world(d);
                tile::push_tile(bufs.meta.add(region * w), record, w, pe);
                call.push_staged(bufs.staging.add(region * staged), x, scales, t, pe);
            }
        }
        t += thread::grid_dim_x();
    }
    thread::sync_threads();
    if thread::thread_idx_x() == 0 {
        shmem::quiet();
    }
}

/// Entry `kk` of token `t`'s record for rank `d` (entry 0 also the token's index): the local
/// expert on `d` (or [`NONE`]), its position and its weight's bits. A thread per entry.
///
/// # Safety
///
/// `record` holds `record_words` words; `topk`, `weights`, `pos` hold token `t`'s entries;
/// `kk < top_k`.
#[inline(always)]
unsafe fn write_entry(
    call: &MoeCall,
    record: *mut u32,
    (topk, weights, pos): (*const i32, *const f32, *const u32),
    t: u32,
    d: u32,
    kk: u32,
) {
    // SAFETY: the caller's.
    unsafe {
        if kk == 0 {
            record.write(t);
        }
        let i = (t * call.top_k + kk) as usize;
        let e = topk.add(i).read();
        let here = call.expert(e).filter(|&e| call.owner(e) == d);
        let entry = record.add(1 + 3 * kk as usize);
        entry.write(here.map_or(NONE, |e| call.local(e)));
        entry
            .add(1)
            .write(if here.is_some() { pos.add(i).read() } else { 0 });
        entry.add(2).write(if here.is_some() {
            weights.add(i).read().to_bits()
        } else {
            0
        });
    }
}

/// Step 2 (module docs), and the combine's announcement: thread `d` tells rank `d` that this
/// PE's part for it is there (for [`Announce::Data`], after sending its count row).
///
/// # Safety
///
/// One block of at least [`crate::barrier::threads`]`(size)` threads, after this PE's
/// [`send`] (or [`crate::combine::send`]) of the call in stream order; `bufs` as for it.
#[inline(always)]
pub unsafe fn signal(team: Team, bufs: MoeBufs, what: u32, call: MoeCall) {
    let peers = Peers::of(team);
    let d = thread::thread_idx_x();
    if d >= peers.n {
        return;
    }
    let pe = peers.world(d);
    let words = call.count_words() as usize;
    // SAFETY: the rows lie in `counts_out` (d < size) and in d's `counts_in` (rank < size),
    // which only this PE writes, here, for this call (d reads it after the flag below); the
    // flag words lie in the buffer.
    unsafe {
        if what == Announce::Data as u32 {
            let src = bufs.counts_out.add(d as usize * words);
            let dst = bufs.counts_in.add(peers.rank as usize * words);
            let mapped = shmem::ptr(dst, pe);
            if mapped.is_null() {
                shmem::put::<Thread, u32>(dst, src, words, pe);
            } else {
                for i in 0..words {
                    mapped.add(i).write_volatile(src.add(i).read());
                }
            }
            sig::signal(bufs.flags.add(data_slot(peers.rank)), call.epoch, pe);
        } else {
            sig::signal(
                bufs.flags.add(crate::call::combine_slot(peers.rank)),
                call.epoch,
                pe,
            );
        }
    }
}

/// Step 3 (module docs): waits for every rank's tokens, then writes this PE's receive layout
/// ([`LayoutWords`]).
///
/// # Safety
///
/// One block of at least [`crate::barrier::threads`]`(size)` threads; `bufs` as for
/// [`send`]; every member of `team` signals its data for this call.
#[inline(always)]
pub unsafe fn layout(team: Team, bufs: MoeBufs, call: MoeCall) {
    let peers = Peers::of(team);
    let s = thread::thread_idx_x();
    if s < peers.n {
        // SAFETY: the flag word lies in the buffer; rank s signals it for this call.
        unsafe { sig::wait(bufs.flags.add(data_slot(s)), call.epoch, peers.world(s)) };
    }
    thread::sync_threads();
    // The first warp: experts 32 at a time, their padded sizes summed by a warp scan.
    if s >= 32 {
        return;
    }
    let (n, local) = (call.size, call.local_experts());
    let words = LayoutWords::new(call.size, call.local_experts());
    let cw = call.count_words() as usize;
    let (lay, counts) = (bufs.layout, bufs.counts_in);
    let mut base = 0u32;
    let mut j0 = 0;
    while j0 < local {
        let j = j0 + s;
        let mut rows = 0u32;
        if j < local {
            for src in 0..n as usize {
                // SAFETY: j < local, src < size: the words lie in `layout` (LayoutWords) and
                // `counts_in` (size rows of cw); the counts arrived before their flags
                // (acquired above, then the block barrier).
                unsafe {
                    lay.add(words.src_base + src * local as usize + j as usize)
                        .write(rows);
                    rows += counts.add(src * cw + 1 + j as usize).read_volatile();
                }
            }
        }
        let (before, total) = warp::exclusive_sum(rows.next_multiple_of(call.align));
        if j < local {
            // SAFETY: j < local: the words lie in `layout`.
            unsafe {
                lay.add(words.expert_base + j as usize).write(base + before);
                lay.add(words.expert_rows + j as usize).write(rows);
            }
        }
        base += total;
        j0 += 32;
    }
    if s != 0 {
        return;
    }
    let mut tokens = 0u32;
    // SAFETY: as above.
    unsafe {
        for src in 0..n as usize {
            lay.add(words.token_base + src).write(tokens);
            tokens += counts.add(src * cw).read_volatile();
        }
        lay.add(words.totals).write(tokens);
        lay.add(words.totals + 1).write(base);
    }
    device_assert!(
        base <= call.capacity(),
        "rshmem-moe: %u rows received, more than the buffers' %u",
        base,
        call.capacity()
    );
}

/// The tokens a call brought to this PE, as the scatter and the combine walk them: received
/// token `i` (in rank order, then slot order) is rank `s`'s slot `slot`, its record and its
/// staged row at `at = s × max_tokens + slot`.
pub(crate) struct Received {
    pub(crate) words: LayoutWords,
    /// `hidden`, `record_words`, `max_tokens`, as `usize`.
    pub(crate) h: usize,
    w: usize,
    r: usize,
    local: u32,
    size: u32,
    /// How many tokens arrived.
    pub(crate) count: u32,
    layout: *const u32,
    meta: *const u32,
}

/// One received token (see [`Received`]).
pub(crate) struct Token {
    /// Its source rank.
    pub(crate) s: u32,
    /// Its staged row (`s × max_tokens + slot`).
    pub(crate) at: usize,
    /// Its record.
    pub(crate) record: *const u32,
}

impl Received {
    /// The received tokens of `call`.
    ///
    /// # Safety
    ///
    /// `bufs` are this PE's, after its [`layout`] of the call in stream order.
    #[inline(always)]
    pub(crate) unsafe fn of(bufs: &MoeBufs, call: &MoeCall) -> Self {
        let words = LayoutWords::new(call.size, call.local_experts());
        Self {
            words,
            h: call.hidden as usize,
            w: call.record_words() as usize,
            r: call.max_tokens as usize,
            local: call.local_experts(),
            size: call.size,
            // SAFETY: written by `layout`, which finished before this kernel.
            count: unsafe { bufs.layout.add(words.totals).read() },
            layout: bufs.layout,
            meta: bufs.meta,
        }
    }

    /// Received token `i` (`i < count`).
    ///
    /// # Safety
    ///
    /// `i < self.count`.
    #[inline(always)]
    pub(crate) unsafe fn token(&self, i: u32) -> Token {
        let base = |s: u32| {
            // SAFETY: token_base has `size` words (s < size).
            unsafe { self.layout.add(self.words.token_base + s as usize).read() }
        };
        let mut s = 0;
        while s + 1 < self.size && base(s + 1) <= i {
            s += 1;
        }
        let at = s as usize * self.r + (i - base(s)) as usize;
        Token {
            s,
            at,
            // SAFETY: the record of a received token lies in `meta`.
            record: unsafe { self.meta.add(at * self.w) },
        }
    }

    /// The row of `token`'s entry `kk` and its weight, or `None` if its expert is on
    /// another rank.
    ///
    /// # Safety
    ///
    /// `token` is one of these; `kk < top_k`.
    #[inline(always)]
    pub(crate) unsafe fn row(&self, token: &Token, kk: u32) -> Option<(u32, f32)> {
        // SAFETY: the caller's; the words lie in the record and the layout.
        unsafe {
            let entry = token.record.add(1 + 3 * kk as usize);
            let j = entry.read();
            if j == NONE {
                return None;
            }
            let row = self.layout.add(self.words.expert_base + j as usize).read()
                + self
                    .layout
                    .add(self.words.src_base + (token.s * self.local + j) as usize)
                    .read()
                + entry.add(1).read();
            Some((row, f32::from_bits(entry.add(2).read())))
        }
    }
}

/// Step 4 (module docs): the received tokens into their experts' rows, and the padding.
///
/// # Safety
///
/// After this PE's [`layout`] of the call in stream order; `bufs` as for [`send`], its
/// `recv_*` buffers holding `capacity` rows.
#[inline(always)]
pub unsafe fn scatter(bufs: MoeBufs, call: MoeCall) {
    // SAFETY: after this call's layout (the contract).
    let got = unsafe { Received::of(&bufs, &call) };
    let words = got.words;
    let (data, ns) = (call.data_bytes() as usize, call.scales as usize);
    // Scales in the FP8 grouped GEMM's layout for A over all `capacity` rows: row `r`'s
    // scale of K block `kb` at `kb × capacity + r`.
    let capacity = call.capacity() as usize;
    let mut i = thread::block_idx_x();
    let first = thread::thread_idx_x() == 0;
    while i < got.count + call.local_experts() {
        if i < got.count {
            // SAFETY: i < count; the records and rows of the received tokens are in `meta`
            // and `staging` (their flags were waited for by `layout`); their rows lie in the
            // `recv_*` buffers (below the total, at most capacity).
            unsafe {
                let token = got.token(i);
                let from = bufs.staging.add(token.at * call.staged_bytes() as usize);
                // Its entries here, eight at a time: the staged row read once for them all.
                let mut kk0 = 0;
                while kk0 < call.top_k {
                    let mut x = [core::ptr::null_mut(); MAX_PEERS];
                    let mut scales = [core::ptr::null_mut(); MAX_PEERS];
                    rshmem_coll::unroll8!(slot < MAX_PEERS => {
                        let kk = kk0 + slot as u32;
                        if kk < call.top_k {
                            if let Some((row, weight)) = got.row(&token, kk) {
                                let row = row as usize;
                                x[slot] = bufs.recv_x.add(row * data);
                                scales[slot] = bufs.recv_scales.wrapping_add(row);
                                if first {
                                    bufs.recv_src.add(2 * row).write(token.s);
                                    bufs.recv_src.add(2 * row + 1).write(token.record.read());
                                    bufs.recv_w.add(row).write(weight);
                                }
                            }
                        }
                    });
                    call.receive_staged(from, &x, &scales, capacity);
                    kk0 += MAX_PEERS as u32;
                }
            }
        } else {
            let j = (i - got.count) as usize;
            // SAFETY: expert j < local; its padding rows lie below the total (<= capacity).
            unsafe {
                let base = bufs.layout.add(words.expert_base + j).read();
                let rows = bufs.layout.add(words.expert_rows + j).read();
                for row in base + rows..base + rows.next_multiple_of(call.align) {
                    tile::zero_tile(bufs.recv_x.add(row as usize * data), data);
                    let scales = bufs.recv_scales.wrapping_add(row as usize);
                    let mut e = thread::thread_idx_x() as usize;
                    while e < ns {
                        scales.add(e * capacity).write(0.0);
                        e += thread::block_dim_x() as usize;
                    }
                    if first {
                        bufs.recv_src.add(2 * row as usize).write(NONE);
                        bufs.recv_src.add(2 * row as usize + 1).write(NONE);
                        bufs.recv_w.add(row as usize).write(0.0);
                    }
                }
            }
        }
        i += thread::grid_dim_x();
    }
}
