//! Model-checks the flag-in-data (Lamport) slots' reuse rule with loom: the slot a consumer
//! empties at step `s − 2` may be written by its producer at step `s` only because the
//! emptying happens-before the new data, through the step `s − 1` exchange and the
//! acquire-release fence every kernel ends with (`rshmem_coll::lamport::finish`).
//!
//! Two PEs, each one loom thread running its steps in order (the kernels of one stream); a
//! step publishes this PE's word into the peer's slot `s % SLOTS` (a relaxed store, as
//! `publish_tile`), waits for the peer's word in its own slot (relaxed loads, as
//! `take_pack`), empties it, and ends with the fence. The pair argument is the whole
//! argument: with more members every (producer, consumer) pair has its own slots and the
//! same exchange each step. On the GPU the fence is one thread's, after a block barrier that
//! orders every thread's emptying stores before it (cumulativity); here a PE is one thread.
//!
//! What is checked: the value taken is the peer's word of this very step (none of another
//! step), and, with one ghost cell per (slot, use) that the consumer writes when it empties
//! the slot and the producer reads before its next store there, that the emptying
//! happens-before the reuse — loom reports a causality violation otherwise. The controls
//! fail: no fence (the emptying is not ordered before the reuse) and one slot (a producer
//! overwrites a word not yet taken).

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use rshmem_coll::lamport::EMPTY;

/// Steps each PE runs: every slot is reused at least once with two slots.
const STEPS: u32 = 4;

/// One PE's memory: its slots (written by the peer) and the ghosts of their uses.
struct Pe {
    slots: Vec<AtomicU32>,
    /// `ghost[s]`: written when this PE empties the slot it read at step `s`; read by the
    /// peer before it writes that slot again (its step `s + slots`).
    ghost: Vec<UnsafeCell<()>>,
}

// SAFETY: the ghosts are accessed as the protocol orders, which is what loom checks.
unsafe impl Sync for Pe {}

#[derive(Clone, Copy)]
struct Case {
    slots: u32,
    fences: bool,
}

/// The word PE `pe` publishes at step `s` (never `EMPTY`).
fn word(pe: usize, s: u32) -> u32 {
    10 * (s + 1) + pe as u32
}

fn run_pe(pes: &[Pe; 2], pe: usize, case: Case) {
    let (me, peer) = (&pes[pe], &pes[1 - pe]);
    for s in 0..STEPS {
        let slot = (s % case.slots) as usize;
        if let Some(last) = s.checked_sub(case.slots) {
            // The peer emptied this slot after reading it at step `last`: that must be
            // ordered before this store, or the emptying could land on the new word.
            peer.ghost[last as usize].with(|_| ());
        }
        peer.slots[slot].store(word(pe, s), Ordering::Relaxed);
        let got = loop {
            let v = me.slots[slot].load(Ordering::Relaxed);
            if v != EMPTY {
                break v;
            }
            thread::yield_now();
        };
        assert_eq!(
            got,
            word(1 - pe, s),
            "PE {pe} at step {s} took another step's word: a slot written before it was read"
        );
        me.slots[slot].store(EMPTY, Ordering::Relaxed);
        me.ghost[s as usize].with_mut(|_| ());
        if case.fences {
            fence(Ordering::AcqRel);
        }
    }
}

fn check(case: Case) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.max_branches = 100_000;
    builder.check(move || {
        let pe = || Pe {
            slots: (0..case.slots).map(|_| AtomicU32::new(EMPTY)).collect(),
            ghost: (0..STEPS).map(|_| UnsafeCell::new(())).collect(),
        };
        let pes = Arc::new([pe(), pe()]);
        let other = {
            let pes = pes.clone();
            thread::spawn(move || run_pe(&pes, 1, case))
        };
        run_pe(&pes, 0, case);
        other.join().unwrap();
    });
}

/// The rule as the collectives run it: two slots, an acquire-release fence per kernel.
#[test]
fn two_slots_and_an_acquire_release_fence_suffice() {
    check(Case {
        slots: 2,
        fences: true,
    });
}

/// The control: without the fence nothing orders the emptying before the reuse.
#[test]
#[should_panic(expected = "Causality violation")]
fn without_the_fence_the_reuse_is_unordered() {
    check(Case {
        slots: 2,
        fences: false,
    });
}

/// The control: with one slot the producer's next store follows the consumer's emptying of
/// the step before, which nothing orders before it (and a fast producer may overwrite a word
/// not yet taken).
#[test]
#[should_panic(expected = "Causality violation")]
fn one_slot_is_not_enough() {
    check(Case {
        slots: 1,
        fences: true,
    });
}
