//! Teams on the simulator. Every PE shares memory with every other, so the predefined teams
//! `WORLD`, `SHARED` and `NODE` all hold every PE, in order; split teams are made by the host
//! (`World::team_split`) and looked up in the job's table. A handle that names no team, or a
//! team the calling PE destroyed, fails the thread, naming it.

use super::context::{with, ThreadCtx};
use super::scope::pe_sync;
use super::world::TeamShape;
use crate::contract::ScopeKind;

/// `Team::INVALID`: NVSHMEM's team calls return -1 for it.
const INVALID: i32 = -1;

/// A team as one of its members sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Member {
    /// The team's members.
    pub shape: TeamShape,
    /// The calling PE's rank among them.
    pub rank: usize,
}

/// The calling PE's view of `team`: its members and this PE's rank if it is one; the thread
/// fails for a handle that names no live team of this PE.
fn view(c: &ThreadCtx<'_>, op: &str, team: i32) -> (TeamShape, Option<usize>) {
    c.world()
        .team_view(c.pe(), team)
        .unwrap_or_else(|e| c.fail(std::format!("{op}: {e}")))
}

/// The calling PE as a member of `team`, or `None` for `Team::INVALID`; the thread fails
/// for other handles it cannot use (unknown, destroyed, or of a team it is not in).
pub(crate) fn member(c: &ThreadCtx<'_>, op: &str, team: i32) -> Option<Member> {
    if team == INVALID {
        return None;
    }
    match view(c, op, team) {
        (shape, Some(rank)) => Some(Member { shape, rank }),
        (_, None) => c.fail(std::format!(
            "{op}: {}",
            super::CollectiveError::NotMember { pe: c.pe(), team }
        )),
    }
}

/// This PE's rank in `team`, or -1 if it is not a member (or the team is `INVALID`).
pub(crate) fn my_pe(team: i32) -> i32 {
    let op = "shmem::Team::my_pe";
    with(op, |c| match team {
        INVALID => INVALID,
        _ => view(c, op, team).1.map_or(INVALID, |r| r as i32),
    })
}

/// The number of members of `team` (-1 for `INVALID`).
pub(crate) fn n_pes(team: i32) -> i32 {
    let op = "shmem::Team::n_pes";
    with(op, |c| match team {
        INVALID => INVALID,
        _ => view(c, op, team).0.size as i32,
    })
}

/// The rank in `dst` of the PE ranked `pe` in `src`, or -1 if it is not in `dst`, `pe` is not
/// a rank of `src`, or either team is `INVALID`.
pub(crate) fn translate_pe(src: i32, pe: i32, dst: i32) -> i32 {
    let op = "shmem::Team::translate_pe";
    with(op, |c| {
        if src == INVALID || dst == INVALID {
            return INVALID;
        }
        let (from, to) = (view(c, op, src).0, view(c, op, dst).0);
        usize::try_from(pe)
            .ok()
            .filter(|&r| r < from.size)
            .and_then(|r| to.rank_of(from.pe(r)))
            .map_or(INVALID, |r| r as i32)
    })
}

/// `Team::barrier` (`quiet`: complete operations first; every simulated operation already
/// is) and `Team::sync`: the calling group meets one group of every other member. Returns
/// 0, or -1 for the invalid team.
pub(crate) fn barrier(scope: ScopeKind, team: i32, quiet: bool) -> i32 {
    let op = if quiet {
        "shmem::Team::barrier"
    } else {
        "shmem::Team::sync"
    };
    if with(op, |c| member(c, op, team)).is_none() {
        return -1;
    }
    pe_sync(scope, team, op, op);
    0
}
