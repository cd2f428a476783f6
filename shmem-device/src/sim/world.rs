//! The world: every PE of one simulated run (what NVSHMEM calls the job, and `Team::WORLD`
//! holds), their symmetric heaps, its teams, and the
//! rendezvous in which collective calls meet (the host side's collectives, the kernels'
//! barriers and collectives).
//!
//! A rendezvous gathers the members of one team: the predefined teams (`WORLD`, `SHARED`,
//! `NODE`) all hold every PE and share one rendezvous; each split team has its own, so
//! disjoint teams meet independently. A rendezvous never hangs on a member that cannot come:
//! it fails on every waiting member as soon as a PE has failed, a member has returned from its
//! closure or destroyed the team without joining, or a member called a different collective,
//! and (device side) as soon as a kernel failed on any PE.
//!
//! # Teams
//!
//! A split is collective over the parent team and made in the same order by every member, so
//! the job numbers split teams in the order the splits complete: every member of a new team
//! sees the same handle, from [`FIRST_SPLIT_TEAM`] up (NVSHMEM's first non-predefined handle).
//! Handles are never reused, so a destroyed team's handle stays recognisable as destroyed.

use core::fmt;
use std::collections::HashMap;
use std::string::String;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::vec;
use std::vec::Vec;

use super::sym_heap::{HeapError, SymHeap};

/// The handle of the first team a split makes. NVSHMEM reserves 0..=5 for its predefined
/// teams (`NVSHMEM_TEAMS_MIN` = 6), so handles look alike on both backends.
pub const FIRST_SPLIT_TEAM: i32 = 6;

/// `Team::INVALID`.
const INVALID_TEAM: i32 = -1;

/// The rendezvous key of the predefined teams: `WORLD` (0), `SHARED` (1) and `NODE` (2) all
/// hold every PE in order, so their collectives meet together, as `barrier_all` does.
const ALL_PES: i32 = 0;

/// Every PE of one simulated run, with their heaps, teams and rendezvous. Simulator
/// internals, shared by rshmem-host's PE threads.
pub struct World {
    heaps: Vec<SymHeap>,
    /// Whether `shmem::ptr` maps other PEs' memory (PEs on one node over NVLink) or only the
    /// PE's own (as for PEs behind a network transport).
    peer_mappings: bool,
    state: Mutex<WorldState>,
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
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Side {
    Host = 0,
    Device = 1,
}

/// The members of a team: world PEs `start + stride * i` for `i < size`. Every team of the
/// simulator is strided (a strided split of a strided team is strided).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TeamShape {
    /// World PE of member 0.
    pub start: usize,
    /// Distance between consecutive members, in world PEs (at least 1).
    pub stride: usize,
    /// Number of members.
    pub size: usize,
}

impl TeamShape {
    /// The world PE of member `rank` (`rank < size`).
    pub fn pe(&self, rank: usize) -> usize {
        self.start + self.stride * rank
    }

    /// The rank of world PE `pe`, if it is a member.
    pub fn rank_of(&self, pe: usize) -> Option<usize> {
        pe.checked_sub(self.start)
            .filter(|d| d % self.stride == 0)
            .map(|d| d / self.stride)
            .filter(|&r| r < self.size)
    }
}

/// A team made by a split.
struct SplitTeam {
    shape: TeamShape,
    /// Which members (by rank) have destroyed it.
    destroyed: Vec<bool>,
}

struct WorldState {
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
    /// The current round of each side of each team's rendezvous, keyed by team handle
    /// ([`ALL_PES`] for the predefined teams); made on first use.
    rounds: HashMap<(Side, i32), Round>,
    /// Split teams, handle `FIRST_SPLIT_TEAM + i` at index `i`. Kept after every member has
    /// destroyed one, so that a stale handle is reported as destroyed.
    teams: Vec<SplitTeam>,
}

/// The current round of one rendezvous.
struct Round {
    generation: u64,
    /// What each member (by rank) passed in this round, once it has arrived.
    arrived: Vec<Option<(&'static str, [u64; 4])>>,
    count: usize,
    /// Set when members called different collectives; the rendezvous cannot recover.
    mismatch: Option<CollectiveError>,
    /// The values of the last completed round, in rank order.
    results: Vec<[u64; 4]>,
    /// What the completing member's `finish` made of them (see [`World::rendezvous_with`]).
    outcome: u64,
}

/// Why a collective call could not complete. The same condition is reported on every PE.
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
    /// The handle names no team of this job: never made by a split, `Team::INVALID`, or one
    /// of NVSHMEM's internal teams, which the simulator does not model.
    UnknownTeam {
        /// The handle.
        team: i32,
    },
    /// The calling PE is not a member of the team.
    NotMember {
        /// The PE.
        pe: usize,
        /// The team's handle.
        team: i32,
    },
    /// A member destroyed the team: it can no longer be used on that PE, and collectives
    /// that wait for that PE cannot complete.
    TeamDestroyed {
        /// The member that destroyed it.
        pe: usize,
        /// The team's handle.
        team: i32,
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
            Self::UnknownTeam { team: INVALID_TEAM } => write!(
                f,
                "Team::INVALID is not a team (a split returns it on the PEs it leaves out)"
            ),
            Self::UnknownTeam { team } => write!(
                f,
                "team handle {team} names no team of this job: teams are Team::WORLD, \
                 Team::SHARED, Team::NODE and the handles the host's splits return"
            ),
            Self::NotMember { pe, team } => write!(
                f,
                "PE {pe} is not a member of team {team} (its split returned Team::INVALID on \
                 this PE); only members may use a team"
            ),
            Self::TeamDestroyed { pe, team } => write!(
                f,
                "PE {pe} destroyed team {team} (its TeamHandle was dropped), so it cannot take \
                 part in the team's collectives any more: keep the handle alive while kernels \
                 or collectives use the team"
            ),
        }
    }
}

impl Round {
    fn new(size: usize) -> Self {
        Self {
            generation: 0,
            arrived: vec![None; size],
            count: 0,
            mismatch: None,
            results: Vec::new(),
            outcome: 0,
        }
    }
}

/// The shape of every PE of an `npes`-PE job.
fn all_pes(npes: usize) -> TeamShape {
    TeamShape {
        start: 0,
        stride: 1,
        size: npes,
    }
}

impl WorldState {
    /// Notes that `pe` fails `e` because of another PE (its kernel, or the PE itself), when
    /// it does.
    fn blame(&mut self, pe: usize, e: CollectiveError) -> CollectiveError {
        if let CollectiveError::KernelFailed { pe: q, .. }
        | CollectiveError::PeFailed { pe: q, .. } = e
        {
            if q != pe && self.blamed[pe].is_none() {
                self.blamed[pe] = Some(q);
            }
        }
        e
    }

    /// The split team behind `team`, if a split made it.
    fn split(&self, team: i32) -> Option<&SplitTeam> {
        let index = usize::try_from(team.checked_sub(FIRST_SPLIT_TEAM)?).ok()?;
        self.teams.get(index)
    }

    /// `team`'s rendezvous key and shape, and `pe`'s rank in it if it is a member; fails for
    /// unknown handles and for a team `pe` has destroyed.
    fn team(
        &self,
        team: i32,
        pe: usize,
    ) -> Result<(i32, TeamShape, Option<usize>), CollectiveError> {
        if (0..=2).contains(&team) {
            return Ok((ALL_PES, all_pes(self.pes.len()), Some(pe)));
        }
        let split = self
            .split(team)
            .ok_or(CollectiveError::UnknownTeam { team })?;
        let rank = split.shape.rank_of(pe);
        if rank.is_some_and(|r| split.destroyed[r]) {
            return Err(CollectiveError::TeamDestroyed { pe, team });
        }
        Ok((team, split.shape, rank))
    }

    /// Why a member waiting in `op` on `side` of team `key` can never be released, if it
    /// cannot.
    fn blocker(
        &self,
        side: Side,
        key: i32,
        shape: TeamShape,
        op: &'static str,
    ) -> Option<CollectiveError> {
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
        let round = self.rounds.get(&(side, key));
        if let Some(m) = round.and_then(|r| r.mismatch.as_ref()) {
            return Some(m.clone());
        }
        let absent = |r: usize| round.is_none_or(|round| round.arrived[r].is_none());
        let destroyed = self.split(key).map(|s| &s.destroyed);
        (0..shape.size).filter(|&r| absent(r)).find_map(|r| {
            let pe = shape.pe(r);
            if self.pes[pe] != PeStatus::Running {
                Some(CollectiveError::PeFinished { pe, op })
            } else if destroyed.is_some_and(|d| d[r]) {
                Some(CollectiveError::TeamDestroyed { pe, team: key })
            } else {
                None
            }
        })
    }
}

/// What [`World::team_split`] decided; the same on every member of the parent team.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// Every parent member's `[start, stride, size, valid]`, in parent rank order.
    pub args: Vec<[u64; 4]>,
    /// The new team's handle on this PE: `-1` (`Team::INVALID`) where this PE is not a member,
    /// or where no team was made because the members' arguments differ or are invalid.
    pub team: i32,
}

impl World {
    /// A job of `npes` PEs, each with a zeroed symmetric heap of `heap_size` bytes.
    pub fn new(npes: usize, heap_size: usize) -> Result<Self, HeapError> {
        let heaps = (0..npes)
            .map(|_| SymHeap::new(heap_size))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            heaps,
            peer_mappings: true,
            state: Mutex::new(WorldState {
                pes: vec![PeStatus::Running; npes],
                failure: None,
                failures: vec![None; npes],
                blamed: vec![None; npes],
                kernel_failure: None,
                rounds: HashMap::new(),
                teams: Vec::new(),
            }),
            cv: Condvar::new(),
        })
    }

    /// Withholds peer mappings: `shmem::ptr` gives null for every PE but the caller's, as
    /// NVSHMEM does for PEs it reaches through a network transport, so kernels take the
    /// paths they have for such PEs.
    pub fn without_peer_mappings(mut self) -> Self {
        self.peer_mappings = false;
        self
    }

    /// Whether `shmem::ptr` maps other PEs' memory (see [`World::without_peer_mappings`]).
    pub fn peer_mappings(&self) -> bool {
        self.peer_mappings
    }

    /// The number of PEs.
    pub fn n_pes(&self) -> usize {
        self.heaps.len()
    }

    /// PE `pe`'s symmetric heap.
    pub fn heap(&self, pe: usize) -> &SymHeap {
        &self.heaps[pe]
    }

    fn lock(&self) -> MutexGuard<'_, WorldState> {
        // Every update completes before anything can panic, so a poisoned lock is consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Meets the other members of `team` in `op` on `side`: returns every member's `value`
    /// (in rank order) once all have arrived, or the reason they never will.
    pub(crate) fn rendezvous(
        &self,
        side: Side,
        team: i32,
        pe: usize,
        op: &'static str,
        value: [u64; 4],
    ) -> Result<Vec<[u64; 4]>, CollectiveError> {
        self.rendezvous_with(side, team, pe, op, value, |_, _| 0)
            .map(|(values, _)| values)
    }

    /// [`World::rendezvous`], where the member that completes the round also runs `finish` on
    /// the job's split teams and the gathered values, under the job's lock; every member
    /// gets its result with the values. One member's `finish` runs per round, so it must be
    /// the same computation on every member.
    fn rendezvous_with(
        &self,
        side: Side,
        team: i32,
        pe: usize,
        op: &'static str,
        value: [u64; 4],
        finish: impl FnOnce(&mut Vec<SplitTeam>, &[[u64; 4]]) -> u64,
    ) -> Result<(Vec<[u64; 4]>, u64), CollectiveError> {
        let mut st = self.lock();
        let (key, shape, rank) = st.team(team, pe)?;
        let rank = rank.ok_or(CollectiveError::NotMember { pe, team })?;
        if let Some(e) = st.blocker(side, key, shape, op) {
            return Err(st.blame(pe, e));
        }
        let WorldState { rounds, teams, .. } = &mut *st;
        let round = rounds
            .entry((side, key))
            .or_insert_with(|| Round::new(shape.size));
        if round.arrived[rank].is_some() {
            return Err(CollectiveError::Duplicate { pe, op });
        }
        let other = round.arrived.iter().enumerate().find_map(|(r, a)| match a {
            Some((o, _)) if *o != op => Some((shape.pe(r), *o)),
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
        round.arrived[rank] = Some((op, value));
        round.count += 1;
        if round.count == shape.size {
            round.results = round
                .arrived
                .iter_mut()
                .map(|a| a.take().map_or([0; 4], |(_, v)| v))
                .collect();
            round.outcome = finish(teams, &round.results);
            round.count = 0;
            round.generation += 1;
            self.cv.notify_all();
            return Ok((round.results.clone(), round.outcome));
        }
        let generation = round.generation;
        loop {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            // A later round cannot complete before this member joins it, so the results are
            // ours. The round exists while this member has not destroyed its team.
            if let Some(round) = st.rounds.get(&(side, key)) {
                if round.generation != generation {
                    return Ok((round.results.clone(), round.outcome));
                }
            }
            if let Some(e) = st.blocker(side, key, shape, op) {
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
        self.rendezvous(Side::Host, ALL_PES, pe, op, value)
    }

    /// Host-side barrier over all PEs, named `op` for mismatch reports.
    pub fn barrier(&self, pe: usize, op: &'static str) -> Result<(), CollectiveError> {
        self.team_barrier(pe, ALL_PES, op)
    }

    /// Host-side barrier over the members of `team` (`pe` must be one).
    pub fn team_barrier(
        &self,
        pe: usize,
        team: i32,
        op: &'static str,
    ) -> Result<(), CollectiveError> {
        self.rendezvous(Side::Host, team, pe, op, [0; 4]).map(drop)
    }

    /// `pe`'s view of `team`: its members, and `pe`'s rank among them (`None` if it is not
    /// one). Fails for handles that name no team, and for a team `pe` destroyed.
    pub fn team_view(
        &self,
        pe: usize,
        team: i32,
    ) -> Result<(TeamShape, Option<usize>), CollectiveError> {
        self.lock()
            .team(team, pe)
            .map(|(_, shape, rank)| (shape, rank))
    }

    /// Host-side, collective over the members of `parent`: makes the team of the parent's
    /// members `start + stride * i` (`i < size`, parent ranks). `args` is `[start, stride,
    /// size]`; `valid` says whether this PE found them valid for the parent. A team is made
    /// only when every member passed the same `args` and found them valid; [`Split`] gives
    /// every member's arguments either way, so each can say why not.
    pub fn team_split(
        &self,
        pe: usize,
        parent: i32,
        args: [u64; 3],
        valid: bool,
    ) -> Result<Split, CollectiveError> {
        let (parent_shape, _) = self.team_view(pe, parent)?;
        let [start, stride, size] = args.map(|a| a as usize);
        // Only computed for valid arguments: they lie inside the parent, so nothing overflows.
        let child = valid.then(|| TeamShape {
            start: parent_shape.pe(start),
            stride: parent_shape.stride * stride,
            size,
        });
        let mine = [args[0], args[1], args[2], u64::from(valid)];
        let (all, outcome) =
            self.rendezvous_with(Side::Host, parent, pe, "team_split", mine, |teams, all| {
                match child {
                    Some(shape) if all.iter().all(|a| *a == mine) => {
                        teams.push(SplitTeam {
                            shape,
                            destroyed: vec![false; shape.size],
                        });
                        (FIRST_SPLIT_TEAM as usize + teams.len() - 1) as u64
                    }
                    _ => INVALID_TEAM as u64,
                }
            })?;
        let made = outcome as i32;
        let member = child.is_some_and(|c| c.rank_of(pe).is_some());
        Ok(Split {
            args: all,
            team: if made != INVALID_TEAM && member {
                made
            } else {
                INVALID_TEAM
            },
        })
    }

    /// `pe` destroys its membership of split team `team` (local, as NVSHMEM's). Once every
    /// member has, the team's rendezvous are gone. Unknown handles, predefined teams and
    /// non-members are ignored.
    pub fn team_destroy(&self, pe: usize, team: i32) {
        let mut st = self.lock();
        let Some(index) = team
            .checked_sub(FIRST_SPLIT_TEAM)
            .and_then(|i| usize::try_from(i).ok())
        else {
            return;
        };
        let Some(split) = st.teams.get_mut(index) else {
            return;
        };
        let Some(rank) = split.shape.rank_of(pe) else {
            return;
        };
        split.destroyed[rank] = true;
        if split.destroyed.iter().all(|&d| d) {
            st.rounds.retain(|&(_, key), _| key != team);
        }
        // Members waiting for this one in a collective of the team can no longer complete.
        self.cv.notify_all();
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

    /// The PE whose failure ended the job, and how: the first PE that failed of its own
    /// accord — a PE that failed because it waited for another PE (a device wait, a
    /// collective) that failed too is followed to that one, whichever failed first in time.
    /// The PEs that failed as consequences are listed after the cause's own reason.
    pub fn first_failure(&self) -> Option<(usize, String)> {
        let st = self.lock();
        let (first, reason) = st.failure.clone()?;
        let root = |mut pe: usize| {
            // Follow the blame; at most n_pes steps, in case of a cycle.
            for _ in 0..st.pes.len() {
                match st.blamed[pe] {
                    Some(q) if q != pe && st.failures[q].is_some() => pe = q,
                    _ => break,
                }
            }
            pe
        };
        let cause = root(first);
        let mut reason = if cause == first {
            reason
        } else {
            st.failures[cause].clone().unwrap_or(reason)
        };
        let consequences: Vec<String> = (0..st.pes.len())
            .filter(|&q| q != cause && st.failures[q].is_some() && root(q) == cause)
            .map(|q| std::format!("PE {q}"))
            .collect();
        if !consequences.is_empty() {
            reason.push_str(&std::format!(
                "\n(consequences: {} failed waiting for PE {cause})",
                consequences.join(", ")
            ));
        }
        Some((cause, reason))
    }

    /// PE `pe` fails a device-side wait because of `e`: the job's error names `e`'s PE, not
    /// this one (see [`World::first_failure`]).
    pub(crate) fn blame_wait(&self, pe: usize, e: &CollectiveError) {
        let _ = self.lock().blame(pe, e.clone());
    }

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

    /// A kernel failed on `pe`: device-side collectives, which may wait for one of its
    /// threads, fail from now on.
    pub(crate) fn poison_device(&self, pe: usize, kernel: &'static str, failure: String) {
        self.lock()
            .kernel_failure
            .get_or_insert((pe, kernel, failure));
        self.cv.notify_all();
    }
}

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("World")
            .field("heaps", &self.heaps)
            .field("pes", &st.pes)
            .field("failure", &st.failure)
            .finish_non_exhaustive()
    }
}
