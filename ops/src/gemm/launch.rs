//! Launching your own kernels on rshmem's GEMM mainloops ([`rshmem_gemm::sm90::gemm`],
//! [`rshmem_gemm::sm80::gemm`]) with your own schedule and epilogue: [`Sm90Launch`] and [`Sm80Launch`] give
//! such a kernel its launch configuration and, for sm90, its operands' tensor maps in the form
//! the kernel takes ([`Sm90Maps`]), so that no kernel crate copies the mainloops' constants
//! or writes a `TiledSpec`. [`Ops::gemm`](crate::Ops::gemm) launches its own kernels from the
//! same functions ([`sm90_maps`], [`persistent`]): one implementation.
//!
//! ```
//! use rshmem_device::bf16;
//! use rshmem_ops::{BLayout, GemmShape, Sm90Launch};
//! // rshmem's own sm90 kernel stands in for yours: sm90::gemm::<bf16, StoreC<f32>, false>.
//! type MyGemm = rshmem_ops_kernels::gemm90::gemm90_bf16_f32_nk;
//! rshmem_host::run(|shmem| -> rshmem_host::Result<()> {
//!     let module = shmem.load(&rshmem_ops::gemm::IMAGE90)?; // on an sm_90 GPU or the simulator
//!     let (m, n, k) = (130u32, 40u32, 64u32);
//!     let a = shmem.alloc_from(&vec![bf16::ONE; (m * k) as usize])?; // m x k
//!     let b = shmem.alloc_from(&vec![bf16::ONE; (n * k) as usize])?; // n x k
//!     // C: the left 40 columns of a 130 x 48 matrix (rows 48 apart), the rest untouched.
//!     let mut c = shmem.alloc_zeroed::<f32>((m * 48) as usize)?;
//!     let shape = GemmShape::new(m, n, k, BLayout::NK);
//!     let gemm = Sm90Launch::new(shmem, &a, &b, shape)?; // collective: it allocates the maps
//!     // SAFETY: MyGemm runs sm90::gemm (B N x K) on these maps with this config, and stores
//!     // m x n f32 into its view of c.
//!     unsafe {
//!         let c = c.matrix_mut_ld(m, n, 48)?;
//!         module.launch::<MyGemm>(gemm.config(), (gemm.maps(), gemm.problem(), c))?
//!     };
//!     let c = c.to_vec()?;
//!     assert!(c.chunks(48).all(|row| row[..40].iter().all(|&x| x == k as f32)));
//!     assert!(c.chunks(48).all(|row| row[40..].iter().all(|&x| x == 0.0)));
//!     Ok(())
//! })
//! .unwrap();
//! ```

use super::elem::{GemmIn, TmaElem};
use super::shape::Starts;
use super::shape::{BLayout, GemmShape};
use rshmem_device::matrix::Matrix;
use rshmem_gemm::sm90::Sm90Config;
use rshmem_gemm::{sm80, sm90, Problem, Sm90Maps};
use rshmem_host::{
    DeviceInfo, DeviceRange, Error, GpuSharing, LaunchConfig, Result, Shmem, Swizzle, SymBuffer,
    SymRange, SymRangeMut, TensorMap, TiledSpec,
};

/// A persistent launch over `tiles`: one block per multiprocessor of `info`, fewer when there
/// are fewer tiles (every block then holds one; the mainloops walk the rest).
pub fn persistent(info: DeviceInfo, tiles: u32, threads: u32, shared: u32) -> LaunchConfig {
    let blocks = tiles.min(info.multiprocessors.max(1));
    LaunchConfig::new(blocks, threads).shared_mem(shared)
}

/// [`persistent`] for a GEMM that runs beside work it waits for or that waits for it: the
/// fused ops' GEMMs, with the chunks NVSHMEM's on-stream transfers deliver (the all-gather,
/// `Stream::put_signal`), the other PEs' partials (the reduce-scatter), and one-block waits
/// (`ag_wait`, `rs_wait`). Where the GPU is shared that work needs SMs of the same GPU, so
/// the grid leaves one multiprocessor in eight (at least one) free. Measured under MPS (an
/// H100 and an H200, 2026-12-06): with the whole share, both fused GEMMs hung at 4096³ with 2
/// PEs, waiting in their tiles; waiting outside the GEMM ([`crate::Waits`]), the one waiting
/// block of another kernel held back one block of the persistent grid until the others had
/// finished (the 8192³ all-gather took 8.4 ms against 3.9 ms). Leaving SMs free is not enough
/// for tiles that wait under MPS: with 4 PEs (28 of 32 SMs each) the reduce-scatter still
/// hung, which is why shared GPUs wait outside the GEMM.
pub fn persistent_waiting(info: DeviceInfo, tiles: u32, threads: u32, shared: u32) -> LaunchConfig {
    let free = match info.sharing {
        GpuSharing::Exclusive => 0,
        GpuSharing::Mps | GpuSharing::TimeSliced => (info.multiprocessors / 8).max(1),
    };
    let sms = info.multiprocessors.saturating_sub(free);
    persistent(
        DeviceInfo {
            multiprocessors: sms,
            ..info
        },
        tiles,
        threads,
        shared,
    )
}

/// The tensor maps of `a` (m x k) and `b` (n x k, or k x n) as [`sm90::gemm`] reads them
/// (boxes [`sm90::A_BOX`] and [`sm90::B_BOX_NK`] / [`sm90::B_BOX_KN`], 128-byte swizzle):
/// A's, then B's. Encoded on the host; the kernel reads them from global memory. `a` and `b`
/// are buffers or ranges of them (the matrices start at their first elements, 16-byte
/// aligned).
pub fn sm90_maps<'a, In: GemmIn>(
    shmem: &Shmem,
    a: impl Into<SymRange<'a, In>>,
    b: impl Into<SymRange<'a, In>>,
    shape: GemmShape,
) -> Result<[TensorMap; 2]> {
    let boxes = Boxes::of::<sm90::Tile256<In>>(shape.b_layout);
    encode_sm90(shmem, a.into(), b.into(), shape, 0, boxes)
}

/// The boxes of an sm90 configuration's maps: A's, and B's in its layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Boxes {
    pub a: [u32; 2],
    pub b: [u32; 2],
}

impl Boxes {
    /// Configuration `C`'s boxes, B laid out as `b_layout`.
    pub(crate) fn of<C: Sm90Config>(b_layout: BLayout) -> Self {
        Self {
            a: C::A_BOX,
            b: match b_layout {
                BLayout::NK => C::B_BOX_NK,
                BLayout::KN => C::B_BOX_KN,
            },
        }
    }
}

/// The maps of `a` and `b` with `boxes` (a configuration's, [`Boxes::of`]), or with
/// `groups > 0` those of a grouped GEMM: `b` then holds `groups` matrices B stacked, and its
/// map is 3-D (the groups outermost, boxes one group deep), so that each group's edges
/// zero-fill as a plain B's do.
pub(crate) fn encode_sm90<'a, In: TmaElem>(
    shmem: &Shmem,
    a: impl Into<DeviceRange<'a, In>>,
    b: impl Into<DeviceRange<'a, In>>,
    shape: GemmShape,
    groups: u32,
    boxes: Boxes,
) -> Result<[TensorMap; 2]> {
    let (a, b) = (a.into(), b.into());
    let GemmShape { m, k, .. } = shape;
    let size = size_of::<In>() as u64;
    // A row-major `rows x cols` matrix (`layers` of them, one after the other, where 3-D),
    // boxes as the kernel reads them.
    let encode = |buf: DeviceRange<'_, In>, rows: u32, cols: u32, layers: u32, box_2d: [u32; 2]| {
        let (cols, rows) = (u64::from(cols), u64::from(rows));
        let (dims, strides, box_dims) = if layers == 0 {
            (vec![cols, rows], vec![cols * size], box_2d.to_vec())
        } else {
            let d = vec![cols, rows, u64::from(layers)];
            (
                d,
                vec![cols * size, rows * cols * size],
                vec![box_2d[0], box_2d[1], 1],
            )
        };
        TensorMap::tiled(
            shmem,
            &TiledSpec {
                ty: In::TMA,
                global: buf.as_ptr().cast(),
                dims: &dims,
                strides: &strides,
                box_dims: &box_dims,
                swizzle: Swizzle::B128,
            },
        )
    };
    let (b_rows, b_cols) = shape.b_dims();
    let map_b = encode(b, b_rows, b_cols, groups, boxes.b)?;
    Ok([encode(a, m, k, 0, boxes.a)?, map_b])
}

/// What a kernel on [`sm90::gemm`] needs from the host: its launch configuration and its
/// operands' tensor maps, kept in a symmetric buffer of their own for as long as this value
/// lives (dropping it waits for the PE's launched work, as dropping any buffer does).
///
/// The kernel must instantiate the mainloop with the layout of B given here:
/// `sm90::gemm::<In, _, false>` for [`BLayout::NK`], `<In, _, true>` for [`BLayout::KN`].
pub struct Sm90Launch<'s> {
    maps: SymBuffer<'s, TensorMap>,
    config: LaunchConfig,
    problem: Problem,
}

impl<'s> Sm90Launch<'s> {
    /// Checks `shape` against `a` and `b` (buffers or ranges of them, as
    /// [`GemmShape::check`] and [`Ops::gemm`](crate::Ops::gemm) do), encodes their maps and
    /// copies them into a new symmetric buffer. Collective, like every allocation: every PE
    /// calls it, in the same order relative to its other allocations.
    ///
    /// Errors: a shape `Ops::gemm` would refuse, a buffer shorter than it, an operand that
    /// starts misaligned; a device that is not sm_90 (the mainloop is `wgmma` + TMA, built for
    /// sm_90a; use [`Sm80Launch`]).
    pub fn new<'a, In: GemmIn>(
        shmem: &'s Shmem,
        a: impl Into<SymRange<'a, In>>,
        b: impl Into<SymRange<'a, In>>,
        shape: GemmShape,
    ) -> Result<Self> {
        let (a, b) = (a.into(), b.into());
        const CALL: &str = "Sm90Launch::new";
        let info = shmem.device_info();
        if info.sm != 90 {
            return Err(Error::Unsupported {
                call: CALL,
                reason: format!(
                    "on this PE's device, an sm_{}: the sm90 mainloop (TMA + wgmma, built for \
                     sm_90a) runs on sm_90 GPUs (H100, H200) only; use Sm80Launch",
                    info.sm
                ),
            });
        }
        check(CALL, shape, &a, &b)?;
        let maps = shmem.alloc_from(&sm90_maps(shmem, a, b, shape)?)?;
        let problem = problem(shape);
        let config = persistent(
            info,
            sm90::tiles(problem),
            sm90::THREADS,
            sm90::SHARED_BYTES,
        );
        Ok(Self {
            maps,
            config,
            problem,
        })
    }

    /// The launch: `min(tiles, multiprocessors)` persistent blocks of [`sm90::THREADS`]
    /// threads with [`sm90::SHARED_BYTES`] of dynamic shared memory. Add
    /// [`LaunchConfig::cooperative`] when the schedule or epilogue waits for other blocks or PEs.
    pub fn config(&self) -> LaunchConfig {
        self.config
    }

    /// The maps, as the kernel argument [`sm90::gemm`]'s caller passes on (`maps.a`,
    /// `maps.b`); valid while this value lives.
    pub fn maps(&self) -> Sm90Maps {
        let base = TensorMap::kernel_ptr(&self.maps);
        Sm90Maps {
            a: base,
            // Device addresses: an offset only, never dereferenced here.
            b: base.wrapping_add(1),
        }
    }

    /// The shape as the mainloop takes it (a kernel argument).
    pub fn problem(&self) -> Problem {
        self.problem
    }

    /// Tiles of C ([`sm90::BM`] x [`sm90::BN`] each): what per-tile flags are counted in.
    pub fn tiles(&self) -> u32 {
        sm90::tiles(self.problem)
    }
}

/// What a kernel on [`sm80::gemm`] needs from the host: its launch configuration and its
/// operands as the mainloop takes them ([`Matrix`] views of A, m x k, and B, n x k or k x n;
/// device addresses of the buffers `new` was given, valid while they live).
#[derive(Clone, Copy, Debug)]
pub struct Sm80Launch<In> {
    config: LaunchConfig,
    problem: Problem,
    a: Matrix<In>,
    b: Matrix<In>,
}

impl<In: GemmIn> Sm80Launch<In> {
    /// Checks `shape` against `a` and `b` (buffers or ranges of them, as [`Sm90Launch::new`]
    /// does). Errors: a shape `Ops::gemm` would refuse, a buffer shorter than it, an operand
    /// that starts misaligned; a device older than sm_80.
    pub fn new<'a>(
        shmem: &Shmem,
        a: impl Into<SymRange<'a, In>>,
        b: impl Into<SymRange<'a, In>>,
        shape: GemmShape,
    ) -> Result<Self> {
        let (a, b) = (a.into(), b.into());
        const CALL: &str = "Sm80Launch::new";
        let info = shmem.device_info();
        if info.sm < 80 {
            return Err(Error::Unsupported {
                call: CALL,
                reason: format!(
                    "on this PE's device, an sm_{}: the sm80 mainloop (cp.async + mma.sync) \
                     needs sm_80 or later",
                    info.sm
                ),
            });
        }
        check(CALL, shape, &a, &b)?;
        let problem = problem(shape);
        let (b_rows, b_cols) = shape.b_dims();
        Ok(Self {
            config: persistent(
                info,
                sm80::tiles(problem),
                sm80::THREADS,
                sm80::SHARED_BYTES,
            ),
            problem,
            a: a.matrix(shape.m, shape.k)?.as_matrix(),
            b: b.matrix(b_rows, b_cols)?.as_matrix(),
        })
    }

    /// The launch: `min(tiles, multiprocessors)` persistent blocks of [`sm80::THREADS`]
    /// threads with [`sm80::SHARED_BYTES`] of dynamic shared memory.
    pub fn config(&self) -> LaunchConfig {
        self.config
    }

    /// The shape as the mainloop takes it (a kernel argument).
    pub fn problem(&self) -> Problem {
        self.problem
    }

    /// Tiles of C ([`sm80::BM`] x [`sm80::BN`] each): what per-tile flags are counted in.
    pub fn tiles(&self) -> u32 {
        sm80::tiles(self.problem)
    }

    /// A (m x k, dense), a kernel argument.
    pub fn a(&self) -> Matrix<In> {
        self.a
    }

    /// B (n x k, or k x n, dense), a kernel argument.
    pub fn b(&self) -> Matrix<In> {
        self.b
    }
}

/// The shape's checks against the operands alone (C is the kernel's own business).
fn check<In: GemmIn>(
    call: &'static str,
    shape: GemmShape,
    a: &SymRange<'_, In>,
    b: &SymRange<'_, In>,
) -> Result<()> {
    shape.check_in(call, a.len(), b.len(), (0, 0, "no C"))?;
    Starts::of::<In, In>(a, b, None::<&SymRangeMut<'_, In>>).check(call)
}

/// The mainloops' form of a shape.
fn problem(shape: GemmShape) -> Problem {
    Problem {
        m: shape.m,
        n: shape.n,
        k: shape.k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_gpu_leaves_multiprocessors_to_the_transfers() {
        let info = |multiprocessors, sharing| DeviceInfo {
            sm: 90,
            multiprocessors,
            sharing,
        };
        let blocks = |i, tiles| persistent_waiting(i, tiles, 384, 0).grid.0;
        // A GPU of its own: one block per SM, as `persistent`.
        assert_eq!(blocks(info(132, GpuSharing::Exclusive), 512), 132);
        // Shared: one SM in eight left free (the 2-PE share of an H100 is 66), at least one.
        assert_eq!(blocks(info(66, GpuSharing::Mps), 512), 58);
        assert_eq!(blocks(info(33, GpuSharing::Mps), 512), 29);
        assert_eq!(blocks(info(4, GpuSharing::TimeSliced), 512), 3);
        assert_eq!(blocks(info(1, GpuSharing::Mps), 512), 1);
        // Fewer tiles than SMs: one block per tile, as before.
        assert_eq!(blocks(info(66, GpuSharing::Mps), 16), 16);
    }
}
