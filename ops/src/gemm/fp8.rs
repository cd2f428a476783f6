//! The FP8 GEMM ([`Ops::gemm_fp8`], [`Ops::grouped_gemm_fp8`]): `C = A · Bᵀ` with A (m x k)
//! and B (n x k) of e4m3 or e5m2 ([`Fp8In`]), f32 accumulation and an f32 or bf16 C, on the
//! Hopper kernels (sm_90: `wgmma ... .e4m3/.e5m2`; other GPUs have no FP8 path here), with the
//! operands' scales ([`Fp8Scales`]):
//!
//! * **per tensor** — one f32 per operand, `C = s_a s_b (A · Bᵀ)`. The scales are device
//!   scalars read by the epilogue when the kernel runs, so a graph that recorded the GEMM
//!   picks up new values written before each launch. 128 x 256 tiles; the tensor cores
//!   accumulate all of K (as `torch._scaled_mm(use_fast_accum=True)`).
//! * **block** (DeepSeek-V3) — one f32 per 1 x 128 of A (per row, per 128 of K) and per
//!   128 x 128 of B: `C[r][c] = Σ_kb sa[kb][r] sb[c / 128][kb] Σ_{k in kb} A[r][k] B[c][k]`.
//!   Each 128 of K is summed by the tensor cores, then promoted into f32 registers times its
//!   two scales (DeepGEMM's scheme: accuracy does not drift with K). 128 x 128 tiles.
//!
//! **Scale layouts** (f32): per tensor, one element each. Block: A's scales `⌈k / 128⌉ x m`,
//! row-major (M contiguous: row `kb` holds every row's scale of K block `kb`; what
//! [`crate::fp8::Quantized::scales_column_major`] gives for activations quantised per token,
//! DeepGEMM's and `torch._scaled_mm`'s 1 x 128 layout); B's `⌈n / 128⌉ x ⌈k / 128⌉`,
//! row-major (what [`crate::fp8::quantize`] gives for a weight with
//! [`crate::fp8::Blocks::PER_BLOCK`]), `groups` of them stacked for the grouped GEMM.
//!
//! **Shapes:** M and N arbitrary; K a multiple of 16 (TMA moves rows in 16-byte pieces); B
//! N x K only (`wgmma` reads 8-bit operands K-major only; transpose a K x N B first). A and B
//! start 16-byte aligned, C at a multiple of two elements, as [`Ops::gemm`] needs.
//!
//! ```no_run
//! use rshmem_device::{bf16, E4m3};
//! use rshmem_ops::fp8::{self, Blocks};
//! use rshmem_ops::{BLayout, Fp8Scales, GemmShape, Ops};
//! # fn f(shmem: &rshmem_host::Shmem, x: &[bf16], w: &[bf16]) -> rshmem_host::Result<()> {
//! let ops = Ops::new(shmem)?;
//! let (m, n, k) = (100, 300, 512);
//! let qa = fp8::quantize(x, m, k, Blocks::PER_TOKEN); // activations, m x k
//! let qb = fp8::quantize(w, n, k, Blocks::PER_BLOCK); // weights, n x k
//! let a = shmem.alloc_from(qa.values())?;
//! let b = shmem.alloc_from(qb.values())?;
//! let sa = shmem.alloc_from(&qa.scales_column_major())?; // ⌈k/128⌉ x m
//! let sb = shmem.alloc_from(&qb.scales)?; // ⌈n/128⌉ x ⌈k/128⌉
//! let mut c = shmem.alloc_zeroed::<bf16>(m * n)?;
//! let shape = GemmShape::new(m as u32, n as u32, k as u32, BLayout::NK);
//! let scales = Fp8Scales::Block { a: (&sa).into(), b: (&sb).into() };
//! ops.gemm_fp8::<E4m3, bf16>(&shmem.stream(), &a, &b, &mut c, shape, scales)?;
//! # Ok(()) }
//! ```

use super::elem::{Fp8In, Fp8Out, TmaElem};
use super::grouped::{tiles_bound, GroupRows, GroupedShape};
use super::launch::Boxes;
use super::shape::{BLayout, GemmShape, Starts};
use super::split_k::SplitK;
use super::{loaded, Path};
use crate::Ops;
use rshmem_gemm::sm90::{BlockScales, Fp8Tile128, Fp8Tile256, Sm90Config, BM, THREADS};
use rshmem_gemm::{Problem, Sm90Maps};
use rshmem_host::{DeviceRange, DeviceRangeMut, Error, LaunchConfig, Result, Stream};
use rshmem_ops_kernels::gemm90::{Fp8Gemm90, Fp8SplitK90};

/// The calls the errors name.
const CALL: &str = "Ops::gemm_fp8";
const GROUPED: &str = "Ops::grouped_gemm_fp8";

/// Elements of K per block scale.
pub const SCALE_BLOCK: u32 = 128;

/// The scales of an FP8 GEMM's operands (f32, device buffers or ranges of them; layouts:
/// the module docs).
#[derive(Clone, Copy, Debug)]
pub enum Fp8Scales<'a> {
    /// One scale per operand: `C = a[0] b[0] (A · Bᵀ)`, read when the kernel runs.
    Tensor {
        /// A's scale (its first element).
        a: DeviceRange<'a, f32>,
        /// B's scale (its first element).
        b: DeviceRange<'a, f32>,
    },
    /// DeepSeek-V3's block scales: A's `⌈k / 128⌉ x m` (M contiguous), B's `⌈n / 128⌉ x
    /// ⌈k / 128⌉` (row-major; `groups` of them for a grouped GEMM).
    Block {
        /// A's scales, one per row and 128 of K.
        a: DeviceRange<'a, f32>,
        /// B's scales, one per 128 x 128 block.
        b: DeviceRange<'a, f32>,
    },
}

fn bad(call: &'static str, message: String) -> Error {
    Error::InvalidArgument { call, message }
}

/// What the FP8 shapes need beyond the 16-bit GEMM's (`GemmShape::check_in`): B N x K, K a
/// multiple of 16.
fn check_fp8_shape(call: &'static str, shape: GemmShape) -> Result<()> {
    let GemmShape { m, n, k, b_layout } = shape;
    if b_layout != BLayout::NK {
        return Err(bad(
            call,
            format!(
                "B is K x N (b_layout KN; m x n x k = {m} x {n} x {k}): the FP8 GEMM takes B as \
                 N x K only (wgmma reads 8-bit operands K-major only); transpose B to N x K"
            ),
        ));
    }
    if k % 16 != 0 {
        return Err(bad(
            call,
            format!(
                "k = {k} (m x n x k = {m} x {n} x {k}) is not a multiple of 16: the rows of A \
                 and B are copied in 16-byte pieces (16 FP8 elements); pad K with zeros to {}",
                k.next_multiple_of(16)
            ),
        ));
    }
    Ok(())
}

/// Checks per-tensor scales' lengths: one for A, one per group's B.
fn check_tensor(call: &'static str, (a, b): (usize, usize), groups: u32) -> Result<()> {
    if a == 0 {
        return Err(bad(
            call,
            "A's per-tensor scale is an empty range: give one f32".into(),
        ));
    }
    if b < groups as usize {
        let what = match groups {
            1 => "B's per-tensor scale is an empty range: give one f32".into(),
            g => {
                format!("B's per-tensor scales have {b} elements, but the {g} groups need one each")
            }
        };
        return Err(bad(call, what));
    }
    Ok(())
}

/// Checks block scales' lengths for `m` rows of A and `groups` matrices B of `n x k`.
fn check_block(
    call: &'static str,
    (a, b): (usize, usize),
    (m, n, k, groups): (u32, u32, u32, u32),
) -> Result<()> {
    let (kb, nb) = (k.div_ceil(SCALE_BLOCK), n.div_ceil(SCALE_BLOCK));
    let need_a = kb as usize * m as usize;
    let need_b = groups as usize * nb as usize * kb as usize;
    if a < need_a {
        return Err(bad(
            call,
            format!(
                "A's block scales have {a} elements, but ⌈k / 128⌉ x m = {kb} x {m} = {need_a} \
                 are needed (one per row of A and 128 of K, M contiguous)"
            ),
        ));
    }
    if b < need_b {
        let (g, gs) = match groups {
            1 => ("", String::new()),
            g => ("groups x ", format!("{g} x ")),
        };
        return Err(bad(
            call,
            format!(
                "B's block scales have {b} elements, but {g}⌈n / 128⌉ x ⌈k / 128⌉ = {gs}{nb} x \
                 {kb} = {need_b} are needed (one per 128 x 128 block of B)"
            ),
        ));
    }
    Ok(())
}

/// The kernel argument of block scales for `m x n x k`.
fn block_arg(
    a: &DeviceRange<'_, f32>,
    b: &DeviceRange<'_, f32>,
    m: u32,
    n: u32,
    k: u32,
) -> BlockScales {
    BlockScales {
        a: a.as_ptr(),
        a_ld: m,
        k_blocks: k.div_ceil(SCALE_BLOCK),
        b: b.as_ptr(),
        n_blocks: n.div_ceil(SCALE_BLOCK),
        _zero: 0,
    }
}

impl<'s> Ops<'s> {
    /// `C = A · Bᵀ` of FP8 operands with their scales (see [the module](self)), queued on
    /// `stream`: A m x k and B n x k of `In` (e4m3 or e5m2), C m x n of `Out` (f32, or bf16
    /// rounded to nearest even). Operands are buffers or ranges of them, as
    /// [`Ops::gemm_with`]'s.
    ///
    /// Errors (nothing is launched): a zero extent; `k` not a multiple of 16; B K x N; a buffer
    /// shorter than the shape (scales included, naming which); an operand that starts
    /// misaligned; a device that is not sm_90 (FP8 `wgmma` is Hopper's: the sm80 kernels have
    /// no FP8 path). Like the sm90 [`Ops::gemm`], the first call on new operands fills a
    /// tensor-map slot (waiting for the PE's work), and a graph capture needs a slot that
    /// describes them already: run the call once before capturing it.
    ///
    /// K is split over blocks when the output tiles are fewer than the SMs (decode-sized M), as
    /// [`Ops::gemm`] does ([`SplitK::Auto`]; [`Ops::gemm_fp8_with`] chooses).
    pub fn gemm_fp8<'a, In: Fp8In, Out: Fp8Out<In>>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: impl Into<DeviceRangeMut<'a, Out>>,
        shape: GemmShape,
        scales: Fp8Scales<'a>,
    ) -> Result<()> {
        self.gemm_fp8_with(stream, a, b, c, shape, scales, SplitK::Auto)
    }

    /// [`Ops::gemm_fp8`] with K's split chosen ([`super::split_k`]): the parts of K go, scaled
    /// (per tensor) or promoted with their own k-blocks' scales (block), into the split-K
    /// workspace as f32, and a second kernel adds them in order (the same bits every run)
    /// and rounds once into C. [`SplitK::Auto`] splits when the tiles (128 x 256 per tensor,
    /// 128 x 128 with block scales) are fewer than the SMs, each part at least 4 k-steps of
    /// 128; in a graph capture it records the unsplit kernel, and a forced
    /// [`SplitK::Parts`] is refused there, as for [`Ops::gemm_with`].
    ///
    /// Errors: those of [`Ops::gemm_fp8`]; [`SplitK::Parts`] beyond the k-steps or the
    /// workspace, or in a capture.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_fp8_with<'a, In: Fp8In, Out: Fp8Out<In>>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: impl Into<DeviceRangeMut<'a, Out>>,
        shape: GemmShape,
        scales: Fp8Scales<'a>,
        split_k: SplitK,
    ) -> Result<()> {
        let (a, b, c) = (a.into(), b.into(), c.into());
        let GemmShape { m, n, k, .. } = shape;
        shape.check_in(CALL, a.len(), b.len(), (c.len(), m, "m x n"))?;
        check_fp8_shape(CALL, shape)?;
        match &scales {
            Fp8Scales::Tensor { a, b } => check_tensor(CALL, (a.len(), b.len()), 1)?,
            Fp8Scales::Block { a, b } => check_block(CALL, (a.len(), b.len()), (m, n, k, 1))?,
        }
        Starts::of(a, b, Some(&c)).check(CALL)?;
        self.fp8_path(CALL)?;
        let module = loaded(&self.gemm90, "sm90")?;
        let problem = Problem { m, n, k };
        let c = c.matrix_mut(m, n)?;
        match scales {
            Fp8Scales::Tensor { a: sa, b: sb } => {
                type C<In> = Fp8Tile256<In>;
                let parts = self.fp8_parts::<C<In>>(stream, split_k, problem)?;
                let tiles = C::<In>::tiles(problem) * parts;
                let (maps, config) =
                    self.fp8_launch::<C<In>>(CALL, stream, a, b, shape, 0, tiles)?;
                let (sa, sb) = (sa.as_ptr(), sb.as_ptr());
                if parts > 1 {
                    // SAFETY: the launch shape, maps and scales as the unsplit launch's below,
                    // over `parts` times the tiles; `parts` from `split_parts_of` (within the
                    // k-steps and the workspace), which the kernel writes `parts * m` rows of.
                    return unsafe {
                        self.split_then_reduce(stream, problem, parts, c, |module, partials| {
                            let args = (maps, problem, parts, sa, sb, partials);
                            module.launch_on::<<In as Fp8SplitK90>::Tensor>(stream, config, args)
                        })
                    };
                }
                let args = (maps, problem, sa, sb, c);
                // SAFETY: the launch shape is the kernel's (THREADS, its configuration's
                // SHARED_BYTES, 1-D, sm_90 checked by `fp8_path`); the slot's maps describe `a`
                // (m x k) and `b` (n x k) of `In` with the configuration's boxes, checked long
                // enough, and stay until the PE's work is done (`MapTable::slot`); the scales
                // hold an f32 each (checked); `c` holds m x n. Dropping or host-copying any of
                // the buffers waits for the PE's work.
                unsafe { module.launch_on::<<Out as Fp8Gemm90<In>>::Tensor>(stream, config, args) }
            }
            Fp8Scales::Block { a: sa, b: sb } => {
                type C<In> = Fp8Tile128<In>;
                let parts = self.fp8_parts::<C<In>>(stream, split_k, problem)?;
                let tiles = C::<In>::tiles(problem) * parts;
                let (maps, config) =
                    self.fp8_launch::<C<In>>(CALL, stream, a, b, shape, 0, tiles)?;
                let scales = block_arg(&sa, &sb, m, n, k);
                if parts > 1 {
                    // SAFETY: as the per-tensor split above, with the block scales checked as
                    // for the unsplit launch below.
                    return unsafe {
                        self.split_then_reduce(stream, problem, parts, c, |module, partials| {
                            let args = (maps, problem, parts, scales, partials);
                            module.launch_on::<<In as Fp8SplitK90>::Block>(stream, config, args)
                        })
                    };
                }
                let args = (maps, problem, scales, c);
                // SAFETY: as above, with the block scales checked to hold ⌈k/128⌉ x m and
                // ⌈n/128⌉ x ⌈k/128⌉ f32s, as `BlockScales` lays them out.
                unsafe { module.launch_on::<<Out as Fp8Gemm90<In>>::Block>(stream, config, args) }
            }
        }
    }

    /// The grouped FP8 GEMM: `shape.groups` GEMMs in one persistent launch, group `g`'s rows
    /// of A (as `rows` says: [`GroupRows`]) times its own B (the `g`-th n x k matrix of `b`)
    /// with its own B scales (block scales: the `g`-th `⌈n / 128⌉ x ⌈k / 128⌉` of `scales.b`,
    /// and its rows' A scales), into the same rows of C; what
    /// [`Ops::grouped_gemm`] is to [`Ops::gemm`]. Empty groups have no tiles. With
    /// [`Fp8Scales::Tensor`], A's scale is one f32 and B's `groups` of them, one per group's
    /// B (`C = s_a s_b[g] (A · B_gᵀ)` on group g's rows; 128 x 256 tiles accumulated in the
    /// tensor cores, as the plain per-tensor GEMM), as MoE layers quantise their experts.
    ///
    /// Errors: those of [`Ops::gemm_fp8`] and [`Ops::grouped_gemm`]; fewer B scales than
    /// groups.
    #[allow(clippy::too_many_arguments)]
    pub fn grouped_gemm_fp8<'a, In: Fp8In, Out: Fp8Out<In>>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: impl Into<DeviceRangeMut<'a, Out>>,
        shape: GroupedShape,
        rows: GroupRows<'a>,
        scales: Fp8Scales<'a>,
    ) -> Result<()> {
        let (a, b, c) = (a.into(), b.into(), c.into());
        let Some((m, arg)) = self.grouped_checks(GROUPED, &a, &b, &c, shape, &rows)? else {
            return Ok(());
        };
        let GroupedShape { groups, n, k, .. } = shape;
        check_fp8_shape(GROUPED, shape.rows(m))?;
        let (sa, sb) = match scales {
            Fp8Scales::Tensor { a, b } => {
                check_tensor(GROUPED, (a.len(), b.len()), groups)?;
                (a, b)
            }
            Fp8Scales::Block { a, b } => {
                check_block(GROUPED, (a.len(), b.len()), (m, n, k, groups))?;
                (a, b)
            }
        };
        self.fp8_path(GROUPED)?;
        let module = loaded(&self.gemm90, "sm90")?;
        let problem = Problem { m, n, k };
        let c = c.matrix_mut(m, n)?;
        if let Fp8Scales::Tensor { .. } = scales {
            type C<In> = Fp8Tile256<In>;
            let tiles = tiles_bound(arg.masked_rows, groups, m, n, (BM, C::<In>::BN));
            let (maps, config) =
                self.fp8_launch::<C<In>>(GROUPED, stream, a, b, shape.rows(m), groups, tiles)?;
            let args = (maps, problem, arg, sa.as_ptr(), sb.as_ptr(), c);
            // SAFETY: as the block-scaled launch below, with A's scale one f32 and B's one per
            // group (checked).
            return unsafe {
                module.launch_on::<<Out as Fp8Gemm90<In>>::GroupedTensor>(stream, config, args)
            };
        }
        type C<In> = Fp8Tile128<In>;
        let tiles = tiles_bound(arg.masked_rows, groups, m, n, (BM, C::<In>::BN));
        let (maps, config) =
            self.fp8_launch::<C<In>>(GROUPED, stream, a, b, shape.rows(m), groups, tiles)?;
        let args = (maps, problem, arg, block_arg(&sa, &sb, m, n, k), c);
        // SAFETY: the launch shape is the kernel's (THREADS, its configuration's SHARED_BYTES,
        // 1-D, sm_90 checked); the slot's maps describe `a` (m x k) and `b` (groups matrices,
        // 3-D) of `In` with the configuration's boxes, checked long enough, and stay until the
        // PE's work is done; `sizes` holds `groups` u32s, the scales `⌈k/128⌉ x m` and
        // `groups x ⌈n/128⌉ x ⌈k/128⌉` f32s (checked); `c` holds m x n. Dropping or
        // host-copying any of the buffers waits for the PE's work.
        unsafe { module.launch_on::<<Out as Fp8Gemm90<In>>::GroupedBlock>(stream, config, args) }
    }

    /// The parts of K an FP8 GEMM of `problem` on tiles `C` runs in on `stream`: 1 in a graph
    /// capture (any: rshmem's, or one it did not begin, which the split's ordering stream
    /// cannot reach), where forced parts are refused.
    fn fp8_parts<C: Sm90Config>(
        &self,
        stream: &Stream<'_>,
        split_k: SplitK,
        problem: Problem,
    ) -> Result<u32> {
        super::split_k::plan_on_stream(
            stream,
            |capturing| {
                // In a capture `split_parts_of` refuses forced parts, and Auto runs unsplit.
                let parts = self.split_parts_of::<C>(CALL, split_k, capturing, problem)?;
                Ok(if capturing { 1 } else { parts })
            },
            |&parts| parts,
        )
    }

    /// The maps of `a` and `b` (`groups` of them when grouped) for configuration `C`, and the
    /// persistent launch over `tiles`.
    #[allow(clippy::too_many_arguments)]
    fn fp8_launch<C: Sm90Config>(
        &self,
        call: &'static str,
        stream: &Stream<'_>,
        a: DeviceRange<'_, C::In>,
        b: DeviceRange<'_, C::In>,
        shape: GemmShape,
        groups: u32,
        tiles: u32,
    ) -> Result<(Sm90Maps, LaunchConfig)>
    where
        C::In: TmaElem,
    {
        let boxes = Boxes::of::<C>(BLayout::NK);
        let (a, b) = self.sm90_maps_of(call, stream, a, b, shape, groups, boxes)?;
        let config = self.persistent(tiles, THREADS, C::SHARED_BYTES);
        Ok((Sm90Maps { a, b }, config))
    }

    /// The FP8 kernels run on sm_90 only; `call` names the op.
    fn fp8_path(&self, call: &'static str) -> Result<()> {
        match self.path_for(call, super::shape::Kernel::Auto)? {
            Path::Sm90 => Ok(()),
            Path::Sm80 => Err(Error::Unsupported {
                call,
                reason: format!(
                    "on this PE's device, an sm_{}: FP8 GEMMs run on the Hopper kernels \
                     (wgmma with e4m3/e5m2, sm_90: H100, H200) only; rshmem's sm80 GEMM has \
                     no FP8 path (Ampere has no FP8 tensor cores)",
                    self.info.sm
                ),
            }),
        }
    }
}
