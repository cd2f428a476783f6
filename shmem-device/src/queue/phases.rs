//! Where a queue batch's time goes, for diagnosis: with the cargo feature `queue-phases`
//! (off by default: then [`Lap`] is empty and every call here compiles to nothing), the first
//! lane of each warp adds the `%clock64` cycles of each phase of its batches to its own row
//! of a device-global table, which the kernel takes at its end ([`take`]). `queue_bench`
//! reports them per batch (docs/queue.md, "Where a batch's time goes").
//!
//! ```ignore
//! let mut lap = phases::Lap::start();
//! write_my_elements(stage);
//! lap.lap(Phase::Tag);          // the caller's own phases: Tag, Check
//! q.push_cooperative::<Warp>(stage, 32, scratch); // the queue's: Reserve, Poll, ...
//! let row = phases::take();     // this warp's cycles per phase, cleared
//! ```

/// A phase of a batch: the queue's five, then two its caller may time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Phase {
    /// The leader's ticket reservation (one atomic on the ring's home PE) and the barrier
    /// that hands the tickets to the group.
    Reserve,
    /// Each round's poll of the next slots' sequence numbers, its fence and the vote.
    Poll,
    /// Waiting alone for a slot none of whose neighbours was ready (with backoff).
    Wait,
    /// Copying the elements' words into (push) or out of (pop) the ring.
    Copy,
    /// The barrier, the fence and the sequence-number stores that publish (push) or free
    /// (pop) the slots.
    Publish,
    /// The caller's: making the elements (the benchmark writes each element's tag).
    Tag,
    /// The caller's: checking the elements popped.
    Check,
}

/// Phases a row holds, and their names in order.
pub const PHASES: usize = 7;
/// Names of the phases, as [`Phase`]'s discriminants index them.
pub const NAMES: [&str; PHASES] = ["reserve", "poll", "wait", "copy", "publish", "tag", "check"];
/// Warps of a launch whose phases are kept (the rest are not timed).
pub const MAX_WARPS: usize = 4096;

/// Whether this build times phases (the feature `queue-phases`).
pub const ENABLED: bool = cfg!(feature = "queue-phases");

#[cfg(feature = "queue-phases")]
mod table {
    use super::{MAX_WARPS, PHASES};
    use crate::thread;
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

    static CYCLES: [[AtomicU64; PHASES]; MAX_WARPS] =
        [const { [const { AtomicU64::new(0) }; PHASES] }; MAX_WARPS];

    /// This thread's warp's row, if it is a first lane of a warp the table holds. Rows are
    /// per PE too: the simulator's PEs share one process, so one table.
    #[inline(always)]
    pub(super) fn row() -> Option<&'static [AtomicU64; PHASES]> {
        let rank = thread::thread_rank_in_block();
        if rank % 32 != 0 {
            return None;
        }
        let warps = thread::block_dim().size().div_ceil(32) as usize;
        let blocks = thread::grid_dim_x() as usize;
        let block = crate::shmem::my_pe() as usize * blocks + thread::block_idx_x() as usize;
        CYCLES.get(block * warps + (rank / 32) as usize)
    }

    #[inline(always)]
    pub(super) fn add(phase: usize, cycles: u64) {
        if let Some(row) = row() {
            row[phase].fetch_add(cycles, Relaxed);
        }
    }

    #[inline(always)]
    pub(super) fn take() -> [u64; PHASES] {
        match row() {
            Some(row) => core::array::from_fn(|p| row[p].swap(0, Relaxed)),
            None => [0; PHASES],
        }
    }
}

/// A running clock of one thread's phases: [`Lap::lap`] charges the cycles since the last
/// lap (or the start) to a phase. Empty without the feature.
#[derive(Clone, Copy, Debug)]
pub struct Lap {
    #[cfg(feature = "queue-phases")]
    last: u64,
}

impl Lap {
    /// Starts the clock now.
    #[inline(always)]
    pub fn start() -> Lap {
        Lap {
            #[cfg(feature = "queue-phases")]
            last: crate::thread::clock64(),
        }
    }

    /// Charges the cycles since the last lap to `phase` (first lanes of warps only), and
    /// starts the next lap.
    #[inline(always)]
    pub fn lap(&mut self, phase: Phase) {
        #[cfg(feature = "queue-phases")]
        {
            let now = crate::thread::clock64();
            table::add(phase as usize, now.wrapping_sub(self.last));
            self.last = now;
        }
        #[cfg(not(feature = "queue-phases"))]
        let _ = phase;
    }
}

/// This warp's cycles per phase since its last `take`, cleared (the first lane of a warp
/// gets them; other lanes, and builds without the feature, get zeros).
#[inline(always)]
pub fn take() -> [u64; PHASES] {
    #[cfg(feature = "queue-phases")]
    {
        table::take()
    }
    #[cfg(not(feature = "queue-phases"))]
    {
        [0; PHASES]
    }
}
