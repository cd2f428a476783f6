//! Teams: ordered subsets of the PEs. [`Team::WORLD`] holds every PE; the host creates others
//! (strided or 2-D splits) and passes them to kernels by value.

use super::Scope;
use crate::backend;

pub use crate::contract::Team;

// SAFETY: a plain `i32` with the same meaning on host and device.
unsafe impl crate::kernel::KernelArg for Team {}

impl Team {
    /// This PE's number in the team, or -1 if it is not a member.
    #[inline(always)]
    pub fn my_pe(self) -> i32 {
        backend::team_my_pe(self.raw())
    }

    /// The number of PEs in the team (-1 for an invalid team).
    #[inline(always)]
    pub fn n_pes(self) -> i32 {
        backend::team_n_pes(self.raw())
    }

    /// The number in team `dest` of the PE numbered `pe` in this team, or -1 if it is not in
    /// `dest`.
    #[inline(always)]
    pub fn translate_pe(self, pe: i32, dest: Team) -> i32 {
        backend::team_translate_pe(self.raw(), pe, dest.raw())
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
        // SAFETY: forwarded from this function's contract.
        unsafe { backend::team_barrier(S::KIND, self.raw(), true) }
    }

    /// Synchronises the team's PEs without completing outstanding operations.
    ///
    /// # Safety
    ///
    /// As [`Team::barrier`].
    #[inline(always)]
    pub unsafe fn sync<S: Scope>(self) -> i32 {
        // SAFETY: forwarded from this function's contract.
        unsafe { backend::team_barrier(S::KIND, self.raw(), false) }
    }
}
