//! Kernels of the symmetric queue's example, tests and benchmark (`examples/symmetric_queue.rs`,
//! `tests/queue.rs`, `examples/queue_bench.rs`).
//!
//! Elements are [`Tagged`]: each carries its producer and sequence number, and every other
//! byte is derived from those two, so a consumer recognises a torn or foreign element. The
//! stress kernels record every element they pop in a table on PE 0 (one remote
//! compare-and-swap per element), which the host then checks for loss, duplication and
//! per-producer order.
//!
//! Kernels cannot be generic, so each element type gets its own entry points (made by the
//! macros below around one generic body).

use rshmem_device::prelude::*;

/// An element that names its producer and sequence number and can be checked whole.
pub trait Tagged: Copy + 'static {
    /// Producers that fit in the tag.
    const MAX_PRODUCERS: u32;
    /// Sequence numbers that fit in the tag.
    const MAX_SEQ: u32;
    /// The element for `(producer, seq)`.
    fn tag(producer: u32, seq: u32) -> Self;
    /// `(producer, seq)`, or `None` if any byte disagrees with them (a torn element).
    fn untag(&self) -> Option<(u32, u32)>;
}

/// The filler word `i` of the element tagged `key`: cheap, and different for every word.
#[inline(always)]
fn fill(key: u64, i: usize) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(i as u32 % 64)
        ^ (i as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)
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
        let key = (producer as u64) << 32 | seq as u64;
        let head = (64 / W::BITS) as usize;
        core::array::from_fn(|i| {
            if i < head {
                W::truncate(key >> (i as u32 * W::BITS))
            } else {
                W::truncate(fill(key, i))
            }
        })
    }
    #[inline(always)]
    fn untag(&self) -> Option<(u32, u32)> {
        let head = (64 / W::BITS) as usize;
        let key = (0..head).fold(0u64, |k, i| k | self[i].widen() << (i as u32 * W::BITS));
        let whole = (head..N).all(|i| self[i] == W::truncate(fill(key, i)));
        whole.then_some(((key >> 32) as u32, key as u32))
    }
}

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
}

impl Mode {
    /// The mode from its `u32` (as kernels receive it); unknown values are `Thread`.
    pub fn from_raw(raw: u32) -> Mode {
        match raw {
            1 => Mode::Try,
            2 => Mode::Warp,
            3 => Mode::Block,
            _ => Mode::Thread,
        }
    }

    /// Groups per PE in a launch of `grid` blocks of `block` threads.
    pub fn groups(self, grid: u32, block: u32) -> u32 {
        match self {
            Mode::Thread | Mode::Try => grid * block,
            Mode::Warp => grid * block.div_ceil(32),
            Mode::Block => grid,
        }
    }

    /// Most threads in one group.
    pub fn group_size(self, block: u32) -> u32 {
        match self {
            Mode::Thread | Mode::Try => 1,
            Mode::Warp => block.min(32),
            Mode::Block => block,
        }
    }

    /// Staging elements each group of a stress kernel uses (a push batch and a pop batch).
    pub fn stage_per_group(self, block: u32) -> u32 {
        2 * (self.group_size(block) + 3)
    }
}

/// This thread's group: its index among the PE's groups, their number, the thread's rank in
/// it and its size.
#[derive(Clone, Copy)]
struct Group {
    index: u32,
    per_pe: u32,
    rank: u32,
    size: u32,
}

fn group(mode: Mode) -> Group {
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
        Mode::Warp => Group {
            index: b * bd.div_ceil(32) + rank / 32,
            per_pe,
            rank: rank % 32,
            size: 32.min(bd - rank / 32 * 32),
        },
        Mode::Block => Group {
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
    /// Words of a status buffer.
    pub const LEN: usize = 5;
}

/// Where a stress kernel's consumers record what they popped.
#[derive(Clone, Copy)]
struct Log {
    /// `record[producer * items + seq]` on PE 0: 0, or `1 << 63 | consumer << 32 | k` where
    /// `k` is the element's position among the consumer's pops.
    record: *mut u64,
    status: *mut u64,
    items: u32,
    producers: u32,
}

impl Log {
    /// Checks `item`, popped by `consumer` as its `k`-th, and records it.
    unsafe fn note<E: Tagged>(&self, item: &E, consumer: u32, k: u32) {
        let me = shmem::my_pe();
        let bad = |which: usize| shmem::atomic_add(self.status.add(which), 1u64, me);
        match item.untag() {
            None => bad(status::TORN),
            Some((p, s)) if p >= self.producers || s >= self.items => bad(status::FOREIGN),
            Some((p, s)) => {
                let at = self
                    .record
                    .add(p as usize * self.items as usize + s as usize);
                let mark = 1 << 63 | (consumer as u64) << 32 | k as u64;
                if shmem::atomic_compare_swap(at, 0, mark, 0) != 0 {
                    bad(status::DUPLICATE);
                }
            }
        }
    }
}

/// Every producer (thread, warp or block, per `mode`) of every PE pushes `items` elements
/// tagged `(producer, 0..items)` and, alternating, pops as many; each popped element is
/// checked and recorded in `record` on PE 0. With `mailbox != 0` the queue is used in its
/// per-PE form: push to the right neighbour's queue, pop from one's own.
#[allow(clippy::too_many_arguments)]
unsafe fn stress<E: Tagged>(
    q: SymQueue<E>,
    items: u32,
    mode: u32,
    mailbox: u32,
    record: *mut u64,
    status: *mut u64,
    stage: *mut E,
    scratch: *mut u64,
) {
    let (me, n) = (shmem::my_pe(), shmem::n_pes());
    let (to, from) = if mailbox != 0 {
        (q.on((me + 1) % n), q.on(me))
    } else {
        (q, q)
    };
    let mode = Mode::from_raw(mode);
    let g = group(mode);
    let id = me as u32 * g.per_pe + g.index;
    let log = Log {
        record,
        status,
        items,
        producers: n as u32 * g.per_pe,
    };
    match mode {
        Mode::Thread => {
            for i in 0..items {
                to.push(E::tag(id, i));
                log.note(&from.pop(), id, i);
            }
        }
        Mode::Try => {
            for i in 0..items {
                let mut item = E::tag(id, i);
                while let Err(back) = to.try_push(item) {
                    item = back;
                }
                let got = loop {
                    if let Some(got) = from.try_pop() {
                        break got;
                    }
                };
                log.note(&got, id, i);
            }
        }
        Mode::Warp | Mode::Block => {
            // Groups that push into one queue: all of them, or one PE's (mailboxes).
            let feeders = if mailbox != 0 { 1 } else { n as u32 } * g.per_pe;
            let batch = (g.size + 3).min((to.capacity() as u32 / feeders).max(1));
            if mode == Mode::Warp {
                stress_batched::<Warp, E>(to, from, id, g, batch, log, stage, scratch)
            } else {
                stress_batched::<Block, E>(to, from, id, g, batch, log, stage, scratch)
            }
        }
    }
}

/// [`stress`] for a group: rounds of one `push_batch` and one `pop_batch` of `batch`
/// elements, each member tagging and checking its share. Alternating groups need
/// `batch * groups <= capacity` (or `batch == 1`): a group holds its whole batch before it
/// pops, so with more, every group could wait in a push for room only pops would make.
#[allow(clippy::too_many_arguments)]
unsafe fn stress_batched<S: Scope, E: Tagged>(
    to: SymQueue<E>,
    from: SymQueue<E>,
    id: u32,
    g: Group,
    batch: u32,
    log: Log,
    stage: *mut E,
    scratch: *mut u64,
) {
    let mode = if S::KIND == shmem::ScopeKind::Warp {
        Mode::Warp
    } else {
        Mode::Block
    };
    let stride = mode.stage_per_group(thread::block_dim().size()) as usize;
    let (push, pop) = (
        stage.add(g.index as usize * stride),
        stage.add(g.index as usize * stride + stride / 2),
    );
    let scratch = scratch.add(g.index as usize);
    let mut start = 0;
    while start < log.items {
        let count = batch.min(log.items - start);
        for j in (g.rank..count).step_by(g.size as usize) {
            *push.add(j as usize) = E::tag(id, start + j);
        }
        to.push_batch::<S>(push, count as usize, scratch);
        from.pop_batch::<S>(pop, count as usize, scratch);
        for j in (g.rank..count).step_by(g.size as usize) {
            log.note(&*pop.add(j as usize), id, start + j);
        }
        start += count;
    }
}

/// Declares the stress kernel for each element type.
macro_rules! stress_kernels {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("[`stress`] with elements of type `", stringify!($t), "`.")]
        ///
        /// # Safety
        ///
        /// Every PE launches it with the same `items`, `mode` and `mailbox`; `q` is a live
        /// queue handle; `record`, `status`, `stage` and `scratch` are symmetric and sized for
        /// `items` and `mode` as [`stress`] uses them.
        #[allow(clippy::too_many_arguments)]
        #[kernel]
        pub unsafe fn $name(
            q: SymQueue<$t>,
            items: u32,
            mode: u32,
            mailbox: u32,
            record: *mut u64,
            status: *mut u64,
            stage: *mut $t,
            scratch: *mut u64,
        ) {
            stress::<$t>(q, items, mode, mailbox, record, status, stage, scratch)
        }
    )*};
}

stress_kernels! {
    queue_stress_u32: u32;
    queue_stress_e10: [u8; 10];
    queue_stress_e12: [u32; 3];
    queue_stress_e1024: [u64; 128];
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

/// Thread 0 `try_push`es `values[..n]` until one is refused, then `try_pop`s until the queue
/// is empty, into `out`. `report` = [pushed, popped, len when full, len when emptied].
///
/// # Safety
///
/// `q` is a live queue handle; `values` holds `n` elements; `out` has room for the queue's
/// capacity and `report` for four `u64`s.
#[kernel]
pub unsafe fn queue_try_roundtrip(
    q: SymQueue<i32>,
    values: *const i32,
    n: u32,
    out: *mut i32,
    report: *mut u64,
) {
    if thread::index_1d() != 0 {
        return;
    }
    let mut pushed = 0;
    while pushed < n as usize && q.try_push(*values.add(pushed)).is_ok() {
        pushed += 1;
    }
    let full = q.len();
    let mut popped = 0;
    while let Some(v) = q.try_pop() {
        *out.add(popped) = v;
        popped += 1;
    }
    for (i, v) in [pushed as u64, popped as u64, full, q.len()]
        .into_iter()
        .enumerate()
    {
        *report.add(i) = v;
    }
}

/// Benchmark producer: each group (`mode` `Thread` or `Warp`) of this PE pushes `items`
/// elements tagged `(group, 0..items)`; warps push batches of 32 through `stage` (32 elements
/// per warp) and `scratch` (one word per warp).
unsafe fn bench_push<E: Tagged>(
    q: SymQueue<E>,
    items: u32,
    mode: u32,
    stage: *mut E,
    scratch: *mut u64,
) {
    let mode = Mode::from_raw(mode);
    let g = group(mode);
    if mode != Mode::Warp {
        for i in 0..items {
            q.push(E::tag(g.index, i));
        }
        return;
    }
    let (stage, scratch) = (
        stage.add(g.index as usize * 32),
        scratch.add(g.index as usize),
    );
    let mut start = 0;
    while start < items {
        let count = g.size.min(items - start);
        if g.rank < count {
            *stage.add(g.rank as usize) = E::tag(g.index, start + g.rank);
        }
        q.push_batch::<Warp>(stage, count as usize, scratch);
        start += count;
    }
}

/// Benchmark consumer: each group pops `items` elements and checks them; totals go to
/// `status` (good, torn, foreign, sum of sequence numbers).
unsafe fn bench_pop<E: Tagged>(
    q: SymQueue<E>,
    items: u32,
    mode: u32,
    stage: *mut E,
    scratch: *mut u64,
    status: *mut u64,
) {
    let mode = Mode::from_raw(mode);
    let g = group(mode);
    let (mut good, mut torn, mut sum) = (0u64, 0u64, 0u64);
    let mut check = |item: &E| match item.untag() {
        Some((_, s)) if s < items => {
            good += 1;
            sum += s as u64;
        }
        Some(_) => torn += 1 << 32, // foreign: counted apart, in the high half
        None => torn += 1,
    };
    if mode != Mode::Warp {
        for _ in 0..items {
            check(&q.pop());
        }
    } else {
        let (stage, scratch) = (
            stage.add(g.index as usize * 32),
            scratch.add(g.index as usize),
        );
        let mut start = 0;
        while start < items {
            let count = g.size.min(items - start);
            q.pop_batch::<Warp>(stage, count as usize, scratch);
            if g.rank < count {
                check(&*stage.add(g.rank as usize));
            }
            start += count;
        }
    }
    let me = shmem::my_pe();
    shmem::atomic_add(status.add(status::GOOD), good, me);
    shmem::atomic_add(status.add(status::SEQ_SUM), sum, me);
    shmem::atomic_add(status.add(status::TORN), torn & 0xFFFF_FFFF, me);
    shmem::atomic_add(status.add(status::FOREIGN), torn >> 32, me);
}

/// Declares the benchmark's producer and consumer kernels for each element type.
macro_rules! bench_kernels {
    ($($push:ident, $pop:ident: $t:ty;)*) => {$(
        #[doc = concat!("[`bench_push`] with elements of type `", stringify!($t), "`.")]
        ///
        /// # Safety
        ///
        /// `q` is a live queue handle; for each warp of the launch, `stage` holds 32 elements
        /// and `scratch` one word.
        #[kernel]
        pub unsafe fn $push(q: SymQueue<$t>, items: u32, mode: u32, stage: *mut $t, scratch: *mut u64) {
            bench_push::<$t>(q, items, mode, stage, scratch)
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
            stage: *mut $t,
            scratch: *mut u64,
            status: *mut u64,
        ) {
            bench_pop::<$t>(q, items, mode, stage, scratch, status)
        }
    )*};
}

bench_kernels! {
    queue_bench_push_e8, queue_bench_pop_e8: u64;
    queue_bench_push_e64, queue_bench_pop_e64: [u64; 8];
    queue_bench_push_e1024, queue_bench_pop_e1024: [u64; 128];
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
