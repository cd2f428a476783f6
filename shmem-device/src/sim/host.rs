//! What rshmem-host's on-stream operations (`Shmem::put_on_stream`, host collectives, team
//! barriers) do on the simulator. A GPU runs them on the PE's stream after its earlier
//! work; here launches have completed when they return, so the calling host thread performs
//! each at once, with the same checks kernels get, and reports failures as errors.

use core::fmt;
use core::sync::atomic::{fence, Ordering::SeqCst};
use std::string::String;

use super::coll::{self, Coll, Place, Reducible};
use super::mem::{atomic_copy, scalar};
use super::world::{CollectiveError, Side, World};

/// Why a host-side operation did nothing, or stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostOpError {
    /// The team's members could not meet.
    Collective(CollectiveError),
    /// An address, length or argument is wrong (the message says which).
    Invalid(String),
}

impl fmt::Display for HostOpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Collective(e) => e.fmt(f),
            Self::Invalid(why) => f.write_str(why),
        }
    }
}

/// A host thread's collective: addresses checked against its PE's heap, meetings in the
/// host-side rendezvous of the team.
struct OnHost<'j> {
    world: &'j World,
    pe: usize,
    team: i32,
    op: &'static str,
}

impl Place for OnHost<'_> {
    type Error = HostOpError;

    fn span(
        &self,
        addr: usize,
        bytes: usize,
        align: usize,
        pe: usize,
    ) -> Result<*mut u8, HostOpError> {
        if addr % align != 0 {
            return Err(HostOpError::Invalid(std::format!(
                "address {addr:#x} is not aligned to {align} bytes"
            )));
        }
        let offset = self
            .world
            .heap(self.pe)
            .offset_of(addr, bytes)
            .map_err(HostOpError::Invalid)?;
        // SAFETY: `offset + bytes` lies in a live allocation of this PE's heap; every heap
        // has the same size.
        Ok(unsafe { self.world.heap(pe).base().add(offset) })
    }

    fn meet(&self) -> Result<(), HostOpError> {
        self.world
            .rendezvous(Side::Host, self.team, self.pe, self.op, [0; 4])
            .map(drop)
            .map_err(HostOpError::Collective)
    }

    fn invalid(&self, message: String) -> HostOpError {
        HostOpError::Invalid(message)
    }
}

impl World {
    /// PE `pe` copies `bytes` bytes from its symmetric address `src` to the symmetric address
    /// `dest` on PE `target` (`nvshmemx_putmem_on_stream`).
    pub fn put(
        &self,
        pe: usize,
        dest: usize,
        src: usize,
        bytes: usize,
        target: usize,
    ) -> Result<(), String> {
        self.copy(pe, (dest, target), (src, pe), bytes)
    }

    /// PE `pe` copies `bytes` bytes from the symmetric address `src` on PE `target` to its
    /// symmetric address `dest` (`nvshmemx_getmem_on_stream`).
    pub fn get(
        &self,
        pe: usize,
        dest: usize,
        src: usize,
        bytes: usize,
        target: usize,
    ) -> Result<(), String> {
        self.copy(pe, (dest, pe), (src, target), bytes)
    }

    /// PE `pe` copies `bytes` bytes from its symmetric address `src` to `dest` on PE `target`,
    /// then stores `value` into the `u64` at the symmetric address `sig` on `target`
    /// (`nvshmemx_putmem_signal_on_stream` with `NVSHMEM_SIGNAL_SET`): a thread that reads
    /// the value there reads the data too.
    pub fn put_signal(
        &self,
        pe: usize,
        (dest, src, bytes): (usize, usize, usize),
        (sig, value): (usize, u64),
        target: usize,
    ) -> Result<(), String> {
        if sig % 8 != 0 {
            return Err(std::format!(
                "the signal address {sig:#x} is not aligned to 8 bytes (a u64)"
            ));
        }
        // Checked before anything is written: the copy's own checks, then the signal's.
        let sig_off = self.heap(pe).offset_of(sig, 8)?;
        self.copy(pe, (dest, target), (src, pe), bytes)?;
        // SAFETY: `sig_off + 8` lies in a live allocation of this PE's heap (checked), and
        // every heap has the same size; 8-aligned (heaps are); the simulator accesses heap
        // words only atomically.
        unsafe { scalar::store(self.heap(target).base().add(sig_off).cast::<u64>(), value) };
        fence(SeqCst);
        Ok(())
    }

    /// Copies between `(address, PE)` pairs whose addresses are symmetric addresses of PE
    /// `pe`, after checking both ranges.
    fn copy(
        &self,
        pe: usize,
        to: (usize, usize),
        from: (usize, usize),
        bytes: usize,
    ) -> Result<(), String> {
        let n = self.n_pes();
        if let Some(bad) = [to.1, from.1].into_iter().find(|&q| q >= n) {
            return Err(std::format!(
                "PE {bad} is out of range: the job has {n} PE(s), numbered 0..{n}"
            ));
        }
        if bytes == 0 {
            return Ok(());
        }
        let heap = self.heap(pe);
        let (to_off, from_off) = (heap.offset_of(to.0, bytes)?, heap.offset_of(from.0, bytes)?);
        if to.1 == from.1 && to_off < from_off + bytes && from_off < to_off + bytes {
            return Err(std::format!(
                "the source and destination ranges overlap ({bytes} bytes at {:#x} and {:#x} on PE {})",
                from.0, to.0, to.1
            ));
        }
        fence(SeqCst);
        // SAFETY: both ranges lie in live allocations of equally sized heaps and do not
        // overlap; the simulator accesses heap bytes only atomically.
        unsafe {
            atomic_copy(
                self.heap(to.1).base().add(to_off),
                self.heap(from.1).base().add(from_off),
                bytes,
            )
        };
        fence(SeqCst);
        Ok(())
    }

    /// PE `pe`'s part of collective `coll` over `team`, on `n`-element blocks of `T` at its
    /// symmetric addresses `dest` and `src`: collective over the team's members, on the host
    /// side (it never meets a kernel's collective).
    pub fn collective<T: Reducible>(
        &self,
        pe: usize,
        team: i32,
        coll: Coll,
        dest: usize,
        src: usize,
        n: usize,
    ) -> Result<(), HostOpError> {
        if let Coll::Reduce(op) | Coll::ReduceScatter(op) = coll {
            if !T::supports(op) {
                return Err(HostOpError::Invalid(std::format!(
                    "{op:?} is not defined for {}",
                    core::any::type_name::<T>()
                )));
            }
        }
        let (shape, rank) = self.team_view(pe, team).map_err(HostOpError::Collective)?;
        let rank = rank.ok_or(HostOpError::Collective(CollectiveError::NotMember {
            pe,
            team,
        }))?;
        let place = OnHost {
            world: self,
            pe,
            team,
            op: coll.name(),
        };
        let me = super::team::Member { shape, rank };
        coll::run::<T, _>(&place, me, coll, dest, src, n)
    }
}
