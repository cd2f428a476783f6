//! A GPU PE's teams: NVSHMEM's splits (refused in limited multi-process-per-GPU mode, where
//! NVSHMEM would end the process) and queries, each under the NVSHMEM lock.

use super::super::nvshmem::{result as nv, sys};
use super::state::{lock, GpuPe, PeShared};
use crate::contract::{Error, Result, TeamBackend};
use rshmem_device::shmem::Team;
use std::ffi::c_int;

impl PeShared {
    /// Runs `f` under the NVSHMEM lock with the PE's context bound, after the stream's
    /// earlier work has completed without error: NVSHMEM's host-side team calls synchronise
    /// the device themselves and end the process on a CUDA error, so a kernel fault must
    /// surface (as this PE's error) before them.
    pub(super) fn team_call<R>(&self, f: impl FnOnce(&'static sys::Lib) -> Result<R>) -> Result<R> {
        let _serial = lock(&self.serial);
        self.ctx().bind()?;
        self.sync()?;
        f(self.lib())
    }
}

/// A PE number or team triplet value as NVSHMEM's `int`.
pub(super) fn c_int_of(call: &'static str, what: &str, v: usize) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::InvalidArgument {
        call,
        message: format!("{what} {v} does not fit NVSHMEM's int"),
    })
}

impl TeamBackend for GpuPe {
    fn team_split_strided(
        &self,
        parent: Team,
        [start, stride, size]: [usize; 3],
        verdict: Result<()>,
    ) -> Result<Team> {
        const CALL: &str = "team_split_strided";
        // Every PE that passed these arguments fails here alike, before any communication.
        verdict?;
        let sh = &*self.shared;
        sh.require_host_collectives(CALL)?;
        let (start, stride, size) = (
            c_int_of(CALL, "start", start)?,
            c_int_of(CALL, "stride", stride)?,
            c_int_of(CALL, "size", size)?,
        );
        sh.team_call(|lib| {
            // SAFETY: NVSHMEM is initialised and not in limited MPG mode (checked above);
            // `Shmem` passes only live teams this PE is a member of, and a triplet checked
            // against the parent; every member of the parent calls it at the same point (the
            // contract of `Shmem::team_split_strided`).
            let team = unsafe { nv::team_split_strided(lib, parent.raw(), start, stride, size) }?;
            Ok(Team::from_raw(team))
        })
    }

    fn team_split_2d(&self, parent: Team, xrange: usize) -> Result<(Team, Team)> {
        const CALL: &str = "team_split_2d";
        let sh = &*self.shared;
        sh.require_host_collectives(CALL)?;
        // NVSHMEM clamps xrange to the parent's size; so does the int conversion here.
        let xrange = c_int::try_from(xrange).unwrap_or(c_int::MAX);
        sh.team_call(|lib| {
            // SAFETY: as in `team_split_strided`; `Shmem` checked `xrange >= 1`.
            let (x, y) = unsafe { nv::team_split_2d(lib, parent.raw(), xrange) }?;
            Ok((Team::from_raw(x), Team::from_raw(y)))
        })
    }

    /// Skipped where the GPU is unusable (a kernel faulted): NVSHMEM's destroy synchronises
    /// the device and would end the process on the error, while this PE is failing anyway.
    fn team_destroy(&self, team: Team) {
        if let Some(capture) = &mut *lock(&self.shared.capture) {
            // NVSHMEM's destroy synchronises the device: after the capture.
            capture.dropped_teams.push(team);
            return;
        }
        let _ = self.shared.team_call(|lib| {
            // SAFETY: `team` is a split team this PE held (its `TeamHandle` is being
            // dropped) and the stream's work that could use it has completed.
            unsafe { nv::team_destroy(lib, team.raw()) };
            Ok(())
        });
    }

    fn team_my_pe(&self, team: Team) -> Option<usize> {
        let sh = &*self.shared;
        let _serial = lock(&sh.serial);
        // SAFETY: `Shmem` passes only teams this PE holds.
        usize::try_from(unsafe { nv::team_my_pe(sh.lib(), team.raw()) }).ok()
    }

    fn team_n_pes(&self, team: Team) -> usize {
        let sh = &*self.shared;
        let _serial = lock(&sh.serial);
        // SAFETY: as in `team_my_pe`.
        usize::try_from(unsafe { nv::team_n_pes(sh.lib(), team.raw()) }).unwrap_or(0)
    }

    fn team_translate_pe(&self, src: Team, pe: usize, dest: Team) -> Option<usize> {
        let sh = &*self.shared;
        let pe = c_int::try_from(pe).ok()?;
        let _serial = lock(&sh.serial);
        // SAFETY: as in `team_my_pe`, for both teams; `Shmem` checked `pe` against `src`.
        usize::try_from(unsafe { nv::team_translate_pe(sh.lib(), src.raw(), pe, dest.raw()) }).ok()
    }
}
