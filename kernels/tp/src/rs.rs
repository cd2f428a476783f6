//! GEMM + reduce-scatter: [`RsSchedule`] and [`RsEpilogue`], which make rshmem-gemm's
//! mainloops compute
//! this PE's partial product `A_r · B_r` (its share of K) and reduce it across the team, each
//! rank keeping its chunk of rows of the sum; and [`fixup`], the pass that reduces the rows of
//! tiles that straddle two chunks.
//!
//! **Where partial tiles go.** Every PE computes every tile of its `m x n` partial product.
//! Each rank owns a workspace of `size` slots of `rows() x n` bf16 (slot `s`: rank `s`'s
//! partial of this rank's rows). A row goes (decided once per row by [`Epilogue::row`], the
//! values then stored by [`Epilogue::store`]):
//!
//! * if the row is this rank's and its band (the tile's 128 rows) lies wholly in this rank's
//!   chunk: nowhere — the epilogue adds the peers' partials of it from the workspace to its
//!   own f32 accumulator and writes the bf16 sum to C (`rows() x n`, this rank's rows);
//! * otherwise: into its owner's slot `rank`, rounded to bf16, with a store through the peer
//!   mapping (`shmem::ptr`; the call's barrier checked that every peer has one) — this
//!   includes this rank's own rows in a band that straddles two chunks, which go to its own
//!   slot.
//!
//! Once every thread of the block has stored a tile, one thread ([`Epilogue::tile_done`],
//! after the barrier the mainloop meets for it) publishes the tile to every other rank whose rows it holds with
//! `rshmem_coll::signal::signal`: a system-scope release store of the epoch into
//! `flags[tile_slot(rank, tile)]` on that rank (cumulative: it covers the other consumer
//! threads' stores, ordered before it by the barrier).
//!
//! **Why a reduction never reads a partial before it is complete.** A rank adds peer `q`'s
//! partial of a tile only after [`Epilogue::before_epilogue`] of that tile, where every consumer
//! thread waits for `flags[tile_slot(q, tile)] >= epoch` and acquires
//! (`rshmem_coll::signal::wait`). Rank
//! `q` set that flag in its `tile_done` of the same tile, after the barrier that follows every
//! consumer thread's stores of it, with a cumulative release: every store of the tile's
//! partial precedes the flag, and the acquire orders the reads after it. [`fixup`] waits for
//! the same flags before it reads the straddling rows; this rank's own partials of those rows
//! were stored by its GEMM, which finished before the fix-up started (same stream).
//!
//! **Why a slot is not overwritten while it is read.** Peers store into the workspace of call
//! `e` only after the barrier of call `e` ([`crate::barrier`]), which this rank reaches after
//! its GEMM and fix-up of call `e - 1` finished reading it.
//!
//! **Why the waits cannot deadlock.** Only tiles of bands wholly inside this rank's chunk wait,
//! and [`crate::order::rs_first_band`] puts every band that meets this rank's chunk after every
//! band that does not. So each rank computes and publishes all the tiles it owes others before
//! any of its blocks can wait: a persistent block takes its tiles in schedule order, and the
//! waiting tiles are a suffix of the schedule. A tile that straddles two chunks needs the
//! partials of both owners, and each owner computes it among its own last tiles: waiting for it
//! in the epilogue would make the two owners wait for each other, so its rows are reduced after
//! the GEMM by [`fixup`] instead. The persistent grid must be resident at once (one block per
//! multiprocessor at most, which `rshmem::ops` launches).
//!
//! **Where PEs share a GPU** (MPS), the argument above is not enough: its waits need every
//! block of every PE's grid resident at once, and MPS does not keep the SMs of its clients
//! apart. Four PEs under MPS, each with 28 blocks on its 32 SMs, hung (an H100, 2026-12-06).
//! So there the host marks the call [`TpCall::reducing_after_gemm`]: no row is reduced in the
//! epilogue (every row, this rank's own too, goes to its owner's slot), the GEMM waits for
//! nothing, and after it [`wait_for_partials`] (one block) and then [`fixup`] reduce this
//! rank's whole chunk. A PE's GEMM then finishes on whatever SMs it gets, and at most one
//! block per PE spins.
//!
//! **Precision.** Partials travel as bf16 (half the bytes of f32, what an NCCL reduce-scatter of
//! bf16 moves); each is rounded once, to nearest even. The owner adds them in f32 to its own
//! unrounded f32 partial and rounds the sum once: `|c - sum| <= 2^-8 (|sum| + Σ_q |partial_q|)`
//! beyond the f32 accumulation error (the rows of straddling bands round the owner's own
//! partial too, within the same bound).

use crate::call::TpCall;
use crate::flags;
use crate::order;
use core::num::NonZeroU32;
use rshmem_coll::{algo, signal, tile, Elem, Sum, MAX_PEERS};
use rshmem_device::bf16;
use rshmem_device::half::Half;
use rshmem_device::shmem;
use rshmem_device::thread;
use rshmem_gemm::{Epilogue, OutElem, Schedule, Tile};

/// The reduce-scatter GEMM's tile order: every band that meets this rank's chunk after every
/// band that does not ([`order::rs_first_band`]; why: the module docs).
#[derive(Clone, Copy, Debug)]
pub struct RsSchedule {
    /// The call.
    pub call: TpCall,
    /// Rows per tile of the mainloop that runs the schedule.
    pub bm: u32,
}

impl Schedule for RsSchedule {
    #[inline(always)]
    fn tile(&self, t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
        order::rotated(
            t,
            tiles_m,
            tiles_n,
            order::rs_first_band(&self.call, self.bm),
        )
    }
}

/// The reduce-scatter GEMM's epilogue (see the module docs), made by [`RsEpilogue::new`].
#[derive(Clone, Copy, Debug)]
pub struct RsEpilogue {
    /// The call (`m`: all rows of the partial product; `k`: this rank's share of K).
    call: TpCall,
    /// Rows per tile of the mainloop that runs the epilogue.
    bm: u32,
    /// Columns per tile of that mainloop.
    bn: u32,
    /// This PE's copy of the symmetric flag buffer (at least `flags::words(size, tiles)`).
    flags: *mut u64,
    /// This PE's copy of the symmetric workspace: `size` slots of `rows() x n`.
    recv: *mut bf16,
    /// This rank's rows of the sum: `rows() x n`, rows `n` apart.
    out: *mut bf16,
    /// [`whole_rows`], computed once (the epilogue asks for every value).
    whole: (u32, u32),
    /// `call.rows()`, nonzero: dividing by it needs no zero check (and no panic call in the
    /// epilogue, which would make the accumulators spill around it).
    rows: NonZeroU32,
    /// Each rank's copy of `recv` through the peer mapping (rank `r`'s at `r`), looked up
    /// once per kernel: a `shmem::ptr` per row was a call in the epilogue, and across a call
    /// ptxas keeps nothing in uniform registers, so the next tile's k-loop lost the uniform
    /// datapath (91 SASS instructions against the plain GEMM's 81).
    peers: [*mut bf16; MAX_PEERS],
}

/// Where [`RsEpilogue`] sends one row of a tile ([`Epilogue::row`]): to `dest`, after adding the
/// `peers` partials of the row in the workspace (slot 0's row at `slots`, slot `q` `q` slots
/// on, this rank's own skipped).
#[derive(Clone, Copy, Debug)]
pub struct RsRow {
    /// The row's first element in C (this rank's whole-band rows) or in the owner's slot
    /// `rank` (mapped).
    dest: *mut bf16,
    /// Row `lr` of slot 0 of this rank's workspace (whole-band rows only).
    slots: *const bf16,
    /// The peers' partials to add: `size - 1` for this rank's whole-band rows, else 0.
    peers: u32,
}

/// Loads the bf16 value at `p` and, when `both`, the next one, as f32; `pair_aligned`: `p` is
/// 4-byte aligned (one load).
///
/// # Safety
///
/// `p` (and `p + 1` when `both`) valid for reads.
#[inline(always)]
unsafe fn load2(p: *const bf16, both: bool, pair_aligned: bool) -> [f32; 2] {
    // SAFETY: the caller's contract; `pair_aligned` means 4-byte aligned.
    unsafe {
        if both && pair_aligned {
            let w = p.cast::<u32>().read();
            [
                bf16::from_bits(w as u16).to_f32_exact(),
                bf16::from_bits((w >> 16) as u16).to_f32_exact(),
            ]
        } else {
            let hi = if both {
                p.add(1).read().to_f32_exact()
            } else {
                0.0
            };
            [p.read().to_f32_exact(), hi]
        }
    }
}

impl RsEpilogue {
    /// The epilogue of a mainloop with `bm x bn` tiles for `call`, over this PE's copies of the
    /// symmetric flag buffer (at least `flags::words(size, tiles)` words) and workspace
    /// (`size` slots of `rows() x n` bf16), writing this rank's rows of the sum to `out`
    /// (`rows() x n`).
    ///
    /// # Safety
    ///
    /// `recv` is this PE's copy of a symmetric allocation; the call's barrier has checked
    /// that every rank is mapped (`crate::barrier`). Traps for a team larger than
    /// [`MAX_PEERS`] (the host refuses those).
    #[inline(always)]
    pub unsafe fn new(
        call: TpCall,
        (bm, bn): (u32, u32),
        flags: *mut u64,
        recv: *mut bf16,
        out: *mut bf16,
    ) -> Self {
        if call.size as usize > MAX_PEERS {
            thread::trap();
        }
        let mut peers = [core::ptr::null_mut(); MAX_PEERS];
        for (q, peer) in (0..call.size).zip(peers.iter_mut()) {
            // SAFETY: `recv` is symmetric, `q` a rank of the team (the contract).
            *peer = unsafe { shmem::ptr(recv, call.world_pe(q)) };
            if peer.is_null() {
                // The call's barrier checked that every peer is mapped (`crate::barrier`).
                thread::trap();
            }
        }
        Self {
            call,
            bm,
            bn,
            flags,
            recv,
            out,
            whole: whole_rows(&call, bm),
            rows: match NonZeroU32::new(call.rows()) {
                Some(rows) => rows,
                // The host checks m >= size > 0; a call without rows has no kernel to run.
                None => thread::trap(),
            },
            peers,
        }
    }

    /// The tile order the epilogue's waits rely on (the module docs).
    #[inline(always)]
    pub fn schedule(&self) -> RsSchedule {
        RsSchedule {
            call: self.call,
            bm: self.bm,
        }
    }

    /// Tiles along N.
    #[inline(always)]
    fn tiles_n(&self) -> u32 {
        self.call.n.div_ceil(self.bn)
    }

    /// Tiles of C.
    #[inline(always)]
    fn tiles(&self) -> u32 {
        self.call.m.div_ceil(self.bm) * self.tiles_n()
    }

    /// The flag index of the tile at (`m0`, `n0`) (independent of the schedule).
    #[inline(always)]
    fn tile_id(&self, m0: u32, n0: u32) -> u32 {
        m0 / self.bm * self.tiles_n() + n0 / self.bn
    }

    /// The rows of this rank's chunk whose bands lie wholly inside it, `lo..hi` (empty when
    /// `hi <= lo`): they are reduced in the epilogue; the chunk's other rows by [`fixup`].
    #[inline(always)]
    pub fn whole_rows(&self) -> (u32, u32) {
        self.whole
    }

    /// Element `(lr, col)` of slot `s` of the workspace.
    #[inline(always)]
    fn slot_at(&self, s: u32, lr: u32, col: u32) -> usize {
        let c = &self.call;
        (s as usize * c.rows() as usize + lr as usize) * c.n as usize + col as usize
    }
}

/// See [`RsEpilogue::whole_rows`]; none when the call reduces after the GEMM.
#[inline(always)]
pub const fn whole_rows(call: &TpCall, bm: u32) -> (u32, u32) {
    let (start, end) = (call.first_row(call.rank), call.first_row(call.rank + 1));
    if call.reduces_after_gemm() {
        return (start, start);
    }
    let lo = start.next_multiple_of(bm);
    let hi = if end == call.m { end } else { end / bm * bm };
    (lo, hi)
}

impl Epilogue for RsEpilogue {
    const TILE_DONE: bool = true;
    const BEFORE_EPILOGUE: bool = true;

    #[inline(always)]
    unsafe fn before_epilogue(&self, tile: Tile) {
        let c = &self.call;
        // Only bands of the whole rows are reduced here (none when reducing after the GEMM).
        let (lo, hi) = self.whole_rows();
        if !(lo <= tile.m0 && tile.m0 < hi) {
            return;
        }
        let (tiles, id) = (self.tiles(), self.tile_id(tile.m0, tile.n0));
        for q in 0..c.size {
            if q != c.rank {
                let flag = self
                    .flags
                    .wrapping_add(flags::tile_slot(c.size, tiles, q, id));
                // SAFETY: the slot lies in the buffer (q < size, id < tiles), which only
                // signals write, through rank q's mapping (`new`'s contract); rank q sets it
                // in its tile_done of this tile, which it reaches without waiting for us
                // (the module docs).
                unsafe { signal::wait_mapped(flag, c.epoch) };
            }
        }
    }

    type Row = RsRow;

    /// Where the row goes, decided once per row: this rank's whole-band rows to C, adding the
    /// peers' partials; every other row to its owner's slot `rank`.
    #[inline(always)]
    unsafe fn row(&self, _tile: Tile, row: u32) -> RsRow {
        let c = &self.call;
        let n = c.n as usize;
        let (lo, hi) = self.whole_rows();
        if lo <= row && row < hi {
            // A whole-band row lies in this rank's chunk.
            let lr = (row - c.first_row(c.rank)) as usize;
            return RsRow {
                dest: self.out.wrapping_add(lr * n),
                slots: self.recv.wrapping_add(lr * n),
                peers: c.size - 1,
            };
        }
        let owner = row / self.rows;
        let lr = row - owner * self.rows.get();
        let at = self.slot_at(c.rank, lr, 0);
        // Row `lr` of slot `rank` in the owner's workspace (`owner < size <= MAX_PEERS`: the
        // mask only keeps a bounds check, and its panic call, out of the epilogue).
        let dest = self.peers[owner as usize % MAX_PEERS].wrapping_add(at);
        RsRow {
            dest,
            slots: core::ptr::null(),
            peers: 0,
        }
    }

    /// This rank's whole-band rows add the peers' partials; other rows nothing.
    #[inline(always)]
    fn addends(&self, row: RsRow) -> u32 {
        row.peers
    }

    #[inline(always)]
    unsafe fn addend(&self, row: RsRow, a: u32, col: u32, both: bool) -> [f32; 2] {
        let c = &self.call;
        // The a-th peer of this rank, skipping its own slot (never written for these rows).
        let q = a + u32::from(a >= c.rank);
        let slot = c.rows() as usize * c.n as usize;
        // SAFETY: slot q's (row, col) lies in the workspace (col < n); before_epilogue
        // acquired rank q's flag of this tile, published after its stores of it. Pairs start
        // at even columns: with an even `n` they are 4-byte aligned (slots and rows hold whole
        // pairs; symmetric buffers are at least 8-byte aligned).
        unsafe {
            load2(
                row.slots.add(q as usize * slot + col as usize),
                both,
                c.n % 2 == 0,
            )
        }
    }

    #[inline(always)]
    unsafe fn store(&self, row: RsRow, col: u32, v: [f32; 2], both: bool) {
        // SAFETY: `dest` is a row of C (rows() rows of n: the kernel's contract) or of the
        // owner's slot `rank`, mapped; nobody else writes slot `rank` there in this call, and
        // the owner reads it only after our flag. Even `n`: pairs 4-byte aligned (above).
        unsafe { bf16::store2(row.dest.add(col as usize), v, both, self.call.n % 2 == 0) };
    }

    #[inline(always)]
    unsafe fn tile_done(&self, tile: Tile) {
        let c = &self.call;
        let (first, last) = c.owners(tile.m0, self.bm);
        let (tiles, id) = (self.tiles(), self.tile_id(tile.m0, tile.n0));
        for owner in first..=last {
            if owner != c.rank {
                let flag = self
                    .flags
                    .wrapping_add(flags::tile_slot(c.size, tiles, c.rank, id));
                // SAFETY: our slot for the tile lies in the owner's flag buffer, which only
                // signals write; every store of the tile happened before (the mainloop's
                // contract for tile_done: its barrier), and the signal's release is
                // cumulative.
                unsafe { signal::signal(flag, c.epoch, c.world_pe(owner)) };
            }
        }
    }
}

/// The rows of this rank's chunk that [`fixup`] reduces, `(a, b)`: the ranges `a.0..a.1` and
/// `b.0..b.1` outside [`RsEpilogue::whole_rows`] (the whole chunk when it has none).
#[inline(always)]
pub const fn fixup_rows(call: &TpCall, bm: u32) -> ((u32, u32), (u32, u32)) {
    let (start, end) = (call.first_row(call.rank), call.first_row(call.rank + 1));
    let (lo, hi) = whole_rows(call, bm);
    if hi <= lo {
        ((start, end), (end, end))
    } else {
        let (lo, hi) = (
            if lo < end { lo } else { end },
            if hi > start { hi } else { start },
        );
        ((start, lo), (hi, end))
    }
}

/// Waits (and acquires) every peer's flags of the tiles whose rows [`fixup`] reduces: the
/// bands of this rank's chunk outside [`RsEpilogue::whole_rows`]. Every thread of the block
/// calls it; the waits are shared among them, so the block meets at a barrier after it
/// before reading.
///
/// # Safety
///
/// `epilogue` is that of this PE's GEMM of the call (queued before on the same stream).
pub unsafe fn wait_for_partials(epilogue: &RsEpilogue) {
    let c = &epilogue.call;
    let (start, end) = (c.first_row(c.rank), c.first_row(c.rank + 1));
    let (lo, hi) = epilogue.whole_rows();
    let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
    let (tiles, tiles_n) = (epilogue.tiles(), epilogue.tiles_n());
    let (first, bands) = (
        start / epilogue.bm,
        (end - 1) / epilogue.bm + 1 - start / epilogue.bm,
    );
    let waits = c.size * tiles_n * bands;
    let mut w = tid;
    while w < waits {
        let (q, j, band) = (
            w / (bands * tiles_n),
            w / bands % tiles_n,
            first + w % bands,
        );
        let m0 = band * epilogue.bm;
        if q != c.rank && !(lo <= m0 && m0 < hi) {
            let id = band * tiles_n + j;
            let flag = epilogue
                .flags
                .wrapping_add(flags::tile_slot(c.size, tiles, q, id));
            // SAFETY: the slot lies in the buffer, which only signals write; rank q signals it
            // in its GEMM of this call without waiting for us (the tile's rows meet our chunk).
            unsafe { signal::wait(flag, c.epoch, c.world_pe(q)) };
        }
        w += threads;
    }
}

/// Reduces the rows of this rank's chunk outside [`RsEpilogue::whole_rows`] ([`fixup_rows`]:
/// the bands straddling two chunks, or the whole chunk when the call reduces after the GEMM):
/// waits for every peer's flags of those tiles ([`wait_for_partials`]), then writes
/// `bf16(Σ_s slot s)` for each of their elements. Run after the GEMM, on the same stream; a
/// no-op when every band of the chunk lies wholly in it. Every thread of a 1-D launch calls it
/// with the same `epilogue` (any grid: blocks share the rows).
///
/// # Safety
///
/// `epilogue` is that of this PE's GEMM of the call, which has finished; every thread of the
/// block calls it (it meets at a block barrier).
pub unsafe fn fixup(epilogue: &RsEpilogue) {
    let c = &epilogue.call;
    let (start, n, size) = (c.first_row(c.rank), c.n as usize, c.size as usize);
    // SAFETY: this function's contract.
    unsafe { wait_for_partials(epilogue) };
    // Every wait of the block is done (and acquired) before any thread reads.
    thread::sync_threads();
    let (block, grid) = (thread::block_idx_x(), thread::grid_dim_x());
    let (a, b) = fixup_rows(c, epilogue.bm);
    for (r0, r1) in [a, b] {
        // Rows r0..r1 of C and of every slot are contiguous: one tile to reduce, this
        // block's part of it in whole 16-byte packs.
        let lr = r0.saturating_sub(start);
        let count = r1.saturating_sub(r0) as usize * n;
        let (lo, hi) = algo::block_part(count, <bf16 as Elem>::LANES, block, grid);
        if lo < hi {
            let at = |s: usize| epilogue.slot_at((s % size) as u32, lr, 0) + lo;
            let srcs: [*const bf16; MAX_PEERS] =
                core::array::from_fn(|s| epilogue.recv.wrapping_add(at(s)).cast_const());
            let dst = epilogue.out.wrapping_add(lr as usize * n + lo);
            // SAFETY: slot `s`'s rows `lr..` and C's lie in the workspace and C (rows() x n
            // each), `hi - lo` elements from `lo` inside `count`; the peers' slots were
            // published and acquired above, slot `rank` is our own GEMM's (finished); the
            // sum is in slot order, in f32, rounded once.
            unsafe { tile::reduce_tile::<bf16, Sum>(&[dst], &srcs[..size], hi - lo) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `whole_rows` is exactly the rows of the chunk whose band lies wholly inside it: the rows
    /// the epilogue reduces (and waits for), every other row of the chunk going to the fix-up.
    #[test]
    fn whole_rows_are_the_rows_of_bands_inside_the_chunk() {
        for bm in [16u32, 128] {
            for size in 1..=8u32 {
                for rows in [1u32, 7, 37, 128, 150, 300] {
                    let m = rows * size;
                    for rank in 0..size {
                        let call = TpCall::new((m, 8, 8), (0, 1, size, rank));
                        let (lo, hi) = whole_rows(&call, bm);
                        let (start, end) = (call.first_row(rank), call.first_row(rank + 1));
                        for row in start..end {
                            let band = row / bm;
                            let (first, last) = call.owners(band * bm, bm);
                            let inside = first == rank && last == rank;
                            assert_eq!(
                                (lo..hi).contains(&row),
                                inside,
                                "bm {bm}, {size} PEs of {rows} rows, rank {rank}: row {row} \
                                 (whole rows {lo}..{hi})"
                            );
                        }
                    }
                }
            }
        }
    }
    /// `fixup_rows` is the rest of the chunk: every row of it either in `whole_rows` or in the
    /// fix-up's ranges, never both; the whole chunk when the call reduces after the GEMM.
    #[test]
    fn fixup_rows_are_the_rest_of_the_chunk() {
        for bm in [16u32, 128] {
            for size in 1..=8u32 {
                for rows in [1u32, 7, 37, 128, 150, 300] {
                    for rank in 0..size {
                        let call = TpCall::new((rows * size, 8, 8), (0, 1, size, rank));
                        let (start, end) = (call.first_row(rank), call.first_row(rank + 1));
                        for call in [call, call.reducing_after_gemm()] {
                            let (lo, hi) = whole_rows(&call, bm);
                            let (a, b) = fixup_rows(&call, bm);
                            for row in start..end {
                                let fixed = (a.0..a.1).contains(&row) || (b.0..b.1).contains(&row);
                                assert_ne!(
                                    (lo..hi).contains(&row),
                                    fixed,
                                    "bm {bm}, {size} PEs of {rows} rows, rank {rank}, after \
                                     {}: row {row}",
                                    call.reduces_after_gemm()
                                );
                                assert!(!call.reduces_after_gemm() || fixed);
                            }
                            assert!(a.0 <= a.1 && a.1 <= b.0 && b.0 <= b.1);
                            assert!(start <= a.0 && b.1 <= end);
                        }
                    }
                }
            }
        }
    }
}
