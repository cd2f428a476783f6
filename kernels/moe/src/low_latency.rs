//! The low-latency mode (decode: up to a few hundred tokens per PE): fixed receive buffers, no
//! host synchronisation, no count exchange before the data, every step on the device, so a
//! dispatch and its combine can be recorded into a CUDA graph and launched many times.
//!
//! **Layout.** Local expert `j` of this PE owns `size × R` rows of `recv_x`
//! (`R = max_tokens`): after a dispatch its first `recv_count[j]` rows hold its tokens, by
//! source rank, then in the source's token order (the same every run); `recv_src` says each
//! row's source rank and entry (`t × top_k + kk`). Rows past the count are stale. That is
//! the grouped GEMM's masked layout (`m = local × size × R` rows, `size × R` per group).
//!
//! **Rows** are the call's ([`MoeCall::elem_bytes`], [`MoeCall::scales`]): bf16, or FP8 e4m3
//! bytes with one f32 scale per 128 elements, staged as the normal mode stages them
//! ([`MoeCall::push_staged`]). FP8 scales land in `recv_scales` in the FP8 grouped GEMM's
//! layout for A, `⌈hidden / 128⌉ × m` with M contiguous (`[kb × m + row]`): [`recv`]
//! writes them there as it packs the rows, so the GEMM takes them as they are. The combine's
//! rows are bf16 either way.
//!
//! **Dispatch**, in stream order:
//!
//! 1. [`begin`] (one thread): this PE's call counter + 1 — the call's epoch, counted on the
//!    device so that every launch of a graph is a new call — and the bad-entry word cleared;
//! 2. [`crate::route`]: each entry's position among this PE's rows for its expert;
//! 3. [`send`]: each valid entry's row, once per entry, into its expert's rank at
//!    `staging[j][this rank][position]`, with the entry's index beside it (stores, or puts
//!    where a rank has no mapping); then `quiet`;
//! 4. [`signal_counts`]: per (rank, expert), the flag `epoch << 32 | rows`: the count travels
//!    with the data's announcement;
//! 5. [`recv`] (may be queued later: work placed between overlaps the transfer): per local
//!    expert, waits for every rank's flag of this epoch, then packs the ranks' rows, in rank
//!    order, into its rows of `recv_x`.
//!
//! **Combine**: [`combine_send`] sends each expert row back, as it is (bf16), to its source's
//! slot for that entry; [`signal_combine`]; [`combine_reduce`] waits for every rank's flag,
//! then each token's output is `Σ weight × row` over its valid entries in entry order, in f32,
//! rounded once to bf16.
//!
//! **Why no barrier.** A rank writes into a peer's staging for call `e + 1` only after its own
//! combine of call `e` saw every rank's partials of call `e`, which each rank sends after its
//! `recv` of call `e` read its staging; likewise for the combine slots (written in call
//! `e + 1` only after the writer's `recv` of `e + 1`, which waited for the source's sends of
//! `e + 1`, queued after the source's combine of `e` read them). So each dispatch must be
//! followed by its combine (the host checks the order it queues or records). Flags hold the
//! epoch in their high half and only grow: never reset.

use crate::call::{MoeCall, RouteBufs, NONE};
use crate::walk::ExpertWalk;
use crate::weighted::{bf16_pack, Sum};
use rshmem_coll::pack::{self, Pack};
use rshmem_coll::peers::Peers;
use rshmem_coll::{signal as sig, tile};
use rshmem_device::half::Half;
use rshmem_device::shmem::{self, Team};
use rshmem_device::{bf16, thread, KernelArg};

/// The low-latency buffers on this PE (a kernel argument). `E` local experts, `n` ranks,
/// `R = max_tokens`, `H = hidden`, `k = top_k`.
///
/// | buffer | elements | what |
/// |---|---|---|
/// | `flags` (symmetric) | `E × n + n` | `[j × n + s]`: rank `s`'s rows for expert `j` (`epoch << 32 \| rows`); `[E × n + s]`: rank `s`'s combine (`epoch << 32`) |
/// | `counter` | `1` | this PE's calls: the running call's epoch |
/// | `staging` (symmetric) | `E × n × R` rows of `staged_bytes` | `[(j × n + s) × R + p]`: rank `s`'s row `p` for expert `j`, its scales after it |
/// | `meta` (symmetric) | `E × n × R` | the same rows' entry index (`t × k + kk` on rank `s`) |
/// | `index` (symmetric) | `R × k` | `index[i] = i`: the puts' source of the entry indices |
/// | `pos`, `send_slot`, `counts_out`, `bad_entry`, `route_blocks` | as [`crate::MoeBufs`] | the routing ([`RouteBufs`]) |
/// | `recv_x` | `E × n R` rows of `data_bytes` | the packed rows |
/// | `recv_scales` | `scales × E n R` f32 | FP8 rows' scales, `[kb × E n R + row]` (null for bf16) |
/// | `recv_src` | `E × n R × 2` | each row's source rank and entry |
/// | `recv_count` | `E` | each expert's rows |
/// | `combine_recv` (symmetric) | `R × k × H` | `[t × k + kk]`: the expert row of this PE's entry `(t, kk)` |
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LlBufs {
    /// See the type's docs.
    pub flags: *mut u64,
    /// See the type's docs.
    pub counter: *mut u64,
    /// See the type's docs.
    pub staging: *mut u8,
    /// See the type's docs.
    pub meta: *mut u32,
    /// See the type's docs.
    pub index: *mut u32,
    /// See the type's docs.
    pub pos: *mut u32,
    /// See the type's docs.
    pub send_slot: *mut u32,
    /// See the type's docs.
    pub counts_out: *mut u32,
    /// See the type's docs.
    pub bad_entry: *mut u32,
    /// See the type's docs.
    pub route_blocks: *mut u32,
    /// See the type's docs.
    pub recv_x: *mut u8,
    /// See the type's docs.
    pub recv_scales: *mut f32,
    /// See the type's docs.
    pub recv_src: *mut u32,
    /// See the type's docs.
    pub recv_count: *mut u32,
    /// See the type's docs.
    pub combine_recv: *mut bf16,
}

// SAFETY: `#[repr(C)]` of fifteen pointers (120 bytes, no padding): the same bytes on the
// host and nvptx64; the kernels' contracts say what they must point to.
unsafe impl KernelArg for LlBufs {}

impl LlBufs {
    /// The routing's part.
    #[inline(always)]
    pub fn route(&self) -> RouteBufs {
        RouteBufs {
            pos: self.pos,
            send_slot: self.send_slot,
            counts_out: self.counts_out,
            bad_entry: self.bad_entry,
            blocks: self.route_blocks,
        }
    }

    /// `recv_x` as bf16 rows (the fused layer's, and the bf16 payload's).
    #[inline(always)]
    pub fn rows_bf16(&self) -> *mut bf16 {
        self.recv_x.cast()
    }

    /// The running call's epoch.
    ///
    /// # Safety
    ///
    /// After this call's [`begin`] in stream order.
    #[inline(always)]
    pub(crate) unsafe fn epoch(&self) -> u64 {
        // SAFETY: written only by `begin`, which finished before this kernel.
        unsafe { self.counter.read_volatile() }
    }
}

/// Step 1 (module docs). Any launch: thread 0 of block 0 does it.
///
/// # Safety
///
/// `ll` this PE's buffers; before everything else of the call in stream order, after every
/// kernel of the previous call.
#[inline(always)]
pub unsafe fn begin(ll: LlBufs) {
    if thread::block_idx_x() == 0 && thread::thread_idx_x() == 0 {
        // SAFETY: only this kernel writes the counter and clears the word, one call at a time.
        unsafe {
            ll.counter.write_volatile(ll.counter.read_volatile() + 1);
            ll.bad_entry.write_volatile(NONE);
        }
    }
}

/// The valid entry `(t, kk)`'s expert, or `None` (`-1` or out of range).
///
/// # Safety
///
/// `topk` holds token `t`'s entries.
#[inline(always)]
unsafe fn expert(call: &MoeCall, topk: *const i32, t: u32, kk: u32) -> Option<u32> {
    // SAFETY: the caller's.
    let e = unsafe { topk.add((t * call.top_k + kk) as usize).read() };
    call.expert(e)
}

/// Step 3 (module docs).
///
/// # Safety
///
/// `x` holds `tokens` rows of `data_bytes`, `scales` `tokens × call.scales` f32 (unused when
/// 0) and `topk` `tokens × top_k`, in symmetric memory; `ll` this PE's buffers of the call's
/// shape and payload (every member's at the same addresses), after this call's route; every
/// member runs the same call.
#[inline(always)]
pub unsafe fn send(
    team: Team,
    ll: LlBufs,
    x: *const u8,
    scales: *const f32,
    topk: *const i32,
    call: MoeCall,
) {
    let peers = Peers::of(team);
    let (staged, r, n) = (
        call.staged_bytes() as usize,
        call.max_tokens as usize,
        call.size as usize,
    );
    let mut t = thread::block_idx_x();
    while t < call.tokens {
        for kk in 0..call.top_k {
            // SAFETY: t < tokens.
            let Some(e) = (unsafe { expert(&call, topk, t, kk) }) else {
                continue;
            };
            let (d, j) = (call.owner(e), call.local(e) as usize);
            let i = (t * call.top_k + kk) as usize;
            // SAFETY: the route numbered the entry below this PE's rows for e (<= R); the
            // slot is written by nobody else in this call; `index` holds R × k words.
            unsafe {
                let slot = (j * n + peers.rank as usize) * r + ll.pos.add(i).read() as usize;
                let pe = peers.world(d);
                call.push_staged(ll.staging.add(slot * staged), x, scales, t, pe);
                tile::push_tile(ll.meta.add(slot), ll.index.add(i), 1, pe);
            }
        }
        t += thread::grid_dim_x();
    }
    thread::sync_threads();
    if thread::thread_idx_x() == 0 {
        shmem::quiet();
    }
}

/// Step 4 (module docs): thread `i` (of any grid) announces this PE's rows for expert
/// `i % local` of rank `i / local`.
///
/// # Safety
///
/// After this PE's [`send`] of the call in stream order; `ll` as for it.
#[inline(always)]
pub unsafe fn signal_counts(team: Team, ll: LlBufs, call: MoeCall) {
    let peers = Peers::of(team);
    let local = call.local_experts();
    // SAFETY: after `begin` (stream order).
    let epoch = unsafe { ll.epoch() };
    let mut i = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    while i < call.size * local {
        let (d, j) = (i / local, i % local);
        // SAFETY: `counts_out` holds size rows of count_words (the route's); the flag word
        // `j × n + rank` lies in d's buffer, which only this PE sets.
        unsafe {
            let rows = ll
                .counts_out
                .add((d * call.count_words() + 1 + j) as usize)
                .read();
            let flag = ll.flags.add((j * call.size + peers.rank) as usize);
            sig::signal(flag, epoch << 32 | rows as u64, peers.world(d));
        }
        i += thread::grid_dim_x() * thread::block_dim_x();
    }
}

/// Step 5 (module docs). Each local expert's rows are split in `pieces = max(1, gridDim /
/// local)` pieces (row `g` of the expert's packed rows in piece `g % pieces`), and block `b`
/// packs units `b, b + gridDim, ...` (unit `u`: expert `u / pieces`, piece `u % pieces`): with
/// a few experts (8 of Mixtral's) a block per expert would copy its hundreds of rows one
/// after another.
///
/// # Safety
///
/// After this PE's [`signal_counts`] of the call in stream order; `ll` as for [`send`]; every
/// member signals its counts of this call; the block has at least `size` threads.
#[inline(always)]
pub unsafe fn recv(team: Team, ll: LlBufs, call: MoeCall) {
    let peers = Peers::of(team);
    // SAFETY: after `begin`.
    let epoch = unsafe { ll.epoch() };
    let (r, n) = (call.max_tokens as usize, call.size as usize);
    let (data, staged) = (call.data_bytes() as usize, call.staged_bytes() as usize);
    let local = call.local_experts() as usize;
    // Rows of the masked layout: a K block's scales of every row are contiguous.
    let m = local * n * r;
    let pieces = (thread::grid_dim_x() as usize / local).max(1);
    let first = thread::thread_idx_x() == 0;
    let mut u = thread::block_idx_x() as usize;
    while u < local * pieces {
        let (j, q) = (u / pieces, u % pieces);
        let s = thread::thread_idx_x();
        if s < peers.n {
            // SAFETY: the flag lies in the buffer; rank s sets it for this call.
            unsafe {
                sig::wait(
                    ll.flags.add(j * n + s as usize),
                    epoch << 32,
                    peers.world(s),
                )
            };
        }
        thread::sync_threads();
        let mut base = 0usize;
        for src in 0..n {
            // SAFETY: waited for above (then the block barrier); `recv_*` hold n R rows per
            // expert, and the rank's rows are at most R.
            unsafe {
                let flag = ll.flags.add(j * n + src).read_volatile();
                let rows = (flag & 0xFFFF_FFFF) as usize;
                // This piece's first row of the source: the one at `q` modulo `pieces`.
                let mut p = (q + pieces - base % pieces) % pieces;
                while p < rows {
                    let from = (j * n + src) * r + p;
                    let to = j * n * r + base + p;
                    let (x, scales) = (ll.recv_x.add(to * data), ll.recv_scales.wrapping_add(to));
                    call.receive_staged(ll.staging.add(from * staged), &[x], &[scales], m);
                    if first {
                        ll.recv_src.add(2 * to).write(src as u32);
                        ll.recv_src.add(2 * to + 1).write(ll.meta.add(from).read());
                    }
                    p += pieces;
                }
                base += rows;
            }
        }
        if first && q == 0 {
            // SAFETY: recv_count holds one word per local expert.
            unsafe { ll.recv_count.add(j).write(base as u32) };
        }
        // The next unit's waits reuse the block's threads.
        thread::sync_threads();
        u += thread::grid_dim_x() as usize;
    }
}

/// Combine step 1 (module docs): each received row of `expert_out` (the experts' output,
/// row for row as `recv_x`) back to its source's slot for its entry.
///
/// # Safety
///
/// Blocks of whole warps; after this PE's [`recv`] of the call in stream order; `expert_out`
/// holds `local × n R × hidden` elements in symmetric memory; `ll` as for [`send`].
#[inline(always)]
pub unsafe fn combine_send(team: Team, ll: LlBufs, expert_out: *const bf16, call: MoeCall) {
    let peers = Peers::of(team);
    let (h, rows_per) = (call.hidden as usize, (call.size * call.max_tokens) as usize);
    let local = call.local_experts() as usize;
    // Rows of every expert, one block a row: w walks expert 0's rows, then expert 1's, ...
    // SAFETY: written by `recv`, which finished before this kernel; j < local.
    let mut walk = ExpertWalk::new(local as u32, |j| unsafe {
        ll.recv_count.add(j as usize).read()
    });
    let mut w = thread::block_idx_x();
    while let Some((j, at)) = walk.find(w) {
        let row = j as usize * rows_per + at as usize;
        // SAFETY: the row is one of that expert's; its source's slot for the entry lies in
        // `combine_recv` (entries < R k) and only this row is sent there.
        unsafe {
            let (src, entry) = (
                ll.recv_src.add(2 * row).read(),
                ll.recv_src.add(2 * row + 1).read(),
            );
            let dst = ll.combine_recv.add(entry as usize * h);
            tile::push_tile(dst, expert_out.add(row * h), h, peers.world(src));
        }
        w += thread::grid_dim_x();
    }
    thread::sync_threads();
    if thread::thread_idx_x() == 0 {
        shmem::quiet();
    }
}

/// Combine step 2: thread `d` of one block tells rank `d` that this PE's rows for it are
/// there.
///
/// # Safety
///
/// After this PE's [`combine_send`] of the call; one block of at least `size` threads.
#[inline(always)]
pub unsafe fn signal_combine(team: Team, ll: LlBufs, call: MoeCall) {
    let peers = Peers::of(team);
    let d = thread::thread_idx_x();
    if d < peers.n {
        // SAFETY: after `begin`; the flag word lies in d's buffer, set only by this PE.
        unsafe {
            let flag = ll
                .flags
                .add((call.local_experts() * call.size + peers.rank) as usize);
            sig::signal(flag, ll.epoch() << 32, peers.world(d));
        }
    }
}

/// Combine step 3 (module docs).
///
/// # Safety
///
/// `topk` and `weights` hold this PE's `tokens × top_k` entries of the dispatch, `out`
/// `tokens × hidden` elements; after this PE's [`signal_combine`]; every member signals its
/// combine of this call; blocks have at least `size` threads.
#[inline(always)]
pub unsafe fn combine_reduce(
    team: Team,
    ll: LlBufs,
    topk: *const i32,
    weights: *const f32,
    out: *mut bf16,
    call: MoeCall,
) {
    let peers = Peers::of(team);
    // SAFETY: after `begin`.
    let epoch = unsafe { ll.epoch() };
    let s = thread::thread_idx_x();
    if s < peers.n {
        // SAFETY: the flag lies in the buffer; rank s sets it for this call.
        unsafe {
            let flag = ll
                .flags
                .add((call.local_experts() * call.size + s) as usize);
            sig::wait(flag, epoch << 32, peers.world(s));
        }
    }
    thread::sync_threads();
    let h = call.hidden as usize;
    let mut t = thread::block_idx_x();
    while t < call.tokens {
        let entry = |kk: u32| {
            let i = t * call.top_k + kk;
            // SAFETY: t < tokens; a valid entry's slot was filled (the flags above).
            unsafe { expert(&call, topk, t, kk).map(|_| (i, weights.add(i as usize).read())) }
        };
        let sum = Sum::new(call.top_k, ll.combine_recv, h, entry);
        // SAFETY: `out` holds tokens × hidden; the slots of t's valid entries hold rows.
        unsafe {
            let row = out.add(t as usize * h);
            tile::by_packs::<bf16>(
                h,
                sum.packed() && pack::aligned(out),
                |g| pack::store(row.add(8 * g).cast::<Pack>(), bf16_pack(&sum.pack(g))),
                |e| row.add(e).write(bf16::from_f32_rn(sum.element(e))),
            );
        }
        t += thread::grid_dim_x();
    }
}
