//! The collectives' host calls on [`Ops`]: argument checks, the algorithm and grid, the
//! launch. See the [module docs](super) for the rules every call follows.

use std::mem::size_of;

use bytemuck::Pod;
use rshmem_coll::algo::RmsNormArgs;
use rshmem_device::shmem::Team;
use rshmem_host::{Error, LaunchConfig, ReduceOp, Result, Stream, SymRange, SymRangeMut};

use super::elem::{launch_reduce, launch_rmsnorm, CollElem, Family, NormElem, Op};
use super::plan::{self, Algorithm, LAMPORT_REGION, PUSH_REGION};
use crate::Ops;

/// What a reduction call asks for, after its own checks.
struct Reduction<T> {
    call: &'static str,
    team: Team,
    n: usize,
    dst: *mut T,
    src: *const T,
    count: usize,
    scatter: bool,
    op: Op,
}

/// An error for a buffer too short: `what` holds `len` elements, the call needs `need`.
fn too_short(call: &'static str, what: &str, len: usize, need: usize, why: String) -> Error {
    Error::InvalidArgument {
        call,
        message: format!("`{what}` holds {len} elements, but {why} needs {need}"),
    }
}

/// Checks that `buf` holds at least `need` elements.
fn check_len(
    call: &'static str,
    what: &str,
    len: usize,
    need: usize,
    why: impl Fn() -> String,
) -> Result<()> {
    if len < need {
        Err(too_short(call, what, len, need, why()))
    } else {
        Ok(())
    }
}

/// `count × by`, or an error naming the overflow.
fn times(call: &'static str, count: usize, by: usize) -> Result<usize> {
    count.checked_mul(by).ok_or_else(|| Error::InvalidArgument {
        call,
        message: format!("{count} elements × {by} overflows"),
    })
}

/// The reductions rshmem's collectives run.
fn op_of(call: &'static str, op: ReduceOp) -> Result<Op> {
    match op {
        ReduceOp::Sum => Ok(Op::Sum),
        ReduceOp::Max => Ok(Op::Max),
        ReduceOp::Min => Ok(Op::Min),
        other => Err(Error::Unsupported {
            call,
            reason: format!(
                "with ReduceOp::{other:?}: rshmem's collectives reduce with Sum, Max or Min \
                 (NVSHMEM's on-stream `Stream::reduce` has the others)"
            ),
        }),
    }
}

impl<'s> Ops<'s> {
    /// Forces the algorithm of this PE's later collectives ([`Algorithm::Auto`], the default,
    /// picks by size). Every member must force the same; all-gathers have one algorithm and
    /// ignore it.
    pub fn set_algorithm(&self, algorithm: Algorithm) {
        self.coll.set_algorithm(algorithm)
    }

    /// The algorithm forced by [`Ops::set_algorithm`].
    pub fn algorithm(&self) -> Algorithm {
        self.coll.algorithm()
    }

    /// Makes `stream`'s collective workspace now (a symmetric allocation: collective over
    /// every PE). Needed only when the first collective on a stream is over a team that does
    /// not hold every PE; harmless otherwise.
    pub fn prepare_collectives(&self, stream: &Stream<'_>) -> Result<()> {
        self.coll.prepare(stream)
    }

    /// `dst[0..count] = src₀[0..count] ∘ … ∘ src_{n−1}[0..count]` on every member of `team`
    /// (`∘` = `op`: Sum, Max or Min; sums of floats in f32, of integers wrapping; a NaN
    /// propagates through Max and Min, see the [module docs](super)), queued on
    /// `stream`. `src` and `dst` are symmetric buffers of this PE or ranges of them (longer
    /// than `count` is fine; any offset, the same on every member: see the module docs), so
    /// `buf.range_mut(4096..8192)?` reduces those elements alone.
    pub fn all_reduce<'a, T: CollElem>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        src: impl Into<SymRange<'a, T>>,
        dst: impl Into<SymRangeMut<'a, T>>,
        count: usize,
        op: ReduceOp,
    ) -> Result<()> {
        const CALL: &str = "Ops::all_reduce";
        let (src, mut dst) = (src.into(), dst.into());
        let why = || format!("an all-reduce of {count} elements");
        check_len(CALL, "src", src.len(), count, why)?;
        check_len(CALL, "dst", dst.len(), count, why)?;
        self.reduce(
            stream,
            CALL,
            team,
            dst.as_mut_ptr(),
            src.as_ptr(),
            count,
            false,
            op,
        )
    }

    /// [`Ops::all_reduce`] in place: `buf[0..count]` becomes the reduction.
    pub fn all_reduce_in_place<'a, T: CollElem>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        buf: impl Into<SymRangeMut<'a, T>>,
        count: usize,
        op: ReduceOp,
    ) -> Result<()> {
        const CALL: &str = "Ops::all_reduce_in_place";
        let mut buf = buf.into();
        check_len(CALL, "buf", buf.len(), count, || {
            format!("an all-reduce of {count} elements")
        })?;
        let p = buf.as_mut_ptr();
        self.reduce(stream, CALL, team, p, p.cast_const(), count, false, op)
    }

    /// Reduce-scatter: `src` holds `n × count` elements (chunk `r` = elements
    /// `r·count..(r+1)·count`); member `r`'s `dst[0..count]` becomes the reduction of every
    /// member's chunk `r`.
    pub fn reduce_scatter<'a, T: CollElem>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        src: impl Into<SymRange<'a, T>>,
        dst: impl Into<SymRangeMut<'a, T>>,
        count: usize,
        op: ReduceOp,
    ) -> Result<()> {
        const CALL: &str = "Ops::reduce_scatter";
        let (src, mut dst) = (src.into(), dst.into());
        let (_, n) = self.coll.team(CALL, team)?;
        let total = times(CALL, count, n)?;
        check_len(CALL, "src", src.len(), total, || {
            format!("a reduce-scatter of {count} elements per PE over {n} PEs")
        })?;
        check_len(CALL, "dst", dst.len(), count, || {
            format!("a reduce-scatter of {count} elements per PE")
        })?;
        self.reduce(
            stream,
            CALL,
            team,
            dst.as_mut_ptr(),
            src.as_ptr(),
            count,
            true,
            op,
        )
    }

    /// [`Ops::reduce_scatter`] in place: `buf` holds `n × count` elements, and member `r`'s
    /// result lands in its own chunk `buf[r·count..(r+1)·count]` (NCCL's in-place layout);
    /// the other chunks are left as they were.
    pub fn reduce_scatter_in_place<'a, T: CollElem>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        buf: impl Into<SymRangeMut<'a, T>>,
        count: usize,
        op: ReduceOp,
    ) -> Result<()> {
        const CALL: &str = "Ops::reduce_scatter_in_place";
        let mut buf = buf.into();
        let (rank, n) = self.coll.team(CALL, team)?;
        let total = times(CALL, count, n)?;
        check_len(CALL, "buf", buf.len(), total, || {
            format!("a reduce-scatter of {count} elements per PE over {n} PEs")
        })?;
        let p = buf.as_mut_ptr();
        // SAFETY: `rank · count < total <= buf.len()` (or count is 0).
        let dst = unsafe { p.add(rank * count) };
        self.reduce(stream, CALL, team, dst, p.cast_const(), count, true, op)
    }

    /// All-gather: member `r`'s `src[0..count]` lands in `dst[r·count..(r+1)·count]` on every
    /// member. Any plain element type (the data move as bytes).
    pub fn all_gather<'a, T: Pod>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        src: impl Into<SymRange<'a, T>>,
        dst: impl Into<SymRangeMut<'a, T>>,
        count: usize,
    ) -> Result<()> {
        const CALL: &str = "Ops::all_gather";
        let (src, mut dst) = (src.into(), dst.into());
        let (rank, n) = self.coll.team(CALL, team)?;
        let total = times(CALL, count, n)?;
        check_len(CALL, "src", src.len(), count, || {
            format!("an all-gather of {count} elements per PE")
        })?;
        check_len(CALL, "dst", dst.len(), total, || {
            format!("an all-gather of {count} elements per PE over {n} PEs")
        })?;
        let counts = vec![count; n];
        self.gather(
            stream,
            CALL,
            team,
            dst.as_mut_ptr(),
            src.as_ptr(),
            &counts,
            rank,
        )
    }

    /// [`Ops::all_gather`] in place: `buf` holds `n × count` elements and member `r`'s
    /// contribution is already at `buf[r·count..(r+1)·count]`.
    pub fn all_gather_in_place<'a, T: Pod>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        buf: impl Into<SymRangeMut<'a, T>>,
        count: usize,
    ) -> Result<()> {
        const CALL: &str = "Ops::all_gather_in_place";
        let mut buf = buf.into();
        let (rank, n) = self.coll.team(CALL, team)?;
        let total = times(CALL, count, n)?;
        check_len(CALL, "buf", buf.len(), total, || {
            format!("an all-gather of {count} elements per PE over {n} PEs")
        })?;
        let counts = vec![count; n];
        let p = buf.as_mut_ptr();
        // SAFETY: `rank · count < total <= buf.len()` (or count is 0).
        let src = unsafe { p.add(rank * count) }.cast_const();
        self.gather(stream, CALL, team, p, src, &counts, rank)
    }

    /// All-gather with a count per member (OpenSHMEM's `collect`): `counts[r]` is member
    /// `r`'s count (the same list on every member); member `r`'s `src[0..counts[r]]` lands in
    /// `dst` after the contributions of members `0..r`, on every member.
    pub fn all_gather_v<'a, T: Pod>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        src: impl Into<SymRange<'a, T>>,
        dst: impl Into<SymRangeMut<'a, T>>,
        counts: &[usize],
    ) -> Result<()> {
        const CALL: &str = "Ops::all_gather_v";
        let (src, mut dst) = (src.into(), dst.into());
        let (rank, n) = self.coll.team(CALL, team)?;
        let total = self.check_counts(CALL, counts, n)?;
        check_len(CALL, "src", src.len(), counts[rank], || {
            format!("this PE's contribution (counts[{rank}])")
        })?;
        check_len(CALL, "dst", dst.len(), total, || {
            format!("the sum of `counts` ({counts:?})")
        })?;
        self.gather(
            stream,
            CALL,
            team,
            dst.as_mut_ptr(),
            src.as_ptr(),
            counts,
            rank,
        )
    }

    /// [`Ops::all_gather_v`] in place: member `r`'s contribution is already in `buf` after
    /// those of members `0..r`.
    pub fn all_gather_v_in_place<'a, T: Pod>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        buf: impl Into<SymRangeMut<'a, T>>,
        counts: &[usize],
    ) -> Result<()> {
        const CALL: &str = "Ops::all_gather_v_in_place";
        let mut buf = buf.into();
        let (rank, n) = self.coll.team(CALL, team)?;
        let total = self.check_counts(CALL, counts, n)?;
        check_len(CALL, "buf", buf.len(), total, || {
            format!("the sum of `counts` ({counts:?})")
        })?;
        let p = buf.as_mut_ptr();
        let offset: usize = counts[..rank].iter().sum();
        // SAFETY: `offset <= total <= buf.len()`.
        let src = unsafe { p.add(offset) }.cast_const();
        self.gather(stream, CALL, team, p, src, counts, rank)
    }

    /// All-reduce + residual add + RMSNorm, fused (what tensor-parallel transformers do after
    /// an attention or MLP block): for each of `rows` rows of `hidden` elements,
    /// `residual ← Σ_members x + residual` (summed in f32 in rank order, rounded once) and
    /// `out ← residual / sqrt(mean(residual²) + eps) × weight` (f32, rounded once; the mean
    /// over the rounded residual). `x`, `residual` and `out` are symmetric `rows × hidden`
    /// buffers, `weight` holds `hidden`; every member must hold the same `residual` (as
    /// tensor parallelism keeps it). Needs a team reached through peer mappings (one node).
    #[allow(clippy::too_many_arguments)]
    pub fn all_reduce_rmsnorm<'a, T: NormElem>(
        &self,
        stream: &Stream<'_>,
        team: Team,
        x: impl Into<SymRange<'a, T>>,
        residual: impl Into<SymRangeMut<'a, T>>,
        weight: impl Into<SymRange<'a, T>>,
        out: impl Into<SymRangeMut<'a, T>>,
        rows: usize,
        hidden: usize,
        eps: f32,
    ) -> Result<()> {
        const CALL: &str = "Ops::all_reduce_rmsnorm";
        let (x, mut residual, weight, mut out) =
            (x.into(), residual.into(), weight.into(), out.into());
        let (_, n) = self.coll.team(CALL, team)?;
        let total = times(CALL, rows, hidden)?;
        let why = || format!("{rows} rows of {hidden}");
        check_len(CALL, "x", x.len(), total, why)?;
        check_len(CALL, "residual", residual.len(), total, why)?;
        check_len(CALL, "out", out.len(), total, why)?;
        check_len(CALL, "weight", weight.len(), hidden, || {
            format!("rows of {hidden}")
        })?;
        let (Ok(rows32), Ok(hidden32)) = (u32::try_from(rows), u32::try_from(hidden)) else {
            return Err(Error::InvalidArgument {
                call: CALL,
                message: format!("{rows} rows of {hidden}: each must be below 2^32"),
            });
        };
        if !(eps.is_finite() && eps >= 0.0) {
            return Err(Error::InvalidArgument {
                call: CALL,
                message: format!("eps = {eps}: a finite, non-negative number"),
            });
        }
        if total == 0 {
            return Ok(());
        }
        if !self.coll.team_mapped(team, n) {
            return Err(Error::Unsupported {
                call: CALL,
                reason: format!(
                    "over this team of {n} PEs: the fused all-reduce + RMSNorm reads every \
                     member's x through peer mappings, which some member lacks (PEs on \
                     another node) or the team has more than {} members",
                    rshmem_coll::MAX_PEERS
                ),
            });
        }
        let bytes = total * size_of::<T>();
        let split = match self.algorithm() {
            Algorithm::TwoShot => true,
            Algorithm::OneShot => false,
            Algorithm::Auto => rows >= n && bytes > plan::rmsnorm_split_limit(n),
            Algorithm::Lamport => {
                return Err(Error::Unsupported {
                    call: CALL,
                    reason: "with Algorithm::Lamport: the fused op has one-shot and two-shot forms"
                        .into(),
                })
            }
        };
        let ch = self.coll.channel(CALL, stream, n == self.shmem_n_pes())?;
        let grid = self.coll.grid;
        let rows_here = if split { rows.div_ceil(n) } else { rows };
        let blocks = (rows_here.max(1) as u32).min(grid.max_blocks);
        let threads = if self.coll.on_sim() {
            // Two warps, so that the simulator runs `block_sum`'s exchange between warps.
            64
        } else {
            (hidden
                .div_ceil(<T as rshmem_coll::Elem>::LANES)
                .div_ceil(32)
                * 32)
                .clamp(32, 512) as u32
        };
        let config = LaunchConfig::new(blocks, threads).shared_mem(128);
        let args = RmsNormArgs {
            x: x.as_ptr(),
            residual: residual.as_mut_ptr(),
            weight: weight.as_ptr(),
            out: out.as_mut_ptr(),
            rows: rows32,
            hidden: hidden32,
            eps,
            split: u32::from(split),
        };
        // SAFETY: lengths checked; the buffers are symmetric (the caller's rule, module docs);
        // `out` is a distinct buffer (a `&mut` beside `&`s); every member is peer-mapped; the
        // grid is the same on every member (from the arguments) and within the channel's rows;
        // 128 bytes of shared memory cover 32 warps for `block_sum`.
        unsafe { launch_rmsnorm::<T>(&self.coll.module, stream, config, ch, team, args) }
    }

    fn shmem_n_pes(&self) -> usize {
        self.coll.shape.world as usize
    }

    /// `counts` has one entry per member; their sum, which fits.
    fn check_counts(&self, call: &'static str, counts: &[usize], n: usize) -> Result<usize> {
        if counts.len() != n {
            return Err(Error::InvalidArgument {
                call,
                message: format!(
                    "`counts` has {} entries, but the team has {n} members: one count per member",
                    counts.len()
                ),
            });
        }
        counts
            .iter()
            .try_fold(0usize, |a, &c| a.checked_add(c))
            .ok_or_else(|| Error::InvalidArgument {
                call,
                message: format!("the sum of `counts` ({counts:?}) overflows"),
            })
    }

    /// Chooses the algorithm and grid of a reduction and queues it.
    #[allow(clippy::too_many_arguments)]
    fn reduce<T: CollElem>(
        &self,
        stream: &Stream<'_>,
        call: &'static str,
        team: Team,
        dst: *mut T,
        src: *const T,
        count: usize,
        scatter: bool,
        op: ReduceOp,
    ) -> Result<()> {
        let op = op_of(call, op)?;
        let (_, n) = self.coll.team(call, team)?;
        let r = Reduction {
            call,
            team,
            n,
            dst,
            src,
            count,
            scatter,
            op,
        };
        if count == 0 {
            return Ok(());
        }
        let family = self.family::<T>(&r)?;
        let ch = self.coll.channel(call, stream, n == self.shmem_n_pes())?;
        let grid = self.coll.grid;
        let bytes = times(call, count, size_of::<T>())?;
        let blocks = match family {
            Family::Push => grid.blocks(bytes, PUSH_REGION as usize),
            Family::Lamport => grid.blocks(bytes, LAMPORT_REGION as usize),
            Family::TwoShot if scatter => grid.blocks_for(bytes),
            Family::TwoShot => grid.blocks_for(bytes / n),
        };
        let config = LaunchConfig::new(blocks, grid.threads);
        // SAFETY: lengths checked by the public call; every member makes the same call (the
        // module's rule) with the same grid (a function of the arguments and the device);
        // `family` was checked against the team's mappings, the element type and the
        // channel's capacity; `dst` equals `src` (in place) or is another buffer.
        unsafe {
            launch_reduce::<T>(
                &self.coll.module,
                stream,
                config,
                family,
                r.op,
                ch,
                team,
                (r.dst, r.src, count, scatter),
            )
        }
    }

    /// The kernel family of a reduction: the forced [`Algorithm`] if it applies, else by size.
    fn family<T: CollElem>(&self, r: &Reduction<T>) -> Result<Family> {
        let n = r.n;
        let mapped = self.coll.team_mapped(r.team, n);
        let bytes = r.count.saturating_mul(size_of::<T>());
        let shape = self.coll.shape;
        let lamport_room = (shape.lamport_slots * shape.lamport_region) as usize;
        let refuse = |reason: String| {
            Err(Error::Unsupported {
                call: r.call,
                reason,
            })
        };
        let unmapped = || {
            format!(
                "over this team of {n} PEs: some member is not reached through a peer mapping \
                 (another node) or the team has more than {} members; use Algorithm::OneShot \
                 or Auto",
                rshmem_coll::MAX_PEERS
            )
        };
        match (self.algorithm(), r.scatter) {
            (Algorithm::OneShot, _) => Ok(Family::Push),
            (Algorithm::TwoShot, _) if !mapped => {
                refuse(format!("with Algorithm::TwoShot {}", unmapped()))
            }
            (Algorithm::TwoShot, _) => Ok(Family::TwoShot),
            (Algorithm::Lamport, true) => refuse(
                "with Algorithm::Lamport: a reduce-scatter has no flag-in-data form; use OneShot, \
                 TwoShot or Auto"
                    .into(),
            ),
            (Algorithm::Lamport, false) if !<T as rshmem_coll::Elem>::FLOAT => refuse(format!(
                "with Algorithm::Lamport on {}: the flag-in-data all-reduce needs a float type \
                 (an unused bit pattern marks data not yet arrived)",
                <T as rshmem_coll::Elem>::NAME
            )),
            (Algorithm::Lamport, false) if !mapped => {
                refuse(format!("with Algorithm::Lamport {}", unmapped()))
            }
            (Algorithm::Lamport, false) if bytes > lamport_room => refuse(format!(
                "with Algorithm::Lamport for {bytes} bytes per PE: the channel's flag-in-data \
                 slots hold {lamport_room}; use OneShot, TwoShot or Auto"
            )),
            (Algorithm::Lamport, false) => Ok(Family::Lamport),
            (Algorithm::Auto, scatter) => {
                let float = <T as rshmem_coll::Elem>::FLOAT;
                let family = plan::auto_family(float, mapped, scatter, bytes, n, lamport_room);
                Ok(family)
            }
        }
    }

    /// Queues an all-gather(v): this PE (`rank`) contributes `counts[rank]` elements from
    /// `src` at offset `Σ counts[..rank]` of `dst`.
    #[allow(clippy::too_many_arguments)]
    fn gather<T: Pod>(
        &self,
        stream: &Stream<'_>,
        call: &'static str,
        team: Team,
        dst: *mut T,
        src: *const T,
        counts: &[usize],
        rank: usize,
    ) -> Result<()> {
        let n = counts.len();
        let size = size_of::<T>();
        if counts.iter().all(|&c| c == 0) {
            return Ok(());
        }
        let ch = self.coll.channel(call, stream, n == self.shmem_n_pes())?;
        let most = counts.iter().copied().max().unwrap_or(0);
        let blocks = self.coll.grid.blocks_for(times(call, most, size)?);
        let config = LaunchConfig::new(blocks, self.coll.grid.threads);
        let offset = counts[..rank].iter().sum::<usize>() * size;
        let args = (
            ch,
            team,
            dst.cast::<u8>(),
            src.cast::<u8>(),
            counts[rank] * size,
            offset,
        );
        // SAFETY: lengths checked by the public call; the members' ranges of `dst` are
        // disjoint (offsets from the same `counts`); `src` is another buffer or exactly this
        // PE's range (in place); the grid depends only on `counts` and the device.
        unsafe {
            self.coll
                .module
                .launch_on::<rshmem_ops_kernels::coll::coll_all_gather>(stream, config, args)
        }
    }
}
