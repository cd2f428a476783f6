//! Kernels of the symmetric queue's examples (`examples/symmetric_queue.rs`,
//! `examples/queue_bench.rs`), and the vocabulary its tests share with them
//! (`testing/api-tests/tests/queue.rs`, whose stress kernels live in `rshmem-test-kernels`).
//!
//! Elements are [`Tagged`]: each carries its producer and sequence number, and every other
//! byte is derived from those two, so a consumer recognises a torn or foreign element.
//!
//! Kernels cannot be generic, so each element type gets its own entry points (made by the
//! macros below around one generic body).

// Kernels take their launch's arguments flat (queue, counts, modes, buffers, logs).
#![allow(clippy::too_many_arguments)]

use rshmem_device::prelude::*;

/// An element that names its producer and sequence number and can be checked whole.
pub trait Tagged: Copy + 'static {
    /// Producers that fit in the tag.
    const MAX_PRODUCERS: u32;
    /// Sequence numbers that fit in the tag.
    const MAX_SEQ: u32;
    /// The element for `(producer, seq)`.
    fn tag(producer: u32, seq: u32) -> Self;
    /// Writes the element for `(producer, seq)` at `dst`, word by word: never a whole
    /// element by value (NVPTX copies aggregates of more than 128 bytes a byte at a time).
    ///
    /// # Safety
    ///
    /// `dst` valid and aligned for writing a `Self`.
    #[inline(always)]
    unsafe fn write_tag(dst: *mut Self, producer: u32, seq: u32) {
        // SAFETY: the caller's contract.
        unsafe { dst.write(Self::tag(producer, seq)) }
    }
    /// `(producer, seq)`, or `None` if any byte disagrees with them (a torn element).
    fn untag(&self) -> Option<(u32, u32)>;
    /// Writes the elements `(producer, seq0 + e)` at `dst[e]` for `e < count` (at most 32)
    /// as one warp: every lane calls it with its `lane`. An element per lane here;
    /// arrays write each element's words side by side, so that a warp's stores are
    /// contiguous (not 32 elements' words, a KiB apart).
    ///
    /// # Safety
    ///
    /// `dst` valid and aligned for writing `count` elements.
    #[inline(always)]
    unsafe fn write_tags_by_warp(dst: *mut Self, producer: u32, seq0: u32, count: u32, lane: u32) {
        if lane < count {
            // SAFETY: `lane < count`: inside `dst`.
            unsafe { Self::write_tag(dst.add(lane as usize), producer, seq0 + lane) }
        }
    }
    /// [`untag`](Tagged::untag) of `src[lane]` for `lane < count` (at most 32), as one warp:
    /// every lane of `mask` calls it and gets its own element's answer (`None` past `count`).
    /// Arrays read each element's words side by side, as
    /// [`write_tags_by_warp`](Tagged::write_tags_by_warp) writes them.
    ///
    /// # Safety
    ///
    /// `src` valid for reading `count` elements.
    #[inline(always)]
    unsafe fn untag_by_warp(
        src: *const Self,
        count: u32,
        lane: u32,
        mask: u32,
    ) -> Option<(u32, u32)> {
        let _ = mask;
        // SAFETY: `lane < count`: inside `src`.
        (lane < count)
            .then(|| unsafe { &*src.add(lane as usize) }.untag())
            .flatten()
    }
    /// Writes only the key `(producer, seq0 + lane)` of `dst[lane]` for `lane < count`
    /// ([`Tags::Once`]); for single words, the whole element.
    ///
    /// # Safety
    ///
    /// `dst` valid and aligned for writing `count` elements.
    #[inline(always)]
    unsafe fn write_key(dst: *mut Self, producer: u32, seq0: u32, count: u32, lane: u32) {
        if lane < count {
            // SAFETY: `lane < count`: inside `dst`.
            unsafe { Self::write_tag(dst.add(lane as usize), producer, seq0 + lane) }
        }
    }
    /// The key of `src[lane]` for `lane < count`, its other bytes unread ([`Tags::Once`]).
    ///
    /// # Safety
    ///
    /// `src` valid for reading `count` elements.
    #[inline(always)]
    unsafe fn read_key(src: *const Self, count: u32, lane: u32) -> Option<(u32, u32)> {
        // SAFETY: `lane < count`: inside `src`.
        (lane < count)
            .then(|| unsafe { &*src.add(lane as usize) }.untag())
            .flatten()
    }
}

/// How the benchmark's batched kinds make and check their elements.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tags {
    /// Every element written whole before its push and checked whole after its pop: a torn
    /// byte anywhere is caught, and the making and checking are part of each batch's time.
    Each = 0,
    /// The stage rows written whole once, before the timed loop (as the put row writes its
    /// rows), then per batch only each element's key, and after a pop only the keys read: the
    /// queue's own work beside the put's, as a dispatch pushes rows already in memory.
    Once = 1,
}

impl Tags {
    /// The value from its `u32` (as kernels receive it); unknown values are `Each`.
    pub fn from_raw(raw: u32) -> Tags {
        if raw == Tags::Once as u32 {
            Tags::Once
        } else {
            Tags::Each
        }
    }
}

/// The filler word `i` of the element tagged `key`: a mix of the whole key (splitmix64's
/// finaliser: a bijection whose every bit depends on every key bit, so narrow words still see
/// a change anywhere in the key) xor a different constant per word. Cheap where it matters:
/// the mix is the same for a whole element, and `i` steps by a constant along a lane's words,
/// so a word costs an add and an xor. (A multiply and a variable rotate per word made the
/// benchmark's own tagging and checking half of a 1 KiB batch's time, issue 27.)
#[inline(always)]
fn fill(key: u64, i: usize) -> u64 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) ^ (i as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

impl Tagged for u32 {
    const MAX_PRODUCERS: u32 = 1 << 12;
    const MAX_SEQ: u32 = 1 << 20;
    #[inline(always)]
    fn tag(producer: u32, seq: u32) -> Self {
        producer << 20 | seq
    }
    #[inline(always)]
    fn untag(&self) -> Option<(u32, u32)> {
        Some((self >> 20, self & (Self::MAX_SEQ - 1)))
    }
}

impl Tagged for u64 {
    const MAX_PRODUCERS: u32 = u32::MAX;
    const MAX_SEQ: u32 = u32::MAX;
    #[inline(always)]
    fn tag(producer: u32, seq: u32) -> Self {
        (producer as u64) << 32 | seq as u64
    }
    #[inline(always)]
    fn untag(&self) -> Option<(u32, u32)> {
        Some(((self >> 32) as u32, *self as u32))
    }
}

/// A word of a [`Tagged`] array.
pub trait Word: Copy + Eq + 'static {
    /// Bits in the word.
    const BITS: u32;
    /// The low `BITS` bits of `x`.
    fn truncate(x: u64) -> Self;
    /// The word, widened.
    fn widen(self) -> u64;
}

macro_rules! words {
    ($($t:ty),*) => {$(
        impl Word for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn truncate(x: u64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn widen(self) -> u64 {
                self as u64
            }
        }
    )*};
}
words!(u8, u32, u64);

/// Arrays of words: the 64-bit key `producer << 32 | seq` in the first words (eight `u8`s,
/// two `u32`s or one `u64`), then filler words derived from the key and their index.
impl<W: Word, const N: usize> Tagged for [W; N] {
    const MAX_PRODUCERS: u32 = u32::MAX;
    const MAX_SEQ: u32 = u32::MAX;
    #[inline(always)]
    fn tag(producer: u32, seq: u32) -> Self {
        const {
            assert!(
                N * W::BITS as usize >= 64,
                "a tagged array holds at least 64 bits"
            )
        };
        // Written in place: `core::array::from_fn` built it in one local and copied it to
        // another, a byte at a time for 1 KiB (the aggregate copies `Tagged::write_tag` avoids).
        let mut out = core::mem::MaybeUninit::<Self>::uninit();
        // SAFETY: `write_tag` writes every word of the array.
        unsafe {
            Self::write_tag(out.as_mut_ptr(), producer, seq);
            out.assume_init()
        }
    }
    #[inline(always)]
    unsafe fn write_tag(dst: *mut Self, producer: u32, seq: u32) {
        let key = u64::tag(producer, seq);
        let dst = dst.cast::<W>();
        for i in 0..N {
            // SAFETY: `i < N`, inside the array the caller gave.
            unsafe { dst.add(i).write(word::<W>(key, i)) };
        }
    }
    #[inline(always)]
    fn untag(&self) -> Option<(u32, u32)> {
        let key = key_of(self);
        let expected = |i: usize| word::<W>(key, i);
        // Every word is read and none is branched on, CHECK_RUN at a time: a short-circuiting
        // `all` issued each load only after the previous one had arrived (128 load latencies
        // per 1 KiB element, most of the queue benchmark's time per batch, issue 27).
        let mut diff = 0u64;
        let runs = N / CHECK_RUN * CHECK_RUN;
        let mut i = 0;
        while i < runs {
            let mut words = [W::truncate(0); CHECK_RUN];
            for (j, w) in words.iter_mut().enumerate() {
                *w = self[i + j];
            }
            for (j, w) in words.iter().enumerate() {
                diff |= w.widen() ^ expected(i + j).widen();
            }
            i += CHECK_RUN;
        }
        for (i, w) in self.iter().enumerate().skip(runs) {
            diff |= w.widen() ^ expected(i).widen();
        }
        (diff == 0).then_some(((key >> 32) as u32, key as u32))
    }
    #[inline(always)]
    unsafe fn write_tags_by_warp(dst: *mut Self, producer: u32, seq0: u32, count: u32, lane: u32) {
        for e in 0..count {
            let key = u64::tag(producer, seq0 + e);
            // SAFETY: `e < count`: inside `dst`.
            let words = unsafe { dst.add(e as usize) }.cast::<W>();
            let mut i = lane as usize;
            while i < N {
                // SAFETY: `i < N`, a word of element `e`.
                unsafe { words.add(i).write(word::<W>(key, i)) };
                i += 32;
            }
        }
    }
    #[inline(always)]
    unsafe fn write_key(dst: *mut Self, producer: u32, seq0: u32, count: u32, lane: u32) {
        if lane < count {
            let key = u64::tag(producer, seq0 + lane);
            // SAFETY: `lane < count`: element `lane` of `dst`, whose first words hold the key.
            let words = unsafe { dst.add(lane as usize) }.cast::<W>();
            for i in 0..(64 / W::BITS) as usize {
                // SAFETY: `i` is one of the key's words, inside the element.
                unsafe { words.add(i).write(word::<W>(key, i)) };
            }
        }
    }
    #[inline(always)]
    unsafe fn read_key(src: *const Self, count: u32, lane: u32) -> Option<(u32, u32)> {
        if lane >= count {
            return None;
        }
        // SAFETY: `lane < count`: element `lane` of `src`.
        let key = key_of(unsafe { &*src.add(lane as usize) });
        Some(((key >> 32) as u32, key as u32))
    }
    #[inline(always)]
    unsafe fn untag_by_warp(
        src: *const Self,
        count: u32,
        lane: u32,
        mask: u32,
    ) -> Option<(u32, u32)> {
        // Bit `e` set: this lane's share of element `e` differs. Elements go 8 at a time where
        // they are small, so that their loads are in flight together (one vote per element
        // inside the loop made it one memory latency per element: 27 µs per 32 KiB batch).
        let bad = if core::mem::size_of::<Self>() <= 1024 {
            // SAFETY: `count` elements of `src`, the caller's contract.
            unsafe { lane_diffs::<W, N, 8>(src, count, lane) }
        } else {
            // SAFETY: as above.
            unsafe { lane_diffs::<W, N, 1>(src, count, lane) }
        };
        let mut torn = false;
        for e in 0..count {
            let any = warp::ballot(mask, bad >> e & 1 != 0) != 0;
            torn |= e == lane && any;
        }
        if lane >= count || torn {
            return None;
        }
        // SAFETY: `lane < count`.
        let key = key_of(unsafe { &*src.add(lane as usize) });
        Some(((key >> 32) as u32, key as u32))
    }
}

/// The bits `e < count` where this lane's share of element `e` of `src` differs
/// ([`lane_check`]), `G` elements at a time.
///
/// # Safety
///
/// `src` valid for reading `count` elements.
#[inline(always)]
unsafe fn lane_diffs<W: Word, const N: usize, const G: usize>(
    src: *const [W; N],
    count: u32,
    lane: u32,
) -> u32 {
    let mut bad = 0u32;
    let mut e = 0usize;
    while e < count as usize {
        let diffs: [u64; G] = core::array::from_fn(|j| {
            if e + j < count as usize {
                // SAFETY: `e + j < count`: element `e + j` of `src`.
                lane_check(unsafe { &*src.add(e + j) }, lane).1
            } else {
                0
            }
        });
        for (j, d) in diffs.iter().enumerate() {
            bad |= ((*d != 0) as u32) << (e + j);
        }
        e += G;
    }
    bad
}

/// Lane `lane`'s share of checking `element` by a warp: the key (every lane reads its words:
/// one broadcast load each), and the lane's words `lane, lane + 32, ...` against it, nonzero
/// where one differs.
#[inline(always)]
fn lane_check<W: Word, const N: usize>(element: &[W; N], lane: u32) -> (u64, u64) {
    let key = key_of(element);
    let mut diff = 0u64;
    // A constant trip count (not `while i < N`), so that the loads unroll and issue together.
    for k in 0..N.div_ceil(32) {
        let i = lane as usize + 32 * k;
        if i < N {
            diff |= element[i].widen() ^ word::<W>(key, i).widen();
        }
    }
    (key, diff)
}

/// The key an array element carries in its first words (as [`word`] writes it).
#[inline(always)]
fn key_of<W: Word, const N: usize>(element: &[W; N]) -> u64 {
    let head = (64 / W::BITS) as usize;
    (0..head).fold(0u64, |k, i| k | element[i].widen() << (i as u32 * W::BITS))
}

/// Word `i` of the array element tagged `key`: the key's own bits in the first words, filler
/// after them ([`Tagged`] for arrays).
#[inline(always)]
fn word<W: Word>(key: u64, i: usize) -> W {
    let head = (64 / W::BITS) as usize;
    if i < head {
        W::truncate(key >> (i as u32 * W::BITS))
    } else {
        W::truncate(fill(key, i))
    }
}

/// Words of a [`Tagged`] array loaded together before any is compared.
const CHECK_RUN: usize = 16;

/// How the threads of a launch group into producers and consumers.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each thread: blocking `push`/`pop`.
    Thread = 0,
    /// Each thread: `try_push`/`try_pop`, retried until they succeed.
    Try = 1,
    /// Each warp: `push_batch`/`pop_batch::<Warp>`.
    Warp = 2,
    /// Each block: `push_batch`/`pop_batch::<Block>`.
    Block = 3,
    /// Each warp: `push_cooperative`/`pop_cooperative::<Warp>`.
    WarpCoop = 4,
    /// Each block: `push_cooperative`/`pop_cooperative::<Block>`.
    BlockCoop = 5,
}

impl Mode {
    /// The mode from its `u32` (as kernels receive it); unknown values are `Thread`.
    pub fn from_raw(raw: u32) -> Mode {
        match raw {
            1 => Mode::Try,
            2 => Mode::Warp,
            3 => Mode::Block,
            4 => Mode::WarpCoop,
            5 => Mode::BlockCoop,
            _ => Mode::Thread,
        }
    }

    /// Groups per PE in a launch of `grid` blocks of `block` threads.
    pub fn groups(self, grid: u32, block: u32) -> u32 {
        match self {
            Mode::Thread | Mode::Try => grid * block,
            Mode::Warp | Mode::WarpCoop => grid * block.div_ceil(32),
            Mode::Block | Mode::BlockCoop => grid,
        }
    }

    /// Whether batches move each element with a whole warp (`*_cooperative`).
    pub fn cooperative(self) -> bool {
        matches!(self, Mode::WarpCoop | Mode::BlockCoop)
    }

    /// Most threads in one group.
    pub fn group_size(self, block: u32) -> u32 {
        match self {
            Mode::Thread | Mode::Try => 1,
            Mode::Warp | Mode::WarpCoop => block.min(32),
            Mode::Block | Mode::BlockCoop => block,
        }
    }

    /// Staging elements each group of a stress kernel uses (a push batch and a pop batch).
    pub fn stage_per_group(self, block: u32) -> u32 {
        2 * (self.group_size(block) + 3)
    }
}

/// This thread's group: its index among the PE's groups, their number, the thread's rank in
/// it and its size. Public for the queue's stress kernels (`rshmem-test-kernels`).
#[derive(Clone, Copy)]
pub struct Group {
    /// The group's index among the PE's groups.
    pub index: u32,
    /// Groups per PE.
    pub per_pe: u32,
    /// This thread's rank in the group.
    pub rank: u32,
    /// Threads in the group.
    pub size: u32,
}

impl Group {
    /// This thread's warp's part of a batch of the group's first `count` elements, which the
    /// warp tags or checks side by side: `(lane, first, n)`, its elements `first..first + n`
    /// (at most 32); `None` for a warp past the batch.
    pub fn warp_part(&self, count: u32) -> Option<(u32, u32, u32)> {
        let (lane, first) = (self.rank % 32, self.rank / 32 * 32);
        (first < count).then(|| (lane, first, (count - first).min(32)))
    }
}

/// The calling thread's [`Group`] under `mode`.
pub fn group(mode: Mode) -> Group {
    let (bd, grid) = (thread::block_dim().size(), thread::grid_dim_x());
    let (b, rank) = (thread::block_idx_x(), thread::thread_rank_in_block());
    let per_pe = mode.groups(grid, bd);
    match mode {
        Mode::Thread | Mode::Try => Group {
            index: b * bd + rank,
            per_pe,
            rank: 0,
            size: 1,
        },
        Mode::Warp | Mode::WarpCoop => Group {
            index: b * bd.div_ceil(32) + rank / 32,
            per_pe,
            rank: rank % 32,
            size: 32.min(bd - rank / 32 * 32),
        },
        Mode::Block | Mode::BlockCoop => Group {
            index: b,
            per_pe,
            rank,
            size: bd,
        },
    }
}

/// `status` words of a stress or benchmark kernel (local to each PE).
pub mod status {
    /// Elements whose bytes disagree with their tag.
    pub const TORN: usize = 0;
    /// Elements whose tag names no producer or sequence of the run.
    pub const FOREIGN: usize = 1;
    /// Elements popped twice (their record was already set).
    pub const DUPLICATE: usize = 2;
    /// Good elements popped (benchmark).
    pub const GOOD: usize = 3;
    /// Sum of the good elements' sequence numbers (benchmark).
    pub const SEQ_SUM: usize = 4;
    /// The benchmark's pushes' phases, summed over warps (builds with the `queue-phases`
    /// feature only; zeros otherwise): [`PHASE_WORDS`] words from here.
    pub const PUSH_PHASES: usize = 5;
    /// The same for the pops.
    pub const POP_PHASES: usize = PUSH_PHASES + PHASE_WORDS;
    /// Cycles per phase (`rshmem_device::queue::phases::NAMES`), then batches, then the
    /// warps' cycles and nanoseconds from start to end (their ratio: the SM clock).
    pub const PHASE_WORDS: usize = rshmem_device::queue::phases::PHASES + 3;
    /// Words of a status buffer.
    pub const LEN: usize = POP_PHASES + PHASE_WORDS;
}

/// Adds this warp's phases (first lanes only), its batch count and its cycles and
/// nanoseconds since `start` to the [`status::PHASE_WORDS`] words at `status + at` on
/// [`LOG_PE`]. Nothing without the `queue-phases` feature or with a null `status`.
unsafe fn add_phases(status: *mut u64, at: usize, batches: u64, start: (u64, u64)) {
    use rshmem_device::queue::phases;
    if !phases::ENABLED || status.is_null() || thread::thread_rank_in_block() % 32 != 0 {
        return;
    }
    let row = phases::take();
    let span = [
        batches,
        thread::clock64().wrapping_sub(start.0),
        thread::globaltimer_ns().wrapping_sub(start.1),
    ];
    for (i, v) in row.into_iter().chain(span).enumerate() {
        shmem::atomic_add(status.add(at + i), v, LOG_PE);
    }
}

/// Thread 0 pushes `values[..n]`, in order.
///
/// # Safety
///
/// `q` is a live queue handle; `values` holds `n` elements.
#[kernel]
pub unsafe fn queue_push(q: SymQueue<i32>, values: *const i32, n: u32) {
    if thread::index_1d() == 0 {
        for i in 0..n as usize {
            q.push(*values.add(i));
        }
    }
}

/// Thread 0 pops `n` elements into `out[..n]`.
///
/// # Safety
///
/// `q` is a live queue handle; `out` has room for `n` elements, which someone pushes.
#[kernel]
pub unsafe fn queue_pop(q: SymQueue<i32>, out: *mut i32, n: u32) {
    if thread::index_1d() == 0 {
        for i in 0..n as usize {
            *out.add(i) = q.pop();
        }
    }
}

/// The PE whose memory a benchmark's placement log lives in (the ring's home).
pub const LOG_PE: i32 = 1;
/// Words per block in a placement log: `[SM, start ns, end ns]`.
pub const LOG_WORDS: usize = 3;

/// Where and when a benchmark block ran: thread 0 of block `b` of PE `pe` writes
/// `[thread::sm_id(), start, end]` (`%globaltimer` ns) at `log[(pe * grid + b) * LOG_WORDS..]`
/// on [`LOG_PE`]. What shows whether two PEs' grids sharing a GPU ran at once, and on which
/// SMs (docs/queue.md).
struct Placement {
    at: *mut u64,
}

impl Placement {
    /// Records the SM and the start (thread 0 of each block); `log` may be null (no log).
    unsafe fn begin(log: *mut u64) -> Self {
        let at = if log.is_null() || thread::thread_rank_in_block() != 0 {
            core::ptr::null_mut()
        } else {
            let row = shmem::my_pe() as u32 * thread::grid_dim_x() + thread::block_idx_x();
            log.add(row as usize * LOG_WORDS)
        };
        if !at.is_null() {
            shmem::p(at, thread::sm_id() as u64, LOG_PE);
            shmem::p(at.add(1), thread::globaltimer_ns(), LOG_PE);
        }
        Placement { at }
    }

    /// Records thread 0's end.
    unsafe fn end(self) {
        if !self.at.is_null() {
            shmem::p(self.at.add(2), thread::globaltimer_ns(), LOG_PE);
        }
    }
}

/// The first of the group's 32-element stage rows and its `scratch` word: warps own row and
/// word `warp`, blocks those of their first warp.
unsafe fn group_stage<E>(
    g: Group,
    mode: Mode,
    stage: *mut E,
    scratch: *mut u64,
) -> (*mut E, *mut u64) {
    let warp = match mode {
        Mode::Block | Mode::BlockCoop => g.index * thread::block_dim().size().div_ceil(32),
        _ => g.index,
    } as usize;
    (stage.add(warp * 32), scratch.add(warp))
}

/// One batched push or pop of `count` elements at `stage` by the group, as `mode` says.
unsafe fn batch<E: Tagged>(
    q: SymQueue<E>,
    mode: Mode,
    push: bool,
    stage: *mut E,
    count: u32,
    scratch: *mut u64,
) {
    let n = count as usize;
    match (mode, push) {
        (Mode::Warp, true) => q.push_batch::<Warp>(stage, n, scratch),
        (Mode::Warp, false) => q.pop_batch::<Warp>(stage, n, scratch),
        (Mode::WarpCoop, true) => q.push_cooperative::<Warp>(stage, n, scratch),
        (Mode::WarpCoop, false) => q.pop_cooperative::<Warp>(stage, n, scratch),
        (Mode::Block, true) => q.push_batch::<Block>(stage, n, scratch),
        (Mode::Block, false) => q.pop_batch::<Block>(stage, n, scratch),
        (_, true) => q.push_cooperative::<Block>(stage, n, scratch),
        (_, false) => q.pop_cooperative::<Block>(stage, n, scratch),
    }
}

/// Benchmark producer: each group (per `mode`: a thread, a warp or a block) of this PE pushes
/// `items` elements tagged `(group, 0..items)`; batched modes push batches of the group's size
/// through its rows of `stage` (32 elements per warp) and its `scratch` word (one per warp),
/// making them as `tags` ([`Tags`]) says. `status`: where the phases go ([`add_phases`]), or null; `log`: the [`Placement`] log, or
/// null.
unsafe fn bench_push<E: Tagged>(
    q: SymQueue<E>,
    items: u32,
    mode: u32,
    tags: u32,
    stage: *mut E,
    scratch: *mut u64,
    status: *mut u64,
    log: *mut u64,
) {
    use rshmem_device::queue::phases::{Lap, Phase};
    let (mode, tags) = (Mode::from_raw(mode), Tags::from_raw(tags));
    let g = group(mode);
    if tags == Tags::Once && !matches!(mode, Mode::Thread | Mode::Try) {
        // Whole rows once, outside the timed part: each batch then writes only the keys.
        let (stage, _) = group_stage(g, mode, stage, scratch);
        if let Some((lane, first, n)) = g.warp_part(g.size) {
            E::write_tags_by_warp(stage.add(first as usize), g.index, first, n, lane);
        }
    }
    let placed = Placement::begin(log);
    let (t0, mut batches) = ((thread::clock64(), thread::globaltimer_ns()), 0u64);
    if matches!(mode, Mode::Thread | Mode::Try) {
        let mut item = core::mem::MaybeUninit::<E>::uninit();
        for i in 0..items {
            E::write_tag(item.as_mut_ptr(), g.index, i);
            q.push_ref(item.assume_init_ref());
        }
    } else {
        let (stage, scratch) = group_stage(g, mode, stage, scratch);
        let mut start = 0;
        while start < items {
            let count = g.size.min(items - start);
            let mut lap = Lap::start();
            // Each warp tags its 32 of the group's elements, side by side.
            if let Some((lane, first, n)) = g.warp_part(count) {
                let (dst, seq0) = (stage.add(first as usize), start + first);
                match tags {
                    Tags::Each => E::write_tags_by_warp(dst, g.index, seq0, n, lane),
                    Tags::Once => E::write_key(dst, g.index, seq0, n, lane),
                }
            }
            lap.lap(Phase::Tag);
            // The batch begins with a barrier of the group, which orders the tags before it.
            batch(q, mode, true, stage, count, scratch);
            start += count;
            batches += 1;
        }
    }
    placed.end();
    add_phases(status, status::PUSH_PHASES, batches, t0);
}

/// Benchmark consumer: each group pops `items` elements and checks them (whole, or their keys
/// under [`Tags::Once`]); totals go to `status` (good, torn, foreign, sum of sequence numbers).
unsafe fn bench_pop<E: Tagged>(
    q: SymQueue<E>,
    items: u32,
    mode: u32,
    tags: u32,
    stage: *mut E,
    scratch: *mut u64,
    status: *mut u64,
    log: *mut u64,
) {
    use rshmem_device::queue::phases::{Lap, Phase};
    let (mode, tags) = (Mode::from_raw(mode), Tags::from_raw(tags));
    let g = group(mode);
    let placed = Placement::begin(log);
    let (t0, mut batches) = ((thread::clock64(), thread::globaltimer_ns()), 0u64);
    let (mut good, mut torn, mut sum) = (0u64, 0u64, 0u64);
    let mut check = |tag: Option<(u32, u32)>| match tag {
        Some((_, s)) if s < items => {
            good += 1;
            sum += s as u64;
        }
        Some(_) => torn += 1 << 32, // foreign: counted apart, in the high half
        None => torn += 1,
    };
    if matches!(mode, Mode::Thread | Mode::Try) {
        for _ in 0..items {
            check(q.pop().untag());
        }
    } else {
        let (stage, scratch) = group_stage(g, mode, stage, scratch);
        let mut start = 0;
        while start < items {
            let count = g.size.min(items - start);
            batch(q, mode, false, stage, count, scratch);
            let mut lap = Lap::start();
            // Each warp checks its 32 of the group's elements, side by side; lane `e` counts
            // element `e`.
            if let Some((lane, first, n)) = g.warp_part(count) {
                let lanes = 32.min(g.size - first);
                let mask = if lanes == 32 {
                    warp::FULL_MASK
                } else {
                    (1 << lanes) - 1
                };
                let src = stage.add(first as usize);
                let tag = match tags {
                    Tags::Each => E::untag_by_warp(src, n, lane, mask),
                    Tags::Once => E::read_key(src, n, lane),
                };
                if lane < n {
                    check(tag);
                }
            }
            lap.lap(Phase::Check);
            start += count;
            batches += 1;
        }
    }
    placed.end();
    add_phases(status, status::POP_PHASES, batches, t0);
    let me = shmem::my_pe();
    shmem::atomic_add(status.add(status::GOOD), good, me);
    shmem::atomic_add(status.add(status::SEQ_SUM), sum, me);
    shmem::atomic_add(status.add(status::TORN), torn & 0xFFFF_FFFF, me);
    shmem::atomic_add(status.add(status::FOREIGN), torn >> 32, me);
}

/// The raw put the queue is compared with: each group (`mode` `Warp` or `Block`) tags its
/// rows of `stage` once (`(group, 0..size)`), then puts them `items / size` times to the
/// same rows of `dst` on PE [`LOG_PE`] with `putmem_nbi` at the group's scope, and `quiet`s:
/// the queue's bytes, from the same grid, in the same pieces as its batches.
unsafe fn bench_put<E: Tagged>(dst: *mut E, items: u32, mode: u32, stage: *mut E) {
    let mode = Mode::from_raw(mode);
    let g = group(mode);
    let (src, _) = group_stage(g, mode, stage, core::ptr::null_mut());
    let (dst, _) = group_stage(g, mode, dst, core::ptr::null_mut());
    E::write_tag(src.add(g.rank as usize), g.index, g.rank);
    let bytes = g.size as usize * core::mem::size_of::<E>();
    let (dst, src) = (dst.cast::<u8>(), src.cast::<u8>().cast_const());
    if matches!(mode, Mode::Block | Mode::BlockCoop) {
        thread::sync_threads();
        for _ in 0..items / g.size {
            shmem::putmem_nbi::<Block>(dst, src, bytes, LOG_PE);
        }
    } else {
        warp::sync_warp(warp::FULL_MASK);
        for _ in 0..items / g.size {
            shmem::putmem_nbi::<Warp>(dst, src, bytes, LOG_PE);
        }
    }
    shmem::quiet();
}

/// Declares the benchmark's producer, consumer and raw-put kernels for each element type.
macro_rules! bench_kernels {
    ($($push:ident, $pop:ident, $put:ident: $t:ty;)*) => {$(
        #[doc = concat!("[`bench_push`] with elements of type `", stringify!($t), "`.")]
        ///
        /// # Safety
        ///
        /// `q` is a live queue handle; for each warp of the launch, `stage` holds 32 elements
        /// and `scratch` one word; `status` is null or a symmetric array of
        /// [`status::LEN`] words (the phases go to [`LOG_PE`]'s); `log` is null or a
        /// symmetric placement log of `2 * grid * LOG_WORDS` words.
        #[kernel]
        pub unsafe fn $push(
            q: SymQueue<$t>,
            items: u32,
            mode: u32,
            tags: u32,
            stage: *mut $t,
            scratch: *mut u64,
            status: *mut u64,
            log: *mut u64,
        ) {
            bench_push::<$t>(q, items, mode, tags, stage, scratch, status, log)
        }
        #[doc = concat!("[`bench_pop`] with elements of type `", stringify!($t), "`.")]
        ///
        /// # Safety
        ///
        /// As the push kernel, and `status` is a symmetric array of the four totals on this PE.
        #[kernel]
        pub unsafe fn $pop(
            q: SymQueue<$t>,
            items: u32,
            mode: u32,
            tags: u32,
            stage: *mut $t,
            scratch: *mut u64,
            status: *mut u64,
            log: *mut u64,
        ) {
            bench_pop::<$t>(q, items, mode, tags, stage, scratch, status, log)
        }
        #[doc = concat!("[`bench_put`] with elements of type `", stringify!($t), "`.")]
        ///
        /// # Safety
        ///
        /// `dst` and `stage` are symmetric and hold 32 elements per warp of the launch; the
        /// block size is a multiple of 32; `items` a multiple of the group's size.
        #[kernel]
        pub unsafe fn $put(dst: *mut $t, items: u32, mode: u32, stage: *mut $t) {
            bench_put::<$t>(dst, items, mode, stage)
        }
    )*};
}

bench_kernels! {
    queue_bench_push_e8, queue_bench_pop_e8, queue_bench_put_e8: u64;
    queue_bench_push_e64, queue_bench_pop_e64, queue_bench_put_e64: [u64; 8];
    queue_bench_push_e1024, queue_bench_pop_e1024, queue_bench_put_e1024: [u64; 128];
    queue_bench_push_e14336, queue_bench_pop_e14336, queue_bench_put_e14336: [u64; 1792];
}

/// Raw remote atomic throughput, for comparison with the queue: every thread does `iters`
/// `atomic_fetch_add(ctr, 1)` on PE `pe`.
///
/// # Safety
///
/// `ctr` is a symmetric, aligned `u64`; `pe` is a PE.
#[kernel]
pub unsafe fn fetch_add_bench(ctr: *mut u64, iters: u32, pe: i32) {
    for _ in 0..iters {
        shmem::atomic_fetch_add(ctr, 1u64, pe);
    }
}

/// One stage of a pipeline across PEs over per-PE queues (`q` in its mailbox form): PE 0
/// feeds `src[..n]` as `[index, value]` pairs into PE 1's queue; every other PE pops `n`
/// pairs from its own queue, adds its PE number to the value, and passes the pair to the next
/// PE's queue, except the last PE, which stores the value at `out[index]`. The block's
/// threads share each stage's `n` elements.
///
/// # Safety
///
/// Every PE launches it with `q` the same mailbox queue; `src` holds `n` elements on PE 0
/// and `out` has room for `n` on the last PE.
#[kernel]
pub unsafe fn queue_pipeline(q: SymQueue<[u64; 2]>, src: *const u64, n: u32, out: *mut u64) {
    let (me, pes) = (shmem::my_pe(), shmem::n_pes());
    let (rank, threads) = (thread::thread_rank_in_block(), thread::block_dim().size());
    if thread::block_idx_x() != 0 {
        return;
    }
    for i in (rank..n).step_by(threads as usize) {
        let pair = if me == 0 {
            [i as u64, *src.add(i as usize)]
        } else {
            let [index, value] = q.on(me).pop();
            [index, value + me as u64]
        };
        if me + 1 < pes {
            q.on(me + 1).push(pair);
        } else {
            *out.add(pair[0] as usize) = pair[1];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Tagged;

    /// Every word of `E` changed alone (each of its bytes flipped) must make `untag` refuse it.
    fn refuses_every_torn_word<E: Tagged + PartialEq + core::fmt::Debug>(words: usize) {
        let good = E::tag(7, 123_456);
        assert_eq!(good.untag(), Some((7, 123_456)));
        let bytes = core::mem::size_of::<E>();
        for byte in 0..bytes {
            let mut torn = good;
            // SAFETY: `byte` is inside `torn`, and every bit pattern of these words is valid.
            unsafe { *(&mut torn as *mut E).cast::<u8>().add(byte) ^= 0x5A };
            let untagged = torn.untag();
            // A flipped tag byte may name another key: the filler words then disagree.
            assert!(
                untagged.is_none(),
                "byte {byte} of {words} words: {untagged:?}"
            );
        }
    }

    #[test]
    fn untag_finds_a_torn_byte_anywhere() {
        refuses_every_torn_word::<[u64; 128]>(128); // 8 runs of 16
        refuses_every_torn_word::<[u64; 8]>(8); // no full run: the tail loop alone
        refuses_every_torn_word::<[u64; 21]>(21); // one run and a tail
        refuses_every_torn_word::<[u32; 3]>(3);
        refuses_every_torn_word::<[u8; 10]>(10);
    }

    /// What a warp's lanes write side by side is the element `tag` makes, and what they check
    /// side by side finds every torn byte (some lane's share differs) and nothing in a whole
    /// element: `write_tags_by_warp` and `lane_check` of the benchmark's warp paths.
    fn warp_paths_agree_with_tag<W: super::Word, const N: usize>()
    where
        [W; N]: Tagged + PartialEq + core::fmt::Debug,
    {
        let count = 5u32;
        let mut by_warp = [<[W; N]>::tag(0, 0); 5];
        for lane in 0..32 {
            // SAFETY: `by_warp` holds `count` elements.
            unsafe { <[W; N]>::write_tags_by_warp(by_warp.as_mut_ptr(), 9, 40, count, lane) };
        }
        for (e, got) in by_warp.iter().enumerate() {
            assert_eq!(*got, <[W; N]>::tag(9, 40 + e as u32), "element {e}");
            let want = 9 << 32 | (40 + e as u64);
            assert!(
                (0..32).all(|lane| super::lane_check(got, lane) == (want, 0)),
                "element {e}"
            );
        }
        let good = by_warp[2];
        for byte in 0..core::mem::size_of::<[W; N]>() {
            let mut torn = good;
            // SAFETY: `byte` is inside `torn`, and every bit pattern of these words is valid.
            unsafe { *(&mut torn as *mut [W; N]).cast::<u8>().add(byte) ^= 0x5A };
            assert!(
                (0..32).any(|lane| super::lane_check(&torn, lane).1 != 0),
                "byte {byte}: no lane saw it"
            );
        }
    }

    /// [`Tags::Once`](super::Tags::Once)'s paths: a key rewritten in place reads back, every other byte of the
    /// element is left as it was.
    fn keys_rewrite_only_the_key<E: Tagged + PartialEq + core::fmt::Debug>() {
        let mut rows = [E::tag(3, 0); 4];
        let before = rows;
        for lane in 0..32 {
            // SAFETY: `rows` holds the 3 elements written and read.
            unsafe { E::write_key(rows.as_mut_ptr(), 7, 100, 3, lane) };
        }
        for lane in 0..32 {
            // SAFETY: as above.
            let got = unsafe { E::read_key(rows.as_ptr(), 3, lane) };
            assert_eq!(got, (lane < 3).then_some((7, 100 + lane)), "lane {lane}");
        }
        assert_eq!(rows[3], before[3], "past count: untouched");
        let size = core::mem::size_of::<E>();
        let key_bytes = size.min(8);
        for e in 0..3 {
            // SAFETY: plain words, read as bytes.
            let (new, old) = unsafe {
                (
                    core::slice::from_raw_parts((&rows[e] as *const E).cast::<u8>(), size),
                    core::slice::from_raw_parts((&before[e] as *const E).cast::<u8>(), size),
                )
            };
            assert_eq!(
                new[key_bytes..],
                old[key_bytes..],
                "element {e}: filler kept"
            );
        }
    }

    #[test]
    fn key_only_writes_and_reads() {
        keys_rewrite_only_the_key::<u64>();
        keys_rewrite_only_the_key::<[u64; 128]>();
        keys_rewrite_only_the_key::<[u32; 3]>();
        keys_rewrite_only_the_key::<[u8; 10]>();
    }

    #[test]
    fn warp_tags_and_checks_match_the_element_ones() {
        warp_paths_agree_with_tag::<u64, 128>(); // 1 KiB: four words per lane
        warp_paths_agree_with_tag::<u64, 8>(); // fewer words than lanes
        warp_paths_agree_with_tag::<u32, 3>();
        warp_paths_agree_with_tag::<u8, 10>();
    }
}
