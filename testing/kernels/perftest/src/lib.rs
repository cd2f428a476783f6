//! Perftest kernels: one per row of `testing/device-tests/examples/perftest.rs`, each mirrored line for
//! line by a CUDA C++ kernel of the same name in `scripts/cuda/perftest.cu`, so the two builds
//! of one algorithm (Rust through rshmem-builder, C++ through `nvcc -rdc`) can be timed side
//! by side.
//!
//! The shapes follow NVSHMEM's own perftests (`perftest/device/`): bandwidth with block-scoped
//! non-blocking RMA split over the grid; single-thread latency loops; a round trip of
//! put-with-signal between PE 0 and PE 1; device barriers and collectives called in a loop by
//! one block. Where NVSHMEM's tests issue independent operations, these chain each one on the
//! previous result (`g_lat`, `amo_lat`) so that every iteration is a full round trip and the
//! result can be checked on the host.
//!
//! The point-to-point kernels take the initiating PE (`from`) and its target (`to`); every PE
//! launches them and the others return at once, so a job of any size runs them (the driver
//! uses PE 0 and PE 1).
//!
//! `testing/device-tests/build.rs` builds this crate for sm_90 alone: the perftest measures H200s beside a
//! twin compiled for sm_90, and its block-scoped collectives cost minutes of ptxas for every
//! architecture built.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use rshmem_device::prelude::*;

/// Alignment of every block's share: NVSHMEM's block copy (`nvshmemi_memcpy_threadgroup`) moves
/// 16-byte vectors only where source and destination are both 16-byte aligned, else 8, 4 or
/// single bytes. An unrounded split (e.g. 64 MiB over 132 blocks: 508 401 bytes each) would
/// time byte copies in most blocks instead of the link.
const SHARE_ALIGN: u64 = 16;

/// This block's share `[start, start + len)` of `bytes` bytes split over the grid in
/// [`SHARE_ALIGN`]-aligned pieces, the last blocks taking what is left (possibly nothing).
#[inline(always)]
fn block_share(bytes: u64) -> (usize, usize) {
    let blocks = thread::grid_dim_x() as u64;
    let chunk = bytes.div_ceil(blocks).next_multiple_of(SHARE_ALIGN);
    let start = (thread::block_idx_x() as u64 * chunk).min(bytes);
    (start as usize, chunk.min(bytes - start) as usize)
}

/// The bandwidth loop shared by [`put_bw_rotating`] and [`get_bw_rotating`]: iteration `i` moves `bytes` bytes
/// at offset `(i % slots) * stride` of both `dst` and `src` through `copy` (each block its
/// [`block_share`], block-scoped), then thread 0 waits for all of them (`quiet`).
///
/// Why the offsets rotate: repeating one transfer lets caches answer it (repeated gets of one
/// source read back from the reading GPU's caches at several times the NVLink rate), so the
/// host picks `slots` to spread the iterations over more memory than any cache holds.
///
/// # Safety
///
/// `dst` and `src` valid for `(slots - 1) * stride + bytes` bytes where `copy` accesses them.
#[inline(always)]
unsafe fn rotating_copy(
    dst: *mut u8,
    src: *const u8,
    bytes: u64,
    stride: u64,
    slots: u32,
    iters: u32,
    copy: impl Fn(*mut u8, *const u8, usize),
) {
    let (start, len) = block_share(bytes);
    let mut slot = 0u32;
    for _ in 0..iters {
        if len > 0 {
            let at = (u64::from(slot) * stride) as usize + start;
            copy(dst.add(at), src.add(at), len);
        }
        // A compare, not `%`: a 64-bit division per iteration would be measured too.
        slot += 1;
        if slot >= slots {
            slot = 0;
        }
    }
    thread::sync_threads();
    if thread::thread_idx_x() == 0 {
        shmem::quiet();
    }
}

/// Put bandwidth: PE `from` writes `bytes` bytes of its `src` into `dst` on PE `to`, `iters`
/// times, iteration `i` at offset `(i % slots) * stride` of both (see [`rotating_copy`]), each
/// block its share with block-scoped non-blocking puts, then one `quiet`. rshmem's shipped
/// `put_bw` (`examples/put_bandwidth.rs`) is this without the rotation.
///
/// # Safety
///
/// `dst` symmetric and `src` valid on PE `from`, both for `(slots - 1) * stride + bytes`
/// bytes; `from` and `to` are PEs.
#[allow(clippy::too_many_arguments)]
#[kernel]
pub unsafe fn put_bw_rotating(
    dst: *mut u8,
    src: *const u8,
    bytes: u64,
    stride: u64,
    slots: u32,
    iters: u32,
    from: i32,
    to: i32,
) {
    if shmem::my_pe() != from {
        return;
    }
    rotating_copy(dst, src, bytes, stride, slots, iters, |d, s, n| {
        shmem::putmem_nbi::<Block>(d, s, n, to)
    });
}

/// Get bandwidth, the mirror of [`put_bw_rotating`]: PE `from` reads `bytes` bytes of `src` on PE `to`
/// into its own `dst`, `iters` times with rotating offsets, block-scoped non-blocking gets,
/// then one `quiet`.
///
/// # Safety
///
/// `src` symmetric and `dst` valid on PE `from`, both for `(slots - 1) * stride + bytes`
/// bytes; `from` and `to` are PEs.
#[allow(clippy::too_many_arguments)]
#[kernel]
pub unsafe fn get_bw_rotating(
    dst: *mut u8,
    src: *const u8,
    bytes: u64,
    stride: u64,
    slots: u32,
    iters: u32,
    from: i32,
    to: i32,
) {
    if shmem::my_pe() != from {
        return;
    }
    rotating_copy(dst, src, bytes, stride, slots, iters, |d, s, n| {
        shmem::getmem_nbi::<Block>(d, s, n, to)
    });
}

/// `p` latency: thread 0 of PE `from` writes `base + i` into `dst` on PE `to` and waits for it
/// to complete (`quiet`), for `i < iters`. PE `to` ends up holding `base + iters - 1`.
///
/// # Safety
///
/// `dst` symmetric and 8-byte aligned; `from` and `to` are PEs.
#[kernel]
pub unsafe fn p_lat(dst: *mut u64, base: u64, iters: u32, from: i32, to: i32) {
    if shmem::my_pe() != from || thread::index_1d() != 0 {
        return;
    }
    for i in 0..iters as u64 {
        shmem::p(dst, base.wrapping_add(i), to);
        shmem::quiet();
    }
}

/// `g` latency as a pointer chase: thread 0 of PE `from` follows `at = chain[at]` on PE `to`
/// from `at = 0`, `iters` times, and stores the last `at` in its own `out`. Each read needs
/// the previous one's value, so every iteration is one full round trip.
///
/// # Safety
///
/// `chain` symmetric, its entries on PE `to` valid indices into it; `out` valid on `from`.
#[kernel]
pub unsafe fn g_lat(chain: *const u32, iters: u32, from: i32, to: i32, out: *mut u32) {
    if shmem::my_pe() != from || thread::index_1d() != 0 {
        return;
    }
    let mut at = 0u32;
    for _ in 0..iters {
        at = shmem::g(chain.add(at as usize), to);
    }
    *out = at;
}

/// Atomic latency: thread 0 of PE `from` applies `fetch_add` to `ctr` on PE `to`, `iters`
/// times, each increment (1 or 2) taken from the low bit of the previous old value, so each
/// atomic waits for the last one's answer. The last old value goes to `out` on PE `from`.
///
/// # Safety
///
/// `ctr` symmetric and 8-byte aligned; `out` valid on `from`; `from` and `to` are PEs.
#[kernel]
pub unsafe fn amo_lat(ctr: *mut u64, iters: u32, from: i32, to: i32, out: *mut u64) {
    if shmem::my_pe() != from || thread::index_1d() != 0 {
        return;
    }
    let (mut add, mut old) = (1u64, 0u64);
    for _ in 0..iters {
        old = shmem::atomic_fetch_add(ctr, add, to);
        add = (old & 1) + 1;
    }
    *out = old;
}

/// Atomic throughput: every thread of PE `from` adds 1 to a word on PE `to`, `iters` times with
/// `fetch_add` — all to `words[0]` when `same != 0`, else each thread to its own
/// `words[index_1d]` — and stores the sum of the old values it got in `sums[index_1d]`.
///
/// # Safety
///
/// `words` symmetric with one `u64` per thread of the grid (one when `same != 0`); `sums`
/// valid on `from` for one `u64` per thread; `from` and `to` are PEs.
#[kernel]
pub unsafe fn amo_tput(words: *mut u64, same: u32, iters: u32, from: i32, to: i32, sums: *mut u64) {
    if shmem::my_pe() != from {
        return;
    }
    let t = thread::index_1d() as usize;
    let word = if same != 0 { words } else { words.add(t) };
    let mut sum = 0u64;
    for _ in 0..iters {
        sum = sum.wrapping_add(shmem::atomic_fetch_add(word, 1, to));
    }
    *sums.add(t) = sum;
}

/// Ping-pong between PE 0 and PE 1, one block on each, `iters` rounds: PE 0 sends `bytes` bytes
/// of `src` into PE 1's `mid` with a block-scoped put-with-signal (`sig = round`); PE 1 waits
/// for it and sends `mid` back into PE 0's `back` the same way; PE 0 waits for that before the
/// next round. Afterwards `mid` on PE 1 and `back` on PE 0 hold PE 0's `src`.
///
/// # Safety
///
/// `src`, `mid`, `back` symmetric with `bytes` bytes; `sig` a symmetric `u64` that is 0 on both
/// PEs at launch. Launch on both PEs at once (cooperatively: they wait for each other).
#[kernel]
pub unsafe fn pingpong(
    src: *const u8,
    mid: *mut u8,
    back: *mut u8,
    bytes: u64,
    sig: *mut u64,
    iters: u32,
) {
    let me = shmem::my_pe();
    if me > 1 {
        return;
    }
    let first = thread::thread_idx_x() == 0;
    let n = bytes as usize;
    for round in 1..=iters as u64 {
        if me == 0 {
            shmem::putmem_signal_nbi::<Block>(mid, src, n, sig, round, SignalOp::Set, 1);
            if first {
                shmem::signal_wait_until(sig, Cmp::Eq, round);
            }
            thread::sync_threads();
        } else {
            if first {
                shmem::signal_wait_until(sig, Cmp::Eq, round);
            }
            thread::sync_threads();
            shmem::putmem_signal_nbi::<Block>(back, mid, n, sig, round, SignalOp::Set, 0);
        }
    }
    thread::sync_threads();
    if first {
        shmem::quiet();
    }
}

/// Barrier latency: thread 0 calls `barrier_all` `iters` times.
///
/// # Safety
///
/// Collective: launch on every PE (cooperatively).
#[kernel]
pub unsafe fn barrier_lat(iters: u32) {
    if thread::index_1d() == 0 {
        for _ in 0..iters {
            shmem::barrier_all::<Thread>();
        }
    }
}

/// All-gather latency: the block calls a block-scoped `fcollect` of `n` `i32`s over
/// [`Team::WORLD`] `iters` times.
///
/// # Safety
///
/// Collective: one block, launched on every PE (cooperatively); `src` symmetric with `n`
/// elements, `dest` with `n * n_pes()`.
#[kernel]
pub unsafe fn fcollect_lat(dest: *mut i32, src: *const i32, n: u64, iters: u32) {
    for _ in 0..iters {
        shmem::fcollect::<Block, i32>(Team::WORLD, dest, src, n as usize);
    }
}

/// All-reduce (sum) latency: the block calls a block-scoped `reduce` of `n` `i32`s over
/// [`Team::WORLD`] `iters` times.
///
/// # Safety
///
/// Collective: one block, launched on every PE (cooperatively); `src` and `dest` symmetric
/// with `n` elements.
#[kernel]
pub unsafe fn reduce_lat(dest: *mut i32, src: *const i32, n: u64, iters: u32) {
    for _ in 0..iters {
        shmem::reduce::<Block, i32>(shmem::ReduceOp::Sum, Team::WORLD, dest, src, n as usize);
    }
}
