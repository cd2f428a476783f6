//! Model-checks the symmetric queue's protocol with loom: every interleaving (up to a
//! preemption bound) and every reordering the C++/Rust memory model allows.
//!
//! The device code cannot run under loom (its memory operations are SHMEM calls), but its
//! algorithm is written once, generic over `rshmem_device::queue::ring::RingMemory` and
//! `Crew`. [`Model`] implements the first with loom's atomics and cells at the weakest
//! orderings the GPU gives (see `rshmem_device::queue`): relaxed counter and sequence atomics,
//! and the SHMEM `fence` as an acquire-release fence (weaker than the `fence.sc.sys` the GPU
//! runs: passing here, the protocol needs no sequentially consistent fence); [`Pair`]
//! implements a crew of two threads (what a warp is on the GPU) with a barrier of loom atomics.
//! So loom checks the real `push`/`pop`/`try_push`/`try_pop`/`move_tickets` code, not a copy,
//! and loom's cells catch any part of an element read while it is being written (a torn
//! element), including parts one member of a crew wrote and another published.
//!
//! Two producers and one consumer, capacities 1 to 3, blocking, non-blocking and
//! batch-reserved pushes, tickets crossing 2^32, and crews of two that push or pop together;
//! preemption bound 2, or 1 where two threads poll at once (`LOOM_MAX_PREEMPTIONS` overrides).
//! The whole file runs in seconds.

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU64, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use rshmem_device::queue::layout::{initial_words, slot_of, HEAD, SEQ, TAIL};
use rshmem_device::queue::ring::{self, Alone, Counter, Crew, Op, RingMemory, Stall};

/// An element: (producer, sequence number), two parts a crew's members copy apart.
type Item = [u32; 2];

/// A ring in loom's memory.
struct Model {
    tail: AtomicU64,
    head: AtomicU64,
    seqs: Vec<AtomicU64>,
    slots: Vec<[UnsafeCell<u32>; 2]>,
    capacity: u64,
    /// The control for the tests that must fail: `false` turns `fence` into nothing.
    fences: bool,
}

// SAFETY: the slots are accessed as the protocol allows, which is what loom checks.
unsafe impl Sync for Model {}

impl Model {
    fn new(capacity: u64, first_ticket: u64, fences: bool) -> Self {
        let words: Vec<u64> = initial_words(capacity, first_ticket, "loom").collect();
        Model {
            tail: AtomicU64::new(words[TAIL]),
            head: AtomicU64::new(words[HEAD]),
            seqs: words[SEQ..].iter().map(|&w| AtomicU64::new(w)).collect(),
            slots: (0..capacity)
                .map(|_| [UnsafeCell::new(0), UnsafeCell::new(0)])
                .collect(),
            capacity,
            fences,
        }
    }

    fn counter(&self, c: Counter) -> &AtomicU64 {
        match c {
            Counter::Tail => &self.tail,
            Counter::Head => &self.head,
        }
    }

    /// Calls `f(slot, part, element)` for this member's parts of `count` elements from
    /// ticket `first`: parts `rank, rank + size, ...` of the run, as the device spreads words.
    fn each_part<C: Crew>(
        &self,
        crew: &C,
        first: u64,
        count: u64,
        mut f: impl FnMut(usize, usize, usize),
    ) {
        let mut k = crew.rank() as u64;
        while k < 2 * count {
            let (e, part) = (k / 2, (k % 2) as usize);
            f(slot_of(first + e, self.capacity) as usize, part, e as usize);
            k += crew.size() as u64;
        }
    }
}

// SAFETY: each method has (at most) the guarantee the trait asks for: relaxed atomics, plain
// copies, a fence that is a real fence (unless `fences` is off, on purpose).
unsafe impl RingMemory for Model {
    type Item = Item;
    type Backoff = ();

    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn fetch_add(&self, c: Counter, n: u64) -> u64 {
        self.counter(c).fetch_add(n, Ordering::Relaxed)
    }
    fn load(&self, c: Counter) -> u64 {
        self.counter(c).load(Ordering::Relaxed)
    }
    fn compare_swap(&self, c: Counter, cond: u64, new: u64) -> u64 {
        match self
            .counter(c)
            .compare_exchange(cond, new, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(v) | Err(v) => v,
        }
    }
    fn load_seq(&self, slot: u64) -> u64 {
        self.seqs[slot as usize].load(Ordering::Relaxed)
    }
    fn store_seq(&self, slot: u64, seq: u64) {
        self.seqs[slot as usize].store(seq, Ordering::Relaxed)
    }
    unsafe fn put<C: Crew>(&self, crew: &C, first: u64, src: *const Item, count: u64) {
        self.each_part(crew, first, count, |slot, part, e| {
            // SAFETY: `src` holds `count` elements (the caller's contract).
            let v = unsafe { (*src.add(e))[part] };
            // SAFETY: loom checks that nobody else accesses the slot's part now.
            self.slots[slot][part].with_mut(|p| unsafe { *p = v });
        })
    }
    unsafe fn get<C: Crew>(&self, crew: &C, first: u64, dst: *mut Item, count: u64) {
        self.each_part(crew, first, count, |slot, part, e| {
            // SAFETY: loom checks that nobody writes the slot's part now.
            let v = self.slots[slot][part].with(|p| unsafe { *p });
            // SAFETY: `dst` holds `count` elements (the caller's contract).
            unsafe { (*dst.add(e))[part] = v };
        })
    }
    fn fence(&self) {
        if self.fences {
            fence(Ordering::AcqRel)
        }
    }
    fn max_spins(&self) -> u64 {
        0
    }
    fn pause(&self, _: &mut (), _: u64, _: &dyn Fn() -> Stall) {
        thread::yield_now()
    }
    fn stalled(&self, stall: Stall) -> ! {
        panic!("stalled: {stall:?}")
    }
}

/// The barrier two [`Pair`] members share: arrivals in this round, rounds completed, and the
/// votes of this round and of the last completed one. A mutex and a condition variable, not a
/// spin: loom then never schedules a member that waits, which keeps the models small.
#[derive(Default)]
struct Meeting {
    arrived: u32,
    round: u64,
    votes: [bool; 2],
    last_votes: [bool; 2],
}

/// What the two members of a [`Pair`] share.
#[derive(Default)]
struct PairShared {
    meeting: Mutex<Meeting>,
    all_here: Condvar,
    first: AtomicU64,
}

/// One member of a crew of two threads, as a warp's lanes are on the GPU.
struct Pair {
    rank: u32,
    shared: Arc<PairShared>,
}

impl Pair {
    /// The two members of a new crew.
    fn new() -> [Pair; 2] {
        let shared = Arc::new(PairShared::default());
        [0, 1].map(|rank| Pair {
            rank,
            shared: shared.clone(),
        })
    }

    /// Meets the other member with this member's vote; returns both votes of the round.
    fn meet(&self, vote: bool) -> [bool; 2] {
        let mut m = self.shared.meeting.lock().unwrap();
        m.votes[self.rank as usize] = vote;
        m.arrived += 1;
        if m.arrived == 2 {
            m.arrived = 0;
            m.round += 1;
            m.last_votes = m.votes;
            self.shared.all_here.notify_all();
        } else {
            let round = m.round;
            while m.round == round {
                m = self.shared.all_here.wait(m).unwrap();
            }
        }
        // Rewritten only when both members have met again, so after both read it.
        m.last_votes
    }

    /// Member 0 takes `n` tickets from `counter`; both get the first (as a batch's leader
    /// hands it out through `scratch`).
    fn reserve(&self, q: &Model, counter: Counter, n: u64) -> u64 {
        if self.rank == 0 {
            let first = q.fetch_add(counter, n);
            self.shared.first.store(first, Ordering::Relaxed);
        }
        self.sync();
        self.shared.first.load(Ordering::Relaxed)
    }
}

// SAFETY: `meet` locks and unlocks one mutex, so everything either member did before it
// happens before what both do after; both members get the same votes.
unsafe impl Crew for Pair {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        2
    }
    fn sync(&self) {
        self.meet(false);
    }
    fn prefix(&self, pred: bool) -> u32 {
        match self.meet(pred) {
            [false, _] => 0,
            [true, false] => 1,
            [true, true] => 2,
        }
    }
}

/// How producers push and the consumer pops.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Style {
    /// `push` / `pop`.
    Blocking,
    /// `try_push` / `try_pop`, retried.
    Try,
    /// Producer 0 reserves all its tickets with one `fetch_add` and moves them alone with
    /// `move_tickets` (one publication for all, as `push_cooperative::<Thread>` does); the
    /// rest is blocking.
    Batch,
    /// Producer 0 is a crew of two threads that reserve its tickets once and push its
    /// elements together (`push_cooperative::<Warp>` on the GPU); the rest is blocking.
    CrewPush,
    /// The consumer is a crew of two threads (the main one and a mate) that reserve every
    /// ticket once and pop all elements together (`pop_cooperative::<Warp>`); the producers
    /// are blocking.
    CrewPop,
}

/// One model: `producers` producers (1 or 2) push `per_producer` elements each into a ring of
/// `capacity` whose tickets start at `first`; the main thread pops them all.
#[derive(Clone, Copy, Debug)]
struct Case {
    capacity: u64,
    first: u64,
    producers: u32,
    per_producer: u32,
    style: Style,
    fences: bool,
    /// Loom's preemption bound. Two threads polling at once (a producer waiting for room
    /// while the consumer waits for an element) multiply the schedules: those cases run with
    /// bound 1, the others with 2 (`LOOM_MAX_PREEMPTIONS` overrides both).
    preemptions: usize,
}

impl Case {
    /// Capacity 2, two producers of one element, tickets from 0, blocking, fences on, bound 2.
    fn new() -> Self {
        Case {
            capacity: 2,
            first: 0,
            producers: 2,
            per_producer: 1,
            style: Style::Blocking,
            fences: true,
            preemptions: 2,
        }
    }
}

/// A pointer that threads of one model share (the crews' element buffers).
#[derive(Clone, Copy)]
struct Shared(*mut Item);
// SAFETY: the crews access these buffers as their protocol orders (what the model checks).
unsafe impl Send for Shared {}

/// Runs `case` under loom. Then: nothing lost or duplicated, each producer's elements in
/// order, the ring empty and its counters where they must be.
fn producers_and_a_consumer(case: Case) {
    let Case {
        capacity,
        first,
        producers,
        per_producer,
        style,
        fences,
        preemptions,
    } = case;
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    // Polling waits add a branch per poll; the default (1000) is too few for 3 threads.
    builder.max_branches = 100_000;
    builder.check(move || {
        let q = Arc::new(Model::new(capacity, first, fences));
        let n = per_producer;
        let mut threads = Vec::new();
        for p in 0..producers {
            if style == Style::CrewPush && p == 0 {
                for member in Pair::new() {
                    let q = q.clone();
                    threads.push(thread::spawn(move || crew_push(&q, &member, n)));
                }
            } else {
                let q = q.clone();
                threads.push(thread::spawn(move || produce(&q, p, n, style)));
            }
        }
        let total = (producers * per_producer) as usize;
        let popped: Vec<Item> = if style == Style::CrewPop {
            let mut out = vec![[u32::MAX; 2]; total];
            let buf = Shared(out.as_mut_ptr());
            let [me, mate] = Pair::new();
            let q2 = q.clone();
            let mate = thread::spawn(move || crew_pop(&q2, &mate, buf, total as u64));
            crew_pop(&q, &me, buf, total as u64);
            mate.join().unwrap();
            out
        } else {
            (0..total).map(|_| consume(&q, style)).collect()
        };
        let mut next = [0u32; 2];
        for [p, i] in popped {
            assert!(p < 2, "a foreign or torn element: producer {p}");
            assert_eq!(i, next[p as usize], "producer {p}'s elements out of order");
            next[p as usize] += 1;
        }
        for h in threads {
            h.join().unwrap();
        }
        assert_eq!(
            next[..producers as usize],
            [per_producer; 2][..producers as usize]
        );
        assert_eq!(ring::len(&*q), 0);
        let end = first + total as u64;
        assert_eq!((q.load(Counter::Tail), q.load(Counter::Head)), (end, end));
    });
}

/// Producer `p` pushes `[p, 0..n]`.
fn produce(q: &Model, p: u32, n: u32, style: Style) {
    if style == Style::Batch && p == 0 {
        let items: Vec<Item> = (0..n).map(|i| [p, i]).collect();
        let t = q.fetch_add(Counter::Tail, n as u64);
        // SAFETY: tickets `t..t + n` are this thread's, each used once; `items` holds `n`.
        unsafe { ring::move_tickets(q, &Alone, Op::Push, t, items.as_ptr().cast_mut(), n as u64) };
        return;
    }
    for i in 0..n {
        // SAFETY: the model is an initialised ring.
        unsafe {
            if style == Style::Try {
                while !ring::try_push(q, &[p, i]) {
                    thread::yield_now();
                }
            } else {
                ring::push(q, &[p, i]);
            }
        }
    }
}

/// One member of producer 0's crew: both push `[0, 0..n]` together, in one reservation.
fn crew_push(q: &Model, member: &Pair, n: u32) {
    let items: Vec<Item> = (0..n).map(|i| [0, i]).collect();
    let first = member.reserve(q, Counter::Tail, n as u64);
    // SAFETY: the crew holds tickets `first..first + n`; both members read `items`, equal.
    unsafe {
        ring::move_tickets(
            q,
            member,
            Op::Push,
            first,
            items.as_ptr().cast_mut(),
            n as u64,
        )
    };
}

/// One member of the consumer crew: both pop `n` elements together into `out`.
fn crew_pop(q: &Model, member: &Pair, out: Shared, n: u64) {
    let first = member.reserve(q, Counter::Head, n);
    // SAFETY: the crew holds tickets `first..first + n`; `out` has room for `n` elements,
    // which only the crew writes.
    unsafe { ring::move_tickets(q, member, Op::Pop, first, out.0, n) };
    // Every element is in `out` for both members (the device's batches end so too).
    member.sync();
}

/// Pops one element.
fn consume(q: &Model, style: Style) -> Item {
    let mut item = [u32::MAX; 2];
    // SAFETY: the model is an initialised ring; `item` has room for one element.
    unsafe {
        if style != Style::Try {
            ring::pop(q, &mut item);
            return item;
        }
        while !ring::try_pop(q, &mut item) {
            thread::yield_now();
        }
    }
    item
}

#[test]
fn blocking_two_producers_one_consumer_capacity_2() {
    producers_and_a_consumer(Case::new());
}

/// Four elements through two slots: producers wait for room too.
#[test]
fn blocking_producers_wait_for_room_capacity_2() {
    producers_and_a_consumer(Case {
        per_producer: 2,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn blocking_capacity_1() {
    producers_and_a_consumer(Case {
        capacity: 1,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn try_ops_two_producers_one_consumer_capacity_2() {
    producers_and_a_consumer(Case {
        style: Style::Try,
        ..Case::new()
    });
}

#[test]
fn try_ops_on_a_full_ring_capacity_1() {
    producers_and_a_consumer(Case {
        capacity: 1,
        style: Style::Try,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn batch_reservation_capacity_2() {
    producers_and_a_consumer(Case {
        per_producer: 2,
        style: Style::Batch,
        preemptions: 1,
        ..Case::new()
    });
}

/// A batch of two through one slot: the thread must publish its first element before it
/// waits for the slot to come back.
#[test]
fn batch_reservation_capacity_1() {
    producers_and_a_consumer(Case {
        capacity: 1,
        producers: 1,
        per_producer: 2,
        style: Style::Batch,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn tickets_past_2_pow_32_capacity_3() {
    producers_and_a_consumer(Case {
        capacity: 3,
        first: (1 << 32) - 2,
        per_producer: 2,
        preemptions: 1,
        ..Case::new()
    });
}

/// A crew of two pushes two elements together, each member copying one part of each, one
/// member publishing each.
#[test]
fn crew_push_capacity_2() {
    producers_and_a_consumer(Case {
        per_producer: 2,
        producers: 1,
        style: Style::CrewPush,
        preemptions: 1,
        ..Case::new()
    });
}

/// The crew's two elements through one slot: it publishes the first before waiting.
#[test]
fn crew_push_capacity_1() {
    producers_and_a_consumer(Case {
        capacity: 1,
        producers: 1,
        per_producer: 2,
        style: Style::CrewPush,
        preemptions: 1,
        ..Case::new()
    });
}

/// A crew of two pops a producer's two elements together (one reservation), each member
/// copying one part of each, one member freeing each slot.
#[test]
fn crew_pop_capacity_2() {
    producers_and_a_consumer(Case {
        producers: 1,
        per_producer: 2,
        style: Style::CrewPop,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn crew_pop_capacity_1() {
    producers_and_a_consumer(Case {
        capacity: 1,
        producers: 1,
        per_producer: 2,
        style: Style::CrewPop,
        preemptions: 1,
        ..Case::new()
    });
}

/// The control: without the fences (the consumer's acquire, the slot's release) loom finds
/// an element read while it is written, so the model can fail.
#[test]
#[should_panic(expected = "Causality violation")]
fn without_fences_the_model_fails() {
    producers_and_a_consumer(Case {
        fences: false,
        ..Case::new()
    });
}

/// The same control for a crew: the parts one member writes reach the consumer only through
/// the fences around the barrier and the other member's publication.
#[test]
#[should_panic(expected = "Causality violation")]
fn without_fences_a_crew_push_fails() {
    producers_and_a_consumer(Case {
        fences: false,
        producers: 1,
        style: Style::CrewPush,
        preemptions: 1,
        ..Case::new()
    });
}
