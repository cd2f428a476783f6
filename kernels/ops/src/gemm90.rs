//! The sm_90a GEMMs: [`rshmem_gemm::sm90::gemm_with`] with the plain epilogue
//! ([`rshmem_gemm::StoreC`]) for each input and output type and both layouts of B, each
//! twice: with the plain schedule ([`rshmem_gemm::GroupM`]: `gemm90_*`) and the grouped one
//! ([`rshmem_gemm::Grouped`]: `grouped90_*`, B one matrix per group and a 3-D map); each on
//! 128 x 256 tiles ([`sm90::Tile256`]) and on 128 x 128 ones ([`sm90::Tile128`]: `*_n128`),
//! which `rshmem::ops` picks between per shape. Launch each with 1-D blocks of
//! [`sm90::THREADS`], its configuration's shared memory (`SHARED_BYTES`) and at most one
//! block per SM (the grid walks all tiles; `rshmem::ops` launches one block per SM).
//!
//! Split-K ([`rshmem_gemm::split_k`]), for problems of too few tiles: `splitk90_*` computes
//! the parts of K into an f32 workspace (per input type and layout), `splitk_reduce_*` adds
//! them into C (per output type; any 1-D launch).
//!
//! FP8 (e4m3, e5m2; B N x K: `wgmma` has no transposed 8-bit operands), f32 or bf16 out, in
//! two scalings ([`Fp8Gemm90`]): `gemm90_{e4m3,e5m2}_{bf16,f32}_tensor` (one f32 scale per
//! operand in device memory, applied by the epilogue, [`rshmem_gemm::Scaled`]; 128 x 256
//! tiles accumulated in the tensor cores), `gemm90_*_block` (DeepSeek-V3's block scales,
//! promoted per 128 of K: [`sm90::BlockScaled`] on 128 x 128 tiles), `grouped90_*_block`
//! (the same per group, each group's B with its own scales), `grouped90_*_tensor` (per tensor,
//! each group's B with its own scale); and split-K for both scalings
//! ([`Fp8SplitK90`]: `splitk90_{e4m3,e5m2}_{tensor,block}`, the parts of K into the same f32
//! workspace, already scaled, which `splitk_reduce_*` adds up).
//!
//! On the host, [`Gemm90`] names the kernels of each (input, output, layout):
//!
//! ```
//! use rshmem_device::{bf16, Kernel};
//! use rshmem_ops_kernels::gemm90::{Gemm90, SplitK90};
//! assert_eq!(<<f32 as Gemm90<bf16, false>>::Kernel as Kernel>::NAME, "gemm90_bf16_f32_nk");
//! assert_eq!(<<f32 as Gemm90<bf16, true>>::Grouped as Kernel>::NAME, "grouped90_bf16_f32_kn");
//! type N128 = rshmem_gemm::sm90::Tile128<bf16>;
//! assert_eq!(<<f32 as Gemm90<bf16, false, N128>>::Kernel as Kernel>::NAME, "gemm90_bf16_f32_nk_n128");
//! assert_eq!(<<bf16 as SplitK90<true>>::Kernel as Kernel>::NAME, "splitk90_bf16_kn");
//! use rshmem_device::E4m3;
//! use rshmem_ops_kernels::gemm90::Fp8Gemm90;
//! assert_eq!(<<bf16 as Fp8Gemm90<E4m3>>::Block as Kernel>::NAME, "gemm90_e4m3_bf16_block");
//! ```

use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16, E4m3, E5m2};
pub use rshmem_gemm::sm90;
use rshmem_gemm::sm90::{BlockScaled, BlockScales, Fp8Tile128, Fp8Tile256, InTensorCore};
use rshmem_gemm::{
    split_k, GroupM, GroupRows, Grouped, Problem, Scaled, Sm90Maps, SplitK, StoreC, StorePartial,
};

/// The arguments of the plain kernels: `(maps, problem, c)`.
pub type Args<Out> = (Sm90Maps, Problem, MatrixMut<Out>);

/// The arguments of the grouped kernels: `(maps, problem, rows, c)` (`problem.m` all rows).
pub type GroupedArgs<Out> = (Sm90Maps, Problem, GroupRows, MatrixMut<Out>);

/// The arguments of the split-K kernels: `(maps, problem, splits, partials)`.
pub type SplitArgs = (Sm90Maps, Problem, u32, MatrixMut<f32>);

/// The arguments of the FP8 split-K kernels with per-tensor scales: `(maps, problem, splits,
/// scale_a, scale_b, partials)`.
pub type Fp8SplitTensorArgs = (
    Sm90Maps,
    Problem,
    u32,
    *const f32,
    *const f32,
    MatrixMut<f32>,
);

/// The arguments of the FP8 split-K kernels with block scales: `(maps, problem, splits,
/// scales, partials)`.
pub type Fp8SplitBlockArgs = (Sm90Maps, Problem, u32, BlockScales, MatrixMut<f32>);

/// The arguments of the split-K reductions: `(partials, splits, m, n, c)`.
pub type ReduceArgs<Out> = (Matrix<f32>, u32, u32, u32, MatrixMut<Out>);

/// The sm_90a GEMMs computing `Self` (C's element type) from inputs `In`, B K x N when `B_KN`
/// (wgmma's MN-major B), else N x K, on tiles of configuration `C` ([`sm90::Tile256`] unless
/// named: [`sm90::Tile128`] the other one). Implemented by this module's table, one impl per
/// row.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Gemm90<In, const B_KN: bool, C = sm90::Tile256<In>>: Sized {
    /// The plain GEMM.
    type Kernel: rshmem_device::Kernel<Args = Args<Self>>;
    /// The grouped GEMM.
    type Grouped: rshmem_device::Kernel<Args = GroupedArgs<Self>>;
}

macro_rules! sm90_gemms {
    ($($tile:ident: $name:ident, $grouped:ident: $in:ty => $out:ty, $kn:literal;)*) => {$(
        #[doc = concat!("`C = A · B`: A (m x k) of `", stringify!($in), "`, B k x n (`B_KN = ", stringify!($kn),
            "`) or n x k, through the tensor maps `maps` ([`sm90::", stringify!($tile),
            "`]'s boxes); C (at least m x n) of `", stringify!($out), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm_with`] for this kernel's configuration (launch shape,
        /// maps of this element type in global memory, `problem` theirs); `c` is valid for
        /// writes of its elements, at least `problem.m x problem.n`.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $name(maps: Sm90Maps, problem: Problem, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe {
                sm90::gemm_with::<sm90::$tile<$in>, _, _, _, $kn>(maps.a, maps.b, problem, GroupM, StoreC { c }, InTensorCore)
            }
        }

        #[doc = concat!("The grouped `C = A · B` of [`", stringify!($name), "`]: group g's rows of A \
            (`rows`) times the g-th of `rows.groups` B stacked, into the same rows of C.")]
        ///
        /// # Safety
        ///
        /// As the plain kernel's, B's map 3-D ([`sm90::gemm_with`]); `rows.sizes` holds
        /// `rows.groups` u32s in global memory that nothing writes while the kernel runs.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $grouped(maps: Sm90Maps, problem: Problem, rows: GroupRows, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the schedule's, the mainloop's and the epilogue's.
            unsafe {
                let schedule = Grouped::new(rows, problem);
                sm90::gemm_with::<sm90::$tile<$in>, _, _, _, $kn>(maps.a, maps.b, problem, schedule, StoreC { c }, InTensorCore)
            }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Gemm90<$in, $kn, sm90::$tile<$in>> for $out {
            type Kernel = $name;
            type Grouped = $grouped;
        }
    )*};
}

sm90_gemms! {
    Tile256: gemm90_bf16_bf16_nk, grouped90_bf16_bf16_nk: bf16 => bf16, false;
    Tile256: gemm90_bf16_f32_nk, grouped90_bf16_f32_nk: bf16 => f32, false;
    Tile256: gemm90_f16_f16_nk, grouped90_f16_f16_nk: f16 => f16, false;
    Tile256: gemm90_f16_f32_nk, grouped90_f16_f32_nk: f16 => f32, false;
    Tile256: gemm90_bf16_bf16_kn, grouped90_bf16_bf16_kn: bf16 => bf16, true;
    Tile256: gemm90_bf16_f32_kn, grouped90_bf16_f32_kn: bf16 => f32, true;
    Tile256: gemm90_f16_f16_kn, grouped90_f16_f16_kn: f16 => f16, true;
    Tile256: gemm90_f16_f32_kn, grouped90_f16_f32_kn: f16 => f32, true;
    Tile128: gemm90_bf16_bf16_nk_n128, grouped90_bf16_bf16_nk_n128: bf16 => bf16, false;
    Tile128: gemm90_bf16_f32_nk_n128, grouped90_bf16_f32_nk_n128: bf16 => f32, false;
    Tile128: gemm90_f16_f16_nk_n128, grouped90_f16_f16_nk_n128: f16 => f16, false;
    Tile128: gemm90_f16_f32_nk_n128, grouped90_f16_f32_nk_n128: f16 => f32, false;
    Tile128: gemm90_bf16_bf16_kn_n128, grouped90_bf16_bf16_kn_n128: bf16 => bf16, true;
    Tile128: gemm90_bf16_f32_kn_n128, grouped90_bf16_f32_kn_n128: bf16 => f32, true;
    Tile128: gemm90_f16_f16_kn_n128, grouped90_f16_f16_kn_n128: f16 => f16, true;
    Tile128: gemm90_f16_f32_kn_n128, grouped90_f16_f32_kn_n128: f16 => f32, true;
}

/// The split-K GEMM of inputs `Self`, B K x N when `B_KN`: its parts of K into an f32
/// workspace. Implemented by this module's table.
#[cfg(not(target_arch = "nvptx64"))]
pub trait SplitK90<const B_KN: bool>: Sized {
    /// The kernel.
    type Kernel: rshmem_device::Kernel<Args = SplitArgs>;
}

macro_rules! sm90_split_k {
    ($($name:ident: $in:ty, $kn:literal;)*) => {$(
        #[doc = concat!("The parts of K of `C = A · B` (A of `", stringify!($in), "`, B k x n when `B_KN = ",
            stringify!($kn), "`, else n x k): part s of every tile into rows `s m ..` of `partials`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm`], as the plain kernels'; `partials` holds `splits *
        /// problem.m` rows of at least `problem.n` f32s.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $name(maps: Sm90Maps, problem: Problem, splits: u32, partials: MatrixMut<f32>) {
            let epilogue = StorePartial { partials, m: problem.m };
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe { sm90::gemm::<$in, _, _, $kn>(maps.a, maps.b, problem, SplitK { splits }, epilogue) }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl SplitK90<$kn> for $in {
            type Kernel = $name;
        }
    )*};
}

sm90_split_k! {
    splitk90_bf16_nk: bf16, false;
    splitk90_f16_nk: f16, false;
    splitk90_bf16_kn: bf16, true;
    splitk90_f16_kn: f16, true;
}

/// The reduction of a split-K GEMM's parts into C of `Self`. Implemented by this module's
/// table.
#[cfg(not(target_arch = "nvptx64"))]
pub trait SplitReduce: Sized {
    /// The kernel.
    type Kernel: rshmem_device::Kernel<Args = ReduceArgs<Self>>;
}

macro_rules! split_reduce {
    ($($name:ident: $out:ty;)*) => {$(
        #[doc = concat!("`c` (of `", stringify!($out), "`) = the sum of the `splits` slabs of `partials`, in order.")]
        ///
        /// # Safety
        ///
        /// The contract of [`split_k::reduce`].
        #[kernel]
        pub unsafe fn $name(partials: Matrix<f32>, splits: u32, m: u32, n: u32, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the reduction's.
            unsafe { split_k::reduce(partials, splits, m, n, c) }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl SplitReduce for $out {
            type Kernel = $name;
        }
    )*};
}

split_reduce! {
    splitk_reduce_f32: f32;
    splitk_reduce_bf16: bf16;
    splitk_reduce_f16: f16;
}

/// The arguments of the per-tensor FP8 kernels: `(maps, problem, scale_a, scale_b, c)`, the
/// scales one f32 each in global memory.
pub type Fp8TensorArgs<Out> = (Sm90Maps, Problem, *const f32, *const f32, MatrixMut<Out>);

/// The arguments of the block-scaled FP8 kernels: `(maps, problem, scales, c)`.
pub type Fp8BlockArgs<Out> = (Sm90Maps, Problem, BlockScales, MatrixMut<Out>);

/// The arguments of the grouped block-scaled FP8 kernels: `(maps, problem, rows, scales, c)`.
pub type Fp8GroupedArgs<Out> = (Sm90Maps, Problem, GroupRows, BlockScales, MatrixMut<Out>);

/// The arguments of the grouped per-tensor FP8 kernels: `(maps, problem, rows, scale_a,
/// scales_b, c)`, A's scale one f32, B's one per group.
pub type Fp8GroupedTensorArgs<Out> = (
    Sm90Maps,
    Problem,
    GroupRows,
    *const f32,
    *const f32,
    MatrixMut<Out>,
);

/// The sm_90a FP8 GEMMs computing `Self` (C's element type) from inputs `In` (e4m3, e5m2), B
/// N x K. Implemented by this module's table, one impl per row.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Fp8Gemm90<In>: Sized {
    /// Per-tensor scales ([`sm90::Fp8Tile256`], the scales applied by the epilogue).
    type Tensor: rshmem_device::Kernel<Args = Fp8TensorArgs<Self>>;
    /// Block scales ([`sm90::Fp8Tile128`], [`sm90::BlockScaled`]).
    type Block: rshmem_device::Kernel<Args = Fp8BlockArgs<Self>>;
    /// Grouped, block scales (each group's B its own).
    type GroupedBlock: rshmem_device::Kernel<Args = Fp8GroupedArgs<Self>>;
    /// Grouped, per-tensor scales (A's one, each group's B its own).
    type GroupedTensor: rshmem_device::Kernel<Args = Fp8GroupedTensorArgs<Self>>;
}

macro_rules! sm90_fp8_gemms {
    ($($tensor:ident, $block:ident, $grouped:ident, $grouped_tensor:ident: $in:ty => $out:ty;)*) => {$(
        #[doc = concat!("`C = scale_a scale_b (A · Bᵀ)`: A (m x k) and B (n x k) of `", stringify!($in),
            "` through `maps` ([`sm90::Fp8Tile256`]'s boxes), one f32 scale each; C of `", stringify!($out), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm_with`] for [`sm90::Fp8Tile256`] (launch shape, maps of
        /// 8-bit elements in global memory, `problem` theirs); `scale_a` and `scale_b` point
        /// to an f32 each in global memory; `c` is valid for writes of at least
        /// `problem.m x problem.n` elements.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $tensor(maps: Sm90Maps, problem: Problem, scale_a: *const f32, scale_b: *const f32, c: MatrixMut<$out>) {
            let epilogue = Scaled { inner: StoreC { c }, scale_a, scale_b };
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe {
                sm90::gemm_with::<Fp8Tile256<$in>, _, _, _, false>(maps.a, maps.b, problem, GroupM, epilogue, InTensorCore)
            }
        }

        #[doc = concat!("`C = A · Bᵀ` with DeepSeek-V3's block scales: A (m x k) and B (n x k) of `", stringify!($in),
            "` through `maps` ([`sm90::Fp8Tile128`]'s boxes), `scales` as [`BlockScales`] lays them out; C of `",
            stringify!($out), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm_with`] for [`sm90::Fp8Tile128`]; `scales` as
        /// [`BlockScaled::new`] requires (one group); `c` as the per-tensor kernel's.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $block(maps: Sm90Maps, problem: Problem, scales: BlockScales, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the mainloop's, the policy's and the epilogue's.
            unsafe {
                let accumulate = BlockScaled::new(scales);
                sm90::gemm_with::<Fp8Tile128<$in>, _, _, _, false>(maps.a, maps.b, problem, GroupM, StoreC { c }, accumulate)
            }
        }

        #[doc = concat!("The grouped [`", stringify!($block), "`]: group g's rows of A (`rows`) times the g-th \
            of `rows.groups` B stacked, with its own block scales, into the same rows of C.")]
        ///
        /// # Safety
        ///
        /// As the block-scaled kernel's, B's map 3-D ([`sm90::gemm_with`]) and `scales.b`
        /// holding every group's; `rows.sizes` holds `rows.groups` u32s in global memory that
        /// nothing writes while the kernel runs.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $grouped(maps: Sm90Maps, problem: Problem, rows: GroupRows, scales: BlockScales, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the schedule's, the mainloop's, the policy's
            // and the epilogue's.
            unsafe {
                let schedule = Grouped::new(rows, problem);
                let accumulate = BlockScaled::new(scales);
                sm90::gemm_with::<Fp8Tile128<$in>, _, _, _, false>(maps.a, maps.b, problem, schedule, StoreC { c }, accumulate)
            }
        }

        #[doc = concat!("The grouped [`", stringify!($tensor), "`]: group g's rows of A (`rows`) times the g-th \
            of `rows.groups` B stacked, scaled by `scale_a[0] scales_b[g]`, into the same rows of C.")]
        ///
        /// # Safety
        ///
        /// As the per-tensor kernel's, B's map 3-D ([`sm90::gemm_with`]) and `scales_b`
        /// holding `rows.groups` f32s; `rows.sizes` as the grouped block-scaled kernel's.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $grouped_tensor(
            maps: Sm90Maps,
            problem: Problem,
            rows: GroupRows,
            scale_a: *const f32,
            scales_b: *const f32,
            c: MatrixMut<$out>,
        ) {
            let epilogue = Scaled { inner: StoreC { c }, scale_a, scale_b: scales_b };
            // SAFETY: this kernel's contract is the schedule's, the mainloop's and the
            // epilogue's (a scale of B per group).
            unsafe {
                let schedule = Grouped::new(rows, problem);
                sm90::gemm_with::<Fp8Tile256<$in>, _, _, _, false>(maps.a, maps.b, problem, schedule, epilogue, InTensorCore)
            }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Fp8Gemm90<$in> for $out {
            type Tensor = $tensor;
            type Block = $block;
            type GroupedBlock = $grouped;
            type GroupedTensor = $grouped_tensor;
        }
    )*};
}

sm90_fp8_gemms! {
    gemm90_e4m3_bf16_tensor, gemm90_e4m3_bf16_block, grouped90_e4m3_bf16_block, grouped90_e4m3_bf16_tensor: E4m3 => bf16;
    gemm90_e4m3_f32_tensor, gemm90_e4m3_f32_block, grouped90_e4m3_f32_block, grouped90_e4m3_f32_tensor: E4m3 => f32;
    gemm90_e5m2_bf16_tensor, gemm90_e5m2_bf16_block, grouped90_e5m2_bf16_block, grouped90_e5m2_bf16_tensor: E5m2 => bf16;
    gemm90_e5m2_f32_tensor, gemm90_e5m2_f32_block, grouped90_e5m2_f32_block, grouped90_e5m2_f32_tensor: E5m2 => f32;
}

/// The split-K FP8 GEMMs of inputs `Self` (e4m3, e5m2): their parts of K, scaled, into an f32
/// workspace that a `splitk_reduce_*` kernel adds into C. Implemented by this module's table.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Fp8SplitK90: Sized {
    /// Per-tensor scales ([`sm90::Fp8Tile256`]).
    type Tensor: rshmem_device::Kernel<Args = Fp8SplitTensorArgs>;
    /// Block scales ([`sm90::Fp8Tile128`], [`sm90::BlockScaled`]).
    type Block: rshmem_device::Kernel<Args = Fp8SplitBlockArgs>;
}

macro_rules! sm90_fp8_split_k {
    ($($tensor:ident, $block:ident: $in:ty;)*) => {$(
        #[doc = concat!("The parts of K of `scale_a scale_b (A · Bᵀ)` (A, B of `", stringify!($in),
            "`, [`sm90::Fp8Tile256`]): part s of every tile, scaled, into rows `s m ..` of `partials`.")]
        ///
        /// # Safety
        ///
        /// The contract of the per-tensor FP8 kernels (launch shape, maps, scales), and
        /// `partials` holds `splits * problem.m` rows of at least `problem.n` f32s.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $tensor(
            maps: Sm90Maps,
            problem: Problem,
            splits: u32,
            scale_a: *const f32,
            scale_b: *const f32,
            partials: MatrixMut<f32>,
        ) {
            // Each part scaled before the sum: s (p0 + p1) and s p0 + s p1 differ by a rounding
            // of each, within the per-tensor GEMM's bound.
            let epilogue = Scaled { inner: StorePartial { partials, m: problem.m }, scale_a, scale_b };
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe {
                sm90::gemm_with::<Fp8Tile256<$in>, _, _, _, false>(
                    maps.a, maps.b, problem, SplitK { splits }, epilogue, InTensorCore,
                )
            }
        }

        #[doc = concat!("The parts of K of the block-scaled `A · Bᵀ` (A, B of `", stringify!($in),
            "`, [`sm90::Fp8Tile128`]): part s of every tile, promoted with its k-blocks' scales, into \
            rows `s m ..` of `partials`.")]
        ///
        /// # Safety
        ///
        /// The contract of the block-scaled FP8 kernels (launch shape, maps, scales), and
        /// `partials` as the per-tensor split kernel's.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $block(
            maps: Sm90Maps,
            problem: Problem,
            splits: u32,
            scales: BlockScales,
            partials: MatrixMut<f32>,
        ) {
            let epilogue = StorePartial { partials, m: problem.m };
            // SAFETY: this kernel's contract is the mainloop's, the policy's and the epilogue's;
            // the policy reads the scales of each part's own k-blocks (`Tile::k_step0`).
            unsafe {
                let accumulate = BlockScaled::new(scales);
                sm90::gemm_with::<Fp8Tile128<$in>, _, _, _, false>(
                    maps.a, maps.b, problem, SplitK { splits }, epilogue, accumulate,
                )
            }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Fp8SplitK90 for $in {
            type Tensor = $tensor;
            type Block = $block;
        }
    )*};
}

sm90_fp8_split_k! {
    splitk90_e4m3_tensor, splitk90_e4m3_block: E4m3;
    splitk90_e5m2_tensor, splitk90_e5m2_block: E5m2;
}
