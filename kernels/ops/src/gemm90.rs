//! The sm_90a GEMMs: [`rshmem_gemm::sm90::gemm`] with the plain schedule and
//! epilogue ([`rshmem_gemm::GroupM`], [`rshmem_gemm::StoreC`]) for each input and output type and both layouts of B. Launch each
//! with 1-D blocks of [`sm90::THREADS`], [`sm90::SHARED_BYTES`] of shared memory and at most
//! one block per SM (the grid walks all tiles; `rshmem::ops` launches one block per SM).
//!
//! On the host, [`Gemm90`] names the kernel of each (input, output, layout):
//!
//! ```
//! use rshmem_device::{bf16, Kernel};
//! use rshmem_ops_kernels::gemm90::Gemm90;
//! assert_eq!(<<f32 as Gemm90<bf16, false>>::Kernel as Kernel>::NAME, "gemm90_bf16_f32_nk");
//! ```

use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16};
pub use rshmem_gemm::sm90;
use rshmem_gemm::{GroupM, Problem, Sm90Maps, StoreC};

/// The arguments of every kernel here: `(maps, problem, c)`.
pub type Args<Out> = (Sm90Maps, Problem, MatrixMut<Out>);

/// The sm_90a GEMM computing `Self` (C's element type) from inputs `In`, B K x N when `B_KN`
/// (wgmma's MN-major B), else N x K. Implemented by this module's table, one impl per kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Gemm90<In, const B_KN: bool>: Sized {
    /// The kernel.
    type Kernel: rshmem_device::Kernel<Args = Args<Self>>;
}

macro_rules! sm90_gemms {
    ($($name:ident: $in:ty => $out:ty, $kn:literal;)*) => {$(
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

        #[cfg(not(target_arch = "nvptx64"))]
        impl Gemm90<$in, $kn> for $out {
            type Kernel = $name;
        }
    )*};
}

sm90_gemms! {
    gemm90_bf16_bf16_nk: bf16 => bf16, false;
    gemm90_bf16_f32_nk: bf16 => f32, false;
    gemm90_f16_f16_nk: f16 => f16, false;
    gemm90_f16_f32_nk: f16 => f32, false;
    gemm90_bf16_bf16_kn: bf16 => bf16, true;
    gemm90_bf16_f32_kn: bf16 => f32, true;
    gemm90_f16_f16_kn: f16 => f16, true;
    gemm90_f16_f32_kn: f16 => f32, true;
}
