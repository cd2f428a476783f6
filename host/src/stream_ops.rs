//! On-stream operations from the host: puts and gets between symmetric buffers, barriers,
//! and collectives over a [`Team`], queued on a [`Stream`] after the work queued there
//! before them (`nvshmemx_*_on_stream`); the simulator performs them at once. `Shmem`'s
//! `*_on_stream` methods queue them on the PE's own stream. Like a launch, they return once
//! queued: [`Stream::synchronize`], [`Shmem::synchronize`] (or a buffer copy to the host)
//! waits for them and reports failures.
//!
//! Buffers are given as [`SymRange`]s, element ranges of [`SymBuffer`](crate::SymBuffer)s checked when made
//! (`&buf` is the whole buffer); every length and team rank is checked before anything is
//! queued, and a failed check queues nothing ([`Error::InvalidArgument`]).
//!
//! ```no_run
//! # use rshmem_host::{ReduceOp, Shmem, Team};
//! # fn f(shmem: &Shmem) -> rshmem_host::Result<()> {
//! let (me, n) = (shmem.my_pe(), shmem.n_pes());
//! let src = shmem.alloc_from(&[me as i64; 3])?;
//! let sum = shmem.alloc_zeroed::<i64>(3)?;
//! let all = shmem.alloc_zeroed::<i64>(3 * n)?;
//! shmem.reduce_on_stream(Team::WORLD, ReduceOp::Sum, &sum, &src)?;
//! shmem.fcollect_on_stream(Team::WORLD, &all, &src)?;
//! // Elements 1..3 of `src` into elements 0..2 of the right neighbour's `sum`.
//! shmem.put_on_stream(sum.range(..2)?, src.range(1..)?, (me + 1) % n)?;
//! shmem.barrier_all_on_stream()?;
//! assert_eq!(all.to_vec()?.len(), 3 * n);
//! # Ok(()) }
//! ```
//!
//! # On GPUs
//!
//! NVSHMEM runs these collectives with its own kernels on the stream (rshmem sets
//! `NVSHMEM_DISABLE_NCCL=1`, so NCCL is never used for them). In NVSHMEM's limited
//! multi-process-per-GPU mode (several PEs on one GPU without MPS) it refuses every host-side
//! collective but `barrier_all` by ending the process, so rshmem returns
//! [`Error::Unsupported`] for them there instead (puts, gets and `barrier_all_on_stream` are
//! not among the calls it refuses).

use crate::contract::{CollElem, CollOp, ElemKind, Error, Result};
use crate::shmem::Shmem;
use crate::stream::Stream;
use crate::sym_range::SymRange;
use bytemuck::Pod;
use rshmem_device::shmem::{ReduceOp, Team};

impl Stream<'_> {
    /// Copies `src` (this PE's elements) into `dest` on PE `pe` (`nvshmemx_putmem_on_stream`),
    /// after the work queued on this stream before. The slices have the same length. Peers see
    /// the data once this stream has passed it and a barrier orders them after it (e.g.
    /// [`Stream::barrier_all`]).
    pub fn put<'a, T: Pod>(
        &self,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
        pe: usize,
    ) -> Result<()> {
        self.rma("put_on_stream", true, dest.into(), src.into(), pe)
    }

    /// Copies `src` on PE `pe` into `dest` here (`nvshmemx_getmem_on_stream`), after the
    /// work queued on this stream before. The slices have the same length.
    pub fn get<'a, T: Pod>(
        &self,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
        pe: usize,
    ) -> Result<()> {
        self.rma("get_on_stream", false, dest.into(), src.into(), pe)
    }

    /// Copies `src` (this PE's elements) into `dest` on PE `pe`, then sets the `u64` `sig`
    /// (a one-element range) on PE `pe` to `value` (`nvshmemx_putmem_signal_on_stream` with
    /// `NVSHMEM_SIGNAL_SET`), after the work queued on this stream before. A kernel on PE `pe`
    /// that waits for the value (`shmem::signal_wait_until`) and then acquires (a `.sys`
    /// fence) reads the data. For a peer mapped over NVLink or on the same GPU both steps are
    /// copy-engine work on the stream (`cudaMemcpyAsync`, `cuStreamWriteValue64`): no kernel,
    /// so a kernel that occupies every multiprocessor cannot hold them up.
    ///
    /// ```no_run
    /// # fn f(shmem: &rshmem_host::Shmem) -> rshmem_host::Result<()> {
    /// let data = shmem.alloc_from(&[1.0f32; 256])?;
    /// let inbox = shmem.alloc_zeroed::<f32>(256)?;
    /// let flag = shmem.alloc_zeroed::<u64>(1)?;
    /// let right = (shmem.my_pe() + 1) % shmem.n_pes();
    /// shmem.stream().put_signal(&inbox, &data, flag.range(..)?, 7, right)?;
    /// # Ok(()) }
    /// ```
    pub fn put_signal<'a, T: Pod>(
        &self,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
        sig: SymRange<'_, u64>,
        value: u64,
        pe: usize,
    ) -> Result<()> {
        const CALL: &str = "put_signal_on_stream";
        let (dest, src) = (dest.into(), src.into());
        if sig.len() != 1 {
            return Err(Error::InvalidArgument {
                call: CALL,
                message: format!(
                    "the signal range holds {} elements: it must be exactly one u64",
                    sig.len()
                ),
            });
        }
        // Nothing is queued unless the whole call is valid.
        self.check_rma(CALL, &dest, &src, pe)?;
        self.shmem.inner.put_signal_on_stream(
            self.id,
            dest.addr,
            src.addr,
            dest.bytes(),
            sig.addr,
            value,
            pe,
        )
    }

    /// The checks of a copy between `dest` on PE `pe` and `src` here (either way).
    fn check_rma<T: Pod>(
        &self,
        call: &'static str,
        dest: &SymRange<'_, T>,
        src: &SymRange<'_, T>,
        pe: usize,
    ) -> Result<()> {
        let n = self.shmem.n_pes();
        let invalid = |message: String| Err(Error::InvalidArgument { call, message });
        if pe >= n {
            return invalid(format!("PE {pe} is not a PE of the job (0..{n})"));
        }
        if dest.len() != src.len() {
            return invalid(format!(
                "the destination holds {} elements, the source {}: they must be equal",
                dest.len(),
                src.len()
            ));
        }
        if pe == self.shmem.my_pe() && dest.overlaps(src) {
            return invalid(format!(
                "the source {src:?} and the destination {dest:?} overlap on this PE"
            ));
        }
        Ok(())
    }

    fn rma<T: Pod>(
        &self,
        call: &'static str,
        put: bool,
        dest: SymRange<'_, T>,
        src: SymRange<'_, T>,
        pe: usize,
    ) -> Result<()> {
        self.check_rma(call, &dest, &src, pe)?;
        if dest.is_empty() {
            return Ok(());
        }
        self.shmem
            .inner
            .rma_on_stream(self.id, put, dest.addr, src.addr, dest.bytes(), pe)?;
        self.shmem.note_queued(self.id, None);
        Ok(())
    }

    /// Barrier over all PEs, after the work queued on this stream before, on every PE
    /// (`nvshmemx_barrier_all_on_stream`). Collective.
    pub fn barrier_all(&self) -> Result<()> {
        self.shmem.inner.barrier_all_on_stream(self.id)?;
        self.shmem.note_queued(self.id, None);
        Ok(())
    }

    /// Barrier over `team`'s PEs (`nvshmemx_barrier_on_stream`): completes this PE's puts
    /// first. Collective over the team.
    pub fn barrier(&self, team: Team) -> Result<()> {
        if team == Team::WORLD {
            // The same barrier, so it pairs with `barrier_all` on every backend, and one
            // NVSHMEM allows in every mode.
            return self.barrier_all();
        }
        self.shmem.held_team("barrier_on_stream", team)?;
        self.shmem.inner.barrier_on_stream(self.id, team)?;
        self.shmem.note_queued(self.id, Some(team));
        Ok(())
    }

    /// Copies `src` on team PE `root` into `dest` on every member, the root included
    /// (`nvshmemx_TYPENAME_broadcast_on_stream`). Collective over the team; every member
    /// passes slices of the same length and the same root.
    pub fn broadcast<'a, T: CollElem>(
        &self,
        team: Team,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
        root: usize,
    ) -> Result<()> {
        self.collective(team, CollOp::Broadcast { root }, dest.into(), src.into())
    }

    /// Concatenates every member's `src`, in team order, into `dest` on every member
    /// (`nvshmemx_TYPENAME_fcollect_on_stream`): `dest` holds `team size × src.len()`
    /// elements. Collective over the team.
    pub fn fcollect<'a, T: CollElem>(
        &self,
        team: Team,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
    ) -> Result<()> {
        self.collective(team, CollOp::Fcollect, dest.into(), src.into())
    }

    /// Sends block `j` of `src` to team PE `j`, which stores it as block `i` (this PE's team
    /// number) of `dest` (`nvshmemx_TYPENAME_alltoall_on_stream`). Both hold `team size`
    /// blocks of equal length. Collective over the team.
    pub fn alltoall<'a, T: CollElem>(
        &self,
        team: Team,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
    ) -> Result<()> {
        self.collective(team, CollOp::Alltoall, dest.into(), src.into())
    }

    /// `dest[k] = op over the members of src[k]` on every member
    /// (`nvshmemx_TYPENAME_OP_reduce_on_stream`); integer sums and products wrap. Bitwise
    /// operators take integers only. `dest` may be `src` itself (OpenSHMEM allows it), but no
    /// other overlap. Collective over the team.
    pub fn reduce<'a, T: CollElem>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
    ) -> Result<()> {
        self.collective(team, CollOp::Reduce(op), dest.into(), src.into())
    }

    /// As [`Stream::reduce`] over `team size` blocks of `src`, member `i` keeping the result
    /// of block `i` in `dest` (one block long)
    /// (`nvshmemx_TYPENAME_OP_reducescatter_on_stream`). Collective over the team.
    pub fn reducescatter<'a, T: CollElem>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: impl Into<SymRange<'a, T>>,
        src: impl Into<SymRange<'a, T>>,
    ) -> Result<()> {
        self.collective(team, CollOp::ReduceScatter(op), dest.into(), src.into())
    }

    /// Checks a collective's slices against the team and queues it.
    fn collective<T: CollElem>(
        &self,
        team: Team,
        op: CollOp,
        dest: SymRange<'_, T>,
        src: SymRange<'_, T>,
    ) -> Result<()> {
        let call = op.call();
        let size = self.shmem.held_team(call, team)?;
        let n = check_collective(op, T::KIND, size, dest.len(), src.len())
            .map_err(|message| Error::InvalidArgument { call, message })?;
        let in_place = matches!(op, CollOp::Reduce(_)) && dest.addr == src.addr;
        if dest.overlaps(&src) && !in_place {
            return Err(Error::InvalidArgument {
                call,
                message: format!("the source {src:?} and the destination {dest:?} overlap"),
            });
        }
        if n == 0 {
            return Ok(());
        }
        self.shmem.inner.collective_on_stream(
            self.id,
            team,
            op,
            T::KIND,
            dest.addr,
            src.addr,
            n,
        )?;
        self.shmem.note_queued(self.id, Some(team));
        Ok(())
    }
}

/// Makes `Shmem::NAME_on_stream`, each [`Stream`]'s `METHOD` on the PE's own stream
/// ([`Shmem::stream`]): `NAME => METHOD [generics] (parameters);`.
macro_rules! on_pe_stream {
    ($($name:ident => $method:ident [$($generics:tt)*] ($($arg:ident: $ty:ty),*);)*) => {
        impl Shmem {
            $(
                #[doc = concat!("[`Stream::", stringify!($method), "`] on the PE's stream.")]
                pub fn $name<$($generics)*>(&self, $($arg: $ty),*) -> Result<()> {
                    self.stream().$method($($arg),*)
                }
            )*
        }
    };
}

on_pe_stream! {
    put_on_stream => put ['a, T: Pod]
        (dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>, pe: usize);
    get_on_stream => get ['a, T: Pod]
        (dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>, pe: usize);
    put_signal_on_stream => put_signal ['a, T: Pod]
        (dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>, sig: SymRange<'_, u64>, value: u64, pe: usize);
    barrier_all_on_stream => barrier_all [] ();
    barrier_on_stream => barrier [] (team: Team);
    broadcast_on_stream => broadcast ['a, T: CollElem]
        (team: Team, dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>, root: usize);
    fcollect_on_stream => fcollect ['a, T: CollElem]
        (team: Team, dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>);
    alltoall_on_stream => alltoall ['a, T: CollElem]
        (team: Team, dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>);
    reduce_on_stream => reduce ['a, T: CollElem]
        (team: Team, op: ReduceOp, dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>);
    reducescatter_on_stream => reducescatter ['a, T: CollElem]
        (team: Team, op: ReduceOp, dest: impl Into<SymRange<'a, T>>, src: impl Into<SymRange<'a, T>>);
}

/// Checks a collective's lengths (in elements) on a team of `size` PEs and returns its
/// element count as NVSHMEM takes it; the message says what is wrong.
fn check_collective(
    op: CollOp,
    kind: ElemKind,
    size: usize,
    dest: usize,
    src: usize,
) -> std::result::Result<usize, String> {
    let blocks = |len: usize, what: &str| {
        if len % size == 0 {
            Ok(len / size)
        } else {
            Err(format!(
                "the {what} holds {len} elements, not a whole number of blocks for the team's \
                 {size} PEs"
            ))
        }
    };
    let same = |want: usize, what: &str| {
        if dest == want {
            Ok(())
        } else {
            Err(format!(
                "the destination holds {dest} elements, but {what} needs {want}"
            ))
        }
    };
    match op {
        CollOp::Broadcast { root } if root >= size => {
            Err(format!("root {root} is not a PE of the team (0..{size})"))
        }
        CollOp::Reduce(rop) | CollOp::ReduceScatter(rop) if !kind.supports(rop) => Err(format!(
            "{rop:?} is a bitwise reduction, defined for integers, not {}",
            kind.nvshmem_name()
        )),
        CollOp::Broadcast { .. } | CollOp::Reduce(_) => {
            same(src, "a source of that length").map(|()| src)
        }
        CollOp::Fcollect => {
            same(src * size, "the team's blocks of the source's length").map(|()| src)
        }
        CollOp::Alltoall => {
            let n = blocks(src, "source")?;
            same(src, "a source of that length").map(|()| n)
        }
        CollOp::ReduceScatter(_) => {
            let n = blocks(src, "source")?;
            same(n, "one block of the source").map(|()| n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_lengths_are_checked_per_collective() {
        let ok = |op, dest, src| check_collective(op, ElemKind::I32, 3, dest, src);
        assert_eq!(ok(CollOp::Fcollect, 21, 7), Ok(7));
        assert_eq!(ok(CollOp::Alltoall, 21, 21), Ok(7));
        assert_eq!(ok(CollOp::Broadcast { root: 2 }, 5, 5), Ok(5));
        assert_eq!(ok(CollOp::Reduce(ReduceOp::Max), 5, 5), Ok(5));
        assert_eq!(ok(CollOp::ReduceScatter(ReduceOp::Sum), 7, 21), Ok(7));
        let err = |op, dest, src, want: &str| {
            let msg = ok(op, dest, src).unwrap_err();
            assert!(msg.contains(want), "{op:?}: {msg}");
        };
        err(CollOp::Fcollect, 20, 7, "holds 20 elements, but");
        err(CollOp::Alltoall, 20, 20, "not a whole number of blocks");
        err(
            CollOp::Broadcast { root: 3 },
            5,
            5,
            "root 3 is not a PE of the team (0..3)",
        );
        err(CollOp::Reduce(ReduceOp::Sum), 4, 5, "holds 4 elements");
        err(CollOp::ReduceScatter(ReduceOp::Sum), 21, 21, "one block");
        let msg =
            check_collective(CollOp::Reduce(ReduceOp::Xor), ElemKind::F64, 2, 1, 1).unwrap_err();
        assert!(msg.contains("Xor") && msg.contains("double"), "{msg}");
        assert!(ElemKind::U64.supports(ReduceOp::Xor));
    }
}
