//! Teams on the simulator. Every PE shares memory with every other, so the predefined teams
//! `WORLD`, `SHARED` and `NODE` all hold every PE, in order. Split teams are made by the
//! host; a handle the simulator does not know fails the thread, naming it.

use super::context::{with, ThreadCtx};
use super::device::pe_sync;
use crate::shmem::ScopeKind;

/// Whether `team` is one of the predefined all-PE teams; -1 (`INVALID`) is `Some(false)`.
fn known(c: &ThreadCtx<'_>, op: &str, team: i32) -> bool {
    match team {
        0..=2 => true,
        -1 => false,
        other => c.fail(std::format!(
            "{op}: team handle {other} is not known to the simulator (it models the predefined \
             teams WORLD, SHARED and NODE)"
        )),
    }
}

pub(crate) fn my_pe(team: i32) -> i32 {
    with("shmem::Team::my_pe", |c| {
        if known(c, "shmem::Team::my_pe", team) {
            c.pe() as i32
        } else {
            -1
        }
    })
}

pub(crate) fn n_pes(team: i32) -> i32 {
    with("shmem::Team::n_pes", |c| {
        if known(c, "shmem::Team::n_pes", team) {
            c.job().n_pes() as i32
        } else {
            -1
        }
    })
}

pub(crate) fn translate_pe(src: i32, pe: i32, dst: i32) -> i32 {
    with("shmem::Team::translate_pe", |c| {
        let op = "shmem::Team::translate_pe";
        let n = c.job().n_pes() as i32;
        if known(c, op, src) && known(c, op, dst) && (0..n).contains(&pe) {
            pe
        } else {
            -1
        }
    })
}

/// The world-team members' count, or the thread fails for a team it cannot model as such.
pub(crate) fn members(c: &ThreadCtx<'_>, op: &str, team: i32) -> Option<usize> {
    known(c, op, team).then(|| c.job().n_pes())
}

/// `Team::barrier` (`quiet`: complete operations first; every simulated operation already
/// is) and `Team::sync`. Returns 0, or -1 for the invalid team.
pub(crate) fn barrier(scope: ScopeKind, team: i32, quiet: bool) -> i32 {
    let ok = with("shmem::Team::barrier", |c| {
        members(c, "shmem::Team::barrier", team).is_some()
    });
    if !ok {
        return -1;
    }
    let (op, scoped) = if quiet {
        ("shmem::Team::barrier", "shmem::Team::barrier")
    } else {
        ("shmem::Team::sync", "shmem::Team::sync")
    };
    pe_sync(scope, op, scoped);
    0
}
