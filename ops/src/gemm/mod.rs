//! The GEMM family: [`Ops::gemm`] (`C = A · B`, bf16/f16 in, f32 accumulation, f32 or the
//! input type out) on the Hopper kernel (TMA + `wgmma`, persistent, warp-specialised) or the
//! `mma.sync` one, its element types ([`elem`]), shapes ([`shape`]), tensor-map table
//! ([`maps`]) and the launch helpers a user's own kernel on the same mainloops takes
//! ([`launch`]). The kernels are `kernels/ops`' `gemm90` and `gemm80` families: `rshmem_gemm`'s
//! mainloops with its plain epilogue.

pub mod elem;
pub mod fp8;
pub mod grouped;
pub mod launch;
pub mod maps;
pub mod plan;
pub mod shape;
pub mod split_k;

use crate::Ops;
use elem::{GemmIn, GemmOut, TmaElem};
use maps::MapKey;
use plan::{GemmPlan, GemmTile};
use rshmem_device::hopper::TensorMap as DevTensorMap;
use rshmem_gemm::sm90::{Sm90Config, Tile128, Tile256};
use rshmem_host::{DeviceRange, DeviceRangeMut, Error, LaunchConfig, Module, Result, Stream};
use rshmem_ops_kernels::gemm80::Gemm80;
use rshmem_ops_kernels::gemm90::{sm90, Gemm90};
use shape::{BLayout, GemmOptions, GemmShape, Kernel, Starts, CALL};
use split_k::SplitK;

/// The sm_90a image of the `gemm90` family (the Hopper GEMM).
pub static IMAGE90: rshmem_host::KernelImage = rshmem_host::include_kernels!("rshmem-ops-gemm90");

/// The sm_80 and sm_90 image of the `gemm80` family (the `cp.async` + `mma.sync` GEMM, for
/// Ampere and later).
pub static IMAGE80: rshmem_host::KernelImage = rshmem_host::include_kernels!("rshmem-ops-gemm80");

/// The kernel a GEMM runs after [`Kernel::Auto`] is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    Sm90,
    Sm80,
}

impl<'s> Ops<'s> {
    /// `C = A · B` (B as `shape.b_layout` says, A m x k, C m x n, all row-major and dense),
    /// queued on `stream` with [`Kernel::Auto`]: see [`Ops::gemm_with`].
    pub fn gemm<'a, In: GemmIn, Out: GemmOut<In>>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: impl Into<DeviceRangeMut<'a, Out>>,
        shape: GemmShape,
    ) -> Result<()> {
        self.gemm_with(stream, a, b, c, shape, GemmOptions::default())
    }

    /// `C = A · B` on this PE's copies of the buffers, queued on `stream` (a stream of this
    /// PE) after its earlier work; returns once queued. f32 accumulation; an `In` output is
    /// rounded to nearest even. Buffers may be longer than the shape needs.
    ///
    /// Each operand is a buffer (`&a`, `&mut c`) or a range of one (`a.range(off..)?`,
    /// `c.range_mut(off..)?`): the matrix starts at the range's first element. A and B must
    /// start 16-byte aligned (a multiple of 8 bf16/f16 elements into their buffers), C at a
    /// multiple of two elements. The GEMM reaches no peer, so its operands need not be
    /// symmetric: memory allocated elsewhere on the PE's device comes in as a
    /// [`DeviceRange`] / [`DeviceRangeMut`] (`from_raw_parts`, checked).
    ///
    /// Errors (nothing is launched): a shape with a zero extent, `k` not a multiple of 8, or
    /// `n` not one with [`BLayout::KN`]; a buffer shorter than the shape; an operand that
    /// starts misaligned; [`Kernel::Sm90`] on a device that is not sm_90. The first GEMM on new operands fills a
    /// tensor-map slot, which waits for the PE's launched work ([`maps`]).
    ///
    /// In a graph capture ([`Stream::capture`]) the GEMM is recorded like a launch; on the
    /// sm90 path its operands must have been seen before (the first GEMM on new operands
    /// fills a tensor-map slot from the host, which a graph cannot record: refused with
    /// [`Error::Capture`]; run it once before capturing), and the graph keeps their slot.
    pub fn gemm_with<'a, In: GemmIn, Out: GemmOut<In>>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: impl Into<DeviceRangeMut<'a, Out>>,
        shape: GemmShape,
        options: GemmOptions,
    ) -> Result<()> {
        let (a, b, c): (
            DeviceRange<'_, In>,
            DeviceRange<'_, In>,
            DeviceRangeMut<'_, Out>,
        ) = (a.into(), b.into(), c.into());
        shape.check(a.len(), b.len(), c.len())?;
        Starts::of(a, b, Some(&c)).check(CALL)?;
        let plan = split_k::plan_on_stream(
            stream,
            |capturing| self.plan_on(shape, options, capturing),
            |plan| plan.split,
        )?;
        match plan.kernel {
            Kernel::Sm80 => self.sm80::<In, Out>(stream, a, b, c, shape),
            _ => self.sm90::<In, Out>(stream, a, b, c, shape, plan),
        }
    }

    /// What [`Ops::gemm_with`] runs for `shape` with `options` on this PE's device, outside a
    /// graph capture: the kernel, the tile configuration ([`plan`]: the cost model's choice
    /// under [`GemmTile::Auto`]) and the parts of K ([`split_k`]); a benchmark reports it.
    /// Errors: those of the options that cannot run here, as `gemm_with` gives them.
    pub fn gemm_plan(&self, shape: GemmShape, options: GemmOptions) -> Result<GemmPlan> {
        self.plan_on(shape, options, false)
    }

    /// [`Ops::gemm_plan`] on a stream that is `capturing` a graph, or not (a capture is never
    /// split).
    fn plan_on(&self, shape: GemmShape, options: GemmOptions, capturing: bool) -> Result<GemmPlan> {
        let GemmShape { m, n, k, .. } = shape;
        let unsupported = |reason: &str| Error::Unsupported {
            call: CALL,
            reason: reason.into(),
        };
        match self.path(options.kernel)? {
            Path::Sm80 if matches!(options.split_k, SplitK::Parts(p) if p > 1) => Err(unsupported(
                "with SplitK::Parts on the sm80 kernel: only the sm90 kernel splits K",
            )),
            Path::Sm80 => plan::sm80_plan(options.tile).map_err(|reason| unsupported(&reason)),
            Path::Sm90 => {
                let problem = rshmem_gemm::Problem { m, n, k };
                let parts = self.split_parts(options.split_k, capturing, problem)?;
                let sms = self.info.multiprocessors;
                // A sparse last wave may split its rows alone (`plan::split_tail`), where
                // nothing split the whole GEMM and nothing was forced.
                let auto = (options.split_k, options.tile) == (SplitK::Auto, GemmTile::Auto);
                let tail = (auto && parts == 1)
                    .then(|| {
                        let bytes = split_k::workspace_bytes(self.shmem.backend());
                        let parts_of = |rows| split_k::parts(SplitK::Auto, sms, rows, n, k, bytes);
                        plan::split_tail(sms, (m, n, k), parts_of)
                    })
                    .flatten();
                let (parts, from) = tail.map_or((parts, 0), |(from, parts)| (parts, from));
                let split = (options.split_k, parts, from);
                plan::sm90_plan(options.tile, split, capturing, || {
                    plan::choose_tile(sms, m, n, k)
                })
                .map_err(|reason| unsupported(&reason))
            }
        }
    }

    /// Resolves `kernel` for this device, or says why it cannot run (both kernels take both
    /// layouts of a shape that passed `GemmShape::check`).
    fn path(&self, kernel: Kernel) -> Result<Path> {
        self.path_for(CALL, kernel)
    }

    /// [`Ops::path`] for the op `call` (named by the errors).
    pub(crate) fn path_for(&self, call: &'static str, kernel: Kernel) -> Result<Path> {
        let sm = self.info.sm;
        let refuse = |reason: String| Error::Unsupported { call, reason };
        match kernel {
            Kernel::Sm90 if sm != 90 => Err(refuse(format!(
                "with Kernel::Sm90 on this PE's device, an sm_{sm}: the sm90 kernel (TMA + \
                 wgmma, built for sm_90a) runs on sm_90 GPUs (H100, H200) only; use \
                 Kernel::Auto or Kernel::Sm80"
            ))),
            Kernel::Sm90 => Ok(Path::Sm90),
            Kernel::Auto if sm == 90 => Ok(Path::Sm90),
            Kernel::Sm80 | Kernel::Auto if sm >= 80 => Ok(Path::Sm80),
            Kernel::Sm80 | Kernel::Auto => Err(refuse(format!(
                "on this PE's device, an sm_{sm}: rshmem's GEMM kernels need sm_80 or later"
            ))),
        }
    }

    /// A persistent launch over `tiles`: one block per SM, fewer when there are fewer tiles.
    pub(crate) fn persistent(&self, tiles: u32, threads: u32, shared: u32) -> LaunchConfig {
        launch::persistent(self.info, tiles, threads, shared)
    }

    /// [`launch::persistent_waiting`] on this PE's device.
    pub(crate) fn persistent_waiting(&self, tiles: u32, threads: u32, shared: u32) -> LaunchConfig {
        launch::persistent_waiting(self.info, tiles, threads, shared)
    }

    /// The sm90 path as `plan` says: both operands through tensor maps from the table (with
    /// the boxes of the plan's tile), one persistent block per SM (fewer when there are fewer
    /// tiles); a split K through [`Ops::sm90_split`].
    fn sm90<In: GemmIn, Out: GemmOut<In>>(
        &self,
        stream: &Stream<'_>,
        a: DeviceRange<'_, In>,
        b: DeviceRange<'_, In>,
        c: DeviceRangeMut<'_, Out>,
        shape: GemmShape,
        plan: GemmPlan,
    ) -> Result<()> {
        let GemmShape { m, n, k, b_layout } = shape;
        let b_kn = b_layout == BLayout::KN;
        if plan.split > 1 {
            // Rows `..split_from` (full waves of tiles) unsplit, through the whole shape's
            // maps (those a capture of the call records: `plan_on`), then the rest split.
            let from = plan.split_from;
            let (c_head, c) = c.split_at(from as usize * n as usize);
            if from > 0 {
                let c_head = c_head.matrix_mut(from, n)?;
                self.sm90_tiled::<Tile256<In>, Out>(stream, a, b, c_head, (shape, from))?;
            }
            let (_, a) = a.split_at(from as usize * k as usize);
            let shape = GemmShape {
                m: m - from,
                ..shape
            };
            let m = shape.m;
            let problem = rshmem_gemm::Problem { m, n, k };
            let c = c.matrix_mut(m, n)?;
            let (map_a, map_b) = self.sm90_maps(CALL, stream, a, b, shape, 0)?;
            let maps = rshmem_gemm::Sm90Maps { a: map_a, b: map_b };
            // SAFETY: the maps describe `a` and `b` of `In` with the 128 x 256 boxes the split
            // kernels read (as the plain launch below); `c` holds m x n (the split rows); the
            // parts from `split_parts` or `split_k::parts` (within the workspace and the
            // k-steps).
            return unsafe {
                if b_kn {
                    self.sm90_split::<In, Out, true>(stream, maps, problem, plan.split, c)
                } else {
                    self.sm90_split::<In, Out, false>(stream, maps, problem, plan.split, c)
                }
            };
        }
        let c = c.matrix_mut(m, n)?;
        match plan.tile {
            GemmTile::N128 => self.sm90_tiled::<Tile128<In>, Out>(stream, a, b, c, (shape, m)),
            _ => self.sm90_tiled::<Tile256<In>, Out>(stream, a, b, c, (shape, m)),
        }
    }

    /// One plain launch of configuration `C`'s kernel over the first `rows` rows of `shape`
    /// (all of them but for a split tail's head), through the tensor maps of `shape`.
    fn sm90_tiled<C: Sm90Config, Out>(
        &self,
        stream: &Stream<'_>,
        a: DeviceRange<'_, C::In>,
        b: DeviceRange<'_, C::In>,
        c: rshmem_device::matrix::MatrixMut<Out>,
        (shape, rows): (GemmShape, u32),
    ) -> Result<()>
    where
        C::In: GemmIn,
        Out: GemmOut<C::In> + Gemm90<C::In, false, C> + Gemm90<C::In, true, C>,
    {
        let module = loaded(&self.gemm90, "sm90")?;
        let GemmShape { n, k, b_layout, .. } = shape;
        let boxes = launch::Boxes::of::<C>(b_layout);
        let (map_a, map_b) = self.sm90_maps_of(CALL, stream, a, b, shape, 0, boxes)?;
        let maps = rshmem_gemm::Sm90Maps { a: map_a, b: map_b };
        let problem = rshmem_gemm::Problem { m: rows, n, k };
        let config = self.persistent(C::tiles(problem), sm90::THREADS, C::SHARED_BYTES);
        let args = (maps, problem, c);
        // SAFETY: the launch shape is the kernel's (THREADS, its configuration's SHARED_BYTES,
        // 1-D, sm_90 checked by `path`); the maps in the slot describe `a` (m x k, of which
        // the kernel reads rows ..rows <= m) and `b` (n x k, or k x n with n a multiple of 8)
        // of `In` with `C`'s boxes, checked long enough, in global memory, and no slot is
        // rewritten before the PE's work is done (`MapTable::slot`); `c` holds rows x n
        // (checked by the caller's `matrix_mut`) with rows n apart. The buffers outlive
        // the kernel: dropping or host-copying them waits for the PE's work.
        unsafe {
            if b_layout == BLayout::KN {
                module.launch_on::<<Out as Gemm90<C::In, true, C>>::Kernel>(stream, config, args)
            } else {
                module.launch_on::<<Out as Gemm90<C::In, false, C>>::Kernel>(stream, config, args)
            }
        }
    }

    /// The tensor maps of `a` (m x k) and `b` (n x k, or k x n; `groups` of them stacked when
    /// `groups > 0`, a grouped GEMM's) as the default sm90 mainloop reads them: see
    /// [`Ops::sm90_maps_of`].
    pub(crate) fn sm90_maps<'a, In: GemmIn>(
        &self,
        call: &'static str,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        shape: GemmShape,
        groups: u32,
    ) -> Result<(*const DevTensorMap, *const DevTensorMap)> {
        let boxes = launch::Boxes::of::<sm90::Tile256<In>>(shape.b_layout);
        self.sm90_maps_of(call, stream, a, b, shape, groups, boxes)
    }

    /// The tensor maps of `a` (m x k) and `b` (n x k, or k x n; `groups` of them stacked when
    /// `groups > 0`, a grouped GEMM's) with the boxes of the configuration the kernel runs
    /// ([`launch::Boxes::of`]), from the table (filled on a miss: see [`maps`]; while `stream`
    /// records a graph, only a slot that already describes them, pinned for the graph's
    /// life); kernel arguments. `call` is the op the errors name.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sm90_maps_of<'a, In: TmaElem>(
        &self,
        call: &'static str,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        shape: GemmShape,
        groups: u32,
        boxes: launch::Boxes,
    ) -> Result<(*const DevTensorMap, *const DevTensorMap)> {
        let (a, b) = (a.into(), b.into());
        let GemmShape { m, n, k, b_layout } = shape;
        let b_kn = b_layout == BLayout::KN;
        let key = MapKey {
            a: a.as_ptr() as u64,
            b: b.as_ptr() as u64,
            m,
            n,
            k,
            elem: In::NAME,
            b_kn,
            groups,
            boxes,
        };
        let mut table = self.table();
        let slot = if stream.is_capturing() {
            // Recorded: the slot must describe the operands already, and stays theirs as long
            // as the graph lives.
            let slot = table.find(key).ok_or_else(|| Error::Capture {
                call,
                message: format!(
                    "the first GEMM on these operands (m {m}, n {n}, k {k}, {} in, B {:?}) fills \
                     a tensor-map slot from the host, which waits for the PE's work and cannot \
                     be recorded: run the call once on the same buffers and shape before the \
                     capture, then capture it",
                    In::NAME,
                    b_layout
                ),
            })?;
            stream.keep_with_graph(table.pin(slot))?;
            slot
        } else {
            table.slot(key, || {
                launch::encode_sm90(self.shmem, a, b, shape, groups, boxes)
            })?
        };
        Ok(table.kernel_ptrs(slot))
    }

    /// The sm80 path: plain pointers, B either layout, one persistent block per SM.
    fn sm80<In: GemmIn, Out: GemmOut<In>>(
        &self,
        stream: &Stream<'_>,
        a: DeviceRange<'_, In>,
        b: DeviceRange<'_, In>,
        c: DeviceRangeMut<'_, Out>,
        shape: GemmShape,
    ) -> Result<()> {
        use rshmem_gemm::sm80;
        let module = loaded(&self.gemm80, "sm80")?;
        let GemmShape { m, n, k, b_layout } = shape;
        let (b_rows, b_cols) = shape.b_dims();
        let problem = rshmem_gemm::Problem { m, n, k };
        let args = (
            a.matrix(m, k)?,
            b.matrix(b_rows, b_cols)?,
            problem,
            c.matrix_mut(m, n)?,
        );
        let config = self.persistent(sm80::tiles(problem), sm80::THREADS, sm80::SHARED_BYTES);
        // SAFETY: the launch shape is the kernel's (THREADS, SHARED_BYTES, 1-D, sm_80 or later
        // checked by `path`); `a` holds m x k, `b` n x k (or k x n) and `c` m x n, checked. The buffers outlive the kernel: dropping or host-copying them waits for
        // the PE's work.
        unsafe {
            match b_layout {
                BLayout::NK => {
                    module.launch_on::<<Out as Gemm80<In, false>>::Kernel>(stream, config, args)
                }
                BLayout::KN => {
                    module.launch_on::<<Out as Gemm80<In, true>>::Kernel>(stream, config, args)
                }
            }
        }
    }
}

/// The loaded image of a kernel family, or why there is none.
pub(crate) fn loaded<'m, 's>(
    module: &'m Option<Module<'s>>,
    which: &str,
) -> Result<&'m Module<'s>> {
    module.as_ref().ok_or_else(|| Error::Unsupported {
        call: CALL,
        reason: format!("with the {which} kernel: its image is not loaded on this device"),
    })
}
