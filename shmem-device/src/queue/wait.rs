//! How the queue's threads wait and meet: the groups of a batch and their barriers, the warp
//! as a crew, and the parts that differ between the GPU and the simulator: backing off
//! between polls and reporting a wait that cannot end. The rest of the queue is the same code
//! on both, written against the device API.
//!
//! These live here rather than in `backend` because they are the queue's policy (how long to
//! sleep, what a stall says), not SHMEM operations: the one `cfg` pair below (`imp`) is the
//! single place outside `backend` that names the target (`backend/mod.rs` says why). The
//! simulator's half reaches the simulator through `backend` like everything else.

use super::ring::{Crew, Op, Stall, StallKind};
use super::SymQueue;
use crate::shmem::{Scope, ScopeKind, Warp};
use crate::thread;
use crate::warp::{self, WARP_SIZE as WARP};

/// This thread's rank in its cooperating group of scope `S`, and the group's size.
#[inline(always)]
pub(super) fn group<S: Scope>() -> (u32, u32) {
    match S::KIND {
        ScopeKind::Thread => (0, 1),
        ScopeKind::Warp => {
            let (rank, threads) = (thread::thread_rank_in_block(), thread::block_dim().size());
            let first = rank / WARP * WARP;
            (rank - first, WARP.min(threads - first))
        }
        ScopeKind::Block => (thread::thread_rank_in_block(), thread::block_dim().size()),
    }
}

/// A barrier of the group of scope `S` (`size` threads, as [`group`] says), which also orders
/// the members' memory accesses before it with theirs after it.
#[inline(always)]
pub(super) fn group_sync<S: Scope>(size: u32) {
    match S::KIND {
        ScopeKind::Thread => {}
        ScopeKind::Warp => warp::sync_warp(lanes_mask(size)),
        ScopeKind::Block => thread::sync_threads(),
    }
}

/// The mask of a warp's first `lanes` lanes (all 32, or those of a partial last warp).
#[inline(always)]
fn lanes_mask(lanes: u32) -> u32 {
    if lanes >= WARP {
        u32::MAX
    } else {
        (1 << lanes) - 1
    }
}

/// The calling thread's warp as a [`Crew`]: its lanes move each element together.
#[derive(Clone, Copy)]
pub(super) struct WarpCrew {
    lane: u32,
    lanes: u32,
}

impl WarpCrew {
    /// The calling thread's warp (every lane of it, a partial last warp's too).
    #[inline(always)]
    pub(super) fn of_this_thread() -> Self {
        let (lane, lanes) = group::<Warp>();
        WarpCrew { lane, lanes }
    }
}

// SAFETY: `sync` is `bar.warp.sync` over the warp's lanes, which orders their memory accesses
// (and the simulator's warp barrier, sequentially consistent); `prefix` is a vote over the
// same lanes followed by that barrier, so every lane gets the same ballot.
unsafe impl Crew for WarpCrew {
    #[inline(always)]
    fn rank(&self) -> u32 {
        self.lane
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        self.lanes
    }
    #[inline(always)]
    fn sync(&self) {
        warp::sync_warp(lanes_mask(self.lanes))
    }
    #[inline(always)]
    fn prefix(&self, pred: bool) -> u32 {
        let mask = lanes_mask(self.lanes);
        let ready = warp::ballot(mask, pred);
        // A vote orders no memory access; the barrier does.
        warp::sync_warp(mask);
        (!ready).trailing_zeros().min(self.lanes)
    }
}

pub(super) use imp::{pause, report, Backoff};

/// What ends a stalled wait: the last sentence of the message, NUL-terminated for `printf`.
fn why(stall: &Stall) -> &'static str {
    match (stall.kind, stall.op) {
        (StallKind::Bound, Op::Push) => {
            "the queue stayed full: nobody popped the element that occupies the slot\0"
        }
        (StallKind::Bound, Op::Pop) => {
            "the queue stayed empty: nobody pushed the element for this ticket\0"
        }
        (StallKind::Overtaken, _) => {
            "the sequence is past the one wanted, which the queue never does: its memory was \
             overwritten or is shared with something else\0"
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod imp {
    use super::{why, Stall, SymQueue};
    use crate::queue::layout::LABEL;
    use crate::thread;
    use core::arch::asm;

    /// Nothing to keep between polls (the sleep grows with the poll count), but, in the
    /// checked device mode, when the wait began.
    #[derive(Default)]
    pub struct Backoff {
        #[cfg(rshmem_checked)]
        start_ns: u64,
    }

    /// Sleeps 32 ns, doubling every 8 polls up to 1 µs (`nanosleep`, sm_70+), so that waiting
    /// threads leave the SM and the NVLink fabric to the threads they wait for. In the
    /// checked device mode, every 64th poll ends a wait that outlasted the host's bound
    /// (`RSHMEM_HANG_TIMEOUT`), naming it `SymQueue::push` or `SymQueue::pop`.
    #[inline(always)]
    pub fn pause<T>(_: &SymQueue<T>, backoff: &mut Backoff, spins: u64, what: &dyn Fn() -> Stall) {
        #[cfg(rshmem_checked)]
        {
            if backoff.start_ns == 0 {
                backoff.start_ns = thread::globaltimer_ns();
            } else if spins % 64 == 0 {
                let name = match what().op {
                    super::Op::Push => "SymQueue::push",
                    super::Op::Pop => "SymQueue::pop",
                };
                crate::backend::checked::wait(name, backoff.start_ns);
            }
        }
        #[cfg(not(rshmem_checked))]
        let _ = (backoff, what);
        let ns: u32 = 32 << (spins / 8).min(5);
        // SAFETY: `nanosleep` only suspends this thread.
        unsafe { asm!("nanosleep.u32 {0};", in(reg32) ns) };
    }

    extern "C" {
        /// CUDA's device `printf` (resolved by the driver): `args` points at the arguments
        /// laid out as a C struct.
        fn vprintf(format: *const u8, args: *const u8) -> i32;
    }

    /// The arguments of [`FORMAT`], in order.
    #[repr(C)]
    struct Args {
        label: *const u8,
        capacity: u64,
        home: i32,
        op: *const u8,
        me: i32,
        block: u32,
        thread: u32,
        spins: u64,
        ticket: u64,
        slot: u64,
        seen: *const u8,
        seen_ticket: u64,
        wanted: *const u8,
        wanted_ticket: u64,
        why: *const u8,
    }

    const FORMAT: &[u8] = b"rshmem: SymQueue \"%s\" (capacity %llu, on PE %d): %s by PE %d (block %u, thread %u) gave up after %llu polls for ticket %llu: slot %llu %s %llu (waiting until it %s %llu); %s\n\0";

    /// [`meaning`](crate::queue::ring::meaning) as a C string.
    fn meaning(seq: u64) -> (*const u8, u64) {
        let (text, ticket) = crate::queue::ring::meaning(seq);
        let text: &[u8] = if text.starts_with("is") {
            b"is free for ticket\0"
        } else {
            b"holds ticket\0"
        };
        (text.as_ptr(), ticket)
    }

    /// Prints the stall with the device `printf` (a trap cannot carry text; the driver
    /// flushes the buffer when the failed kernel is reported), then traps.
    pub fn report<T>(q: &SymQueue<T>, stall: Stall) -> ! {
        let op: &[u8] = match stall.op {
            super::Op::Push => b"push\0",
            super::Op::Pop => b"pop\0",
        };
        let args = Args {
            // The label is NUL-terminated in this PE's copy of the queue's words.
            label: q.words.wrapping_add(LABEL).cast::<u8>(),
            capacity: q.capacity,
            home: q.pe,
            op: op.as_ptr(),
            me: crate::shmem::my_pe(),
            block: thread::block_idx_x(),
            thread: thread::thread_idx_x(),
            spins: stall.spins,
            ticket: stall.ticket,
            slot: stall.slot,
            seen: meaning(stall.seen).0,
            seen_ticket: meaning(stall.seen).1,
            wanted: meaning(stall.wanted).0,
            wanted_ticket: meaning(stall.wanted).1,
            why: why(&stall).as_ptr(),
        };
        // SAFETY: the format's conversions match `Args` field by field; every string is
        // NUL-terminated and outlives the call.
        unsafe {
            vprintf(FORMAT.as_ptr(), (&args as *const Args).cast());
            core::arch::nvptx::trap()
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use super::{why, Stall, SymQueue};
    use crate::queue::layout::label_bytes;
    use crate::queue::ring::meaning;
    use crate::shmem;
    use crate::thread;
    use std::string::String;
    use std::time::{Duration, Instant};

    /// When the wait started (from its first pause).
    #[derive(Default)]
    pub struct Backoff {
        since: Option<Instant>,
    }

    /// Spins, then yields, then sleeps 50 µs per poll (as the simulator's own waits do), and
    /// every 64 polls lets the simulator end the wait if it can never finish: a failed thread,
    /// kernel or PE, or `RSHMEM_SIM_WAIT_TIMEOUT`.
    pub fn pause<T>(q: &SymQueue<T>, backoff: &mut Backoff, spins: u64, what: &dyn Fn() -> Stall) {
        let since = *backoff.since.get_or_insert_with(Instant::now);
        if spins % 64 == 0 {
            crate::backend::check_spin("SymQueue", since.elapsed(), &|| describe(q, &what()));
        }
        match spins {
            0..=63 => core::hint::spin_loop(),
            64..=16383 => std::thread::yield_now(),
            _ => std::thread::sleep(Duration::from_micros(50)),
        }
    }

    /// The stall as one sentence naming the queue, the PEs, the thread and the ticket.
    pub fn describe<T>(q: &SymQueue<T>, stall: &Stall) -> String {
        // SAFETY: `q.words` is this PE's copy of a live queue's words (the handle's contract).
        let label = String::from_utf8_lossy(unsafe { label_bytes(q.words) });
        let (b, t) = (thread::block_idx(), thread::thread_idx());
        let (seen, seen_ticket) = meaning(stall.seen);
        let (wanted, wanted_ticket) = meaning(stall.wanted);
        std::format!(
            "SymQueue \"{label}\" (capacity {}, on PE {}): {} by PE {} (block ({}, {}, {}), thread ({}, {}, {})) gave up after {} polls for ticket {}: slot {} {seen} {seen_ticket} (waiting until it {wanted} {wanted_ticket}); {}",
            q.capacity,
            q.pe,
            stall.op.name(),
            shmem::my_pe(),
            b.x,
            b.y,
            b.z,
            t.x,
            t.y,
            t.z,
            stall.spins,
            stall.ticket,
            stall.slot,
            why(stall).trim_end_matches('\0')
        )
    }

    /// Fails the kernel with [`describe`]'s message (a panic, which the simulator reports as
    /// the launch's failure, naming the kernel, PE, block and thread).
    pub fn report<T>(q: &SymQueue<T>, stall: Stall) -> ! {
        panic!("{}", describe(q, &stall))
    }
}
