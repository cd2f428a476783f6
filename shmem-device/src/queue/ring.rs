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
//! freeing it for the producer of the next round. Why this is correct, and where each ordering
//! comes from, is in the [module documentation](super).

use super::layout::{free_for, holds, slot_of};

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
    /// Atomically writes slot `slot`'s sequence number (relaxed: callers put a [`fence`]
    /// before it where they need release).
    ///
    /// [`fence`]: RingMemory::fence
    fn store_seq(&self, slot: u64, seq: u64);
    /// Writes `item` into slot `slot`, then sets the slot's sequence number to `seq`, such that
    /// whoever sees `seq` and then fences sees the whole item (release).
    ///
    /// # Safety
    ///
    /// The caller must own the slot: it holds the slot's ticket and saw it free.
    unsafe fn write(&self, slot: u64, item: &Self::Item, seq: u64);
    /// Reads slot `slot`'s element.
    ///
    /// # Safety
    ///
    /// The caller must own the slot: it holds the ticket whose element the slot holds, saw
    /// that, and fenced after seeing it.
    unsafe fn read(&self, slot: u64) -> Self::Item;
    /// A full fence (acquire and release) for this thread's accesses to the ring.
    fn fence(&self);
    /// The debug bound on polls per wait; 0 for none.
    fn max_spins(&self) -> u64;
    /// Waits a little before polling again (`spins` polls so far).
    fn pause(&self, backoff: &mut Self::Backoff, spins: u64, what: &dyn Fn() -> Stall);
    /// Reports a wait that cannot end and stops the calling thread.
    fn stalled(&self, stall: Stall) -> !;
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

/// Pushes `item`, waiting while the queue is full.
///
/// # Safety
///
/// `m` must be a ring set up as [`super::layout::initial_words`] describes.
pub unsafe fn push<M: RingMemory>(m: &M, item: M::Item) {
    let t = m.fetch_add(Counter::Tail, 1);
    // SAFETY: the ticket is ours.
    unsafe { push_ticket(m, t, item) }
}

/// Pops an element, waiting while the queue is empty.
///
/// # Safety
///
/// As [`push`].
pub unsafe fn pop<M: RingMemory>(m: &M) -> M::Item {
    let h = m.fetch_add(Counter::Head, 1);
    // SAFETY: the ticket is ours.
    unsafe { pop_ticket(m, h) }
}

/// Pushes `item` as ticket `t`: waits for its slot to be free, writes and publishes it.
///
/// # Safety
///
/// As [`push`], and `t` must be a producer ticket the caller took from the tail (alone, or
/// as part of a batch's reservation), used once.
pub unsafe fn push_ticket<M: RingMemory>(m: &M, t: u64, item: M::Item) {
    let s = slot_of(t, m.capacity());
    await_seq(m, Op::Push, t, s, free_for(t));
    // SAFETY: ticket `t` is ours and its slot is free.
    unsafe { m.write(s, &item, holds(t)) };
}

/// Pops ticket `h`'s element: waits for it, reads it and frees the slot.
///
/// # Safety
///
/// As [`push_ticket`], for a consumer ticket taken from the head.
pub unsafe fn pop_ticket<M: RingMemory>(m: &M, h: u64) -> M::Item {
    let s = slot_of(h, m.capacity());
    await_seq(m, Op::Pop, h, s, holds(h));
    // SAFETY: ticket `h` is ours, its element is in the slot, and `await_seq` fenced.
    let item = unsafe { m.read(s) };
    // Release: the read above is complete before the next round's producer can see the slot
    // free and overwrite it.
    m.fence();
    m.store_seq(s, free_for(h + m.capacity()));
    item
}

/// Pushes `item` if a slot is free now; gives it back otherwise.
///
/// # Safety
///
/// As [`push`].
pub unsafe fn try_push<M: RingMemory>(m: &M, item: M::Item) -> Result<(), M::Item> {
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
                unsafe { m.write(s, &item, holds(t)) };
                return Ok(());
            }
            // The slot still holds (or is being emptied of) the element `capacity` tickets
            // back: the queue is full.
            d if d < 0 => return Err(item),
            // Another producer took ticket `t`: try the next one.
            _ => {}
        }
        retry.pause(m, t, s, seq);
    }
}

/// Pops an element if one is ready now.
///
/// # Safety
///
/// As [`push`].
pub unsafe fn try_pop<M: RingMemory>(m: &M) -> Option<M::Item> {
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
                let item = unsafe { m.read(s) };
                m.fence();
                m.store_seq(s, free_for(h + m.capacity()));
                return Some(item);
            }
            // Ticket `h`'s element is not there yet (or `h` belongs to a blocked consumer
            // already): nothing to pop now.
            d if d < 0 => return None,
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
