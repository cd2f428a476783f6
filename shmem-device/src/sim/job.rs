//! The job: every PE of one simulated run, their symmetric heaps, and the rendezvous in which
//! PE-wide calls meet (the host side's collectives and the kernels' `barrier_all`/`sync_all`).
//!
//! A rendezvous never hangs on a PE that cannot come: it fails on every waiting PE as soon as
//! a PE has failed, has returned from its closure without joining, or called a different
//! collective, and (device side) as soon as a kernel failed on any PE.

use core::fmt;
use std::string::String;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::vec;
use std::vec::Vec;

use super::heap::{HeapError, SymHeap};

/// All PEs of a simulated job. Simulator internals, shared by rshmem-host's PE threads.
pub struct Job {
    heaps: Vec<SymHeap>,
    state: Mutex<JobState>,
    /// Signalled on every change of `state`; few threads wait here (one per PE and side).
    cv: Condvar,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PeStatus {
    Running,
    Finished,
    Failed,
}

/// Which calls meet in a rendezvous: host-side collectives (alloc, barrier_all) and kernels'
/// barriers never pair with each other.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Side {
    Host = 0,
    Device = 1,
}

struct JobState {
    pes: Vec<PeStatus>,
    /// The first PE that failed, and how.
    failure: Option<(usize, String)>,
    /// How each PE failed, if it did.
    failures: Vec<Option<String>>,
    /// For each PE, the PE whose kernel failure made one of its device-side barriers fail:
    /// its own failure is most likely a consequence.
    blamed: Vec<Option<usize>>,
    /// The first kernel that failed: `(pe, kernel, failure)`.
    kernel_failure: Option<(usize, &'static str, String)>,
    rounds: [Round; 2],
}

/// The current round of one side's rendezvous.
struct Round {
    generation: u64,
    /// What each PE passed in this round, once it has arrived.
    arrived: Vec<Option<(&'static str, [u64; 4])>>,
    count: usize,
    /// Set when PEs called different collectives; the side cannot recover.
    mismatch: Option<CollectiveError>,
    /// The values of the last completed round, in PE order.
    results: Vec<[u64; 4]>,
}

/// Why a PE-wide call could not complete. The same condition is reported on every PE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CollectiveError {
    /// A PE failed (returned an error or panicked); the job is ending.
    PeFailed {
        /// The PE.
        pe: usize,
        /// How it failed.
        reason: String,
    },
    /// A PE returned from its closure without making this call.
    PeFinished {
        /// The PE.
        pe: usize,
        /// The call the others wait in.
        op: &'static str,
    },
    /// Two PEs made different calls.
    Mismatch {
        /// The PE that arrived first.
        first_pe: usize,
        /// Its call.
        first_op: &'static str,
        /// The PE that called something else.
        pe: usize,
        /// Its call.
        op: &'static str,
    },
    /// A PE-wide call was entered a second time on one PE before it completed.
    Duplicate {
        /// The PE.
        pe: usize,
        /// The call.
        op: &'static str,
    },
    /// A kernel failed on some PE; device-side collectives can no longer complete (as a
    /// trapped kernel leaves a GPU's context unusable).
    KernelFailed {
        /// The PE.
        pe: usize,
        /// The kernel.
        kernel: &'static str,
        /// Its failure.
        failure: String,
    },
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const ORDER: &str = "every PE must make the same collective calls, in the same order";
        match self {
            Self::PeFailed { pe, reason } => write!(f, "PE {pe} failed: {reason}"),
            Self::PeFinished { pe, op } => write!(
                f,
                "PE {pe} returned from its closure without calling `{op}`: {ORDER}"
            ),
            Self::Mismatch {
                first_pe,
                first_op,
                pe,
                op,
            } => write!(
                f,
                "PE {first_pe} called `{first_op}` while PE {pe} called `{op}`: {ORDER}"
            ),
            Self::Duplicate { pe, op } => write!(
                f,
                "`{op}` was entered twice at once on PE {pe}: PE-wide calls take one caller per \
                 PE (in a kernel: one thread with `Thread`, one warp with `Warp`, one block with \
                 `Block`, as on a GPU)"
            ),
            Self::KernelFailed {
                pe,
                kernel,
                failure,
            } => write!(
                f,
                "kernel `{kernel}` failed on PE {pe} ({failure}), so no device-side collective \
                 of this job can complete"
            ),
        }
    }
}

impl Round {
    fn new(npes: usize) -> Self {
        Self {
            generation: 0,
            arrived: vec![None; npes],
            count: 0,
            mismatch: None,
            results: Vec::new(),
        }
    }
}

impl JobState {
    /// Notes that `pe` fails `e` because of another PE's kernel, when it does.
    fn blame(&mut self, pe: usize, e: CollectiveError) -> CollectiveError {
        if let CollectiveError::KernelFailed { pe: q, .. } = e {
            if q != pe {
                self.blamed[pe] = Some(q);
            }
        }
        e
    }

    /// Why a PE waiting in `op` on `side` can never be released, if it cannot.
    fn blocker(&self, side: Side, op: &'static str) -> Option<CollectiveError> {
        if let Some((pe, reason)) = &self.failure {
            return Some(CollectiveError::PeFailed {
                pe: *pe,
                reason: reason.clone(),
            });
        }
        if let (Side::Device, Some((pe, kernel, failure))) = (side, &self.kernel_failure) {
            return Some(CollectiveError::KernelFailed {
                pe: *pe,
                kernel,
                failure: failure.clone(),
            });
        }
        let round = &self.rounds[side as usize];
        if let Some(m) = &round.mismatch {
            return Some(m.clone());
        }
        (0..self.pes.len())
            .find(|&q| self.pes[q] != PeStatus::Running && round.arrived[q].is_none())
            .map(|pe| CollectiveError::PeFinished { pe, op })
    }
}

impl Job {
    /// A job of `npes` PEs, each with a zeroed symmetric heap of `heap_size` bytes.
    pub fn new(npes: usize, heap_size: usize) -> Result<Self, HeapError> {
        let heaps = (0..npes)
            .map(|_| SymHeap::new(heap_size))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            heaps,
            state: Mutex::new(JobState {
                pes: vec![PeStatus::Running; npes],
                failure: None,
                failures: vec![None; npes],
                blamed: vec![None; npes],
                kernel_failure: None,
                rounds: [Round::new(npes), Round::new(npes)],
            }),
            cv: Condvar::new(),
        })
    }

    /// The number of PEs.
    pub fn n_pes(&self) -> usize {
        self.heaps.len()
    }

    /// PE `pe`'s symmetric heap.
    pub fn heap(&self, pe: usize) -> &SymHeap {
        &self.heaps[pe]
    }

    fn lock(&self) -> MutexGuard<'_, JobState> {
        // Every update completes before anything can panic, so a poisoned lock is consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Meets the other PEs in `op` on `side`: returns every PE's `value` once all have
    /// arrived, or the reason they never will.
    pub(crate) fn rendezvous(
        &self,
        side: Side,
        pe: usize,
        op: &'static str,
        value: [u64; 4],
    ) -> Result<Vec<[u64; 4]>, CollectiveError> {
        let mut st = self.lock();
        if let Some(e) = st.blocker(side, op) {
            return Err(st.blame(pe, e));
        }
        let npes = self.n_pes();
        let round = &mut st.rounds[side as usize];
        if round.arrived[pe].is_some() {
            return Err(CollectiveError::Duplicate { pe, op });
        }
        let other = round.arrived.iter().enumerate().find_map(|(q, a)| match a {
            Some((o, _)) if *o != op => Some((q, *o)),
            _ => None,
        });
        if let Some((first_pe, first_op)) = other {
            let e = CollectiveError::Mismatch {
                first_pe,
                first_op,
                pe,
                op,
            };
            round.mismatch = Some(e.clone());
            self.cv.notify_all();
            return Err(e);
        }
        round.arrived[pe] = Some((op, value));
        round.count += 1;
        if round.count == npes {
            round.results = round
                .arrived
                .iter_mut()
                .map(|a| a.take().map_or([0; 4], |(_, v)| v))
                .collect();
            round.count = 0;
            round.generation += 1;
            self.cv.notify_all();
            return Ok(round.results.clone());
        }
        let generation = round.generation;
        loop {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            let round = &st.rounds[side as usize];
            // A later round cannot complete before this PE joins it, so `results` are ours.
            if round.generation != generation {
                return Ok(round.results.clone());
            }
            if let Some(e) = st.blocker(side, op) {
                return Err(st.blame(pe, e));
            }
        }
    }

    /// Host-side collective: every PE passes a value; all get every PE's value, in PE order.
    pub fn all_gather(
        &self,
        pe: usize,
        op: &'static str,
        value: [u64; 4],
    ) -> Result<Vec<[u64; 4]>, CollectiveError> {
        self.rendezvous(Side::Host, pe, op, value)
    }

    /// Host-side barrier over all PEs, named `op` for mismatch reports.
    pub fn barrier(&self, pe: usize, op: &'static str) -> Result<(), CollectiveError> {
        self.rendezvous(Side::Host, pe, op, [0; 4]).map(drop)
    }

    /// PE `pe` returned from its closure; collectives it did not join fail.
    pub fn pe_finished(&self, pe: usize) {
        self.lock().pes[pe] = PeStatus::Finished;
        self.cv.notify_all();
    }

    /// PE `pe` failed with `reason`; every PE waiting in a collective, now or later, fails.
    pub fn pe_failed(&self, pe: usize, reason: String) {
        let mut st = self.lock();
        st.pes[pe] = PeStatus::Failed;
        st.failures[pe] = Some(reason.clone());
        st.failure.get_or_insert((pe, reason));
        self.cv.notify_all();
    }

    /// The PE whose failure ended the job, and how: the first PE that failed, or, when that
    /// PE failed because another PE's kernel failed (and that PE failed too), the other one.
    pub fn first_failure(&self) -> Option<(usize, String)> {
        let st = self.lock();
        let (mut pe, mut reason) = st.failure.clone()?;
        // Follow the blame; at most n_pes steps, in case of a cycle.
        for _ in 0..st.pes.len() {
            match st.blamed[pe].and_then(|q| Some((q, st.failures[q].clone()?))) {
                Some((q, why)) if q != pe => (pe, reason) = (q, why),
                _ => break,
            }
        }
        Some((pe, reason))
    }

    /// A kernel failed on `pe`: device-side collectives, which may wait for one of its
    /// threads, fail from now on.
    /// Why a device-side wait on this job can never be satisfied (a PE or a kernel failed), if
    /// so: spinning waits poll it, as barriers do, instead of hanging.
    pub(crate) fn device_blocked(&self) -> Option<CollectiveError> {
        let st = self.lock();
        if let Some((pe, reason)) = &st.failure {
            return Some(CollectiveError::PeFailed {
                pe: *pe,
                reason: reason.clone(),
            });
        }
        st.kernel_failure
            .as_ref()
            .map(|(pe, kernel, failure)| CollectiveError::KernelFailed {
                pe: *pe,
                kernel,
                failure: failure.clone(),
            })
    }

    pub(crate) fn poison_device(&self, pe: usize, kernel: &'static str, failure: String) {
        self.lock()
            .kernel_failure
            .get_or_insert((pe, kernel, failure));
        self.cv.notify_all();
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("Job")
            .field("heaps", &self.heaps)
            .field("pes", &st.pes)
            .field("failure", &st.failure)
            .finish_non_exhaustive()
    }
}
