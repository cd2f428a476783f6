//! Block-level moves of a tile (a contiguous range of elements): every thread of the block
//! calls with the same arguments and takes every `blockDim`-th 16-byte pack.
//!
//! * [`reduce_tile`]: `dst[i] = src₀[i] ∘ src₁[i] ∘ …` for every destination, sources in the
//!   order given — the sources are members' copies (peer mappings) or local buffers; several
//!   destinations receive the same result (a two-shot all-reduce stores its chunk on every
//!   member).
//! * [`push_tile`]: copies a local tile into a symmetric buffer of PE `pe`: stores through the
//!   peer mapping, or `shmem::put` where there is none.
//! * [`copy_tile`]: the copy itself, between any two addresses this thread can access, in the
//!   widest words both ends are aligned for ([`copy_tile_with`], [`push_tile_with`]: with
//!   evict-first stores, [`Streaming`]); [`fan_out`] one source into several
//!   destinations, each pack loaded once; [`zero_tile`] zeroes.
//! * [`by_packs`]: any other per-element work shared out the same way (whole packs, then
//!   elements).
//!
//! None of them orders anything: follow a push with [`crate::signal`] before the owner reads.
//!
//! ```ignore
//! // Sum the tile `off..off + len` of `x` over every member into `y` (peer-mapped team).
//! let xs = peers.mapped(x).unwrap();
//! let srcs: [*const f32; MAX_PEERS] = core::array::from_fn(|r| xs[r].add(off) as *const f32);
//! tile::reduce_tile::<f32, Sum>(&[y.add(off)], &srcs[..peers.n as usize], len);
//! ```

use core::mem::size_of;

use rshmem_device::shmem::{self, Block};
use rshmem_device::thread;

use crate::elem::{Elem, Reduce};
use crate::pack::{self, Pack};
use crate::peers::MAX_PEERS;

/// This thread's rank in the block and the block's size.
#[inline(always)]
pub fn block_lanes() -> (usize, usize) {
    (
        thread::thread_rank_in_block() as usize,
        thread::block_dim().size() as usize,
    )
}

/// How `count` elements of `E` split to move as 16-byte packs: the whole packs, and the first
/// element past them. No packs unless `aligned` (every pointer involved on 16 bytes) and
/// `E`'s size divides 16.
#[inline(always)]
fn whole_packs<E>(count: usize, aligned: bool) -> (usize, usize) {
    let size = size_of::<E>().max(1);
    if aligned && pack::BYTES % size == 0 {
        let per = pack::BYTES / size;
        (count / per, count / per * per)
    } else {
        (0, 0)
    }
}

/// `f(i)` for this thread's indices `first, first + stride, … < end`.
#[inline(always)]
fn strided(first: usize, stride: usize, end: usize, mut f: impl FnMut(usize)) {
    let mut i = first;
    while i < end {
        f(i);
        i += stride;
    }
}

/// A block's share of `count` elements of `E`: `pack(i)` for each whole 16-byte pack (none
/// unless `aligned`, every pointer involved on 16 bytes, and `E`'s size divides 16), then
/// `element(e)` for the elements past them, each index on one thread. Every thread of the
/// block calls it with the same arguments.
#[inline(always)]
pub fn by_packs<E>(
    count: usize,
    aligned: bool,
    pack: impl FnMut(usize),
    mut element: impl FnMut(usize),
) {
    let (t, nt) = block_lanes();
    let (packs, rest) = whole_packs::<E>(count, aligned);
    strided(t, nt, packs, pack);
    strided(rest + t, nt, count, &mut element);
}

/// For `i` in `0..count`, stores the reduction of `srcs[0][i], srcs[1][i], …` (in that order)
/// into `dsts[d][i]` for every `d`. Every thread of the block calls it with the same
/// arguments.
///
/// Packs of 16 bytes where every pointer is 16-byte aligned, elements otherwise; the last
/// partial pack element by element.
///
/// # Safety
///
/// `1 <= srcs.len() <= MAX_PEERS`; each source valid for `count` reads and each destination
/// for `count` writes (local or peer-mapped addresses); no write to them races with this
/// (order with [`crate::signal`]). A destination may equal a source (in place): each element
/// is read before it is written, by the same thread.
#[inline(always)]
pub unsafe fn reduce_tile<E: Elem, O: Reduce>(dsts: &[*mut E], srcs: &[*const E], count: usize) {
    let (n, m) = (srcs.len(), dsts.len());
    debug_assert!((1..=MAX_PEERS).contains(&n) && m <= MAX_PEERS);
    // Fixed-size copies, walked by loops over all MAX_PEERS slots (guarded): they unroll, so
    // pointers and packs stay in registers instead of local memory.
    let s: [*const E; MAX_PEERS] = core::array::from_fn(|r| if r < n { srcs[r] } else { srcs[0] });
    let d: [*mut E; MAX_PEERS] = core::array::from_fn(|r| {
        if r < m {
            dsts[r]
        } else {
            core::ptr::null_mut()
        }
    });
    let (t, nt) = block_lanes();
    let mut all_aligned = true;
    for r in 0..MAX_PEERS {
        all_aligned &= pack::aligned(s[r]) && (r >= m || pack::aligned(d[r]));
    }
    let packs = if all_aligned { count / E::LANES } else { 0 };
    let mut i = t;
    while i < packs {
        let mut v = [Pack::default(); MAX_PEERS];
        crate::unroll8!(r < n => {
            // SAFETY: pack `i` lies inside every source (`i < count / LANES`), aligned.
            v[r] = unsafe { pack::load(s[r].cast::<Pack>().add(i)) };
        });
        let out = pack::reduce::<E, O>(&v, n);
        crate::unroll8!(r < m => {
            // SAFETY: as above, for the destinations.
            unsafe { pack::store(d[r].cast::<Pack>().add(i), out) };
        });
        i += nt;
    }
    let mut e = packs * E::LANES + t;
    while e < count {
        // SAFETY: `e < count`: inside every source and destination.
        unsafe {
            let mut acc = s[0].add(e).read().to_acc();
            crate::unroll8!(r < n => {
                if r > 0 {
                    acc = O::combine(acc, s[r].add(e).read().to_acc());
                }
            });
            let v = E::from_acc(acc);
            crate::unroll8!(r < m => {
                d[r].add(e).write(v);
            });
        }
        e += nt;
    }
}

/// Moves this thread's items `first, first + stride, … < items` with `load` and `store`, up
/// to four loads in flight before their stores: the compiler may not hoist a load above a
/// store that could alias it, so a plain loop waits for each load in turn.
#[inline(always)]
fn in_flight<T: Copy>(
    first: usize,
    stride: usize,
    items: usize,
    load: impl Fn(usize) -> T,
    store: impl Fn(usize, T),
) {
    let mut i = first;
    while i < items {
        let n = (items - i).div_ceil(stride).min(4);
        let mut v = [load(i); 4];
        for (j, v) in v.iter_mut().enumerate().skip(1) {
            if j < n {
                *v = load(i + j * stride);
            }
        }
        for (j, v) in v.into_iter().enumerate() {
            if j < n {
                store(i + j * stride, v);
            }
        }
        i += 4 * stride;
    }
}

/// Copies `src[0..count]` into every non-null destination of `dsts` (up to [`MAX_PEERS`]):
/// each pack loaded once and stored to each (a row that fans out to several places, as an MoE
/// token to its experts). Every thread of the block calls it with the same arguments. Packs
/// of 16 bytes where every pointer is 16-byte aligned and the element size divides 16,
/// elements otherwise.
///
/// # Safety
///
/// `src` valid for `count` reads and each non-null destination for `count` writes (local or
/// peer-mapped), none overlapping `src`; no write races with them.
#[inline(always)]
pub unsafe fn fan_out<E: Copy, const N: usize>(dsts: &[*mut E; N], src: *const E, count: usize) {
    const { assert!(N <= MAX_PEERS) };
    let (t, nt) = block_lanes();
    let aligned = pack::aligned(src) && dsts.iter().all(|d| pack::aligned(*d));
    let (packs, rest) = whole_packs::<E>(count, aligned);
    let from = src.cast::<Pack>();
    // SAFETY: packs below `packs` lie inside `src` and every destination.
    let load = |i: usize| unsafe { pack::load(from.add(i)) };
    let store = |i: usize, v: Pack| {
        crate::unroll8!(r < N => {
            if !dsts[r].is_null() {
                // SAFETY: as above.
                unsafe { pack::store(dsts[r].cast::<Pack>().add(i), v) };
            }
        });
    };
    in_flight(t, nt, packs, load, store);
    strided(rest + t, nt, count, |e| {
        // SAFETY: `e < count`.
        unsafe {
            let v = src.add(e).read();
            crate::unroll8!(r < N => {
                if !dsts[r].is_null() {
                    dsts[r].add(e).write(v);
                }
            });
        }
    });
}

/// Zeroes `dst[0..count]` (bit patterns of zero): packs where `dst` is 16-byte aligned and
/// the element size divides 16, elements otherwise. Every thread of the block calls it.
///
/// # Safety
///
/// `dst` valid for `count` writes; no access races with them.
#[inline(always)]
pub unsafe fn zero_tile<E: Copy + Default>(dst: *mut E, count: usize) {
    by_packs::<E>(
        count,
        pack::aligned(dst),
        // SAFETY: pack `i` lies inside `dst`.
        |i| unsafe { pack::store(dst.cast::<Pack>().add(i), Pack::default()) },
        // SAFETY: `e < count`.
        |e| unsafe { dst.add(e).write(E::default()) },
    );
}

/// Copies `count` elements from `src` to `dst`, both addresses this thread can load and store
/// (local, or a peer's through its mapping). Every thread of the block calls it with the same
/// arguments. Moves 16-byte packs where `dst` and `src` are equally aligned modulo 16, else
/// the widest word they agree on (8, 4 bytes), else elements.
///
/// # Safety
///
/// `src` valid for `count` reads, `dst` for `count` writes, not overlapping unless equal (an
/// equal pair copies nothing); no write races with them.
#[inline(always)]
pub unsafe fn copy_tile<E: Copy>(dst: *mut E, src: *const E, count: usize) {
    // SAFETY: forwarded.
    unsafe { copy_tile_with::<Cached, E>(dst, src, count) }
}

/// Where a move's stores leave their lines in the caches: the `S` of [`copy_tile_with`] and
/// [`push_tile_with`].
pub trait Stores {
    /// Whether 16-byte packs go out with [`pack::store_streaming`].
    const STREAMING: bool;
}

/// Plain stores: the lines stay cached as any other (what [`copy_tile`] does).
pub struct Cached;

/// Evict-first stores ([`pack::store_streaming`]) for output this GPU does not read again
/// soon: the inputs a move re-reads stay in L2 instead (an MoE send reads a token's row once
/// per expert, writing eight times its bytes).
pub struct Streaming;

impl Stores for Cached {
    const STREAMING: bool = false;
}

impl Stores for Streaming {
    const STREAMING: bool = true;
}

/// [`copy_tile`] with the stores' cache policy `S`.
///
/// # Safety
///
/// As [`copy_tile`].
#[inline(always)]
pub unsafe fn copy_tile_with<S: Stores, E: Copy>(dst: *mut E, src: *const E, count: usize) {
    if core::ptr::eq(dst, src) || count == 0 {
        return;
    }
    let skew = (dst as usize) ^ (src as usize);
    // SAFETY: forwarded; each arm's word size divides the pointers' common alignment.
    unsafe {
        if skew % 16 == 0 {
            copy_words::<S, Pack, E>(dst, src, count)
        } else if skew % 8 == 0 && size_of::<E>() <= 8 {
            copy_words::<S, u64, E>(dst, src, count)
        } else if skew % 4 == 0 && size_of::<E>() <= 4 {
            copy_words::<S, u32, E>(dst, src, count)
        } else {
            copy_words::<S, Plain<E>, E>(dst, src, count)
        }
    }
}

/// A word [`copy_tile`] moves: packs with one vector instruction, the rest plainly.
trait Word: Copy {
    /// # Safety
    ///
    /// `p` valid and aligned for a `Self`, no racing write.
    unsafe fn load(p: *const Self) -> Self;
    /// # Safety
    ///
    /// `p` valid and aligned for a `Self`, no racing access.
    unsafe fn store(p: *mut Self, v: Self);
    /// As `store`, cached evict-first where the word has such a store.
    ///
    /// # Safety
    ///
    /// As `store`.
    #[inline(always)]
    unsafe fn store_streaming(p: *mut Self, v: Self) {
        // SAFETY: forwarded.
        unsafe { Self::store(p, v) }
    }
}

impl Word for Pack {
    #[inline(always)]
    unsafe fn load(p: *const Self) -> Self {
        // SAFETY: forwarded.
        unsafe { pack::load(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut Self, v: Self) {
        // SAFETY: forwarded.
        unsafe { pack::store(p, v) }
    }
    #[inline(always)]
    unsafe fn store_streaming(p: *mut Self, v: Self) {
        // SAFETY: forwarded.
        unsafe { pack::store_streaming(p, v) }
    }
}

/// An element copied as itself.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Plain<E>(E);

macro_rules! plain_word {
    ([$($g:tt)*] $t:ty) => {
        impl<$($g)*> Word for $t {
            #[inline(always)]
            unsafe fn load(p: *const Self) -> Self {
                // SAFETY: forwarded.
                unsafe { p.read() }
            }
            #[inline(always)]
            unsafe fn store(p: *mut Self, v: Self) {
                // SAFETY: forwarded.
                unsafe { p.write(v) }
            }
        }
    };
}
plain_word!([] u64);
plain_word!([] u32);
plain_word!([E: Copy] Plain<E>);

/// [`copy_tile`] in words of `W`: elements up to `dst`'s first `W`-aligned one, whole words,
/// then the remaining elements.
///
/// # Safety
///
/// As [`copy_tile`], and `dst`, `src` equal modulo `size_of::<W>()`, which `size_of::<E>()`
/// divides (or equals).
#[inline(always)]
unsafe fn copy_words<S: Stores, W: Word, E: Copy>(dst: *mut E, src: *const E, count: usize) {
    let (t, nt) = block_lanes();
    let (wsize, esize) = (size_of::<W>(), size_of::<E>());
    let per = wsize / esize;
    let head = (((wsize - (dst as usize) % wsize) % wsize) / esize).min(count);
    let words = (count - head) / per;
    let tail = head + words * per;
    // SAFETY: every index is below `count` (the caller's contract covers it); after `head`
    // elements both pointers are `W`-aligned (they agree modulo `wsize`).
    unsafe {
        let (wd, ws) = (dst.add(head).cast::<W>(), src.add(head).cast::<W>());
        in_flight(
            t,
            nt,
            words,
            |i| W::load(ws.add(i)),
            |i, v| {
                if S::STREAMING {
                    W::store_streaming(wd.add(i), v)
                } else {
                    W::store(wd.add(i), v)
                }
            },
        );
        let element = |e: usize| dst.add(e).write(src.add(e).read());
        strided(t, nt, head, element);
        strided(tail + t, nt, count, element);
    }
}

/// Copies the local tile `src[0..count]` into PE `pe`'s copy of the symmetric `dst`: stores
/// through the peer mapping ([`copy_tile`]), or a block-scoped `shmem::put` where `pe` has
/// none (returns once `src` may be reused). Every thread of the block calls it. Follow it
/// with [`crate::signal::signal_block`] (or a [`crate::signal::Steps`] step) before the owner
/// reads the tile.
///
/// # Safety
///
/// `dst` points into a symmetric allocation with `count` elements from it; `src` valid for
/// `count` reads; `pe` a PE of the job; nothing else writes that part of `dst` meanwhile.
#[inline(always)]
pub unsafe fn push_tile<E: Copy>(dst: *mut E, src: *const E, count: usize, pe: i32) {
    // SAFETY: forwarded.
    unsafe { push_tile_with::<Cached, E>(dst, src, count, pe) }
}

/// [`push_tile`] with the stores' cache policy `S` (where `pe` is mapped; a put is a put).
///
/// # Safety
///
/// As [`push_tile`].
#[inline(always)]
pub unsafe fn push_tile_with<S: Stores, E: Copy>(
    dst: *mut E,
    src: *const E,
    count: usize,
    pe: i32,
) {
    if count == 0 {
        return;
    }
    // SAFETY: `dst` is symmetric, `pe` in range.
    let remote = unsafe { shmem::ptr(dst, pe) };
    // SAFETY: forwarded from this function's contract.
    unsafe {
        if remote.is_null() {
            shmem::put::<Block, E>(dst, src, count, pe);
        } else {
            copy_tile_with::<S, E>(remote, src, count);
        }
    }
}
