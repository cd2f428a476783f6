//! The sm_90a GEMMs: [`rshmem_gemm::sm90::gemm`] with the plain epilogue
//! ([`rshmem_gemm::StoreC`]) for each input and output type and both layouts of B, each
//! twice: with the plain schedule ([`rshmem_gemm::GroupM`]: `gemm90_*`) and the grouped one
//! ([`rshmem_gemm::Grouped`]: `grouped90_*`, B one matrix per group and a 3-D map). Launch
//! each with 1-D blocks of [`sm90::THREADS`], [`sm90::SHARED_BYTES`] of shared memory and at
//! most one block per SM (the grid walks all tiles; `rshmem::ops` launches one block per SM).
//!
//! On the host, [`Gemm90`] names the kernels of each (input, output, layout):
//!
//! ```
//! use rshmem_device::{bf16, Kernel};
//! use rshmem_ops_kernels::gemm90::Gemm90;
//! assert_eq!(<<f32 as Gemm90<bf16, false>>::Kernel as Kernel>::NAME, "gemm90_bf16_f32_nk");
//! assert_eq!(<<f32 as Gemm90<bf16, true>>::Grouped as Kernel>::NAME, "grouped90_bf16_f32_kn");
//! ```

use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16};
pub use rshmem_gemm::sm90;
use rshmem_gemm::{GroupM, GroupRows, Grouped, Problem, Sm90Maps, StoreC};

/// The arguments of the plain kernels: `(maps, problem, c)`.
pub type Args<Out> = (Sm90Maps, Problem, MatrixMut<Out>);

/// The arguments of the grouped kernels: `(maps, problem, rows, c)` (`problem.m` all rows).
pub type GroupedArgs<Out> = (Sm90Maps, Problem, GroupRows, MatrixMut<Out>);

/// The sm_90a GEMMs computing `Self` (C's element type) from inputs `In`, B K x N when `B_KN`
/// (wgmma's MN-major B), else N x K. Implemented by this module's table, one impl per row.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Gemm90<In, const B_KN: bool>: Sized {
    /// The plain GEMM.
    type Kernel: rshmem_device::Kernel<Args = Args<Self>>;
    /// The grouped GEMM.
    type Grouped: rshmem_device::Kernel<Args = GroupedArgs<Self>>;
}

macro_rules! sm90_gemms {
    ($($name:ident, $grouped:ident: $in:ty => $out:ty, $kn:literal;)*) => {$(
        #[doc = concat!("`C = A · B`: A (m x k) of `", stringify!($in), "`, B k x n (`B_KN = ", stringify!($kn),
            "`) or n x k, through the tensor maps `maps`; C (at least m x n) of `", stringify!($out), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm`] (launch shape, maps of this element type in global
        /// memory, `problem` theirs); `c` is valid for writes of its elements, at least
        /// `problem.m x problem.n`.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $name(maps: Sm90Maps, problem: Problem, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe { sm90::gemm::<$in, _, _, $kn>(maps.a, maps.b, problem, GroupM, StoreC { c }) }
        }

        #[doc = concat!("The grouped `C = A · B` of [`", stringify!($name), "`]: group g's rows of A \
            (`rows`) times the g-th of `rows.groups` B stacked, into the same rows of C.")]
        ///
        /// # Safety
        ///
        /// As the plain kernel's, B's map 3-D ([`sm90::gemm`]); `rows.sizes` holds
        /// `rows.groups` u32s in global memory that nothing writes while the kernel runs.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $grouped(maps: Sm90Maps, problem: Problem, rows: GroupRows, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the schedule's, the mainloop's and the epilogue's.
            unsafe {
                let schedule = Grouped::new(rows, problem);
                sm90::gemm::<$in, _, _, $kn>(maps.a, maps.b, problem, schedule, StoreC { c })
            }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Gemm90<$in, $kn> for $out {
            type Kernel = $name;
            type Grouped = $grouped;
        }
    )*};
}

sm90_gemms! {
    gemm90_bf16_bf16_nk, grouped90_bf16_bf16_nk: bf16 => bf16, false;
    gemm90_bf16_f32_nk, grouped90_bf16_f32_nk: bf16 => f32, false;
    gemm90_f16_f16_nk, grouped90_f16_f16_nk: f16 => f16, false;
    gemm90_f16_f32_nk, grouped90_f16_f32_nk: f16 => f32, false;
    gemm90_bf16_bf16_kn, grouped90_bf16_bf16_kn: bf16 => bf16, true;
    gemm90_bf16_f32_kn, grouped90_bf16_f32_kn: bf16 => f32, true;
    gemm90_f16_f16_kn, grouped90_f16_f16_kn: f16 => f16, true;
    gemm90_f16_f32_kn, grouped90_f16_f32_kn: f16 => f32, true;
}
