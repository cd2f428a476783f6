//! The collectives' algorithms, as block-level device functions over a [`Channel`]: what the
//! kernels of `kernels/ops`' `coll` family instantiate, and what a user's kernel can call to run a
//! collective inside its own launch. Each is called by every thread of every block of a 1-D
//! grid on every member of the team, with the same arguments (but the PE's own buffers); block
//! `b` uses the channel's row `b`, so grids have at most `rows` blocks.
//!
//! | function | what | peers | steps per call |
//! |---|---|---|---|
//! | [`push_rounds`] | all-reduce or reduce-scatter: each member pushes its tile (its chunk `r`, for reduce-scatter) into member `r`'s push slot, one step, each reduces its slots locally; in rounds of `rows × push_region` bytes | mapped or not (puts) | one per round |
//! | [`two_shot`] | all-reduce: member `r` reduces chunk `r` reading every member's input and stores the result into every member's output; reduce-scatter: the same, stored locally | mapped | two (start, end) |
//! | [`lamport_all_reduce`] | all-reduce of floats: each member publishes its data into every member's flag-in-data slot; each polls and reduces | mapped | none (counted, not signalled) |
//! | [`all_gather`] | each member stores its contribution at its offset of every member's output (`all_gather_v` when contributions differ) | mapped or not (puts) | two (start, end) |
//! | [`all_reduce_rmsnorm`] | all-reduce + residual add + RMSNorm, rows split over blocks (and over members, `split`) | mapped | two |
//!
//! **Why the steps suffice.** A member's kernel starts only after its stream's earlier work,
//! so a start step (everyone has entered) makes every input complete and every output free; an
//! end step (everyone has finished its reads and writes on this row) lets a kernel return
//! without a peer still reading its input or writing its output. [`push_rounds`] needs no end
//! step: peers write only its push slots, which alternate by step parity — a member writes slot
//! `s % 2` at step `s` after finishing step `s − 1`, which needed the owner's signal of step
//! `s − 1`, sent after the owner had finished reading step `s − 2`'s slots (the same one). In
//! place is safe everywhere: an element is read before it is written, by the same thread,
//! and no member writes a part of another's buffer that a third member still reads
//! ([`two_shot`]: member `r` alone reads and then writes chunk `r` of every buffer).
//!
//! Sums are taken in team-rank order everywhere, so every member gets bitwise the same result.

use core::mem::size_of;

use rshmem_device::shmem::Team;
use rshmem_device::{device_assert, thread};

use crate::channel::Channel;
use crate::elem::{Elem, Reduce, Sum};
use crate::lamport;
use crate::pack::{self, Pack};
use crate::peers::{Peers, MAX_PEERS};
use crate::tile::{self, block_lanes};

/// This block's row (its index) and the grid's size.
#[inline(always)]
fn grid() -> (u32, u32) {
    (thread::block_idx_x(), thread::grid_dim_x())
}

/// The part `[lo, hi)` of `0..len` that block `b` of `g` takes: equal pieces of whole packs of
/// `lanes` elements (the last may be shorter, some may be empty).
#[inline(always)]
pub fn block_part(len: usize, lanes: usize, b: u32, g: u32) -> (usize, usize) {
    let per = len.div_ceil(lanes).div_ceil(g as usize) * lanes;
    let lo = (b as usize * per).min(len);
    (lo, (lo + per).min(len))
}

/// Member `r`'s chunk `[lo, hi)` of `count` elements split over `n` members in whole packs.
#[inline(always)]
pub fn chunk<E: Elem>(count: usize, r: u32, n: u32) -> (usize, usize) {
    let packs = count.div_ceil(E::LANES);
    let at = |k: u32| (packs * k as usize / n as usize * E::LANES).min(count);
    (at(r), at(r + 1))
}

/// All-reduce (`scatter == false`: `dst[0..count]` on every member is the reduction of every
/// member's `src[0..count]`) or reduce-scatter (`scatter == true`: `src` holds `n × count`
/// elements, member `r`'s `dst[0..count]` is the reduction of every member's chunk
/// `src[r × count..(r + 1) × count]`) through the channel's push slots.
///
/// In rounds of `gridDim × push_region` bytes: each block pushes its tile of the round to
/// every member's slot (its own included: a local copy, so that `dst` may be `src`), takes
/// one step, and reduces its slots in rank order, [`MAX_PEERS`] at a time. Works with or
/// without peer mappings ([`tile::push_tile`] puts where there is none).
///
/// # Safety
///
/// Every member calls it with the same `count`, `scatter` and grid (at most `ch.rows`
/// blocks), on the same channel, which no other kernel uses meanwhile; `src` valid for
/// `count` (`n × count`) reads and `dst` for `count` writes, on this PE; `dst` either equal to
/// `src` (all-reduce) or not overlapping it.
pub unsafe fn push_rounds<E: Elem, O: Reduce>(
    ch: Channel,
    team: Team,
    dst: *mut E,
    src: *const E,
    count: usize,
    scatter: bool,
) {
    let peers = Peers::of(team);
    let (row, g) = grid();
    let steps = ch.steps();
    let me = peers.me();
    let n = peers.n;
    let per = ch.push_region as usize / size_of::<E>();
    let span = per * g as usize;
    for round in 0..count.div_ceil(span) {
        let lo = round * span + row as usize * per;
        let len = count.saturating_sub(lo).min(per);
        for i in 1..=n {
            let r = (peers.rank + i) % n;
            let pe = peers.world(r);
            // SAFETY: the slot is symmetric and holds `per >= len` elements; `from` lies in
            // `src` (the contract); the slot's parity is the coming step's, which the owner
            // finished reading two steps ago (module docs). Own data goes to parity 0.
            unsafe {
                let parity = if r == peers.rank {
                    0
                } else {
                    (steps.count(row, pe) + 1) % 2
                };
                let from = src.add(lo + if scatter { r as usize * count } else { 0 });
                tile::push_tile(ch.push_slot(parity, me, row).cast::<E>(), from, len, pe);
            }
        }
        // SAFETY: every member takes this step on `row` (same count, grid, rounds).
        unsafe { steps.exchange(row, peers) };
        // SAFETY: the slots of this step are complete (the step ordered the pushes before);
        // `dst + lo` holds `len` elements.
        unsafe {
            let out = dst.add(lo);
            let mut first = 0u32;
            while first < n {
                let mut srcs = [core::ptr::null::<E>(); MAX_PEERS];
                let mut m = 0;
                if first > 0 {
                    srcs[0] = out.cast_const();
                    m = 1;
                }
                let take = (MAX_PEERS - m).min((n - first) as usize) as u32;
                for r in first..first + take {
                    let pe = peers.world(r);
                    let parity = if r == peers.rank {
                        0
                    } else {
                        steps.count(row, pe) % 2
                    };
                    srcs[m] = ch.push_slot(parity, pe, row).cast::<E>().cast_const();
                    m += 1;
                }
                tile::reduce_tile::<E, O>(&[out], &srcs[..m], len);
                first += take;
                thread::sync_threads();
            }
        }
    }
}

/// All-reduce (`scatter == false`) or reduce-scatter (`scatter == true`, as in
/// [`push_rounds`]) reading peers' inputs through their mappings: a start step, then member
/// `r` reduces its chunk (all-reduce: [`chunk`]`(count, r, n)`; reduce-scatter: chunk `r` of
/// `n × count`) from every member's `src` and stores it into every member's `dst`
/// (reduce-scatter: its own), then an end step. The blocks split the chunk.
///
/// # Safety
///
/// As [`push_rounds`], and every member reachable through a peer mapping, `n <= MAX_PEERS`
/// (else the kernel traps); `src` and `dst` are symmetric (the same allocation on every
/// member).
pub unsafe fn two_shot<E: Elem, O: Reduce>(
    ch: Channel,
    team: Team,
    dst: *mut E,
    src: *const E,
    count: usize,
    scatter: bool,
) {
    let peers = Peers::of(team);
    let (row, g) = grid();
    let steps = ch.steps();
    let n = peers.n as usize;
    // SAFETY: `src` and `dst` are symmetric (the contract).
    let (ins, outs) = unsafe { (peers.mapped(src), peers.mapped(dst)) };
    device_assert!(
        ins.is_some() && outs.is_some(),
        "rshmem-coll two_shot: a team member has no peer mapping (use push_rounds)"
    );
    let none = [core::ptr::null_mut(); MAX_PEERS];
    let (ins, outs) = (ins.unwrap_or(none), outs.unwrap_or(none));
    let (src_lo, dst_lo, len) = if scatter {
        (peers.rank as usize * count, 0, count)
    } else {
        let (lo, hi) = chunk::<E>(count, peers.rank, peers.n);
        (lo, lo, hi - lo)
    };
    let (lo, hi) = block_part(len, E::LANES, row, g);
    // SAFETY: every member takes the same steps on `row`.
    unsafe { steps.exchange(row, peers) };
    let mut srcs = [core::ptr::null::<E>(); MAX_PEERS];
    let mut dsts = [core::ptr::null_mut::<E>(); MAX_PEERS];
    for r in 0..n {
        // SAFETY: offsets inside every member's `src` (`n × count` or `count` elements) and
        // `dst`; the pointers are peer mappings (or local).
        unsafe {
            srcs[r] = ins[r].add(src_lo + lo).cast_const();
            dsts[r] = outs[r].add(dst_lo + lo);
        }
    }
    let dsts: &[*mut E] = if scatter {
        &dsts[peers.rank as usize..peers.rank as usize + 1]
    } else {
        &dsts[..n]
    };
    // SAFETY: after the start step every input is complete and every output free; member
    // `rank` alone reads and writes this chunk of every buffer (module docs).
    unsafe { tile::reduce_tile::<E, O>(dsts, &srcs[..n], hi - lo) };
    // SAFETY: as above.
    unsafe { steps.exchange(row, peers) };
}

/// All-reduce of floats through flag-in-data slots ([`lamport`]): each block takes slots
/// `b, b + gridDim, …` of `lamport_region` bytes of the data, publishes its tile into every
/// other member's slot (of the pair's parity), then takes the members' tiles from its own
/// slots as they arrive and reduces them in rank order with its own. No signal, no barrier:
/// the data is its own flag.
///
/// # Safety
///
/// As [`push_rounds`] (all-reduce), every member peer-mapped (else the kernel traps), `E` a
/// float type, and `count` at most `lamport_slots × lamport_region` bytes; the channel's
/// flag-in-data slots were filled with [`lamport::EMPTY`] when it was made.
pub unsafe fn lamport_all_reduce<E: Elem, O: Reduce>(
    ch: Channel,
    team: Team,
    dst: *mut E,
    src: *const E,
    count: usize,
) {
    let peers = Peers::of(team);
    let (b, g) = grid();
    let steps = ch.steps();
    let me = peers.me();
    let n = peers.n as usize;
    let per = ch.lamport_region as usize / size_of::<E>();
    device_assert!(
        E::FLOAT && n <= MAX_PEERS && count <= per * ch.lamport_slots as usize,
        "rshmem-coll lamport_all_reduce: floats, at most 8 members and the channel's slots"
    );
    let mut slot = b;
    while (slot as usize) * per < count {
        let lo = slot as usize * per;
        let len = (count - lo).min(per);
        let mut mine = [core::ptr::null_mut::<Pack>(); MAX_PEERS];
        for i in 1..n {
            let r = (peers.rank as usize + i) % n;
            let pe = peers.world(r as u32);
            // SAFETY: the slot index and row are in range (`slot < lamport_slots <= rows`);
            // the parity is the coming step's with `pe` (module docs of `lamport`).
            unsafe {
                let parity = (steps.count(slot, pe) + 1) % 2;
                let theirs = peers.ptr(ch.lamport_slot(parity, me, slot), r as u32);
                device_assert!(
                    !theirs.is_null(),
                    "rshmem-coll lamport_all_reduce: a team member has no peer mapping"
                );
                lamport::publish_tile(theirs, src.add(lo), len);
                mine[r] = ch.lamport_slot(parity, pe, slot);
            }
        }
        // SAFETY: `mine[r]` is member r's slot on this PE for this step; `src + lo` and
        // `dst + lo` hold `len` elements.
        unsafe {
            lamport::reduce_tile::<E, O>(
                dst.add(lo),
                src.add(lo),
                &mine[..n],
                peers.rank as usize,
                len,
            );
            steps.advance(slot, peers);
        }
        slot += g;
    }
    lamport::finish();
}

/// All-gather of bytes: after a start step, this PE's `src[0..bytes]` goes to
/// `dst[offset..offset + bytes]` of every member (itself included; nothing to copy if `src`
/// is that very place), split over the blocks; an end step. With equal contributions
/// `offset = rank × bytes`; `all_gather_v` passes each member's own `bytes` and offset. Peers
/// without a mapping get puts.
///
/// # Safety
///
/// Every member calls it with the same grid (at most `ch.rows` blocks) on the same channel,
/// which no other kernel uses meanwhile, and its own `bytes` and `offset`, the members'
/// ranges of `dst` not overlapping; `dst` is symmetric with room for every range; `src` valid
/// for `bytes` reads, either outside `dst` or exactly at `dst + offset`.
pub unsafe fn all_gather(
    ch: Channel,
    team: Team,
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
    offset: usize,
) {
    let peers = Peers::of(team);
    let (row, g) = grid();
    let steps = ch.steps();
    let (lo, hi) = block_part(bytes, pack::BYTES, row, g);
    // SAFETY: every member takes the same steps on `row`.
    unsafe { steps.exchange(row, peers) };
    for i in 1..=peers.n {
        let r = (peers.rank + i) % peers.n;
        // SAFETY: the ranges are the contract's; after the start step every member's `dst` is
        // free, and only this PE writes its range.
        unsafe {
            tile::push_tile(dst.add(offset + lo), src.add(lo), hi - lo, peers.world(r));
        }
    }
    // SAFETY: as above.
    unsafe { steps.exchange(row, peers) };
}

/// What [`all_reduce_rmsnorm`] computes on: row-major `rows × hidden` matrices.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RmsNormArgs<E> {
    /// This PE's partial sums, symmetric (read by every member).
    pub x: *const E,
    /// The residual, symmetric: read, then overwritten with `Σ x + residual` (rounded to `E`).
    pub residual: *mut E,
    /// The `hidden` weights (local).
    pub weight: *const E,
    /// The output, symmetric: `residual' / sqrt(mean(residual'²) + eps) × weight`.
    pub out: *mut E,
    /// Rows.
    pub rows: u32,
    /// Elements per row.
    pub hidden: u32,
    /// The RMSNorm epsilon.
    pub eps: f32,
    /// Whether member `r` computes only its chunk of rows and stores it on every member (two
    /// shot: each x is read once, outputs travel) instead of every member computing every row
    /// from every x (one shot).
    pub split: u32,
}

// SAFETY: `repr(C)`: four pointers, three `u32` and an `f32` (48 bytes, no padding), the same
// on the host and nvptx64, for every `E` (pointers only).
unsafe impl<E: Copy + 'static> rshmem_device::KernelArg for RmsNormArgs<E> {}

/// The sum of `v` over the block, on every thread: a warp butterfly, then one value per warp
/// through dynamic shared memory. Every thread calls it; the block is whole warps and the
/// launch gave at least `4 × warps` bytes of dynamic shared memory.
#[inline(always)]
pub fn block_sum(v: f32) -> f32 {
    let (shared, room) = thread::dynamic_shared::<f32>();
    let (t, nt) = block_lanes();
    let warps = nt.div_ceil(32);
    device_assert!(
        room >= warps,
        "rshmem-coll block_sum: launch with 4 bytes of dynamic shared memory per warp"
    );
    let w = rshmem_device::warp::sum(v);
    thread::sync_threads();
    if t % 32 == 0 {
        // SAFETY: `t / 32 < warps <= room`; each warp's lane 0 writes its own slot.
        unsafe { shared.add(t / 32).write(w) };
    }
    thread::sync_threads();
    let mut total = 0.0;
    for k in 0..warps {
        // SAFETY: `k < warps <= room`, written before the barrier.
        total += unsafe { shared.add(k).read() };
    }
    total
}

/// All-reduce + residual add + RMSNorm, fused: for each row, `residual' = Σᵣ xᵣ + residual`
/// (the sum in f32 in rank order, rounded once to `E`, stored back into `residual`) and
/// `out = residual' × (1 / sqrt(mean(residual'²) + eps)) × weight` (f32, rounded to `E`),
/// where the mean is over the rounded `residual'`. Between a start and an end step, blocks
/// take rows `b, b + gridDim, …` of all rows, or (with `split`) of this member's chunk of
/// rows, whose results go to every member.
///
/// # Safety
///
/// As [`two_shot`]; `x`, `residual`, `out` symmetric with `rows × hidden` elements, `weight`
/// `hidden`; `out` overlaps neither `x` nor `residual`; the launch has dynamic shared memory
/// for [`block_sum`]. Without `split` every member must hold the same `residual` (as tensor
/// parallelism keeps it) for the results to agree.
pub unsafe fn all_reduce_rmsnorm<E: Elem<Acc = f32>>(ch: Channel, team: Team, a: RmsNormArgs<E>) {
    let peers = Peers::of(team);
    let (row_b, g) = grid();
    let steps = ch.steps();
    let n = peers.n as usize;
    let split = a.split != 0;
    // SAFETY: the buffers are symmetric (the contract).
    let (xs, res, outs) = unsafe {
        (
            peers.mapped(a.x),
            peers.mapped(a.residual),
            peers.mapped(a.out),
        )
    };
    device_assert!(
        xs.is_some() && res.is_some() && outs.is_some(),
        "rshmem-coll all_reduce_rmsnorm: a team member has no peer mapping"
    );
    let (xs, res, outs) = (
        xs.unwrap_or([core::ptr::null_mut(); MAX_PEERS]),
        res.unwrap_or([core::ptr::null_mut(); MAX_PEERS]),
        outs.unwrap_or([core::ptr::null_mut(); MAX_PEERS]),
    );
    let (first, last) = if split {
        let rows = a.rows as usize;
        (
            rows * peers.rank as usize / n,
            rows * (peers.rank as usize + 1) / n,
        )
    } else {
        (0, a.rows as usize)
    };
    let targets = if split { n } else { 1 };
    let hidden = a.hidden as usize;
    let packs = hidden.div_ceil(E::LANES);
    let (t, nt) = block_lanes();
    // SAFETY: every member takes the same steps on `row_b`.
    unsafe { steps.exchange(row_b, peers) };
    let mut row = first + row_b as usize;
    while row < last {
        let at = row * hidden;
        let mut ss = 0.0f32;
        let mut i = t;
        while i < packs {
            // SAFETY: pack `i` of row `row` of every member's `x` and of this PE's residual;
            // the stores go to this row of the residual of this PE (or, split, every member),
            // which only this thread of this member touches.
            unsafe {
                let mut v = [Pack::default(); MAX_PEERS];
                crate::unroll8!(r < n => {
                    v[r] = lamport::read_pack(xs[r].add(at).cast_const(), i, hidden);
                });
                let own = lamport::read_pack(a.residual.add(at), i, hidden);
                let mut r2 = Pack::default();
                crate::unroll8!(l < E::LANES => {
                    // Σ x (f32, rank order) + residual, rounded once.
                    let sum = pack::reduce_lane::<E, Sum>(&v, n, l);
                    let y = E::from_acc(sum + pack::lane::<E>(&own, l).to_acc());
                    let yf = y.to_acc();
                    ss += yf * yf;
                    pack::set_lane(&mut r2, l, y);
                });
                let local = res[peers.rank as usize];
                for k in 0..targets {
                    let dst = if split {
                        res[(peers.rank as usize + 1 + k) % n]
                    } else {
                        local
                    };
                    lamport::write_pack(dst.add(at), i, hidden, r2);
                }
            }
            i += nt;
        }
        let scale = rsqrt(block_sum(ss) / hidden as f32 + a.eps);
        let mut i = t;
        while i < packs {
            // SAFETY: this thread wrote pack `i` of this row of the local residual above; the
            // weight holds `hidden` elements; the stores as above, into `out`.
            unsafe {
                let r2 = lamport::read_pack(a.residual.add(at).cast_const(), i, hidden);
                let w = lamport::read_pack(a.weight, i, hidden);
                let mut y = Pack::default();
                crate::unroll8!(l < E::LANES => {
                    let v =
                        pack::lane::<E>(&r2, l).to_acc() * scale * pack::lane::<E>(&w, l).to_acc();
                    pack::set_lane(&mut y, l, E::from_acc(v));
                });
                for k in 0..targets {
                    let dst = if split {
                        outs[(peers.rank as usize + 1 + k) % n]
                    } else {
                        outs[peers.rank as usize]
                    };
                    lamport::write_pack(dst.add(at), i, hidden, y);
                }
            }
            i += nt;
        }
        row += g as usize;
    }
    // SAFETY: as above.
    unsafe { steps.exchange(row_b, peers) };
}

/// `1 / sqrt(x)` for `x > 0` without `std` (whose `sqrt` a `no_std` kernel crate cannot
/// call on the host): the bit-pattern estimate, then four Newton steps
/// `y ← y (1.5 − x y² / 2)`, each doubling the correct bits (about 5 → 80), so the result is
/// within a few ulp of the exact value on both backends (the same code on both). `x ≤ 0` or
/// NaN gives NaN, `+∞` gives 0.
#[inline(always)]
pub fn rsqrt(x: f32) -> f32 {
    if x.is_nan() || x <= 0.0 {
        return f32::NAN;
    }
    if x == f32::INFINITY {
        return 0.0;
    }
    let mut y = f32::from_bits(0x5f37_59df - (x.to_bits() >> 1));
    for _ in 0..4 {
        y *= 1.5 - 0.5 * x * y * y;
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsqrt_is_close_to_the_exact_value() {
        let mut x = 1e-30f32;
        while x < 1e30 {
            for f in [1.0f32, 1.37, 2.9, 7.77] {
                let v = x * f;
                let exact = 1.0 / (v as f64).sqrt();
                let got = rsqrt(v) as f64;
                assert!(
                    ((got - exact) / exact).abs() < 4.0 * f32::EPSILON as f64,
                    "{v}: {got} vs {exact}"
                );
            }
            x *= 10.0;
        }
        assert!(rsqrt(0.0).is_nan() && rsqrt(-1.0).is_nan());
        assert_eq!(rsqrt(f32::INFINITY), 0.0);
        assert_eq!(chunk::<f32>(10, 0, 3), (0, 4));
        assert_eq!(chunk::<f32>(10, 2, 3), (8, 10));
        assert_eq!(chunk::<f32>(1, 1, 2), (0, 1));
        assert_eq!(block_part(100, 8, 3, 4), (96, 100));
    }
}
