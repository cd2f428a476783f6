//! [`Peers`]: a team as a kernel sees it — its size, this PE's rank, each member's PE number
//! in the world (what `shmem::ptr` and the puts take) and each member's copy of a symmetric
//! buffer.
//!
//! ```ignore
//! let peers = Peers::of(team);
//! // Every member's copy of `x`, in rank order (None if one is not reachable by loads and
//! // stores: several nodes, or a team larger than MAX_PEERS).
//! if let Some(xs) = unsafe { peers.mapped(x) } { /* ... */ }
//! ```

use rshmem_device::shmem::{self, Team};

/// The most members the peer-mapped blocks take at once (their pointer arrays have this many
/// slots): NVLink domains of 8 GPUs. Larger teams use the put/get forms.
pub const MAX_PEERS: usize = 8;

/// A team as a kernel sees it. Cheap to copy; made once per kernel with [`Peers::of`].
#[derive(Clone, Copy, Debug)]
pub struct Peers {
    /// The team.
    pub team: Team,
    /// This PE's rank in it.
    pub rank: u32,
    /// Its size.
    pub n: u32,
}

impl Peers {
    /// The team `team`, seen from this PE (which must be a member).
    #[inline(always)]
    pub fn of(team: Team) -> Self {
        Peers {
            team,
            rank: team.my_pe() as u32,
            n: team.n_pes() as u32,
        }
    }

    /// The world PE number of member `r` (`r < n`).
    #[inline(always)]
    pub fn world(self, r: u32) -> i32 {
        self.team.translate_pe(r as i32, Team::WORLD)
    }

    /// This PE's world number.
    #[inline(always)]
    pub fn me(self) -> i32 {
        shmem::my_pe()
    }

    /// Member `r`'s copy of the symmetric `p`, through which loads and stores reach it, or
    /// null if none exists (a PE behind a network transport).
    ///
    /// # Safety
    ///
    /// `p` points into a symmetric allocation; `r < n`.
    #[inline(always)]
    pub unsafe fn ptr<T>(self, p: *const T, r: u32) -> *mut T {
        // SAFETY: forwarded from this function's contract (a member is a PE of the job).
        unsafe { shmem::ptr(p, self.world(r)) }
    }

    /// Every member's copy of the symmetric `p` in rank order (slots `n..` null), or `None`
    /// if the team is larger than [`MAX_PEERS`] or a member is not reachable by loads and
    /// stores.
    ///
    /// # Safety
    ///
    /// As [`Peers::ptr`].
    #[inline(always)]
    pub unsafe fn mapped<T>(self, p: *const T) -> Option<[*mut T; MAX_PEERS]> {
        if self.n as usize > MAX_PEERS {
            return None;
        }
        let mut out = [core::ptr::null_mut(); MAX_PEERS];
        for (r, slot) in out.iter_mut().enumerate().take(self.n as usize) {
            // SAFETY: forwarded; `r < n`.
            *slot = unsafe { self.ptr(p, r as u32) };
            if slot.is_null() {
                return None;
            }
        }
        Some(out)
    }
}
