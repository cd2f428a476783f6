//! The grouped GEMM ([`Ops::grouped_gemm`]): `G` GEMMs sharing N and K — a mixture-of-experts
//! layer's experts — in one persistent launch over every group's tiles. Group `g` multiplies
//! its rows of A by its own B (the `g`-th of `G` stacked: `G x n x k` or `G x k x n`) into the
//! same rows of C. Which rows are whose is a device buffer ([`GroupRows`]), so the sizes a
//! dispatch kernel wrote are used without a host round trip, and the call can be recorded
//! into a graph.
//!
//! ```no_run
//! use rshmem_device::bf16;
//! use rshmem_ops::{BLayout, GroupRows, GroupedShape, Ops};
//! # fn f(shmem: &rshmem_host::Shmem) -> rshmem_host::Result<()> {
//! let ops = Ops::new(shmem)?;
//! let (groups, n, k) = (4u32, 256u32, 512u32);
//! // Rows 0..100 are group 0's, 100..100 group 1's (none), 100..300 group 2's, 300..310 group 3's.
//! let ends = shmem.alloc_from(&[100u32, 100, 300, 310])?;
//! let m = 310;
//! let a = shmem.alloc_from(&vec![bf16::ONE; (m * k) as usize])?; // m x k
//! let b = shmem.alloc_from(&vec![bf16::ONE; (groups * n * k) as usize])?; // groups x n x k
//! let mut c = shmem.alloc_zeroed::<bf16>((m * n) as usize)?;
//! let shape = GroupedShape { groups, n, k, b_layout: BLayout::NK };
//! let rows = GroupRows::Offsets { ends: (&ends).into(), m };
//! ops.grouped_gemm(&shmem.stream(), &a, &b, &mut c, shape, rows)?;
//! # Ok(()) }
//! ```

use super::elem::{GemmIn, GemmOut};
use super::launch::Boxes;
use super::plan::{self, choose_tile_by, GemmPlan, GemmTile, TileModel};
use super::shape::{BLayout, GemmOptions, GemmShape, Kernel, Starts};
use super::{loaded, Path};
use crate::Ops;
use rshmem_gemm::sm90::{Sm90Config, Tile128, Tile256, BM};
use rshmem_gemm::{sm80, sm90, Problem, Sm90Maps};
use rshmem_host::{DeviceRange, DeviceRangeMut, Error, Pod, Result, Stream};
use rshmem_ops_kernels::gemm80::Gemm80;
use rshmem_ops_kernels::gemm90::Gemm90;

/// The call grouped-GEMM errors name.
const CALL: &str = "Ops::grouped_gemm";

/// What a grouped GEMM computes: `groups` GEMMs `C_g = A_g · B_g` sharing `n` and `k`, B laid
/// out as `b_layout` (each group's the same way). The rows per group are a [`GroupRows`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupedShape {
    /// Groups, `G` (> 0).
    pub groups: u32,
    /// Columns of C (rows of each B for [`BLayout::NK`]).
    pub n: u32,
    /// The reduction; a multiple of 8.
    pub k: u32,
    /// Each group's B: `n x k` (NK) or `k x n` (KN), the groups' one after the other.
    pub b_layout: BLayout,
}

impl GroupedShape {
    /// Elements B needs: `groups x n x k`.
    pub const fn b_len(&self) -> usize {
        self.groups as usize * self.n as usize * self.k as usize
    }

    /// The plain shape of one GEMM over all `m` rows (what A and C hold).
    pub const fn rows(&self, m: u32) -> GemmShape {
        GemmShape::new(m, self.n, self.k, self.b_layout)
    }
}

/// Which rows of A and C each group has: `G` u32s in a device buffer (written by the host or
/// by a kernel earlier on the stream), read by the GEMM as it walks the tiles.
///
/// Sizes that do not fit are clamped on the device, never followed (an end before an earlier
/// one or past `m`, a count above `max_m`): such a group gets the rows that fit. Rows of C
/// in no group are not written.
#[derive(Clone, Copy, Debug)]
pub enum GroupRows<'a> {
    /// Rows contiguous per group, as `torch._grouped_mm`'s `offs`: group `g`'s rows are
    /// `ends[g - 1] .. ends[g]` (group 0's from row 0) of A's and C's `m` rows.
    Offsets {
        /// The cumulative ends, one per group.
        ends: DeviceRange<'a, u32>,
        /// Rows of A and C.
        m: u32,
    },
    /// `G x max_m` rows, group `g`'s from row `g x max_m`, of which the first `counts[g]` are
    /// computed (a low-latency MoE dispatch's layout: `MoeLlBuffers`' counts).
    Masked {
        /// Rows per group, one count per group.
        counts: DeviceRange<'a, u32>,
        /// Rows each group has room for (> 0).
        max_m: u32,
    },
}

impl GroupRows<'_> {
    /// Rows of A and C: `m`, or `groups x max_m`.
    fn m(&self, groups: u32) -> Result<u32> {
        match *self {
            GroupRows::Offsets { m, .. } => Ok(m),
            GroupRows::Masked { max_m, .. } => groups.checked_mul(max_m).ok_or_else(|| {
                bad(format!(
                    "groups x max_m = {groups} x {max_m} rows does not fit in 32 bits"
                ))
            }),
        }
    }

    /// The sizes buffer, and the kernels' `masked_rows`.
    fn sizes(&self) -> (&DeviceRange<'_, u32>, u32) {
        match self {
            GroupRows::Offsets { ends, .. } => (ends, 0),
            GroupRows::Masked { counts, max_m } => (counts, *max_m),
        }
    }

    /// The kernel argument.
    fn kernel_arg(&self, groups: u32) -> rshmem_gemm::GroupRows {
        let (sizes, masked_rows) = self.sizes();
        rshmem_gemm::GroupRows {
            sizes: sizes.as_ptr(),
            groups,
            masked_rows,
        }
    }
}

fn bad(message: String) -> Error {
    Error::InvalidArgument {
        call: CALL,
        message,
    }
}

/// The most tiles `groups` groups of `m` rows in all can make on tiles of `bm x bn`, which
/// a persistent launch needs no more blocks than: offsets (`masked_rows` 0), where every group
/// can end in a ragged tile, `ceil(m / bm) + G - 1` along M; masked, `G x
/// ceil(masked_rows / bm)`.
pub(crate) fn tiles_bound(
    masked_rows: u32,
    groups: u32,
    m: u32,
    n: u32,
    (bm, bn): (u32, u32),
) -> u32 {
    let along_m = match masked_rows {
        0 => m.div_ceil(bm).saturating_add(groups - 1),
        rows => groups.saturating_mul(rows.div_ceil(bm)),
    };
    along_m.saturating_mul(n.div_ceil(bn)).max(1)
}

impl<'s> Ops<'s> {
    /// The checks of a grouped GEMM's operands common to every element type (`call` names the
    /// op): the sizes' layout, B's `groups` matrices, A's and C's `m` rows, the sizes buffer,
    /// the operands' starts. The rows `m` and the kernel argument, or `None` when there are no
    /// rows (nothing to launch).
    pub(crate) fn grouped_checks<In: Pod, Out: Pod>(
        &self,
        call: &'static str,
        a: &DeviceRange<'_, In>,
        b: &DeviceRange<'_, In>,
        c: &DeviceRangeMut<'_, Out>,
        shape: GroupedShape,
        rows: &GroupRows<'_>,
    ) -> Result<Option<(u32, rshmem_gemm::GroupRows)>> {
        let bad = |message: String| Error::InvalidArgument { call, message };
        let GroupedShape { groups, n, k, .. } = shape;
        if groups == 0 {
            return Err(bad("groups must be > 0".into()));
        }
        if let GroupRows::Masked { max_m: 0, .. } = rows {
            return Err(bad(
                "max_m = 0 in GroupRows::Masked: each group needs room for at least one row".into(),
            ));
        }
        let m = rows.m(groups).map_err(|e| match e {
            Error::InvalidArgument { message, .. } => bad(message),
            e => e,
        })?;
        if b.len() < shape.b_len() {
            let (r, cols) = shape.rows(m).b_dims();
            return Err(bad(format!(
                "`b` has {} elements, but groups x {} = {groups} x {r} x {cols} = {} are \
                 needed (n {n}, k {k}, B {:?})",
                b.len(),
                match shape.b_layout {
                    BLayout::NK => "n x k",
                    BLayout::KN => "k x n",
                },
                shape.b_len(),
                shape.b_layout
            )));
        }
        let (sizes, _) = rows.sizes();
        if sizes.len() < groups as usize {
            return Err(bad(format!(
                "the group sizes have {} elements, but {groups} (one per group) are needed",
                sizes.len()
            )));
        }
        // B's length is checked above, per group; no rows (every group empty) need nothing of
        // A and C, and nothing is launched.
        let (a_len, c_len) = if m == 0 {
            (usize::MAX, usize::MAX)
        } else {
            (a.len(), c.len())
        };
        shape
            .rows(m.max(1))
            .check_in(call, a_len, usize::MAX, (c_len, m.max(1), "m x n"))?;
        Starts::of(a, b, Some(c)).check(call)?;
        Ok((m > 0).then(|| (m, rows.kernel_arg(groups))))
    }

    /// The grouped GEMM with [`Kernel::Auto`](super::shape::Kernel::Auto): see
    /// [`Ops::grouped_gemm_with`].
    pub fn grouped_gemm<'a, In: GemmIn, Out: GemmOut<In>>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: impl Into<DeviceRangeMut<'a, Out>>,
        shape: GroupedShape,
        rows: GroupRows<'a>,
    ) -> Result<()> {
        self.grouped_gemm_with(stream, a, b, c, shape, rows, GemmOptions::default())
    }

    /// `shape.groups` GEMMs in one launch, queued on `stream`: for each group `g`, its rows of
    /// A (m x k, as `rows` says) times its B (the `g`-th `n x k`, or `k x n`, matrix of `b`)
    /// into the same rows of C (m x n); f32 accumulation, as [`Ops::gemm_with`]. One
    /// persistent launch walks every group's tiles (`ceil(rows / 128)` along M each, none for
    /// an empty group); rows of C in no group are not written.
    ///
    /// Errors (nothing is launched): zero groups, a zero `n` or `k`, `k` not a multiple of 8
    /// (or `n`, with [`BLayout::KN`]); a buffer shorter than the shape (A and C `m` rows, B
    /// `groups` matrices, the sizes `groups` values); a zero `max_m`; an operand that starts
    /// misaligned (as [`Ops::gemm_with`]); [`Kernel::Sm90`](super::shape::Kernel::Sm90) on
    /// a device that is not sm_90. Sizes are the device's business: see [`GroupRows`]. On the
    /// sm90 path, the first call on new operands fills a tensor-map slot as [`Ops::gemm`]
    /// does (and a graph capture needs a slot that describes them already).
    #[allow(clippy::too_many_arguments)]
    pub fn grouped_gemm_with<'a, In: GemmIn, Out: GemmOut<In>>(
        &self,
        stream: &Stream<'_>,
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: impl Into<DeviceRangeMut<'a, Out>>,
        shape: GroupedShape,
        rows: GroupRows<'a>,
        options: GemmOptions,
    ) -> Result<()> {
        let (a, b, c) = (a.into(), b.into(), c.into());
        let Some((m, arg)) = self.grouped_checks(CALL, &a, &b, &c, shape, &rows)? else {
            return Ok(());
        };
        let GroupedShape { groups, n, k, .. } = shape;
        let plan = self.grouped_plan_of(shape, m, arg.masked_rows, options)?;
        match (plan.kernel, plan.tile) {
            (Kernel::Sm90, GemmTile::N128) => {
                self.grouped_sm90::<Tile128<In>, Out>(stream, (a, b, c), shape, m, arg)
            }
            (Kernel::Sm90, _) => {
                self.grouped_sm90::<Tile256<In>, Out>(stream, (a, b, c), shape, m, arg)
            }
            _ => {
                let module = loaded(&self.gemm80, "sm80")?;
                let (b_rows, b_cols) = shape.rows(m).b_dims();
                let tiles = tiles_bound(arg.masked_rows, groups, m, n, (sm80::BM, sm80::BN));
                let config = self.persistent(tiles, sm80::THREADS, sm80::SHARED_BYTES);
                let args = (
                    a.matrix(m, k)?,
                    b.matrix(groups * b_rows, b_cols)?,
                    Problem { m, n, k },
                    arg,
                    c.matrix_mut(m, n)?,
                );
                // SAFETY: the launch shape is the kernel's (THREADS, SHARED_BYTES, 1-D, sm_80
                // or later checked by `path_for`); `a` holds m x k, `b` groups matrices of
                // n x k (or k x n), `c` m x n, `sizes` groups u32s: all checked. The buffers
                // outlive the kernel: dropping or host-copying them waits for the PE's work.
                unsafe {
                    match shape.b_layout {
                        BLayout::NK => module
                            .launch_on::<<Out as Gemm80<In, false>>::Grouped>(stream, config, args),
                        BLayout::KN => module
                            .launch_on::<<Out as Gemm80<In, true>>::Grouped>(stream, config, args),
                    }
                }
            }
        }
    }

    /// What [`Ops::grouped_gemm_with`] runs for `shape` and `rows` with `options` on this
    /// PE's device: the kernel and the tile configuration (never split). Under
    /// [`GemmTile::Auto`] the cost model ([`super::plan`]) weighs the most tiles the sizes can
    /// make (the sizes are device data: offsets `⌈m / 128⌉ + G - 1` tiles along M, masked `G x
    /// ⌈max_m / 128⌉`).
    pub fn grouped_gemm_plan(
        &self,
        shape: GroupedShape,
        rows: &GroupRows<'_>,
        options: GemmOptions,
    ) -> Result<GemmPlan> {
        let m = rows.m(shape.groups.max(1))?;
        let (_, masked_rows) = rows.sizes();
        self.grouped_plan_of(shape, m, masked_rows, options)
    }

    /// [`Ops::grouped_gemm_plan`] for `m` rows (`masked_rows` of the kernel argument).
    fn grouped_plan_of(
        &self,
        shape: GroupedShape,
        m: u32,
        masked_rows: u32,
        options: GemmOptions,
    ) -> Result<GemmPlan> {
        let GroupedShape { groups, n, k, .. } = shape;
        let plan = |kernel, tile| GemmPlan {
            kernel,
            tile,
            split: 1,
            split_from: 0,
        };
        match (self.path_for(CALL, options.kernel)?, options.tile) {
            (Path::Sm80, tile) => {
                plan::sm80_plan(tile).map_err(|reason| Error::Unsupported { call: CALL, reason })
            }
            (Path::Sm90, GemmTile::Auto) => {
                let sms = self.info.multiprocessors;
                let bound = |model: &TileModel| {
                    let bn = model.tile.bn();
                    u64::from(tiles_bound(masked_rows, groups.max(1), m, n, (BM, bn)))
                };
                Ok(plan(Kernel::Sm90, choose_tile_by(sms, k, bound)))
            }
            (Path::Sm90, tile) => Ok(plan(Kernel::Sm90, tile)),
        }
    }

    /// The grouped GEMM on configuration `C`'s kernel: A 2-D, B's `groups` matrices a 3-D
    /// map, one persistent block per SM (fewer when the sizes can make fewer tiles).
    fn grouped_sm90<C: Sm90Config, Out>(
        &self,
        stream: &Stream<'_>,
        (a, b, c): (
            DeviceRange<'_, C::In>,
            DeviceRange<'_, C::In>,
            DeviceRangeMut<'_, Out>,
        ),
        shape: GroupedShape,
        m: u32,
        arg: rshmem_gemm::GroupRows,
    ) -> Result<()>
    where
        C::In: GemmIn,
        Out: GemmOut<C::In> + Gemm90<C::In, false, C> + Gemm90<C::In, true, C>,
    {
        let GroupedShape { groups, n, k, .. } = shape;
        let module = loaded(&self.gemm90, "sm90")?;
        let boxes = Boxes::of::<C>(shape.b_layout);
        let (map_a, map_b) = self.sm90_maps_of(CALL, stream, a, b, shape.rows(m), groups, boxes)?;
        let tiles = tiles_bound(arg.masked_rows, groups, m, n, (BM, C::BN));
        let config = self.persistent(tiles, sm90::THREADS, C::SHARED_BYTES);
        let maps = Sm90Maps { a: map_a, b: map_b };
        let args = (maps, Problem { m, n, k }, arg, c.matrix_mut(m, n)?);
        // SAFETY: the launch shape is the kernel's (THREADS, its configuration's SHARED_BYTES,
        // 1-D, sm_90 checked by `path_for`); the slot's maps describe `a` (m x k) and `b`
        // (groups matrices, 3-D) of `In` with `C`'s boxes, checked long enough, and stay until
        // the PE's work is done (`MapTable::slot`); `sizes` holds `groups` u32s (checked) in
        // global memory; `c` holds m x n. Dropping or host-copying any of the buffers waits
        // for the PE's work.
        unsafe {
            if shape.b_layout == BLayout::KN {
                module.launch_on::<<Out as Gemm90<C::In, true, C>>::Grouped>(stream, config, args)
            } else {
                module.launch_on::<<Out as Gemm90<C::In, false, C>>::Grouped>(stream, config, args)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_covers_every_tile_the_sizes_can_make() {
        // Offsets: 3 groups over 300 rows can make ceil(300/128) + 2 = 5 tiles along M.
        assert_eq!(tiles_bound(0, 3, 300, 512, (128, 256)), 5 * 2);
        // Masked: 4 groups of room for 130 rows: 2 tiles each.
        assert_eq!(tiles_bound(130, 4, 520, 100, (128, 128)), 8);
        // No rows: one block, which finds nothing to do.
        assert_eq!(tiles_bound(0, 1, 0, 8, (128, 128)), 1);
    }
}
