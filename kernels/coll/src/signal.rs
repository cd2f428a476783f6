//! Signal and wait at system scope: the ordering between a producer's writes (its stores
//! into a peer's memory, or its puts) and the consumer's reads of them.
//!
//! * [`signal`] (one thread) / [`signal_block`] (every thread of the block): makes the
//!   writes before it visible to PE `pe`, then sets `pe`'s copy of a `u64` flag — a
//!   `st.release.sys` through the peer mapping, or, where `pe` has none (another node),
//!   `shmem::fence` then `shmem::signal_op`, which NVSHMEM delivers after the earlier puts.
//! * [`wait`] / [`wait_block`]: waits until this PE's flag is at least the value, then
//!   acquires (`fence.acq_rel.sys`), so that loads after it see what the signaller wrote
//!   before its signal.
//! * [`Steps`]: per-block rows of pairwise flags with monotonic step counters, which is
//!   what rshmem's collectives synchronise with: a step is "every member has done what comes
//!   before this point on this row", without a separate barrier, and any number of steps can
//!   reuse the same flags (values only grow).
//!
//! Flags compare with `>=`, so a value may be overtaken by a later one and still count: a
//! producer that signals chunk by chunk with growing values (1, 2, 3, ...) lets a consumer
//! wait for "chunk k or later".
//!
//! ```ignore
//! // Producer block: write a tile into the peer's buffer, then signal it.
//! tile::push_tile(buf.add(off), src.add(off), len, peer);
//! signal::signal_block(flags.add(chunk), epoch, peer);
//! // Consumer block on `peer`: wait for it, then read the tile.
//! signal::wait_block(flags.add(chunk), epoch, producer);
//! ```
//!
//! Why a block barrier then one thread's release is enough: `bar.sync` orders the other
//! threads' writes before the signalling thread's release at CTA scope, and PTX's release is
//! cumulative (it covers writes the releasing thread has observed through that barrier); the
//! waiting thread's acquire, followed by the consumer block's `bar.sync`, orders its threads'
//! loads after it. This is what CUDA's grid sync and NVSHMEM's block-scoped put-with-signal
//! do.

use rshmem_device::atomic::{self, Ordering, Sys};
use rshmem_device::shmem::{self, Cmp, SignalOp};
use rshmem_device::thread::{self, Poll};

use crate::peers::Peers;

/// Sets PE `pe`'s copy of the symmetric `flag` to `value`, after this thread's earlier writes
/// (stores through peer mappings, puts) are visible there.
///
/// # Safety
///
/// `flag` points at a `u64` in a symmetric allocation that only signals write; `pe` a PE of
/// the job.
#[inline(always)]
pub unsafe fn signal(flag: *mut u64, value: u64, pe: i32) {
    // SAFETY: `flag` is symmetric and `pe` in range (the caller's contract).
    let peer = unsafe { shmem::ptr(flag, pe) };
    if peer.is_null() {
        shmem::fence();
        // SAFETY: as above.
        unsafe { shmem::signal_op(flag, value, SignalOp::Set, pe) };
    } else {
        // SAFETY: `peer` maps the flag, which is accessed only atomically.
        unsafe { atomic::store::<Sys, u64>(peer, value, Ordering::Release) };
    }
}

/// Waits until this PE's `flag` is at least `value`, then acquires at system scope. `from` is
/// the PE that sets it: where it has no peer mapping to this PE, the wait is NVSHMEM's
/// (`signal_wait_until`), which knows how its remote transports deliver.
///
/// # Safety
///
/// `flag` points at a `u64` in a symmetric allocation that only signals write; `from` a PE
/// of the job. Someone must eventually set it (else this waits forever on a GPU; the
/// simulator ends the wait with an error).
#[inline(always)]
pub unsafe fn wait(flag: *const u64, value: u64, from: i32) {
    // SAFETY: as above.
    let mapped = !unsafe { shmem::ptr(flag, from) }.is_null();
    if mapped {
        // SAFETY: as above, `from` is mapped.
        unsafe { wait_mapped(flag, value) };
    } else {
        // SAFETY: `flag` is a symmetric u64 of this PE.
        unsafe { shmem::signal_wait_until(flag, Cmp::Ge, value) };
        atomic::fence::<Sys>(Ordering::Acquire);
    }
}

/// [`wait`] where the PE that sets the flag is known to reach it through the peer mapping
/// (`shmem::ptr` not null, checked by the caller once): a spin on the flag, then one
/// system-scope acquire load of it, with no call into NVSHMEM. Where a kernel's hot loop
/// waits, a call there costs more than the call: ptxas keeps no value in uniform registers
/// across it, and the GEMM + reduce-scatter's k-loop lost its uniform datapath to the one in
/// [`wait`]. The acquire is the flag's own load, not a fence after it: a system-scope fence
/// waits for every memory operation the thread has in flight (a GEMM producer's, once per
/// tile), and the load that reads the signaller's release is all the ordering needs.
///
/// # Safety
///
/// `flag` points at a `u64` of this PE that only signals write, set through the peer mapping
/// (or by this PE); someone must eventually set it.
#[inline(always)]
pub unsafe fn wait_mapped(flag: *const u64, value: u64) {
    let mut poll = Poll::new();
    // SAFETY: the flag is accessed only atomically (the caller's contract).
    while unsafe { atomic::load::<Sys, u64>(flag, Ordering::Relaxed) } < value {
        poll.pause("rshmem-coll: waiting for a peer's signal");
    }
    // SAFETY: as above. Flags only grow, so this load reads the value seen above or a later
    // one of the same signaller: either synchronises with its release.
    unsafe { atomic::load::<Sys, u64>(flag, Ordering::Acquire) };
}

/// [`signal`] for a whole block: every thread calls it (with the same arguments) after its
/// writes; one thread signals after a block barrier.
///
/// # Safety
///
/// As [`signal`]; every thread of the block calls it.
#[inline(always)]
pub unsafe fn signal_block(flag: *mut u64, value: u64, pe: i32) {
    thread::sync_threads();
    if thread::thread_rank_in_block() == 0 {
        // SAFETY: forwarded.
        unsafe { signal(flag, value, pe) };
    }
}

/// [`wait`] for a whole block: one thread waits, then a block barrier lets every thread read
/// what the signaller wrote.
///
/// # Safety
///
/// As [`wait`]; every thread of the block calls it.
#[inline(always)]
pub unsafe fn wait_block(flag: *const u64, value: u64, from: i32) {
    if thread::thread_rank_in_block() == 0 {
        // SAFETY: forwarded.
        unsafe { wait(flag, value, from) };
    }
    thread::sync_threads();
}

/// Rows of pairwise step flags: row `r`, source PE `s` is the `u64` that `s` sets on this PE
/// (symmetric), beside a local counter per (row, peer) of the steps taken with that peer.
///
/// A *step* on row `r` with a set of members: every member signals every other member the
/// next count, then waits for theirs. Counts are kept per pair, so teams that share rows
/// (the world, a split of it) never disagree: two PEs count exactly the steps they take
/// together. Values only grow, so the flags never need resetting. Blocks use the row of their
/// index; a row must be used by one block at a time (rows are per block of one kernel, and
/// kernels on one channel run one after another).
#[derive(Clone, Copy, Debug)]
pub struct Steps {
    /// `[rows][world]` flags, symmetric.
    pub flags: *mut u64,
    /// `[rows][world]` step counts, this PE's own.
    pub counts: *mut u64,
    /// PEs in the job.
    pub world: u32,
}

impl Steps {
    /// Steps taken with world PE `pe` on `row` so far.
    ///
    /// # Safety
    ///
    /// `row` below the rows of the allocation, `pe < world`.
    #[inline(always)]
    pub unsafe fn count(self, row: u32, pe: i32) -> u64 {
        // SAFETY: in bounds (the caller's contract); written only by this PE's threads, which
        // order their writes before other threads' reads with block barriers.
        unsafe { *self.counts.add((row * self.world) as usize + pe as usize) }
    }

    /// Starts the next step on `row` with every member of `peers` but this PE: releases the
    /// block's writes so far and signals each member. Every thread of the block calls it.
    ///
    /// # Safety
    ///
    /// `row` within the allocation and used by no other block now; every member takes the
    /// same steps on `row`.
    #[inline(always)]
    pub unsafe fn post(self, row: u32, peers: Peers) {
        thread::sync_threads();
        let me = peers.me();
        let (t, nt) = (thread::thread_rank_in_block(), thread::block_dim().size());
        let mut r = t;
        while r < peers.n {
            if r != peers.rank {
                let pe = peers.world(r);
                let at = (row * self.world) as usize + pe as usize;
                // SAFETY: `at` is this row's slot for `pe` (in bounds by the contract); only
                // this thread touches it during the step.
                unsafe {
                    let c = *self.counts.add(at) + 1;
                    *self.counts.add(at) = c;
                    signal(
                        self.flags.add((row * self.world) as usize + me as usize),
                        c,
                        pe,
                    );
                }
            }
            r += nt;
        }
    }

    /// Ends the step [`Steps::post`] started: waits for every member's signal, then a block
    /// barrier. Every thread of the block calls it.
    ///
    /// # Safety
    ///
    /// As [`Steps::post`], called after it.
    #[inline(always)]
    pub unsafe fn wait(self, row: u32, peers: Peers) {
        let (t, nt) = (thread::thread_rank_in_block(), thread::block_dim().size());
        let mut r = t;
        while r < peers.n {
            if r != peers.rank {
                let pe = peers.world(r);
                let at = (row * self.world) as usize + pe as usize;
                // SAFETY: as in `post`; the flag is the one `pe` sets on this PE.
                unsafe { wait(self.flags.add(at), *self.counts.add(at), pe) };
            }
            r += nt;
        }
        thread::sync_threads();
    }

    /// Counts a step on `row` with every member without signalling: what a flag-in-data
    /// exchange ([`crate::lamport`]), whose data are their own signals, does instead of
    /// [`Steps::exchange`]. Block barriers before (every thread has read the counts it
    /// needed) and after. Every thread of the block calls it.
    ///
    /// # Safety
    ///
    /// As [`Steps::post`].
    #[inline(always)]
    pub unsafe fn advance(self, row: u32, peers: Peers) {
        thread::sync_threads();
        let (t, nt) = (thread::thread_rank_in_block(), thread::block_dim().size());
        let mut r = t;
        while r < peers.n {
            if r != peers.rank {
                let at = (row * self.world) as usize + peers.world(r) as usize;
                // SAFETY: in bounds (the contract); only this thread touches the slot now.
                unsafe { *self.counts.add(at) += 1 };
            }
            r += nt;
        }
        thread::sync_threads();
    }

    /// [`Steps::post`] then [`Steps::wait`]: a barrier of the members' blocks on `row` that
    /// also orders every block's writes before it with every block's reads after it.
    ///
    /// # Safety
    ///
    /// As [`Steps::post`].
    #[inline(always)]
    pub unsafe fn exchange(self, row: u32, peers: Peers) {
        // SAFETY: forwarded.
        unsafe {
            self.post(row, peers);
            self.wait(row, peers);
        }
    }
}
