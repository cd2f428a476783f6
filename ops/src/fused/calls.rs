//! The host side of the fused tensor-parallel ops: [`Ops::all_gather_gemm`] and
//! [`Ops::gemm_reduce_scatter`] (see [`crate::fused`] for the rules, `rshmem-tp` for the
//! device side and its ordering arguments).
//!
//! Each call queues, on the caller's stream `S` and the `Ops`' side stream `X`:
//!
//! 1. `S` waits for `X` (the previous fused call's end: fused calls of one `Ops` run in issue
//!    order whatever stream they are on);
//! 2. the barrier kernel on `S` (`tp_barrier`): it advances this PE's call counter (the
//!    call's epoch) and clears its arrival flags; no PE writes into another's buffers for this
//!    call before that PE has finished everything it queued before it;
//! 3. all-gather: `X` waits for `S`, then pushes this rank's chunk of A to ranks `r - 1`,
//!    `r - 2`, ... with the copy engine (`Stream::put_signal`: the rows, then
//!    `flags::ARRIVED` into the target's arrival flag), and where the call waits outside its
//!    GEMM (PEs sharing a GPU, [`crate::Waits`]) `ag_wait` on `S` (one block) waits for every
//!    chunk; reduce-scatter: nothing (its GEMM sends);
//! 4. the GEMM on `S` (persistent; where PEs share the GPU its grid leaves SMs free:
//!    `persistent_waiting`). The reduce-scatter's GEMM reduces this rank's rows in its
//!    epilogue where the PE has the GPU to itself (cooperative, since its blocks wait for
//!    peers that wait for theirs), then the fix-up kernel reduces the rows of bands that
//!    straddle two chunks; where PEs share the GPU the GEMM waits for nothing and `rs_wait`
//!    (one block) and the fix-up reduce the whole chunk after it ([`crate::Waits`]);
//! 5. `S` waits for `X` (the pushes read this rank's rows, which later work on `S` may
//!    overwrite) and `X` for `S` (step 1 of the next call).
//!
//! Nothing a call queues depends on host state that changes between calls, so a graph can
//! record it ([`Stream::capture`]) and replay it: the epoch is counted on the device (the
//! barrier advances it, `rshmem_tp::barrier`), the arrival flags the copy engine sets hold a
//! constant, the workspace stays while a graph holds its pin, and the sm90 path's tensor maps
//! come from a slot the graph pins. In a capture, step 1 and the last wait of step 5 are left
//! out (a recording stream cannot wait for one that does not record, and `X` waiting for `S`
//! again would fork it anew): the fork of `X` (step 3) and its join back (step 5) are recorded, and a graph's launches are ordered with the `Ops`'
//! other fused calls by the stream they are launched on (`crate::fused`, "Graphs").

use super::{FusedOptions, AG_CALL, RS_CALL};
use crate::gemm::shape::{BLayout, GemmShape, Starts};
use crate::gemm::Path;
use crate::Ops;
use rshmem_device::bf16;
use rshmem_device::hopper::TensorMap as DevTensorMap;
use rshmem_gemm::{sm80, sm90, Problem};
use rshmem_host::{
    Error, GpuSharing, LaunchConfig, Module, Result, Stream, SymBuffer, SymRange, SymRangeMut, Team,
};
use rshmem_ops_kernels::tp80::{self as k80, Tp80};
use rshmem_ops_kernels::tp90::Tp90;
use rshmem_ops_kernels::Layout;
use rshmem_tp::{barrier, flags, rs, TpCall};
use std::sync::Arc;
use std::time::Duration;

/// What the fused calls keep between calls: the workspace, grown when a call needs more
/// (every PE grows it at the same call: the calls are collective), and the side stream.
#[derive(Default)]
pub(crate) struct TpState<'s> {
    /// The flag words (`rshmem_tp::flags`), the call counter among them.
    flags: Option<SymBuffer<'s, u64>>,
    /// The reduce-scatter's slots of partial rows.
    recv: Option<SymBuffer<'s, bf16>>,
    /// The all-gather's copy-engine stream, also what orders the calls.
    side: Option<Stream<'s>>,
    /// The workspace's pin: every graph that recorded a fused call holds a clone, and the
    /// workspace is not replaced while one lives (the graph's kernels point into it).
    pin: Arc<()>,
    /// The test hook [`Ops::set_send_delay_for_tests`].
    send_delay: Duration,
}

/// How a call is queued: eagerly, or recorded into a graph ([`Stream::is_capturing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Eager,
    Recorded,
}

impl Mode {
    fn of(stream: &Stream<'_>) -> Self {
        if stream.is_capturing() {
            Mode::Recorded
        } else {
            Mode::Eager
        }
    }
}

/// A team as the kernels see it: world PE of rank `i` = `start + i * stride`; `size` PEs, this
/// PE is `rank`.
#[derive(Clone, Copy, Debug)]
struct TeamDesc {
    start: u32,
    stride: u32,
    size: u32,
    rank: u32,
}

/// What a fused call settled before queuing anything ([`Ops::start`]).
struct Start<'m, 's> {
    mode: Mode,
    team: TeamDesc,
    path: Path,
    b_kn: bool,
    /// The sm90 path's tensor maps of A and B (kernel arguments).
    maps: Option<(*const DevTensorMap, *const DevTensorMap)>,
    /// The image of the calls' barrier and fix-up.
    tp80: &'m Module<'s>,
    /// The image of the GEMM that runs.
    gemm: &'m Module<'s>,
}

/// `$gemm.launch_on` of `<Layout<$b_kn> as $family>::$kernel`: B's layout is a type
/// parameter of the kernels, known here only at run time.
macro_rules! launch_for_layout {
    ($gemm:expr, $family:ident::$kernel:ident, $b_kn:expr, $stream:expr, $config:expr, $args:expr) => {
        if $b_kn {
            $gemm.launch_on::<<Layout<true> as $family>::$kernel>($stream, $config, $args)
        } else {
            $gemm.launch_on::<<Layout<false> as $family>::$kernel>($stream, $config, $args)
        }
    };
}

/// Tiles of the sm80 tiling (128 x 128), the finer one: the flag buffer's size for either
/// kernel.
fn most_tiles(m: u32, n: u32) -> u32 {
    sm80::tiles(Problem { m, n, k: 8 })
}

impl<'s> Ops<'s> {
    /// `C = all_gather(A) · B` over the team of `options.team`, B as `shape.b_layout` says,
    /// queued on `stream` with [`FusedOptions::default`]: see [`Ops::all_gather_gemm_with`].
    pub fn all_gather_gemm<'a>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<SymRangeMut<'a, bf16>>,
        b: impl Into<SymRange<'a, bf16>>,
        c: impl Into<SymRangeMut<'a, bf16>>,
        shape: GemmShape,
    ) -> Result<()> {
        self.all_gather_gemm_with(stream, a, b, c, shape, FusedOptions::default())
    }

    /// `C = all_gather(A) · B`: A is sharded by rows over the team's `size` PEs, B is local,
    /// every PE gets all of C. `shape` is the whole GEMM: `a` holds `m x k` (row-major), of
    /// which this PE (rank `r` of the team) has filled its chunk, rows
    /// `r * m / size .. (r + 1) * m / size`, before the call (in stream order); the call
    /// copies every other rank's chunk into the rest of `a` (so after it `a` holds the
    /// gathered A, until the next fused call) while the GEMM runs, tiles of this rank's chunk
    /// first and each other chunk's tiles once it has arrived. `c` gets `m x n`. bf16 in, f32
    /// accumulation, bf16 out; queued, returns at once.
    ///
    /// ```no_run
    /// use rshmem_device::bf16;
    /// use rshmem_ops::{BLayout, GemmShape, Ops};
    /// # fn f(shmem: &rshmem_host::Shmem) -> rshmem_host::Result<()> {
    /// let ops = Ops::new(shmem)?;
    /// let (m, n, k) = (4096u32, 1024u32, 512u32);
    /// let rows = (m as usize / shmem.n_pes()) * k as usize; // this PE's chunk
    /// let at = shmem.my_pe() * rows;
    /// let mut a_host = vec![bf16::ZERO; (m * k) as usize];
    /// a_host[at..at + rows].fill(bf16::ONE);
    /// let mut a = shmem.alloc_from(&a_host)?; // m x k, this PE's rows filled
    /// let b = shmem.alloc_from(&vec![bf16::ONE; (n * k) as usize])?; // n x k
    /// let mut c = shmem.alloc_zeroed::<bf16>((m * n) as usize)?;
    /// ops.all_gather_gemm(&shmem.stream(), &mut a, &b, &mut c, GemmShape::new(m, n, k, BLayout::NK))?;
    /// # Ok(()) }
    /// ```
    ///
    /// Errors (nothing is queued): as [`Ops::gemm`]'s, and `m` not divisible by the team's
    /// size, a team this PE is not in or whose PEs are not evenly strided. The rules of
    /// [`crate::fused`] apply (collective, same shape on every PE).
    ///
    /// In a graph capture ([`Stream::capture`]) the call is recorded, and each launch of the
    /// graph is a new call, on the data in the buffers at that launch; the first call of a
    /// shape and buffers cannot be recorded (it may make the workspace and the sm90 path's
    /// tensor maps): make it outside the capture first. See [`crate::fused`], "Graphs".
    pub fn all_gather_gemm_with<'a>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<SymRangeMut<'a, bf16>>,
        b: impl Into<SymRange<'a, bf16>>,
        c: impl Into<SymRangeMut<'a, bf16>>,
        shape: GemmShape,
        options: FusedOptions,
    ) -> Result<()> {
        let (a, b, mut c) = (a.into(), b.into(), c.into());
        let Start {
            mode,
            team,
            path,
            b_kn,
            maps,
            tp80,
            gemm,
        } = self.start(AG_CALL, stream, (a.as_range(), b, &c), shape, options)?;
        let mut st = self.tp_state();
        let flags = self.grow_flags(AG_CALL, mode, &mut st, flags::words(team.size, 0))?;
        let call = self.begin_call(stream, mode, &mut st, shape, team)?;
        let (side, flags_buf) = match (&st.side, &st.flags) {
            (Some(side), Some(flags)) => (side, flags),
            _ => unreachable!("made by grow_flags and begin_call"),
        };

        launch_barrier(tp80, stream, flags, call)?;
        // In a capture: the fork of the side stream into the graph.
        side.wait_for(stream)?;
        std::thread::sleep(st.send_delay);
        let rows = call.rows() as usize * shape.k as usize;
        let mine = a.range(team.rank as usize * rows..(team.rank as usize + 1) * rows)?;
        let arrived = flags::arrived_slot(team.size, team.rank);
        let signal = flags_buf.range(arrived..arrived + 1)?;
        for d in 1..team.size {
            let target = (team.rank + team.size - d) % team.size;
            // The same rows of the target's `a`: its slot for this rank's chunk; the flag gets
            // a constant, which a graph can replay (the target's barrier clears it).
            side.put_signal(
                mine,
                mine,
                signal,
                flags::ARRIVED,
                call.world_pe(target) as usize,
            )?;
        }

        if self.waits_outside_gemm(options) {
            // The GEMM's tiles then find every chunk there.
            // SAFETY: this PE's copy of the call's flag buffer; every rank pushes its chunk
            // with `put_signal` on its arrival slot (above, on every PE).
            unsafe {
                tp80.launch_on::<k80::ag_wait>(
                    stream,
                    LaunchConfig::new(1, 32),
                    (flags.cast_const(), call),
                )?
            };
        }
        let c_ptr = c.as_mut_ptr();
        let result = match (path, maps) {
            (Path::Sm90, Some((map_a, map_b))) => {
                let tiles = sm90::tiles(call.problem());
                let config = self.persistent_waiting(tiles, sm90::THREADS, sm90::SHARED_BYTES);
                let args = (map_a, map_b, c_ptr, flags.cast_const(), call);
                // SAFETY: the launch shape is the kernel's (checked sm_90 by `path_for`); the
                // maps describe `a` (m x k) and `b` of bf16, checked long enough; `c` holds
                // m x n; `flags` is this PE's copy of the call's flag buffer (its counter and
                // 2 size words);
                // every rank queues the same call after its barrier and pushes its chunk with
                // `put_signal` on its arrival slot (above, on every PE). Buffers outlive the
                // kernel (dropping them waits for the PE's work).
                unsafe { launch_for_layout!(gemm, Tp90::AllGather, b_kn, stream, config, args) }
            }
            _ => {
                let tiles = sm80::tiles(call.problem());
                let config = self.persistent_waiting(tiles, sm80::THREADS, sm80::SHARED_BYTES);
                let args = (&a, b, c_ptr, flags.cast_const(), call);
                // SAFETY: as above, with plain pointers (sm_80 or later: `path_for`; `k` a
                // multiple of 8, `n` too for B K x N: checked).
                unsafe { launch_for_layout!(gemm, Tp80::AllGather, b_kn, stream, config, args) }
            }
        };
        result?;
        // In a capture: the join of the side stream back into the graph.
        stream.wait_for(side)?;
        end_call(stream, side, mode)
    }

    /// This rank's rows of `C = Σ_ranks A_r · B_r` over the team of `options.team`, queued on
    /// `stream` with [`FusedOptions::default`]: see [`Ops::gemm_reduce_scatter_with`].
    pub fn gemm_reduce_scatter<'a>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<SymRange<'a, bf16>>,
        b: impl Into<SymRange<'a, bf16>>,
        c: impl Into<SymRangeMut<'a, bf16>>,
        shape: GemmShape,
    ) -> Result<()> {
        self.gemm_reduce_scatter_with(stream, a, b, c, shape, FusedOptions::default())
    }

    /// GEMM + reduce-scatter: K is sharded over the team's `size` PEs; each computes its
    /// partial product `A_r · B_r` (`shape` is this PE's GEMM: `a` is `m x k` with `k` its
    /// share of K, `b` `n x k` or `k x n`) and ends with its chunk of rows of the sum over the
    /// team, rows `r * m / size .. (r + 1) * m / size`, in `c` (`m / size x n`). The partial
    /// tiles of other ranks' rows go to their owners as the GEMM computes them (bf16, the
    /// owner adds them in f32 to its own partial: see `rshmem_tp::rs` for the bound); this
    /// rank's own rows come last. Queued, returns at once.
    ///
    /// ```no_run
    /// use rshmem_device::bf16;
    /// use rshmem_ops::{BLayout, GemmShape, Ops};
    /// # fn f(shmem: &rshmem_host::Shmem) -> rshmem_host::Result<()> {
    /// let ops = Ops::new(shmem)?;
    /// let (m, n, k_shard) = (4096u32, 1024u32, 256u32);
    /// let a = shmem.alloc_from(&vec![bf16::ONE; (m * k_shard) as usize])?; // m x k_shard
    /// let b = shmem.alloc_from(&vec![bf16::ONE; (n * k_shard) as usize])?; // n x k_shard
    /// let rows = m as usize / shmem.n_pes();
    /// let mut c = shmem.alloc_zeroed::<bf16>(rows * n as usize)?; // this PE's rows of the sum
    /// let shape = GemmShape::new(m, n, k_shard, BLayout::NK);
    /// ops.gemm_reduce_scatter(&shmem.stream(), &a, &b, &mut c, shape)?;
    /// # Ok(()) }
    /// ```
    ///
    /// Errors (nothing is queued): as [`Ops::all_gather_gemm_with`]'s, `c` checked against
    /// `m / size x n`. Recorded in a graph capture as [`Ops::all_gather_gemm_with`] is.
    pub fn gemm_reduce_scatter_with<'a>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<SymRange<'a, bf16>>,
        b: impl Into<SymRange<'a, bf16>>,
        c: impl Into<SymRangeMut<'a, bf16>>,
        shape: GemmShape,
        options: FusedOptions,
    ) -> Result<()> {
        let (a, b, mut c) = (a.into(), b.into(), c.into());
        let Start {
            mode,
            team,
            path,
            b_kn,
            maps,
            tp80,
            gemm,
        } = self.start(RS_CALL, stream, (a, b, &c), shape, options)?;
        let mut st = self.tp_state();
        let words = flags::words(team.size, most_tiles(shape.m, shape.n));
        let flags = self.grow_flags(RS_CALL, mode, &mut st, words)?;
        let recv = self.grow_recv(mode, &mut st, shape.m as usize * shape.n as usize)?;
        let call = self.begin_call(stream, mode, &mut st, shape, team)?;
        let after = self.waits_outside_gemm(options);
        let call = if after {
            call.reducing_after_gemm()
        } else {
            call
        };
        let side = st.side.as_ref().expect("made by begin_call");
        // Reducing in the epilogue, the GEMM's blocks wait for the peers' blocks: all resident
        // (cooperative, one per SM at most); after the GEMM, they wait for nothing.
        let config = |tiles, threads, shared| {
            let config = self.persistent_waiting(tiles, threads, shared);
            if after {
                config
            } else {
                config.cooperative()
            }
        };

        launch_barrier(tp80, stream, flags, call)?;
        std::thread::sleep(st.send_delay);
        let out = c.as_mut_ptr();
        let (bm, bn) = match (path, maps) {
            (Path::Sm90, Some((map_a, map_b))) => {
                let tiles = sm90::tiles(call.problem());
                let config = config(tiles, sm90::THREADS, sm90::SHARED_BYTES);
                let args = (map_a, map_b, out, recv, flags, call);
                // SAFETY: the launch shape is the kernel's (sm_90 checked by `path_for`),
                // cooperative where its blocks wait for peers whose blocks wait for theirs
                // (`config`); the maps describe `a` (m x k) and `b` of
                // bf16, checked long enough; `c` holds m / size x n; `recv` (m x n = size slots
                // of m / size x n) and `flags` (words for this tiling) are this PE's copies of
                // the symmetric workspace; every rank queues the same call after its barrier.
                unsafe {
                    launch_for_layout!(gemm, Tp90::ReduceScatter, b_kn, stream, config, args)?
                }
                (sm90::BM, sm90::BN)
            }
            _ => {
                let tiles = sm80::tiles(call.problem());
                let config = config(tiles, sm80::THREADS, sm80::SHARED_BYTES);
                let args = (a, b, out, recv, flags, call);
                // SAFETY: as above, with plain pointers (sm_80 or later: `path_for`; `k` a
                // multiple of 8, `n` too for B K x N: checked).
                unsafe {
                    launch_for_layout!(gemm, Tp80::ReduceScatter, b_kn, stream, config, args)?
                }
                (sm80::BM, sm80::BN)
            }
        };
        // The rows the epilogue did not reduce: those of bands that straddle two chunks, or
        // the whole chunk after the GEMM.
        let ((a0, a1), (b0, b1)) = rs::fixup_rows(&call, bm);
        let rows = (a1 - a0) + (b1 - b0);
        if rows > 0 {
            let args = (out, recv, flags, call, bm, bn);
            if after {
                // SAFETY: the arguments of this PE's GEMM of the call, queued before on `stream`.
                unsafe { tp80.launch_on::<k80::rs_wait>(stream, LaunchConfig::new(1, 256), args)? };
            }
            // A pass over memory: 16-byte packs, a few blocks per SM to keep loads in flight.
            let blocks = (rows * shape.n)
                .div_ceil(8 * 256)
                .min(4 * self.info.multiprocessors.max(1));
            // SAFETY: as above.
            unsafe {
                tp80.launch_on::<k80::rs_fixup>(stream, LaunchConfig::new(blocks, 256), args)?
            };
        }
        end_call(stream, side, mode)
    }

    /// Test hook, not part of the API: from now on, each fused call of this `Ops` waits
    /// `delay` on the host after it has queued its barrier and before it queues what sends
    /// this PE's data to its peers (the all-gather's copies of its chunk, the reduce-scatter's
    /// GEMM, which stores the partial tiles), so that this PE's data arrives last.
    /// `Duration::ZERO` (the default) turns it off.
    #[doc(hidden)]
    pub fn set_send_delay_for_tests(&self, delay: Duration) {
        self.tp_state().send_delay = delay;
    }

    /// The team as the kernels take it, or why it cannot be used.
    /// What both fused calls settle before they queue anything: the mode, the team, the
    /// shape's checks (`c` holds all of C for the all-gather, this rank's rows for the
    /// reduce-scatter), the kernel, the sm90 path's tensor maps (a new pair of operands waits
    /// for the PE's work here) and the two images.
    fn start(
        &self,
        call: &'static str,
        stream: &Stream<'_>,
        (a, b, c): (
            SymRange<'_, bf16>,
            SymRange<'_, bf16>,
            &SymRangeMut<'_, bf16>,
        ),
        shape: GemmShape,
        options: FusedOptions,
    ) -> Result<Start<'_, 's>> {
        let c_len = c.len();
        let mode = Mode::of(stream);
        let team = self.team_desc(call, options.team)?;
        check_rows(call, shape, team.size)?;
        // The reduce-scatter's epilogue holds its peers' mapped workspaces in a table of
        // MAX_PEERS (rshmem_tp::RsEpilogue), looked up once per kernel.
        if call == RS_CALL && team.size as usize > rshmem_coll::MAX_PEERS {
            return Err(Error::InvalidArgument {
                call,
                message: format!(
                    "a team of {} PEs: the fused reduce-scatter takes at most {} (one node's \
                     mapped peers, rshmem_coll::MAX_PEERS)",
                    team.size,
                    rshmem_coll::MAX_PEERS
                ),
            });
        }
        let c_rows = match call {
            AG_CALL => (c_len, shape.m, "m x n"),
            _ => (c_len, shape.m / team.size, "m / size x n"),
        };
        shape.check_in(call, a.len(), b.len(), c_rows)?;
        Starts::of(a, b, Some(c)).check(call)?;
        let path = self.path_for(call, options.kernel)?;
        let maps = match path {
            Path::Sm90 => Some(self.sm90_maps(call, stream, a, b, shape, 0)?),
            Path::Sm80 => None,
        };
        Ok(Start {
            mode,
            team,
            path,
            b_kn: shape.b_layout == BLayout::KN,
            maps,
            tp80: self.tp_module(call, Path::Sm80)?,
            gemm: self.tp_module(call, path)?,
        })
    }

    fn team_desc(&self, call: &'static str, team: Team) -> Result<TeamDesc> {
        let shmem = self.shmem;
        let bad = |message: String| Error::InvalidArgument { call, message };
        let (Some(size), Some(rank)) = (shmem.team_n_pes(team), shmem.team_my_pe(team)) else {
            return Err(bad(format!(
                "team {team:?}: this PE (world PE {}) is not a member of it, or does not hold \
                 it (a split team is used through the handle its own split returned)",
                shmem.my_pe()
            )));
        };
        let world = |i: usize| {
            shmem
                .team_translate_pe(team, i, Team::WORLD)
                .ok_or_else(|| bad(format!("team {team:?}: its PE {i} has no world number")))
        };
        let start = world(0)?;
        let stride = if size > 1 {
            world(1)?.saturating_sub(start)
        } else {
            1
        };
        for i in 0..size {
            let w = world(i)?;
            if stride == 0 || w != start + i * stride {
                return Err(bad(format!(
                    "team {team:?}: its PEs are not evenly strided (rank {i} is world PE {w}, \
                     not {start} + {i} x {stride}); the fused ops take teams made by \
                     team_split_strided or team_split_2d"
                )));
            }
        }
        let u = |v: usize| u32::try_from(v).map_err(|_| bad(format!("{v} PEs do not fit a u32")));
        Ok(TeamDesc {
            start: u(start)?,
            stride: u(stride)?,
            size: u(size)?,
            rank: u(rank)?,
        })
    }

    /// The image of the fused kernels of `path`.
    fn tp_module(&self, call: &'static str, path: Path) -> Result<&Module<'s>> {
        let (module, which) = match path {
            Path::Sm90 => (&self.tp90, "sm90"),
            Path::Sm80 => (&self.tp80, "sm80"),
        };
        module.as_ref().ok_or_else(|| Error::Unsupported {
            call,
            reason: format!("with the {which} kernels: their image is not loaded on this device"),
        })
    }

    fn tp_state(&self) -> std::sync::MutexGuard<'_, TpState<'s>> {
        // A panic while holding the lock leaves the state usable (each field is replaced
        // whole).
        self.tp.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This PE's copy of the flag buffer, grown (collectively) to at least `words`.
    fn grow_flags(
        &self,
        call: &'static str,
        mode: Mode,
        st: &mut TpState<'s>,
        words: usize,
    ) -> Result<*mut u64> {
        if st.flags.as_ref().is_none_or(|f| f.len() < words) {
            may_grow(call, mode, st)?;
            // Dropping the old buffer waits for the PE's work; every PE grows at this call.
            // The new one's call counter starts again at 0 on every PE.
            st.flags = None;
            st.flags = Some(self.shmem.alloc_zeroed::<u64>(words)?);
        }
        Ok(st.flags.as_mut().expect("set above").as_mut_ptr())
    }

    /// This PE's copy of the reduce-scatter's workspace, grown (collectively) to at least
    /// `elements`.
    fn grow_recv(&self, mode: Mode, st: &mut TpState<'s>, elements: usize) -> Result<*mut bf16> {
        if st.recv.as_ref().is_none_or(|r| r.len() < elements) {
            may_grow(RS_CALL, mode, st)?;
            st.recv = None;
            st.recv = Some(self.shmem.alloc_zeroed::<bf16>(elements)?);
        }
        Ok(st.recv.as_mut().expect("set above").as_mut_ptr())
    }

    /// Whether this call waits for the other PEs' data outside its GEMM ([`crate::Waits`]).
    fn waits_outside_gemm(&self, options: FusedOptions) -> bool {
        options
            .waits
            .outside_gemm(self.info.sharing != GpuSharing::Exclusive)
    }

    /// The call's descriptor (the kernels count its epoch); makes the side stream at the first
    /// call, and hands the workspace's pin to the graph a capture records. Then, eagerly,
    /// `stream` waits for the previous fused call's end (step 1 of the module docs).
    fn begin_call(
        &self,
        stream: &Stream<'_>,
        mode: Mode,
        st: &mut TpState<'s>,
        shape: GemmShape,
        t: TeamDesc,
    ) -> Result<TpCall> {
        if st.side.is_none() {
            // A capture never gets here: the first call's workspace is refused first.
            st.side = Some(self.shmem.new_stream()?);
        }
        let side = st.side.as_ref().expect("made above");
        match mode {
            Mode::Eager => stream.wait_for(side)?,
            Mode::Recorded => stream.keep_with_graph(Arc::clone(&st.pin))?,
        }
        Ok(TpCall::new(
            (shape.m, shape.n, shape.k),
            (t.start, t.stride, t.size, t.rank),
        ))
    }
}

/// Whether the workspace may be replaced by a larger one now: not in a capture (an allocation,
/// which cannot be recorded), nor while a graph reads it (its kernels point into it).
fn may_grow(call: &'static str, mode: Mode, st: &TpState<'_>) -> Result<()> {
    if mode == Mode::Recorded {
        return Err(Error::Capture {
            call,
            message: "the call needs a larger workspace (flags, partial-tile slots) than this \
                      Ops has, and making one is a symmetric allocation, which a capture cannot \
                      record: make the same call (same op, team, shape and buffers) once outside \
                      the capture first, then capture it"
                .into(),
        });
    }
    if Arc::strong_count(&st.pin) > 1 {
        return Err(Error::Unsupported {
            call,
            reason: "with a shape or team that needs a larger workspace (flags, partial-tile \
                     slots) while live graphs read the current one (their recorded fused calls \
                     point into it): drop those graphs on every PE first, or make the largest \
                     fused call once before capturing any"
                .into(),
        });
    }
    Ok(())
}

/// The end of a call: eagerly, the side stream waits for `stream` (step 5 of the module docs:
/// the next fused call starts after this one, whatever stream it is queued on). In a capture,
/// nothing: the side stream was joined back, and waiting for a recording stream would fork it
/// again.
fn end_call(stream: &Stream<'_>, side: &Stream<'_>, mode: Mode) -> Result<()> {
    match mode {
        Mode::Eager => side.wait_for(stream),
        Mode::Recorded => Ok(()),
    }
}

/// `m` must split evenly over the team's `size` PEs.
fn check_rows(call: &'static str, shape: GemmShape, size: u32) -> Result<()> {
    let m = shape.m;
    if m % size != 0 || m == 0 {
        let what = if call == AG_CALL {
            "A's rows (each PE holds m / size of them)"
        } else {
            "C's rows (each PE ends with m / size of them)"
        };
        return Err(Error::InvalidArgument {
            call,
            message: format!(
                "m = {m} is not a positive multiple of the team's {size} PEs, which split \
                 {what}; pad M with zero rows to {}",
                m.max(1).next_multiple_of(size)
            ),
        });
    }
    Ok(())
}

/// Queues the call's barrier on `stream`.
fn launch_barrier(
    tp80: &Module<'_>,
    stream: &Stream<'_>,
    flags: *mut u64,
    call: TpCall,
) -> Result<()> {
    let config = LaunchConfig::new(1, barrier::threads(call.size));
    // SAFETY: one block of `threads(size)` threads; `flags` is this PE's copy of the call's
    // flag buffer; every rank of the team queues the barrier of this call (the calls are
    // collective).
    unsafe { tp80.launch_on::<k80::tp_barrier>(stream, config, (flags, call)) }
}
