//! Teams on the host: collective splits of a team into smaller ones, the RAII
//! [`TeamHandle`] that destroys a split team when it is dropped, and team queries.
//!
//! A team is an ordered subset of the PEs; kernels take it by value as
//! [`rshmem_device::shmem::Team`] (a handle, like `nvshmem_team_t`), for team-scoped
//! barriers and collectives. [`Team::WORLD`], [`Team::SHARED`] and [`Team::NODE`] always
//! exist; others come from splits:
//!
//! ```no_run
//! # use rshmem_host::{Shmem, Team};
//! # fn f(shmem: &Shmem) -> rshmem_host::Result<()> {
//! // The even PEs: parent PEs 0, 2, 4, ... (collective over the parent: every PE calls it).
//! let n = shmem.n_pes();
//! if let Some(even) = shmem.team_split_strided(Team::WORLD, 0, 2, n.div_ceil(2))? {
//!     assert_eq!(even.my_pe(), shmem.my_pe() / 2);
//!     // `*even` is the `Team` a kernel takes as an argument.
//! }
//! # Ok(()) }
//! ```
//!
//! As in NVSHMEM, a split returns the new team only on its members (`None`, i.e.
//! `Team::INVALID`, elsewhere), and handles are per PE: pass a kernel the handle its own PE
//! got. Arguments are checked before anything is sent: invalid ones fail with
//! [`Error::InvalidArgument`] on every PE that passed them. `Shmem` only hands teams it holds
//! (predefined, or split and not yet dropped) to the backend: NVSHMEM indexes its team table
//! with a handle unchecked.

use crate::contract::{Error, Result};
use crate::shmem::Shmem;
use rshmem_device::shmem::Team;

/// The predefined teams, which are never destroyed.
const PREDEFINED: [Team; 3] = [Team::WORLD, Team::SHARED, Team::NODE];

/// A team this PE got from a split, and is a member of. Dereferences to the [`Team`] kernels
/// take; destroys the team (`nvshmem_team_destroy`, local to this PE) when dropped, after
/// this PE's queued work has finished.
///
/// Keep it alive while kernels or on-stream collectives use the team, on every member: a
/// member that has dropped it no longer takes part in the team's collectives.
///
/// Its own `my_pe`, `n_pes` and `translate_pe` answer on the host; the device-side methods
/// of [`Team`] it also reaches through `Deref` (`barrier`, `sync`) run only inside kernels.
pub struct TeamHandle<'s> {
    shmem: &'s Shmem,
    team: Team,
    my_pe: usize,
    n_pes: usize,
}

impl TeamHandle<'_> {
    /// The team, as a kernel argument (also `*handle`).
    pub fn team(&self) -> Team {
        self.team
    }

    /// This PE's number in the team, `0..n_pes()`.
    pub fn my_pe(&self) -> usize {
        self.my_pe
    }

    /// The number of PEs in the team.
    pub fn n_pes(&self) -> usize {
        self.n_pes
    }

    /// The number in team `dest` of this team's PE `pe`, if that PE is a member of `dest`
    /// (and `pe < n_pes()`, and this PE holds `dest`).
    pub fn translate_pe(&self, pe: usize, dest: Team) -> Option<usize> {
        self.shmem.team_translate_pe(self.team, pe, dest)
    }
}

impl std::ops::Deref for TeamHandle<'_> {
    type Target = Team;

    fn deref(&self) -> &Team {
        &self.team
    }
}

impl From<&TeamHandle<'_>> for Team {
    fn from(handle: &TeamHandle<'_>) -> Team {
        handle.team
    }
}

impl Drop for TeamHandle<'_> {
    fn drop(&mut self) {
        self.shmem.release_team(self.team);
    }
}

impl std::fmt::Debug for TeamHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamHandle")
            .field("team", &self.team.raw())
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.n_pes)
            .finish()
    }
}

/// Checks a strided split's triplet (parent PEs `start + stride * i`, `i < size`) against a
/// parent of `parent_n` PEs; the message says what is wrong.
pub(crate) fn check_strided(
    parent_n: usize,
    start: usize,
    stride: usize,
    size: usize,
) -> std::result::Result<(), String> {
    let what = format!("(start {start}, stride {stride}, size {size}) over a {parent_n}-PE parent");
    let why = if size == 0 {
        "size 0: a team holds at least one PE".to_string()
    } else if stride == 0 {
        "stride 0: the PEs of a team are distinct, so the stride is at least 1".to_string()
    } else if start >= parent_n {
        format!("start {start} is not a PE of the parent (0..{parent_n})")
    } else {
        match stride
            .checked_mul(size - 1)
            .and_then(|span| span.checked_add(start))
        {
            Some(last) if last < parent_n => return Ok(()),
            Some(last) => format!(
                "its last PE, start + stride × (size − 1) = {last}, is not a PE of the parent \
                 (0..{parent_n}); at most {} PEs fit from start {start} with stride {stride}",
                (parent_n - 1 - start) / stride + 1
            ),
            None => "start + stride × (size − 1) overflows".to_string(),
        }
    };
    Err(format!("{what}: {why}"))
}

/// Why a team split cannot run during a graph capture.
const TEAM_SPLIT: &str = "a team split is a collective host call, which a graph does not \
    record: split teams before Stream::capture";

impl Shmem {
    /// Splits `parent` into the team of its PEs `start`, `start + stride`, ...,
    /// `start + stride * (size - 1)` (numbered in `parent`), in that order
    /// (`nvshmem_team_split_strided`). Returns the new team on its members and `None` on
    /// the parent's other PEs.
    ///
    /// Collective over `parent`: every member calls it with the same arguments, in the same
    /// order as its other collectives (non-members take part too). Invalid arguments (size 0,
    /// stride 0, a PE outside the parent) fail with [`Error::InvalidArgument`] before any
    /// communication. On GPUs it needs NVSHMEM's host collectives: one PE per GPU, or MPS
    /// ([`Error::Unsupported`] otherwise).
    pub fn team_split_strided(
        &self,
        parent: Team,
        start: usize,
        stride: usize,
        size: usize,
    ) -> Result<Option<TeamHandle<'_>>> {
        const CALL: &str = "team_split_strided";
        self.refuse_during_capture(CALL, TEAM_SPLIT)?;
        let parent_n = self.held_team(CALL, parent)?;
        let verdict = check_strided(parent_n, start, stride, size).map_err(|message| {
            Error::InvalidArgument {
                call: CALL,
                message,
            }
        });
        // One member's stride is irrelevant; 1 keeps every value a C int for NVSHMEM.
        let stride = if size == 1 { 1 } else { stride };
        let team = self
            .inner
            .team_split_strided(parent, [start, stride, size], verdict)?;
        self.adopt(CALL, team)
    }

    /// Splits `parent` into a grid of rows of `xrange` consecutive PEs
    /// (`nvshmem_team_split_2d`): returns this PE's row (x axis) and its column (y axis:
    /// parent PEs `xrange` apart). `xrange` larger than the parent means one row. When it does
    /// not divide the parent's size, the last row and the last columns are shorter.
    ///
    /// Collective over `parent`, like [`Shmem::team_split_strided`]; `xrange` 0 is an
    /// [`Error::InvalidArgument`].
    pub fn team_split_2d(
        &self,
        parent: Team,
        xrange: usize,
    ) -> Result<(TeamHandle<'_>, TeamHandle<'_>)> {
        const CALL: &str = "team_split_2d";
        self.refuse_during_capture(CALL, TEAM_SPLIT)?;
        let parent_n = self.held_team(CALL, parent)?;
        if xrange == 0 {
            return Err(Error::InvalidArgument {
                call: CALL,
                message: format!(
                    "xrange 0 over a {parent_n}-PE parent: a row holds at least one PE"
                ),
            });
        }
        let (row, column) = self.inner.team_split_2d(parent, xrange)?;
        // Both adopted before either error returns, so neither team leaks.
        let (row, column) = (self.adopt(CALL, row), self.adopt(CALL, column));
        let (row, column) = (row?, column?);
        row.zip(column).ok_or_else(|| Error::Collective {
            op: CALL,
            pe: self.my_pe(),
            message: "the split left this PE without a row or a column team, but every PE of \
                      the parent belongs to one of each"
                .into(),
        })
    }

    /// This PE's number in `team`; `None` for [`Team::INVALID`] and for handles this PE does
    /// not hold (never split here, or dropped).
    pub fn team_my_pe(&self, team: Team) -> Option<usize> {
        self.holds(team)
            .then(|| self.inner.team_my_pe(team))
            .flatten()
    }

    /// The number of PEs in `team`; `None` as for [`Shmem::team_my_pe`].
    pub fn team_n_pes(&self, team: Team) -> Option<usize> {
        self.holds(team).then(|| self.inner.team_n_pes(team))
    }

    /// The number in team `dest` of team `src`'s PE `pe` (`nvshmem_team_translate_pe`):
    /// `None` if that PE is not in `dest`, `pe` is not in `src`, or this PE does not hold
    /// both teams.
    pub fn team_translate_pe(&self, src: Team, pe: usize, dest: Team) -> Option<usize> {
        let n = self.team_n_pes(src)?;
        (pe < n && self.holds(dest))
            .then(|| self.inner.team_translate_pe(src, pe, dest))
            .flatten()
    }

    /// Whether `team` is predefined or a split team this PE holds.
    pub(crate) fn holds(&self, team: Team) -> bool {
        PREDEFINED.contains(&team) || self.held().contains(&team)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Vec<Team>> {
        // Plain data, consistent after any panic.
        self.teams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Checks that `call` may use `team` on this PE (held, and this PE a member) and returns
    /// its size.
    pub(crate) fn held_team(&self, call: &'static str, team: Team) -> Result<usize> {
        let message = if team == Team::INVALID {
            "Team::INVALID is not a team: a split returns it (as None) on the PEs it leaves \
             out, and those take no part in the new team's calls"
                .to_string()
        } else if !self.holds(team) {
            format!(
                "team handle {} is not held by this PE: use Team::WORLD, Team::SHARED, \
                 Team::NODE, or a TeamHandle this PE got from a split and still holds",
                team.raw()
            )
        } else {
            return match self.inner.team_my_pe(team) {
                Some(_) => Ok(self.inner.team_n_pes(team)),
                None => Err(Error::InvalidArgument {
                    call,
                    message: format!("this PE is not a member of team {}", team.raw()),
                }),
            };
        };
        Err(Error::InvalidArgument { call, message })
    }

    /// Wraps a team a split returned: `None` for `Team::INVALID`, else a handle this PE holds.
    fn adopt(&self, call: &'static str, team: Team) -> Result<Option<TeamHandle<'_>>> {
        if team == Team::INVALID {
            return Ok(None);
        }
        // Held from here, so dropping the handle on the error below destroys the team.
        self.held().push(team);
        let my_pe = self.inner.team_my_pe(team);
        let handle = TeamHandle {
            shmem: self,
            team,
            my_pe: my_pe.unwrap_or(0),
            n_pes: self.inner.team_n_pes(team),
        };
        match my_pe {
            Some(_) => Ok(Some(handle)),
            None => Err(Error::Collective {
                op: call,
                pe: self.my_pe(),
                message: format!(
                    "the split returned team {} on this PE, which is not a member of it",
                    team.raw()
                ),
            }),
        }
    }

    /// Forgets a dropped handle's team and destroys this PE's part of it once the work
    /// queued before has finished.
    fn release_team(&self, team: Team) {
        self.held().retain(|&t| t != team);
        // Kernels or collectives queued earlier may still use the team; a failure among them
        // was or will be reported by the next synchronisation, and drop cannot return it.
        let _ = self.inner.synchronize();
        self.inner.team_destroy(team);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{split_2d_triplets, Axis};

    #[test]
    fn strided_triplets_are_checked_with_the_reason() {
        assert!(check_strided(4, 0, 2, 2).is_ok());
        assert!(check_strided(4, 1, 2, 2).is_ok());
        assert!(check_strided(4, 3, 7, 1).is_ok());
        assert!(check_strided(1, 0, 1, 1).is_ok());
        let cases = [
            ((4, 0, 1, 0), "size 0"),
            ((4, 0, 0, 2), "stride 0"),
            ((4, 4, 1, 1), "start 4 is not a PE of the parent (0..4)"),
            (
                (4, 1, 2, 3),
                "= 5, is not a PE of the parent (0..4); at most 2 PEs fit",
            ),
            ((4, 0, usize::MAX, 3), "overflows"),
        ];
        for ((n, start, stride, size), why) in cases {
            let msg = check_strided(n, start, stride, size).unwrap_err();
            assert!(
                msg.contains(why)
                    && msg.contains(&format!(
                        "(start {start}, stride {stride}, size {size}) over a {n}-PE parent"
                    )),
                "{msg}"
            );
        }
    }

    #[test]
    fn two_d_splits_cover_every_pe_once_per_axis() {
        for n in 1..=9 {
            for xrange in 1..=n + 2 {
                let triplets = split_2d_triplets(n, xrange);
                for axis in [Axis::Row, Axis::Column] {
                    let mut seen = vec![0; n];
                    for (_, [start, stride, size]) in triplets.iter().filter(|(a, _)| *a == axis) {
                        assert!(check_strided(n, *start, *stride, *size).is_ok());
                        for i in 0..*size {
                            seen[start + stride * i] += 1;
                        }
                    }
                    assert_eq!(seen, vec![1; n], "n {n}, xrange {xrange}, {axis:?}");
                }
            }
        }
        // 5 PEs in rows of 2: rows {0,1} {2,3} {4}; columns {0,2,4} {1,3}.
        assert_eq!(
            split_2d_triplets(5, 2),
            vec![
                (Axis::Row, [0, 1, 2]),
                (Axis::Row, [2, 1, 2]),
                (Axis::Row, [4, 1, 1]),
                (Axis::Column, [0, 2, 3]),
                (Axis::Column, [1, 2, 2]),
            ]
        );
    }
}
