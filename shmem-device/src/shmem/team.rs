//! Teams: ordered subsets of the PEs. [`Team::WORLD`] holds every PE; the host creates others
//! (strided or 2-D splits) and passes them to kernels by value.

use super::call::{nv_or_sim, scoped_call};
use super::Scope;

/// A team handle (`nvshmem_team_t`). Cheap to copy; pass it to kernels as an argument.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Team(i32);

// SAFETY: a plain `i32` with the same meaning on host and device.
unsafe impl crate::KernelArg for Team {}

impl Team {
    /// Every PE.
    pub const WORLD: Team = Team(0);
    /// The PEs that share memory with this one (on one node, over NVLink).
    pub const SHARED: Team = Team(1);
    /// The PEs on this node.
    pub const NODE: Team = Team(2);
    /// No team: what a failed split returns; operations on it return -1.
    pub const INVALID: Team = Team(-1);

    /// A handle from its raw `nvshmem_team_t` value (as the host API returns it).
    pub const fn from_raw(raw: i32) -> Self {
        Team(raw)
    }

    /// The raw `nvshmem_team_t` value.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// This PE's number in the team, or -1 if it is not a member.
    #[inline(always)]
    #[allow(unused_unsafe)] // the simulator's side is safe, NVSHMEM's is not
    pub fn my_pe(self) -> i32 {
        let team = self.0;
        // SAFETY: reads NVSHMEM's team table; any team value is accepted.
        unsafe {
            nv_or_sim!(nvshmem_team_my_pe(team: i32) -> i32,
                sim: crate::sim::team::my_pe(team))
        }
    }

    /// The number of PEs in the team (-1 for an invalid team).
    #[inline(always)]
    #[allow(unused_unsafe)] // the simulator's side is safe, NVSHMEM's is not
    pub fn n_pes(self) -> i32 {
        let team = self.0;
        // SAFETY: as `my_pe`.
        unsafe {
            nv_or_sim!(nvshmem_team_n_pes(team: i32) -> i32,
                sim: crate::sim::team::n_pes(team))
        }
    }

    /// The number in team `dest` of the PE numbered `pe` in this team, or -1 if it is not in
    /// `dest`.
    #[inline(always)]
    #[allow(unused_unsafe)] // the simulator's side is safe, NVSHMEM's is not
    pub fn translate_pe(self, pe: i32, dest: Team) -> i32 {
        let (src, dst) = (self.0, dest.0);
        // SAFETY: as `my_pe`.
        unsafe {
            nv_or_sim!(nvshmem_team_translate_pe(src: i32, pe: i32, dst: i32) -> i32,
                sim: crate::sim::team::translate_pe(src, pe, dst))
        }
    }

    /// Barrier over the team's PEs, completing this PE's outstanding operations first.
    /// Returns 0 on success. All threads of scope `S` on every member call it.
    ///
    /// # Safety
    ///
    /// Collective: every member must call it (the same number of times, in the same order);
    /// launch cooperatively when several blocks call collectives.
    #[inline(always)]
    pub unsafe fn barrier<S: Scope>(self) -> i32 {
        let team = self.0;
        scoped_call!(S::KIND, barrier(team: i32) -> i32, sim: crate::sim::team::barrier(S::KIND, team, true))
    }

    /// Synchronises the team's PEs without completing outstanding operations.
    ///
    /// # Safety
    ///
    /// As [`Team::barrier`].
    #[inline(always)]
    pub unsafe fn sync<S: Scope>(self) -> i32 {
        let team = self.0;
        scoped_call!(S::KIND, team_sync(team: i32) -> i32, sim: crate::sim::team::barrier(S::KIND, team, false))
    }
}
