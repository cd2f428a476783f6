//! The fused MoE layer: `dispatch → grouped GEMM (gate and up) → SwiGLU → grouped GEMM (down)
//! → combine`, every step on the device (no host synchronisation; a call records into a CUDA
//! graph), with the transfers overlapping the GEMMs across ranks:
//!
//! * each rank's rows for an expert land straight in their final rows of that expert's
//!   region (the low-latency mode's fixed per-expert regions, the grouped GEMM's masked
//!   layout), and the gate/up GEMM starts a tile as soon as the rows it reads have arrived:
//!   its schedule ([`ArrivalSchedule`]) waits, before a tile's loads, for the arrival flags of
//!   the ranks whose rows the tile covers — per expert, per source rank;
//! * the gate/up GEMM's epilogue applies SwiGLU (`rshmem_gemm::SwiGlu`: W₁'s gate and up rows
//!   interleaved by pairs), so the `2 × intermediate` product never reaches memory;
//! * the down GEMM's epilogue ([`SendRows`]) stores each output row straight into its source
//!   rank's slot for the entry (through the peer mapping), as the reduce-scatter epilogue
//!   stores partial tiles on their owners; where a rank has no mapping the row is kept here
//!   and [`push_unmapped`] puts it after the GEMM;
//! * the combine is the low-latency mode's (`signal_combine`, `combine_reduce`): per token,
//!   `Σ weight × row` over its valid entries in entry order, in f32, rounded once.
//!
//! **Layout** (`n` ranks, `R = max_tokens`, `E` local experts, `H = hidden`, `I =
//! intermediate`): local expert `j` owns rows `j × n R .. (j + 1) × n R` of `recv_x` (`H`
//! wide) and of `act` (`I` wide); rank `s`'s rows for it start at `src_base[j][s] = Σ_{s' < s}
//! rows(s', j)`, in the source's entry order (the route's positions), so the rows are packed:
//! `recv_count[j] = Σ_s rows(s, j)` rows, by source rank. `rows(s, j)` is rank `s`'s count for
//! the expert from its route, at most `R` (a token that lists an expert twice could exceed
//! it: such entries are skipped and reported, see [`prepare`]).
//!
//! **Steps**, in stream order (the host queues them; `begin` and the route are the
//! low-latency mode's):
//!
//! 1. `low_latency::begin`: the epoch (this PE's call counter + 1), the bad-entry word cleared;
//! 2. `route`: each entry's position among this PE's rows for its expert, and the counts;
//! 3. [`prepare`]: this PE's whole count matrix (every rank's expert counts) to every rank,
//!    then its count flag there (`epoch`); the entries indexed by (expert, position);
//! 4. [`send`]: waits for every rank's count flag; lays out this PE's experts (`src_base`,
//!    `recv_count`); then this PE's rows into their final rows on each expert's rank (in
//!    pieces of up to [`SEND_ROWS`] rows spread over the blocks), each row's `(rank, entry)`
//!    into `recv_src` beside it; the block that completes an expert's rows sets its arrival
//!    flag `[j × n + rank] = epoch << 32 | rows` there;
//! 5. the gate/up GEMM (`ArrivalSchedule` + `SwiGlu`) over `recv_x` → `act`;
//! 6. the down GEMM (`Grouped` + [`SendRows`]) over `act` → the sources' `combine_recv`;
//! 7. [`push_unmapped`] (only where a source has no peer mapping);
//! 8. `low_latency::signal_combine`, `low_latency::combine_reduce`.
//!
//! **Why each wait is there.**
//!
//! * *Counts before rows* (step 4 waits for every rank's count flag): a row's final place
//!   depends on the counts of the ranks before its source, which only they know. The count
//!   flag is set after the counts (a system-scope release, or a fence and `signal_op` after
//!   the put), and the wait acquires.
//! * *Rows before loads* ([`ArrivalSchedule::before_loads`]): a tile of expert `j` covering
//!   rows of rank `s` waits for `flags[j × n + s] >= epoch << 32`, which rank `s` sets after
//!   its stores (or puts, then `quiet`) of all its rows for `j`: each block's stores, a block
//!   barrier, then an acquire-release add to the expert's `sent` count; the block whose add
//!   completes the count has acquired every other piece's stores, and its signal releases
//!   them (cumulative, system scope). The wait acquires at system scope and, on sm90, a proxy
//!   fence orders the TMA loads after it. `recv_src`'s words arrive with the rows, before the
//!   same flag; the down GEMM reads them after the gate/up GEMM (stream order) acquired every
//!   row's flag. The layout the GEMMs walk (`recv_count`) and the waits' ranges (`src_base`)
//!   were written by step 4 on this PE, before them in stream order. A tile's rows past its
//!   expert's count (the next expert's, being written) are loaded but never stored.
//! * *Combine*: the down GEMM's stores into a source's `combine_recv` (and the puts of step 7,
//!   quieted) are complete when the kernel that made them has finished (kernel boundary, as
//!   NVSHMEM's stream ordering assumes); `signal_combine`, after them on the stream, releases
//!   the combine flag at system scope, and `combine_reduce` waits for every rank's.
//!
//! **Why buffers are reused without a barrier.** Every write into another rank's buffers in
//! call `e + 1` comes after that rank's count flag of call `e + 1` (the rows and `recv_src`:
//! step 4 waits for it; `combine_recv`: the down GEMM runs after step 4), which the rank sets
//! in its step 3, after finishing call `e` (stream order): its GEMMs of call `e` have read
//! `recv_x` and `act`, its push has read `recv_x`, its combine has read `combine_recv`, and
//! its step 4 has read `counts_all`. Flags hold epochs and only grow: never reset. So, as in
//! the low-latency mode, calls need no barrier, and every launch of a graph is a new call
//! (the epoch is counted on the device).
//!
//! **Why the waits cannot deadlock.** Step 4 waits only for the other ranks' step 3, which
//! waits for nothing; the gate/up GEMM waits only for other ranks' step 4; the combine for
//! their down GEMM and push, which wait for nothing. No GEMM block waits for another block
//! of its own grid, so the GEMMs need not be cooperative launches (but the ranks' kernels must
//! be able to run at once: one GPU per PE, or PEs sharing a GPU under MPS).

use crate::call::MoeCall;
use crate::low_latency::LlBufs;
use crate::walk::ExpertWalk;
use rshmem_coll::peers::{Peers, MAX_PEERS};
use rshmem_coll::{signal as sig, tile};
use rshmem_device::atomic::{self, Gpu, Ordering};
use rshmem_device::shmem::{self, Team, Thread};
use rshmem_device::{bf16, hopper, thread, warp, KernelArg};
use rshmem_gemm::{Epilogue, GroupRows, Grouped, OutElem, Problem, Schedule, Tile};

/// The fused layer's buffers on this PE (a kernel argument): the low-latency mode's `ll`
/// (its flags, counter, routing words, `recv_x`, `recv_src`, `recv_count`, `combine_recv`;
/// not its staging, `meta` and `index`, which the layer's rows skip: null), and its own
/// (`n` ranks, `R = max_tokens`, `k = top_k`, `X` experts in all, `E` local, `cw =
/// count_words`):
///
/// | buffer | elements | what |
/// |---|---|---|
/// | `count_flags` (symmetric) | `n` | `[s]`: rank `s`'s counts are here (its epoch) |
/// | `counts_all` (symmetric) | `n × n × cw` | `[s]`: rank `s`'s `counts_out` (its rows per rank and expert) |
/// | `entries` | `X × R` | `[e × R + p]`: this PE's entry (`t × k + kk`) at position `p` for expert `e` |
/// | `src_base` | `E × (n + 1)` | `[j × (n + 1) + s]`: rank `s`'s first row within expert `j`; `[.. + n]`: the expert's rows |
/// | `src_words` (symmetric) | `R × k × 2` | `[2i] = rank`, `[2i + 1] = i`: the puts' source of `recv_src`'s words |
/// | `sent` | `X` | `[e]`: rows of expert `e` this PE has sent in this call ([`send`]'s pieces) |
/// | `act` | `E × n R × I` | SwiGLU's output, the down GEMM's input |
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LayerBufs {
    /// The low-latency mode's buffers the layer shares (see the type's docs).
    pub ll: LlBufs,
    /// See the type's docs.
    pub count_flags: *mut u64,
    /// See the type's docs.
    pub counts_all: *mut u32,
    /// See the type's docs.
    pub entries: *mut u32,
    /// See the type's docs.
    pub src_base: *mut u32,
    /// See the type's docs.
    pub src_words: *mut u32,
    /// See the type's docs.
    pub sent: *mut u32,
    /// See the type's docs.
    pub act: *mut bf16,
}

// SAFETY: `#[repr(C)]` of twenty-one pointers (168 bytes, no padding): the same bytes on the
// host and nvptx64; the kernels' contracts say what they must point to.
unsafe impl KernelArg for LayerBufs {}

/// The team as the GEMM kernels (and [`push_unmapped`], which must agree with them) take
/// it: plain numbers. A call that returns, anywhere in a kernel with `wgmma`, made ptxas 13.0
/// serialise the wgmma pipeline (C7510): NVSHMEM's team calls assert (`__assertfail`), so the
/// GEMMs make none. Rank `r` is world PE `start + r × stride` (NVSHMEM's teams are strided).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranks {
    /// World PE of rank 0.
    pub start: u32,
    /// World PEs between ranks.
    pub stride: u32,
    /// Ranks in the team.
    pub size: u32,
    /// This PE's rank.
    pub rank: u32,
}

// SAFETY: `#[repr(C)]` of four `u32` (16 bytes, no padding): the same bytes and meaning on the
// host and the device.
unsafe impl KernelArg for Ranks {}

impl Ranks {
    /// The world PE of rank `r`.
    #[inline(always)]
    pub const fn world(&self, r: u32) -> i32 {
        (self.start + r * self.stride) as i32
    }
}

/// Rows each local expert owns in `recv_x` and `act`: every rank's every token.
#[inline(always)]
pub const fn rows_per_expert(call: &MoeCall) -> u32 {
    call.size * call.max_tokens
}

/// The rows rank `src` sends for rank `d`'s local expert `j`, from `src`'s count matrix in
/// `counts_all`: its route's count, at most `max_tokens` (see [`prepare`]).
///
/// # Safety
///
/// `counts_all` holds rank `src`'s counts of this call (acquired); `src`, `d` < size, `j` <
/// local experts.
#[inline(always)]
unsafe fn rows(lb: &LayerBufs, call: &MoeCall, src: u32, d: u32, j: u32) -> u32 {
    let cw = call.count_words();
    let at = (src * call.size + d) * cw + 1 + j;
    // SAFETY: the caller's.
    let count = unsafe { lb.counts_all.add(at as usize).read_volatile() };
    count.min(call.max_tokens)
}

/// Step 3 (module docs), any 1-D grid whose first block has at least `size` threads: thread
/// `d` of block 0 sends this PE's count matrix (`counts_out`, what the route wrote) to rank
/// `d`'s `counts_all[rank]`, then sets its count flag there; every thread indexes entries by
/// (expert, position), and zeroes [`send`]'s `sent` words. An entry at a position `>= max_tokens` (a token that lists one expert
/// more than once can make one) is skipped: it is recorded in the bad-entry word and its
/// `combine_recv` row zeroed, so the combine adds nothing for it.
///
/// # Safety
///
/// After this call's route in stream order; `topk` holds `tokens × top_k` entries; `lb` this
/// PE's buffers of the call's shape (every member's at the same symmetric addresses); every
/// member runs the same call.
#[inline(always)]
pub unsafe fn prepare(team: Team, lb: LayerBufs, topk: *const i32, call: MoeCall) {
    let peers = Peers::of(team);
    let ll = lb.ll;
    let words = (call.size * call.count_words()) as usize;
    let tid = thread::thread_idx_x();
    if thread::block_idx_x() == 0 && tid < peers.n {
        let pe = peers.world(tid);
        // SAFETY: after `begin`; `counts_out` (symmetric, a put source) holds `words` words
        // the route wrote; rank `rank`'s block of `counts_all` on `tid` is written only here,
        // and read there after the flag below; the flag word lies in `count_flags`.
        unsafe {
            let epoch = ll.epoch();
            let dst = lb.counts_all.add(peers.rank as usize * words);
            let mapped = shmem::ptr(dst, pe);
            if mapped.is_null() {
                shmem::put::<Thread, u32>(dst, ll.counts_out, words, pe);
            } else {
                for w in 0..words {
                    mapped.add(w).write_volatile(ll.counts_out.add(w).read());
                }
            }
            sig::signal(lb.count_flags.add(peers.rank as usize), epoch, pe);
        }
    }
    let (k, r, h) = (call.top_k, call.max_tokens, call.hidden as usize);
    let (first, threads) = (
        thread::block_idx_x() * thread::block_dim_x() + tid,
        thread::grid_dim_x() * thread::block_dim_x(),
    );
    let mut e = first;
    while e < call.experts {
        // SAFETY: `sent` holds one word per expert; the previous call's `send` finished.
        unsafe { lb.sent.add(e as usize).write(0) };
        e += threads;
    }
    let mut i = first;
    while i < call.tokens * k {
        // SAFETY: `i < tokens × top_k`; `pos` was written by the route for valid entries.
        unsafe {
            if let Some(e) = call.expert(topk.add(i as usize).read()) {
                let p = ll.pos.add(i as usize).read();
                if p < r {
                    lb.entries.add((e * r + p) as usize).write(i);
                } else {
                    atomic::fetch_min::<Gpu, u32>(ll.bad_entry, i, Ordering::Relaxed);
                    let row = ll.combine_recv.add(i as usize * h);
                    for c in 0..h {
                        row.add(c).write(bf16::ZERO);
                    }
                }
            }
        }
        i += threads;
    }
}

/// The most rows of one expert a block of [`send`] copies as one piece of work: small enough
/// that an expert with many rows is spread over many blocks (8 experts of 1000 rows each would
/// otherwise be 8 blocks copying row after row), large enough to amortise the piece's
/// bookkeeping (one atomic per piece). Fewer where the entries are few ([`piece_rows`]).
pub const SEND_ROWS: u32 = 16;
// A piece's entries are a lane's each ([`send`]).
const _: () = assert!(SEND_ROWS <= warp::WARP_SIZE);

/// The rows per piece of [`send`] on a grid of `blocks`: the call's entries spread over every
/// block, 1 to [`SEND_ROWS`] (128 tokens of top-2 in pieces of 16 kept 24 blocks busy
/// copying 16 rows each in turn, the rest of the GPU idle).
#[inline(always)]
pub fn piece_rows(call: &MoeCall, blocks: u32) -> u32 {
    (call.tokens * call.top_k)
        .div_ceil(blocks.max(1))
        .clamp(1, SEND_ROWS)
}

/// Step 4 (module docs), any 1-D grid of blocks of whole warps, at least `size` threads: the
/// rows go in pieces of [`piece_rows`] rows of one expert, expert after expert (of all ranks'
/// experts), block `b` taking pieces `b, b + gridDim, ...`; the block that completes an
/// expert's last piece (`sent[e]` reaches its count) sets the expert's arrival flag on its
/// rank.
///
/// # Safety
///
/// After this PE's [`prepare`] of the call in stream order (it zeroed `sent`); `x` holds
/// `tokens × hidden` elements in symmetric memory; `lb` as for [`prepare`]; every member runs
/// the same call.
#[inline(always)]
pub unsafe fn send(team: Team, lb: LayerBufs, x: *const bf16, call: MoeCall) {
    let peers = Peers::of(team);
    let ll = lb.ll;
    // SAFETY: after `begin`.
    let epoch = unsafe { ll.epoch() };
    let tid = thread::thread_idx_x();
    if tid < peers.n {
        // SAFETY: the flag lies in `count_flags`; rank `tid` sets it in its step 3.
        unsafe { sig::wait(lb.count_flags.add(tid as usize), epoch, peers.world(tid)) };
    }
    thread::sync_threads();
    let (n, k, r, h) = (peers.n, call.top_k, call.max_tokens, call.hidden as usize);
    let per = rows_per_expert(&call);
    if thread::block_idx_x() == 0 {
        let mut j = tid;
        while j < call.local_experts() {
            let mut base = 0;
            // SAFETY: every rank's counts were acquired above; `src_base` holds `n + 1` words
            // per local expert, `recv_count` one.
            unsafe {
                let row = lb.src_base.add((j * (n + 1)) as usize);
                for s in 0..n {
                    row.add(s as usize).write(base);
                    base += rows(&lb, &call, s, peers.rank, j);
                }
                row.add(n as usize).write(base);
                ll.recv_count.add(j as usize).write(base);
            }
            j += thread::block_dim_x();
        }
    }
    // SAFETY: as above (`e < experts`: its rank and local index are in range).
    let count = |e: u32| unsafe { rows(&lb, &call, peers.rank, call.owner(e), call.local(e)) };
    // Pieces numbered expert after expert; each warp finds its block's (the same).
    let rows_per_piece = piece_rows(&call, thread::grid_dim_x());
    let mut walk = ExpertWalk::new(call.experts, |e| count(e).div_ceil(rows_per_piece));
    let mut piece = thread::block_idx_x();
    while let Some((e, q)) = walk.find(piece) {
        let (d, j, total) = (call.owner(e), call.local(e), count(e));
        let pe = peers.world(d);
        // The rows of the ranks before this one in expert j's region on d, a lane's each.
        let mut row = j * per;
        let mut s0 = 0;
        while s0 < peers.rank {
            let s = s0 + warp::lane_id();
            let mine = if s < peers.rank {
                // SAFETY: as above (s < rank < size).
                unsafe { rows(&lb, &call, s, d, j) }
            } else {
                0
            };
            row += warp::sum(mine);
            s0 += warp::WARP_SIZE;
        }
        let first = q * rows_per_piece;
        let last = (first + rows_per_piece).min(total);
        // The piece's entries, a lane's each, loaded at once: a row's copy waits for its
        // entry, and one load per row made the rows' copies wait in turn.
        let lane = warp::lane_id();
        let mine = if lane < last - first {
            // SAFETY: `prepare` indexed every position below the count (`< R`).
            unsafe { lb.entries.add((e * r + first + lane) as usize).read() }
        } else {
            0
        };
        for p in first..last {
            let i = warp::shfl_idx(warp::FULL_MASK, mine, p - first);
            // SAFETY: the destination rows `row .. row + total` lie in expert j's region on
            // `d` (`Σ_s rows(s, j) <= n R`), written by nobody else in this call; `i` is an
            // entry of this call (`< tokens × k`); `x`, `src_words` are symmetric (put
            // sources where `d` has no mapping).
            unsafe {
                let at = (row + p) as usize;
                // Evict-first: the rows are 8 x the bytes of `x` at top-8, and each row of `x`
                // is read once per expert, so `x` should be what stays in L2.
                tile::push_tile_with::<tile::Streaming, _>(
                    ll.rows_bf16().add(at * h),
                    x.add((i / k) as usize * h),
                    h,
                    pe,
                );
                tile::push_tile(
                    ll.recv_src.add(2 * at),
                    lb.src_words.add(2 * i as usize),
                    2,
                    pe,
                );
            }
        }
        thread::sync_threads();
        if tid == 0 {
            // SAFETY: `sent` holds one word per expert, zeroed by `prepare`, touched only by
            // these atomics in this kernel; the flag word lies in d's buffer, set only by
            // this PE for expert j. The block barrier put the block's stores before this
            // thread's release (cumulative); the add's acquire-release chain puts every
            // earlier piece's before the last one's, whose signal releases them all at
            // system scope; `quiet` completes the puts where there is no mapping.
            unsafe {
                let flag = ll.flags.add((j * n + peers.rank) as usize);
                if shmem::ptr(flag, pe).is_null() {
                    shmem::quiet();
                }
                let sent = lb.sent.add(e as usize);
                let had = atomic::fetch_add::<Gpu, u32>(sent, last - first, Ordering::AcqRel);
                if had + (last - first) == total {
                    sig::signal(flag, epoch << 32 | u64::from(total), pe);
                }
            }
        }
        piece += thread::grid_dim_x();
    }
}

/// Whether this PE stores rank `s`'s rows straight into its `combine_recv` from the down
/// GEMM's epilogue: `s` is among the first [`MAX_PEERS`] ranks (the epilogue's table) and
/// mapped. Other ranks' rows go through [`push_unmapped`].
///
/// # Safety
///
/// `combine_recv` is symmetric; `s < ranks.size`.
#[inline(always)]
unsafe fn direct(ranks: Ranks, combine_recv: *const bf16, s: u32) -> *mut bf16 {
    if s as usize >= MAX_PEERS {
        return core::ptr::null_mut();
    }
    // SAFETY: the caller's (rank s is a PE of the job).
    unsafe { shmem::ptr(combine_recv, ranks.world(s)) }
}

/// The gate/up GEMM's schedule: the grouped walk over local experts (the masked layout of
/// `recv_count`), each tile's loads held back until the rows it reads have arrived (module
/// docs). `BM`: the mainloop's rows per tile; `TMA`: its loads are TMA loads (sm90), which
/// need a proxy fence after the wait; `MAPPED`: every rank sets its flags here through its
/// peer mapping, so the waits spin on them without NVSHMEM's wait (whose inlined code made the
/// producer thread's 40 registers spill: 192 bytes against 16, ptxas 13.0).
#[derive(Clone, Copy, Debug)]
pub struct ArrivalSchedule<const BM: u32, const TMA: bool, const MAPPED: bool> {
    grouped: Grouped,
    ranks: Ranks,
    flags: *const u64,
    src_base: *const u32,
    /// The rows per expert.
    per: u32,
    /// What an arrival flag of this call holds at least: `epoch << 32`.
    arrived: u64,
}

impl<const BM: u32, const TMA: bool, const MAPPED: bool> ArrivalSchedule<BM, TMA, MAPPED> {
    /// The schedule over `lb.ll.recv_x` (`problem.m` = local experts × [`rows_per_expert`]),
    /// `rows` the masked layout of `recv_count`.
    ///
    /// # Safety
    ///
    /// After this PE's [`send`] of the call in stream order (it wrote `recv_count` and
    /// `src_base`); `lb` as for it; `rows.sizes` is `lb.ll.recv_count`, `rows.masked_rows`
    /// [`rows_per_expert`]; `ranks` the call's team; with `MAPPED`, every rank is reached
    /// through a peer mapping (else this traps).
    #[inline(always)]
    pub unsafe fn new(ranks: Ranks, lb: LayerBufs, rows: GroupRows, problem: Problem) -> Self {
        if MAPPED {
            for r in 0..ranks.size {
                // SAFETY: the flags are symmetric; rank r is a PE of the job.
                if unsafe { shmem::ptr(lb.ll.flags, ranks.world(r)) }.is_null() {
                    thread::trap();
                }
            }
        }
        Self {
            // SAFETY: `recv_count` holds one word per local expert; nothing writes it during
            // the GEMM.
            grouped: unsafe { Grouped::new(rows, problem) },
            ranks,
            flags: lb.ll.flags,
            src_base: lb.src_base,
            per: rows.masked_rows,
            // SAFETY: after `begin` (the contract).
            arrived: unsafe { lb.ll.epoch() } << 32,
        }
    }
}

impl<const BM: u32, const TMA: bool, const MAPPED: bool> Schedule
    for ArrivalSchedule<BM, TMA, MAPPED>
{
    const GROUPED: bool = true;

    #[inline(always)]
    fn group(&self, g: u32) -> Option<(u32, u32)> {
        self.grouped.group(g)
    }

    #[inline(always)]
    unsafe fn before_loads(&self, tile: Tile) {
        let (j, n) = (tile.group, self.ranks.size);
        let first = j * self.per;
        let lo = tile.m0 - first;
        let hi = tile.m_end.min(tile.m0 + BM) - first;
        let base = self.src_base.wrapping_add((j * (n + 1)) as usize);
        let mut waited = false;
        for s in 0..n {
            // SAFETY: `src_base` holds `n + 1` words per local expert (j < local: the walk's
            // groups), written by `send` before this kernel.
            let (a, b) = unsafe { (base.add(s as usize).read(), base.add(s as usize + 1).read()) };
            if meets((a, b), (lo, hi)) {
                let flag = self.flags.wrapping_add((j * n + s) as usize);
                // SAFETY: the flag lies in the buffer, set only by rank s for expert j
                // (through its mapping with `MAPPED`: `new`'s contract), in its step 4 of
                // this call, which waits for nothing of this GEMM (module docs).
                unsafe {
                    if MAPPED {
                        sig::wait_mapped(flag, self.arrived);
                    } else {
                        sig::wait(flag, self.arrived, self.ranks.world(s));
                    }
                }
                waited = true;
            }
        }
        if TMA && waited {
            hopper::fence_proxy_async_global();
        }
    }
}

/// Whether the rows `a.0 .. a.1` and `b.0 .. b.1` have one in common (an empty range has
/// none: a rank that sent an expert nothing is never waited for).
#[inline(always)]
const fn meets(a: (u32, u32), b: (u32, u32)) -> bool {
    a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1
}

/// The down GEMM's epilogue (module docs): row `r` of expert output (`recv_src[r] = (s, i)`)
/// goes to rank `s`'s `combine_recv` row `i` through the peer mapping, or, where this PE
/// does not store to `s` directly, to `recv_x` row `r` (read by the gate/up GEMM, which has
/// finished) for [`push_unmapped`].
#[derive(Clone, Copy, Debug)]
pub struct SendRows {
    recv_src: *const u32,
    /// Each rank's `combine_recv` through its mapping, looked up once per kernel (a call
    /// per row in the epilogue costs the next tile's k-loop its uniform datapath: see
    /// `rshmem_tp::rs`); null where not direct.
    peers: [*mut bf16; MAX_PEERS],
    local: *mut bf16,
    hidden: u32,
}

impl SendRows {
    /// The epilogue for `lb`'s call of `hidden`-wide rows.
    ///
    /// # Safety
    ///
    /// After this PE's [`send`] of the call and the gate/up GEMM; `lb` as for [`prepare`].
    #[inline(always)]
    pub unsafe fn new(ranks: Ranks, lb: LayerBufs, hidden: u32) -> Self {
        let mut peers = [core::ptr::null_mut(); MAX_PEERS];
        for (s, slot) in (0..ranks.size).zip(peers.iter_mut()) {
            // SAFETY: `combine_recv` is symmetric, `s < size`.
            *slot = unsafe { direct(ranks, lb.ll.combine_recv, s) };
        }
        Self {
            recv_src: lb.ll.recv_src,
            peers,
            local: lb.ll.rows_bf16(),
            hidden,
        }
    }
}

impl Epilogue for SendRows {
    /// The row's first element: in its source's `combine_recv`, or in `recv_x`.
    type Row = *mut bf16;

    #[inline(always)]
    unsafe fn row(&self, _tile: Tile, row: u32) -> *mut bf16 {
        // SAFETY: `row` is a received row (below its expert's count): its source words came
        // with it, acquired by the gate/up GEMM before this kernel.
        let (s, i) = unsafe {
            (
                self.recv_src.add(2 * row as usize).read(),
                self.recv_src.add(2 * row as usize + 1).read(),
            )
        };
        let h = self.hidden as usize;
        // `s < size`; the mask only keeps a bounds check (and its panic call) out.
        let to = if (s as usize) < MAX_PEERS {
            self.peers[s as usize % MAX_PEERS]
        } else {
            core::ptr::null_mut()
        };
        if to.is_null() {
            self.local.wrapping_add(row as usize * h)
        } else {
            to.wrapping_add(i as usize * h)
        }
    }

    #[inline(always)]
    unsafe fn store(&self, row: *mut bf16, col: u32, v: [f32; 2], both: bool) {
        // SAFETY: `row` is a row of `hidden` in the source's `combine_recv` (entry `i`'s,
        // written by nobody else in this call; read by the source after this call's combine
        // flag) or of `recv_x`; an even `hidden` keeps pairs 4-byte aligned.
        unsafe { bf16::store2(row.add(col as usize), v, both, self.hidden % 2 == 0) }
    }
}

/// Step 7 (module docs), any 1-D grid: the down GEMM's rows that [`SendRows`] kept here (their
/// source has no mapping, or is past [`MAX_PEERS`]) put into their source's `combine_recv`,
/// then `quiet`. Nothing to do where every rank is direct (the host then skips it).
///
/// # Safety
///
/// After this PE's down GEMM of the call in stream order; `lb` as for [`prepare`].
#[inline(always)]
pub unsafe fn push_unmapped(ranks: Ranks, lb: LayerBufs, call: MoeCall) {
    let ll = lb.ll;
    let (h, per) = (call.hidden as usize, rows_per_expert(&call));
    for j in 0..call.local_experts() {
        // SAFETY: written by `send`, before this kernel.
        let count = unsafe { ll.recv_count.add(j as usize).read() };
        let mut q = thread::block_idx_x();
        while q < count {
            let row = (j * per + q) as usize;
            // SAFETY: a received row: its source words came with it; the row of `recv_x`
            // holds the down GEMM's output where the source is not direct (`SendRows`);
            // `recv_x` is symmetric (a put source); entry `i`'s slot is written only here.
            unsafe {
                let (s, i) = (
                    ll.recv_src.add(2 * row).read(),
                    ll.recv_src.add(2 * row + 1).read(),
                );
                if direct(ranks, ll.combine_recv, s).is_null() {
                    let dst = ll.combine_recv.add(i as usize * h);
                    tile::push_tile(dst, ll.rows_bf16().add(row * h), h, ranks.world(s));
                }
            }
            q += thread::grid_dim_x();
        }
    }
    thread::sync_threads();
    if thread::thread_idx_x() == 0 {
        shmem::quiet();
    }
}

#[cfg(test)]
mod tests {
    use super::{meets, piece_rows, SEND_ROWS};
    use crate::call::MoeCall;

    #[test]
    fn pieces_spread_the_entries_over_the_grid() {
        let call = |tokens, k| MoeCall::new((8, k, 4096), (4096, 1), 1, 1).with_tokens(tokens);
        // Mixtral's 128 tokens of top-2 on an H100's 132 blocks: two rows a piece.
        assert_eq!(piece_rows(&call(128, 2), 132), 2);
        // Prefill: the cap.
        assert_eq!(piece_rows(&call(4096, 8), 528), SEND_ROWS);
        // No entries, or no grid: still a row per piece (the walk's divisor).
        assert_eq!(piece_rows(&call(0, 8), 132), 1);
        assert_eq!(piece_rows(&call(5, 1), 0), SEND_ROWS.min(5));
    }

    #[test]
    fn ranges_meet_only_where_they_share_a_row() {
        assert!(meets((0, 2), (1, 5)) && meets((3, 4), (0, 128)) && meets((0, 9), (2, 3)));
        // Touching, disjoint, or empty: no row in common (an empty source between two
        // others, the case a 4-PE test found waiting forever).
        assert!(!meets((0, 2), (2, 5)) && !meets((5, 9), (0, 5)));
        assert!(!meets((3, 3), (0, 5)) && !meets((0, 5), (2, 2)));
    }
}
