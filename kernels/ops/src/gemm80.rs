//! The sm_80 GEMMs: [`rshmem_gemm::sm80::gemm`] with the plain schedule and
//! epilogue ([`rshmem_gemm::GroupM`], [`rshmem_gemm::StoreC`]) for each input and output type and both layouts of B:
//! `gemm80_{in}_{out}_nk` computes `C = A · Bᵀ` with B n x k (K contiguous),
//! `gemm80_{in}_{out}_kn` `C = A · B` with B k x n (N contiguous). Launch each with 1-D
//! blocks of [`sm80::THREADS`] and [`sm80::SHARED_BYTES`] of shared memory; any grid walks
//! all tiles ([`sm80::tiles`] gives every block one).
//!
//! Each row of the table is also a grouped GEMM (`grouped80_*`: [`rshmem_gemm::Grouped`], B
//! one matrix per group, stacked). On the host, [`Gemm80`] names the kernels of each (input,
//! output, layout).

use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16};
pub use rshmem_gemm::sm80;
use rshmem_gemm::{GroupM, GroupRows, Grouped, Problem, StoreC};

/// The arguments of the plain kernels: `(a, b, problem, c)`.
pub type Args<In, Out> = (Matrix<In>, Matrix<In>, Problem, MatrixMut<Out>);

/// The arguments of the grouped kernels: `(a, b, problem, rows, c)` (`problem.m` all rows,
/// `b` every group's B, stacked).
pub type GroupedArgs<In, Out> = (Matrix<In>, Matrix<In>, Problem, GroupRows, MatrixMut<Out>);

/// The sm_80 GEMMs computing `Self` (C's element type) from inputs `In`, B K x N when `B_KN`,
/// else N x K. Implemented by this module's table, one impl per row.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Gemm80<In, const B_KN: bool>: Sized {
    /// The plain GEMM.
    type Kernel: rshmem_device::Kernel<Args = Args<In, Self>>;
    /// The grouped GEMM.
    type Grouped: rshmem_device::Kernel<Args = GroupedArgs<In, Self>>;
}

macro_rules! sm80_gemms {
    ($($name:ident, $grouped:ident: $in:ty => $out:ty, $kn:tt;)*) => {$(
        #[doc = concat!("C (m x n) of `", stringify!($out), "` = A (m x k) times ",
            sm80_gemms!(@b $kn), ", inputs of `", stringify!($in), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm80::gemm`] (launch shape, alignment and extents of A and B, `k`
        /// a multiple of 8, for `problem`); `c` is valid for writes of its elements, at least
        /// `problem.m x problem.n`.
        #[kernel(launch_bounds(256, 2))]
        pub unsafe fn $name(a: Matrix<$in>, b: Matrix<$in>, problem: Problem, c: MatrixMut<$out>) {
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe { sm80::gemm::<$in, _, _, $kn>(a, b, problem, GroupM, StoreC { c }) }
        }

        #[doc = concat!("The grouped form of [`", stringify!($name), "`]: group g's rows of A \
            (`rows`) times the g-th of `rows.groups` B stacked in `b`, into the same rows of C.")]
        ///
        /// # Safety
        ///
        /// As the plain kernel's, `b` holding every group's B; `rows.sizes` holds
        /// `rows.groups` u32s in global memory that nothing writes while the kernel runs.
        #[kernel(launch_bounds(256, 2))]
        pub unsafe fn $grouped(
            a: Matrix<$in>,
            b: Matrix<$in>,
            problem: Problem,
            rows: GroupRows,
            c: MatrixMut<$out>,
        ) {
            // SAFETY: this kernel's contract is the schedule's, the mainloop's and the epilogue's.
            unsafe {
                let schedule = Grouped::new(rows, problem);
                sm80::gemm::<$in, _, _, $kn>(a, b, problem, schedule, StoreC { c })
            }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Gemm80<$in, $kn> for $out {
            type Kernel = $name;
            type Grouped = $grouped;
        }
    )*};
    (@b false) => { "Bᵀ (B n x k)" };
    (@b true) => { "B (k x n)" };
}

sm80_gemms! {
    gemm80_bf16_bf16_nk, grouped80_bf16_bf16_nk: bf16 => bf16, false;
    gemm80_bf16_bf16_kn, grouped80_bf16_bf16_kn: bf16 => bf16, true;
    gemm80_bf16_f32_nk, grouped80_bf16_f32_nk: bf16 => f32, false;
    gemm80_bf16_f32_kn, grouped80_bf16_f32_kn: bf16 => f32, true;
    gemm80_f16_f16_nk, grouped80_f16_f16_nk: f16 => f16, false;
    gemm80_f16_f16_kn, grouped80_f16_f16_kn: f16 => f16, true;
    gemm80_f16_f32_nk, grouped80_f16_f32_nk: f16 => f32, false;
    gemm80_f16_f32_kn, grouped80_f16_f32_kn: f16 => f32, true;
}
