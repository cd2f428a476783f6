//! Split-K on the host: when [`Ops::gemm`](crate::Ops::gemm) splits K ([`SplitK`], [`parts`]),
//! the workspace the parts go through, and the two launches (`rshmem_gemm::split_k`).
//!
//! A GEMM of fewer output tiles than SMs (decode-sized M: 16 x 4096 x 4096 is 16 tiles of
//! 128 x 256 on 132 SMs) leaves most SMs idle while the few busy ones stream B. Split in
//! `p` parts of K, each tile becomes `p` partial tiles on `p` blocks, their f32 sums written
//! to a workspace; a second kernel adds the parts in order (the same bits every run) and
//! rounds once into C. The workspace costs `2 p m n` f32 of traffic beside B's `n k` elements:
//! small exactly where the split pays (m small, k long).
//!
//! [`SplitK::Auto`] splits on the sm90 path when there are fewer tiles than SMs: `p` = the
//! largest of 2..=[`MAX_PARTS`] that keeps every partial tile on an SM of its own (`p x
//! tiles <= SMs`), at least [`MIN_STEPS`] k-steps per part, and `p m n` f32 within the
//! workspace ([`workspace_bytes`]: 16 MiB on GPUs, 2 MiB on the simulator); else no split.
//!
//! The workspace is one per [`Ops`]: split GEMMs on different streams are ordered one after
//! another through it (a private stream each call waits for and marks). A graph capture does
//! not split ([`SplitK::Auto`] runs the unsplit kernel; forcing parts is refused): a recorded
//! split would share the workspace with the eager calls around the graph's launches. That
//! holds for captures rshmem did not begin too (`torch.cuda.graph` on an adopted stream:
//! [`Stream::is_recorded`](rshmem_host::Stream::is_recorded)), which the private stream could
//! not join anyway.
//!
//! ```
//! use rshmem_ops::gemm::split_k::parts;
//! use rshmem_ops::SplitK;
//! // 16 x 4096 x 4096 on 132 SMs: 16 tiles, 8 parts (128 partial tiles of 8 k-steps).
//! assert_eq!(parts(SplitK::Auto, 132, 16, 4096, 4096, 16 << 20), 8);
//! // 8192³: 2048 tiles, no split.
//! assert_eq!(parts(SplitK::Auto, 132, 8192, 8192, 8192, 16 << 20), 1);
//! // A short K is not split: 256 columns of K are 4 k-steps, one part's minimum.
//! assert_eq!(parts(SplitK::Auto, 132, 16, 4096, 256, 16 << 20), 1);
//! ```

use crate::Ops;
use rshmem_device::matrix::MatrixMut;
use rshmem_gemm::{sm90, Problem, Sm90Maps};
use rshmem_host::{Backend, Error, LaunchConfig, Module, Result, Shmem, Stream, SymBuffer};
use rshmem_ops_kernels::gemm90::{SplitK90, SplitReduce};

use super::elem::{GemmIn, GemmOut};
use super::shape::CALL;

/// Whether [`Ops::gemm_with`](crate::Ops::gemm_with) splits K (on the sm90 path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SplitK {
    /// Split when the output tiles are fewer than the SMs ([`parts`]).
    #[default]
    Auto,
    /// Never split.
    Off,
    /// Exactly this many parts (at most the k-steps, `ceil(k / 64)`, and what the workspace
    /// holds: refused otherwise); 1 is [`SplitK::Off`]. For tests and benchmarks.
    Parts(u32),
}

/// At most this many parts.
pub const MAX_PARTS: u32 = 16;

/// At least this many k-steps (of the sm90 kernel's 64) per part: a part of fewer spends
/// more on filling its pipeline than on streaming.
pub const MIN_STEPS: u32 = 4;

/// Bytes of the split-K workspace [`Ops::new`] allocates on `backend`: room for the parts of
/// 128 x 8192 in 4 (GPUs), or of small shapes in many (the simulator, whose default heap is
/// 64 MiB).
pub const fn workspace_bytes(backend: Backend) -> usize {
    match backend {
        Backend::Gpu => 16 << 20,
        Backend::Sim => 2 << 20,
    }
}

/// The parts [`SplitK::Auto`] picks for `m x n x k` on `sms` SMs with `workspace` bytes (1:
/// no split); [`SplitK::Off`] is 1 and [`SplitK::Parts`] its count, unchecked.
pub fn parts(option: SplitK, sms: u32, m: u32, n: u32, k: u32, workspace: usize) -> u32 {
    parts_of::<sm90::Tile256<rshmem_device::bf16>>(option, sms, Problem { m, n, k }, workspace)
}

/// [`parts`] for the kernels of tile configuration `C` (the FP8 GEMMs': 128 of K per k-step,
/// and 128 x 128 tiles with block scales).
///
/// ```
/// use rshmem_device::E4m3;
/// use rshmem_gemm::{sm90::{Fp8Tile128, Fp8Tile256}, Problem};
/// use rshmem_ops::gemm::split_k::parts_of;
/// use rshmem_ops::SplitK;
/// let p = Problem { m: 16, n: 4096, k: 4096 };
/// // Per-tensor FP8: 16 tiles of 128 x 256, 32 k-steps of 128: 8 parts of 4.
/// assert_eq!(parts_of::<Fp8Tile256<E4m3>>(SplitK::Auto, 132, p, 16 << 20), 8);
/// // Block scales: 32 tiles of 128 x 128: 4 parts.
/// assert_eq!(parts_of::<Fp8Tile128<E4m3>>(SplitK::Auto, 132, p, 16 << 20), 4);
/// ```
pub fn parts_of<C: sm90::Sm90Config>(
    option: SplitK,
    sms: u32,
    problem: Problem,
    workspace: usize,
) -> u32 {
    let Problem { m, n, k } = problem;
    match option {
        SplitK::Off => 1,
        SplitK::Parts(p) => p.max(1),
        SplitK::Auto => {
            let tiles = C::tiles(problem);
            let fit = workspace as u64 / (4 * u64::from(m) * u64::from(n)).max(1);
            let p = (sms / tiles.max(1))
                .min(k.div_ceil(C::BK) / MIN_STEPS)
                .min(fit.min(u64::from(MAX_PARTS)) as u32);
            if p >= 2 {
                p
            } else {
                1
            }
        }
    }
}

/// The workspace and what orders its users.
pub(crate) struct SplitState<'s> {
    /// `workspace_bytes / 4` f32s.
    ws: SymBuffer<'s, f32>,
    /// Every split GEMM waits for it and then marks it (it waits for the GEMM's stream), so
    /// split GEMMs on different streams never share the workspace at once.
    order: Option<Stream<'s>>,
}

/// The plan `plan(capturing)` makes for `stream`, where a split (`parts(&plan) > 1`) runs
/// through the workspace's ordering stream: a capture rshmem did not begin (torch.cuda.graph on
/// an adopted stream) cannot reach that stream, so on one the plan is made as in rshmem's own
/// captures (unsplit; forced parts refused).
pub(crate) fn plan_on_stream<P>(
    stream: &Stream<'_>,
    plan: impl Fn(bool) -> Result<P>,
    parts: impl Fn(&P) -> u32,
) -> Result<P> {
    let capturing = stream.is_capturing();
    let made = plan(capturing)?;
    if !capturing && parts(&made) > 1 && stream.is_recorded()? {
        return plan(true);
    }
    Ok(made)
}

impl<'s> SplitState<'s> {
    /// Collective: allocates the workspace on every PE.
    pub(crate) fn new(shmem: &'s Shmem) -> Result<Self> {
        Ok(Self {
            ws: shmem.alloc_zeroed::<f32>(workspace_bytes(shmem.backend()) / 4)?,
            order: None,
        })
    }
}

impl<'s> Ops<'s> {
    /// The parts of a GEMM of `problem` on the sm90 path under `option`, or why `option`
    /// cannot be honoured (on a stream that is `capturing` a graph: any forced split). Under
    /// [`SplitK::Auto`] the parts an eager call splits into, capturing or not: a capture
    /// records the unsplit kernel instead, which the caller decides ([`super::plan`]).
    pub(crate) fn split_parts(
        &self,
        option: SplitK,
        capturing: bool,
        problem: Problem,
    ) -> Result<u32> {
        self.split_parts_of::<sm90::Tile256<rshmem_device::bf16>>(CALL, option, capturing, problem)
    }

    /// [`Ops::split_parts`] for the kernels of tile configuration `C`, refusals naming `call`.
    pub(crate) fn split_parts_of<C: sm90::Sm90Config>(
        &self,
        call: &'static str,
        option: SplitK,
        capturing: bool,
        problem: Problem,
    ) -> Result<u32> {
        let Problem { m, n, k } = problem;
        let bytes = workspace_bytes(self.shmem.backend());
        let p = parts_of::<C>(option, self.info.multiprocessors, problem, bytes);
        if p == 1 || !matches!(option, SplitK::Parts(_)) {
            return Ok(p);
        }
        let steps = k.div_ceil(C::BK);
        let refuse = |reason: String| Error::Unsupported { call, reason };
        if capturing {
            return Err(Error::Capture {
                call,
                message: "SplitK::Parts in a graph capture: the split-K workspace is shared by \
                          the PE's eager calls, so a recorded split is refused; use SplitK::Auto \
                          (which records the unsplit kernel) or SplitK::Off"
                    .into(),
            });
        }
        if p > steps {
            return Err(refuse(format!(
                "with SplitK::Parts({p}) for k = {k}: at most {steps} parts (one per k-step of {})",
                C::BK
            )));
        }
        if u64::from(p) * u64::from(m) * u64::from(n) * 4 > bytes as u64 {
            return Err(refuse(format!(
                "with SplitK::Parts({p}) for m {m} x n {n}: {p} parts of f32 need {} bytes, \
                 the split-K workspace holds {bytes}",
                u64::from(p) * u64::from(m) * u64::from(n) * 4
            )));
        }
        Ok(p)
    }

    /// The split GEMM: `parts` partial tiles per tile into the workspace, then their sum into
    /// `c`, ordered after every earlier split GEMM of this PE (any stream).
    ///
    /// # Safety
    ///
    /// `maps` describe A and B of `In` (B K x N when `B_KN`) for `problem`, as the plain
    /// sm90 launch requires; `c` holds `problem.m x problem.n`; `parts` is as
    /// [`Ops::split_parts`] gave it (> 1, within the workspace and the k-steps).
    pub(crate) unsafe fn sm90_split<
        In: GemmIn + SplitK90<B_KN>,
        Out: GemmOut<In>,
        const B_KN: bool,
    >(
        &self,
        stream: &Stream<'_>,
        maps: Sm90Maps,
        problem: Problem,
        parts: u32,
        c: MatrixMut<Out>,
    ) -> Result<()> {
        let config = self.persistent(
            sm90::tiles(problem) * parts,
            sm90::THREADS,
            sm90::SHARED_BYTES,
        );
        // SAFETY: the caller's contract; the partial kernel gets the maps and launch shape the
        // plain sm90 launch would, and a workspace of `parts * m` rows of n f32.
        unsafe {
            self.split_then_reduce(stream, problem, parts, c, |module, partials| {
                module.launch_on::<<In as SplitK90<B_KN>>::Kernel>(
                    stream,
                    config,
                    (maps, problem, parts, partials),
                )
            })
        }
    }

    /// A split GEMM's two launches: `launch_parts` queues the kernel that writes the parts
    /// (given the gemm90 module and the workspace as `parts` slabs of `m x n` f32) on
    /// `stream`, then the reduction adds them into `c`; ordered after every earlier split GEMM
    /// of this PE (any stream).
    ///
    /// # Safety
    ///
    /// `launch_parts` queues, on `stream`, a kernel that writes at most the workspace it is
    /// given; `c` holds `problem.m x problem.n`; `parts` > 0 slabs of m x n f32 fit the
    /// workspace.
    pub(crate) unsafe fn split_then_reduce<Out: SplitReduce + 'static>(
        &self,
        stream: &Stream<'_>,
        problem: Problem,
        parts: u32,
        c: MatrixMut<Out>,
        launch_parts: impl FnOnce(&Module<'s>, MatrixMut<f32>) -> Result<()>,
    ) -> Result<()> {
        let module = super::loaded(&self.gemm90, "sm90")?;
        let Problem { m, n, .. } = problem;
        let mut guard = self.split.lock().unwrap_or_else(|p| p.into_inner());
        let st = &mut *guard;
        if st.order.is_none() {
            st.order = Some(self.shmem.new_stream()?);
        }
        let order = st.order.as_ref().expect("made above");
        stream.wait_for(order)?;
        let partials = st.ws.matrix_mut(parts * m, n)?.as_matrix_mut();
        let pairs = u64::from(m) * u64::from(n.div_ceil(2));
        let blocks = pairs
            .div_ceil(256)
            .min(u64::from(self.info.multiprocessors.max(1)) * 8) as u32;
        launch_parts(module, partials)?;
        // SAFETY: the workspace holds `parts * m` rows of n f32 (checked by `matrix_mut`), and
        // no other split GEMM uses it meanwhile (this stream waited for `order`, which waited
        // for the previous one's stream; the lock orders the host side); the reduction reads
        // the parts after the partial kernel (same stream, the caller's contract) and writes c
        // (m x n, the caller's).
        unsafe {
            let reduce = LaunchConfig::new(blocks.max(1), 256);
            module.launch_on::<<Out as SplitReduce>::Kernel>(
                stream,
                reduce,
                (partials.as_matrix(), parts, m, n, c),
            )?;
        }
        order.wait_for(stream)
    }
}
