//! Model-checks the symmetric queue's protocol with loom: every interleaving (up to a
//! preemption bound) and every reordering the C++/Rust memory model allows.
//!
//! The device code cannot run under loom (its memory operations are SHMEM calls), but its
//! algorithm is written once, generic over `rshmem_device::queue::ring::RingMemory`. [`Model`]
//! implements that trait with loom's atomics and cells at the weakest orderings the GPU gives
//! (see `rshmem_device::queue`): relaxed counter and sequence atomics, publication as a
//! release store after the element, and the SHMEM `fence` as a fence. So loom checks the real
//! `push`/`pop`/`try_push`/`try_pop`/`push_ticket` code, not a copy, and loom's cells catch any
//! element read while it is being written (a torn element).
//!
//! Two producers and one consumer, capacities 1 to 3, blocking, non-blocking and
//! batch-reserved pushes, tickets crossing 2^32; preemption bound 2, or 1 where two threads
//! poll at once (`LOOM_MAX_PREEMPTIONS` overrides). The whole file runs in seconds.

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use rshmem_device::queue::layout::{initial_words, HEAD, SEQ, TAIL};
use rshmem_device::queue::ring::{self, Counter, RingMemory, Stall};

/// An element: (producer, sequence number).
type Item = (u32, u32);

/// A ring in loom's memory.
struct Model {
    tail: AtomicU64,
    head: AtomicU64,
    seqs: Vec<AtomicU64>,
    slots: Vec<UnsafeCell<Item>>,
    capacity: u64,
    /// The control for the test that must fail: `false` turns `fence` into nothing.
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
            slots: (0..capacity).map(|_| UnsafeCell::new((0, 0))).collect(),
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
}

// SAFETY: each method has (at most) the guarantee the trait asks for: relaxed atomics, a
// release publication, a fence that is a real fence (unless `fences` is off, on purpose).
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
    unsafe fn write(&self, slot: u64, item: &Item, seq: u64) {
        // SAFETY: loom checks that nobody else accesses the slot now.
        self.slots[slot as usize].with_mut(|p| unsafe { *p = *item });
        self.seqs[slot as usize].store(seq, Ordering::Release);
    }
    unsafe fn read(&self, slot: u64) -> Item {
        // SAFETY: as above.
        self.slots[slot as usize].with(|p| unsafe { *p })
    }
    fn fence(&self) {
        if self.fences {
            fence(Ordering::SeqCst)
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

/// How producers push and the consumer pops.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Style {
    /// `push` / `pop`.
    Blocking,
    /// `try_push` / `try_pop`, retried.
    Try,
    /// Producer 0 reserves both its tickets with one `fetch_add` and pushes them with
    /// `push_ticket`, as a batch's member does; the rest is blocking.
    Batch,
}

/// One model: two producers push `per_producer` elements each into a ring of `capacity`
/// whose tickets start at `first`; the main thread pops them all.
#[derive(Clone, Copy, Debug)]
struct Case {
    capacity: u64,
    first: u64,
    per_producer: u32,
    style: Style,
    fences: bool,
    /// Loom's preemption bound. Two threads polling at once (a producer waiting for room
    /// while the consumer waits for an element) multiply the schedules: those cases run with
    /// bound 1, the others with 2 (`LOOM_MAX_PREEMPTIONS` overrides both).
    preemptions: usize,
}

impl Case {
    /// Capacity 2, one element per producer, tickets from 0, blocking, fences on, bound 2.
    fn new() -> Self {
        Case {
            capacity: 2,
            first: 0,
            per_producer: 1,
            style: Style::Blocking,
            fences: true,
            preemptions: 2,
        }
    }
}

/// Runs `case` under loom. Then: nothing lost or duplicated, each producer's elements in
/// order, the ring empty and its counters where they must be.
fn two_producers_one_consumer(case: Case) {
    let Case {
        capacity,
        first,
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
        let producers: Vec<_> = (0..2u32)
            .map(|p| {
                let q = q.clone();
                thread::spawn(move || produce(&q, p, per_producer, style))
            })
            .collect();
        let mut next = [0u32; 2];
        for _ in 0..2 * per_producer {
            let (p, i) = consume(&q, style);
            assert_eq!(i, next[p as usize], "producer {p}'s elements out of order");
            next[p as usize] += 1;
        }
        for h in producers {
            h.join().unwrap();
        }
        assert_eq!(next, [per_producer; 2]);
        assert_eq!(ring::len(&*q), 0);
        let end = first + 2 * per_producer as u64;
        assert_eq!((q.load(Counter::Tail), q.load(Counter::Head)), (end, end));
    });
}

/// Producer `p` pushes `(p, 0..n)`.
fn produce(q: &Model, p: u32, n: u32, style: Style) {
    if style == Style::Batch && p == 0 {
        let t = q.fetch_add(Counter::Tail, n as u64);
        for i in 0..n {
            // SAFETY: tickets `t..t + n` are this thread's, each used once.
            unsafe { ring::push_ticket(q, t + i as u64, (p, i)) };
        }
        return;
    }
    for i in 0..n {
        // SAFETY: the model is an initialised ring.
        unsafe {
            if style == Style::Try {
                while ring::try_push(q, (p, i)).is_err() {
                    thread::yield_now();
                }
            } else {
                ring::push(q, (p, i));
            }
        }
    }
}

/// Pops one element.
fn consume(q: &Model, style: Style) -> Item {
    // SAFETY: the model is an initialised ring.
    unsafe {
        if style != Style::Try {
            return ring::pop(q);
        }
        loop {
            if let Some(item) = ring::try_pop(q) {
                return item;
            }
            thread::yield_now();
        }
    }
}

#[test]
fn blocking_two_producers_one_consumer_capacity_2() {
    two_producers_one_consumer(Case::new());
}

/// Four elements through two slots: producers wait for room too.
#[test]
fn blocking_producers_wait_for_room_capacity_2() {
    two_producers_one_consumer(Case {
        per_producer: 2,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn blocking_capacity_1() {
    two_producers_one_consumer(Case {
        capacity: 1,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn try_ops_two_producers_one_consumer_capacity_2() {
    two_producers_one_consumer(Case {
        style: Style::Try,
        ..Case::new()
    });
}

#[test]
fn try_ops_on_a_full_ring_capacity_1() {
    two_producers_one_consumer(Case {
        capacity: 1,
        style: Style::Try,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn batch_reservation_capacity_2() {
    two_producers_one_consumer(Case {
        per_producer: 2,
        style: Style::Batch,
        preemptions: 1,
        ..Case::new()
    });
}

#[test]
fn tickets_past_2_pow_32_capacity_3() {
    two_producers_one_consumer(Case {
        capacity: 3,
        first: (1 << 32) - 2,
        per_producer: 2,
        preemptions: 1,
        ..Case::new()
    });
}

/// The control: without the fences (the consumer's acquire, the slot's release) loom finds
/// an element read while it is written, so the model can fail.
#[test]
#[should_panic(expected = "Causality violation")]
fn without_fences_the_model_fails() {
    two_producers_one_consumer(Case {
        fences: false,
        ..Case::new()
    });
}
