//! The queue's protocol over abstract memory operations: [`RingMemory`] says what each
//! operation must guarantee, and the functions here are the algorithm, written once. The
//! device handle [`super::SymQueue`] implements `RingMemory` with SHMEM calls; the loom model
//! in `shmem-device/tests/queue_loom.rs` implements it with loom's atomics and cells, so the
//! model checker runs this very code, not a copy of it.
//!
//! The algorithm is Vyukov's bounded MPMC queue with tickets (the blocking form of Rigtorp's
//! `MPMCQueue`): every slot `s` has a 64-bit sequence number that says whose turn it is.
//! Ticket `t` uses slot `t mod capacity`; the slot is free for ticket `t`'s producer when its
//! sequence is [`free_for`]`(t)` (`2t`), and holds ticket `t`'s element when it is
//! [`holds`]`(t)` (`2t + 1`); the consumer of ticket `t` sets it to `free_for(t + capacity)`,
//! freeing it for the producer of the next round. Elements move in [`move_tickets`], by a
//! [`Crew`]: the thread alone, or a warp whose lanes copy each element's words side by side and
//! publish up to [`WINDOW`] elements with one fence. Why this is correct, and where each
//! ordering comes from, is in the [module documentation](super).

use super::layout::{free_for, holds, slot_of};
use super::phases::{Lap, Phase};

/// One of the two ticket counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Producers' counter: the next ticket to push.
    Tail,
    /// Consumers' counter: the next ticket to pop.
    Head,
}

/// Which operation waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A blocking push (also one element of a batched push).
    Push,
    /// A blocking pop (also one element of a batched pop).
    Pop,
}

impl Op {
    /// `"push"` or `"pop"`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Push => "push",
            Op::Pop => "pop",
        }
    }
}

/// Why a wait for a slot ended without the slot becoming ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallKind {
    /// The debug bound ([`RingMemory::max_spins`]) was reached.
    Bound,
    /// The slot's sequence number is past the one awaited, which no correct use can cause
    /// (the queue's memory was overwritten, or two queues share it).
    Overtaken,
}

/// A wait that did not end: everything a message needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// What waited.
    pub op: Op,
    /// Its ticket.
    pub ticket: u64,
    /// The ticket's slot.
    pub slot: u64,
    /// The sequence number awaited.
    pub wanted: u64,
    /// The one last seen.
    pub seen: u64,
    /// Polls made.
    pub spins: u64,
    /// Why it ended.
    pub kind: StallKind,
}

/// What a sequence number says, for messages: `("is free for ticket", t)` or
/// `("holds ticket", t)`.
pub fn meaning(seq: u64) -> (&'static str, u64) {
    if seq & 1 == 0 {
        ("is free for ticket", seq / 2)
    } else {
        ("holds ticket", seq / 2)
    }
}

/// A group of threads that moves elements together: the thread alone ([`Alone`]), or a warp,
/// whose lanes copy each element's words side by side. Every member calls every operation of
/// the protocol below with the same arguments.
///
/// # Safety
///
/// [`sync`](Crew::sync) and [`prefix`](Crew::prefix) must be barriers of all members: every
/// member's memory accesses before one happen before every member's accesses after it (as
/// `bar.warp.sync` orders them). The protocol relies on it where one member's fence and store
/// publish the words every member copied, and where the words every member copies were
/// acquired by the member that polled their slot.
pub unsafe trait Crew {
    /// This member's rank, `0..size()`.
    fn rank(&self) -> u32;
    /// Members in the crew, at least 1.
    fn size(&self) -> u32;
    /// A barrier of the crew.
    fn sync(&self);
    /// Each member passes its own `pred`; every member gets the number of members from rank
    /// 0 on whose `pred` holds, up to the first whose does not. A barrier, like
    /// [`sync`](Crew::sync).
    fn prefix(&self, pred: bool) -> u32;
}

/// The crew of one thread: per-thread operations.
#[derive(Clone, Copy, Debug, Default)]
pub struct Alone;

// SAFETY: one member: program order is all the ordering a barrier of one has to give.
unsafe impl Crew for Alone {
    #[inline(always)]
    fn rank(&self) -> u32 {
        0
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        1
    }
    #[inline(always)]
    fn sync(&self) {}
    #[inline(always)]
    fn prefix(&self, pred: bool) -> u32 {
        pred as u32
    }
}

/// The memory a ring lives in, as the protocol needs it.
///
/// Orderings are named as in C++/Rust atomics; "atomic" means atomic with respect to every
/// other operation on the same word from any thread of any PE.
///
/// # Safety
///
/// Implementations must provide exactly what each method states: the protocol's proof (in the
/// module documentation) relies on nothing else, and nothing less.
pub unsafe trait RingMemory {
    /// The element type.
    type Item: Copy;
    /// Per-wait backoff state.
    type Backoff: Default;

    /// Slots in the ring, at least 1.
    fn capacity(&self) -> u64;
    /// Atomically adds `n` to a counter and returns the old value (relaxed is enough).
    fn fetch_add(&self, counter: Counter, n: u64) -> u64;
    /// Atomically reads a counter (relaxed).
    fn load(&self, counter: Counter) -> u64;
    /// Atomically replaces a counter by `new` if it equals `cond`; returns the old value
    /// (relaxed).
    fn compare_swap(&self, counter: Counter, cond: u64, new: u64) -> u64;
    /// Atomically reads slot `slot`'s sequence number (relaxed).
    fn load_seq(&self, slot: u64) -> u64;
    /// Atomically writes slot `slot`'s sequence number (relaxed: the protocol puts a
    /// [`fence`] before it where it needs release).
    ///
    /// [`fence`]: RingMemory::fence
    fn store_seq(&self, slot: u64, seq: u64);
    /// Copies this member's share of `src[..count]` into the slots of tickets
    /// `first..first + count` (each member of `crew` calls it; together they copy every byte
    /// once). Plain accesses: nothing is ordered.
    ///
    /// # Safety
    ///
    /// The crew must own those slots (it holds their tickets and saw them free, then fenced);
    /// `count <= capacity`; `src` readable for `count` elements by every member.
    unsafe fn put<C: Crew>(&self, crew: &C, first: u64, src: *const Self::Item, count: u64);
    /// Copies this member's share of the elements in the slots of tickets
    /// `first..first + count` into `dst[..count]`, as [`put`](RingMemory::put) the other way.
    ///
    /// # Safety
    ///
    /// The crew must own those slots (it holds the tickets whose elements they hold, saw that,
    /// and fenced); `count <= capacity`; `dst` writable for `count` elements by every member.
    unsafe fn get<C: Crew>(&self, crew: &C, first: u64, dst: *mut Self::Item, count: u64);
    /// A full fence (acquire and release) for this thread's accesses to the ring.
    fn fence(&self);
    /// The debug bound on polls per wait; 0 for none.
    fn max_spins(&self) -> u64;
    /// Waits a little before polling again (`spins` polls so far).
    fn pause(&self, backoff: &mut Self::Backoff, spins: u64, what: &dyn Fn() -> Stall);
    /// Reports a wait that cannot end and stops the calling thread.
    fn stalled(&self, stall: Stall) -> !;
}

/// Tickets a crew moves before it publishes them (or frees their slots) with one fence.
pub const WINDOW: u64 = 32;

/// The sequence number ticket `t`'s slot shows when it is `op`'s turn there.
#[inline(always)]
fn wanted(op: Op, t: u64) -> u64 {
    match op {
        Op::Push => free_for(t),
        Op::Pop => holds(t),
    }
}

/// The sequence number ticket `t`'s slot gets when `op` is done with it.
#[inline(always)]
fn after(op: Op, t: u64, capacity: u64) -> u64 {
    match op {
        Op::Push => holds(t),
        Op::Pop => free_for(t + capacity),
    }
}

/// Polls slot `slot` until its sequence number is `wanted`, then fences (acquire).
fn await_seq<M: RingMemory>(m: &M, op: Op, ticket: u64, slot: u64, wanted: u64) {
    let mut backoff = M::Backoff::default();
    let mut spins = 0u64;
    loop {
        let seen = m.load_seq(slot);
        if seen == wanted {
            break;
        }
        spins += 1;
        let stall = |kind| Stall {
            op,
            ticket,
            slot,
            wanted,
            seen,
            spins,
            kind,
        };
        // Sequence numbers only grow, and only this ticket's holder moves this one past
        // `wanted`: a larger value means the memory is not (only) this queue's.
        if (seen.wrapping_sub(wanted) as i64) > 0 {
            m.stalled(stall(StallKind::Overtaken));
        }
        if spins == m.max_spins() {
            m.stalled(stall(StallKind::Bound));
        }
        m.pause(&mut backoff, spins, &|| stall(StallKind::Bound));
    }
    m.fence();
}

/// Moves `n` elements between `data[..n]` and the slots of tickets `first..first + n`, which
/// the crew holds (pushes with `op` = [`Op::Push`], pops with [`Op::Pop`]), in ticket order.
///
/// Each round, member `j` polls the slot of the `j`-th next ticket; the crew copies the
/// elements of the ready ones up to the first that is not (all members' words side by side),
/// and after [`WINDOW`] elements, or at the end, one fence per member publishes them (pushes)
/// or frees their slots (pops), member `j` storing the `j`-th sequence number. When no slot is
/// ready the crew first publishes what it holds, then member 0 waits for the next ticket's
/// slot alone: a crew never waits while it holds an element someone else waits for, which is
/// what makes any number of crews, of any size, deadlock-free on any capacity.
///
/// # Safety
///
/// `m` must be a ring set up as [`super::layout::initial_words`] describes; the crew must
/// hold tickets `first..first + n` (taken together from the tail for pushes, the head for
/// pops) and use each once; `data` must be readable (pushes) or writable (pops) for `n`
/// elements by every member.
pub unsafe fn move_tickets<M: RingMemory, C: Crew>(
    m: &M,
    crew: &C,
    op: Op,
    first: u64,
    data: *mut M::Item,
    n: u64,
) {
    let capacity = m.capacity();
    let window = WINDOW.min(capacity);
    let (rank, size) = (crew.rank() as u64, crew.size() as u64);
    // Tickets `first..first + moved` are copied; the last `held` of them not yet published.
    let (mut moved, mut held) = (0u64, 0u64);
    let mut lap = Lap::start();
    while moved < n {
        if held == window {
            publish(m, crew, op, first + moved - held, held);
            held = 0;
            lap.lap(Phase::Publish);
        }
        let room = size.min(n - moved).min(window - held);
        let t = first + moved + rank;
        let ready = rank < room && m.load_seq(slot_of(t, capacity)) == wanted(op, t);
        // Acquire for the slot this member saw ready, before the barrier in `prefix` hands
        // it to the members that copy its words.
        m.fence();
        let mut ready_run = crew.prefix(ready) as u64;
        lap.lap(Phase::Poll);
        if ready_run == 0 {
            if held > 0 {
                publish(m, crew, op, first + moved - held, held);
                held = 0;
                lap.lap(Phase::Publish);
            }
            let t = first + moved;
            if rank == 0 {
                await_seq(m, op, t, slot_of(t, capacity), wanted(op, t));
            }
            crew.sync();
            ready_run = 1;
            lap.lap(Phase::Wait);
        }
        // SAFETY: the crew holds these tickets, their slots were seen ready and fenced (the
        // caller's contract and the lines above); `data` holds `n` elements.
        unsafe {
            match op {
                Op::Push => m.put(crew, first + moved, data.add(moved as usize), ready_run),
                Op::Pop => m.get(crew, first + moved, data.add(moved as usize), ready_run),
            }
        }
        lap.lap(Phase::Copy);
        moved += ready_run;
        held += ready_run;
    }
    publish(m, crew, op, first + moved - held, held);
    lap.lap(Phase::Publish);
}

/// Publishes the `count` elements of tickets `first..` (pushes) or frees their slots (pops):
/// after a barrier, every member fences (release: every member's copies, ordered before it by
/// the barrier, are complete) and stores its share of the sequence numbers.
fn publish<M: RingMemory, C: Crew>(m: &M, crew: &C, op: Op, first: u64, count: u64) {
    if count == 0 {
        return;
    }
    crew.sync();
    m.fence();
    let capacity = m.capacity();
    let mut j = crew.rank() as u64;
    while j < count {
        let t = first + j;
        m.store_seq(slot_of(t, capacity), after(op, t, capacity));
        j += crew.size() as u64;
    }
}

/// Pushes `*item`, waiting while the queue is full.
///
/// # Safety
///
/// As [`move_tickets`], for the calling thread alone and one element.
#[inline(always)]
pub unsafe fn push<M: RingMemory>(m: &M, item: &M::Item) {
    let t = m.fetch_add(Counter::Tail, 1);
    // SAFETY: the ticket is ours; `item` is one element.
    unsafe {
        move_tickets(
            m,
            &Alone,
            Op::Push,
            t,
            (item as *const M::Item).cast_mut(),
            1,
        )
    }
}

/// Pops an element into `*out`, waiting while the queue is empty.
///
/// # Safety
///
/// As [`push`]; `out` writable for one element.
#[inline(always)]
pub unsafe fn pop<M: RingMemory>(m: &M, out: *mut M::Item) {
    let h = m.fetch_add(Counter::Head, 1);
    // SAFETY: the ticket is ours; `out` holds one element.
    unsafe { move_tickets(m, &Alone, Op::Pop, h, out, 1) }
}

/// Pushes `*item` if a slot is free now; returns whether it did.
///
/// # Safety
///
/// As [`push`].
pub unsafe fn try_push<M: RingMemory>(m: &M, item: &M::Item) -> bool {
    let mut retry = Retry::<M>::new(Op::Push);
    loop {
        let t = m.load(Counter::Tail);
        let s = slot_of(t, m.capacity());
        let seq = m.load_seq(s);
        match seq.wrapping_sub(free_for(t)) as i64 {
            // The slot is free for ticket `t`: claim the ticket, unless another producer
            // took it first (then retry below).
            0 if m.compare_swap(Counter::Tail, t, t + 1) == t => {
                m.fence();
                // SAFETY: the swap made ticket `t` ours, and its slot was free.
                unsafe { m.put(&Alone, t, item, 1) };
                // Release: the element is complete before its sequence number says so.
                m.fence();
                m.store_seq(s, holds(t));
                return true;
            }
            // The slot still holds (or is being emptied of) the element `capacity` tickets
            // back: the queue is full.
            d if d < 0 => return false,
            // Another producer took ticket `t`: try the next one.
            _ => {}
        }
        retry.pause(m, t, s, seq);
    }
}

/// Pops an element into `*out` if one is ready now; returns whether it did.
///
/// # Safety
///
/// As [`pop`].
pub unsafe fn try_pop<M: RingMemory>(m: &M, out: *mut M::Item) -> bool {
    let mut retry = Retry::<M>::new(Op::Pop);
    loop {
        let h = m.load(Counter::Head);
        let s = slot_of(h, m.capacity());
        let seq = m.load_seq(s);
        match seq.wrapping_sub(holds(h)) as i64 {
            // Ticket `h`'s element is there: claim the ticket, unless another consumer took
            // it first (then retry below).
            0 if m.compare_swap(Counter::Head, h, h + 1) == h => {
                m.fence();
                // SAFETY: the swap made ticket `h` ours, its element is in the slot, and we
                // fenced after seeing it.
                unsafe { m.get(&Alone, h, out, 1) };
                // Release: the element is read before the slot is freed.
                m.fence();
                m.store_seq(s, free_for(h + m.capacity()));
                return true;
            }
            // Ticket `h`'s element is not there yet (or `h` belongs to a blocked consumer
            // already): nothing to pop now.
            d if d < 0 => return false,
            // Another consumer took ticket `h`: try the next one.
            _ => {}
        }
        retry.pause(m, h, s, seq);
    }
}

/// Backoff between the attempts of a non-blocking operation. They retry only after another
/// thread took the ticket they tried (so the queue made progress), and are never bounded; the
/// pause still matters, to let the others' writes arrive instead of rereading stale values.
struct Retry<M: RingMemory> {
    op: Op,
    backoff: M::Backoff,
    spins: u64,
}

impl<M: RingMemory> Retry<M> {
    fn new(op: Op) -> Self {
        Retry {
            op,
            backoff: M::Backoff::default(),
            spins: 0,
        }
    }

    fn pause(&mut self, m: &M, ticket: u64, slot: u64, seen: u64) {
        self.spins += 1;
        let (op, spins) = (self.op, self.spins);
        m.pause(&mut self.backoff, spins, &|| Stall {
            op,
            ticket,
            slot,
            wanted: seen,
            seen,
            spins,
            kind: StallKind::Bound,
        });
    }
}

/// Elements in the ring at one moment (tail minus head, clamped to `0..=capacity`); a hint
/// only, since both move while it is read.
pub fn len<M: RingMemory>(m: &M) -> u64 {
    let head = m.load(Counter::Head);
    let tail = m.load(Counter::Tail);
    (tail.wrapping_sub(head) as i64).clamp(0, m.capacity() as i64) as u64
}
