//! The sm_80 GEMMs: [`rshmem_gemm::sm80::gemm`] with the plain schedule and
//! epilogue ([`rshmem_gemm::GroupM`], [`rshmem_gemm::StoreC`]) for each input and output type and both layouts of B:
//! `gemm80_{in}_{out}_nk` computes `C = A · Bᵀ` with B n x k (K contiguous),
//! `gemm80_{in}_{out}_kn` `C = A · B` with B k x n (N contiguous). Launch each with 1-D
//! blocks of [`sm80::THREADS`] and [`sm80::SHARED_BYTES`] of shared memory; any grid walks
//! all tiles ([`sm80::tiles`] gives every block one).
//!
//! On the host, [`Gemm80`] names the kernel of each (input, output, layout).

use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16};
pub use rshmem_gemm::sm80;
use rshmem_gemm::{GroupM, Problem, StoreC};

/// The arguments of every kernel here: `(a, lda, b, ldb, c, ldc, m, n, k)`.
pub type Args<In, Out> = (*const In, u32, *const In, u32, *mut Out, u32, u32, u32, u32);

/// The sm_80 GEMM computing `Self` (C's element type) from inputs `In`, B K x N when `B_KN`,
/// else N x K. Implemented by this module's table, one impl per kernel.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Gemm80<In, const B_KN: bool>: Sized {
    /// The kernel.
    type Kernel: rshmem_device::Kernel<Args = Args<In, Self>>;
}

macro_rules! sm80_gemms {
    ($($name:ident: $in:ty => $out:ty, $kn:tt;)*) => {$(
        #[doc = concat!("C (m x n, rows `ldc` apart) of `", stringify!($out), "` = A (m x k, rows `lda` \
            apart) times ", sm80_gemms!(@b $kn), ", inputs of `", stringify!($in), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm80::gemm`] (launch shape, alignment and extents of A and B, `k`
        /// a multiple of 8); `c` is valid for writes of `m` rows of `ldc >= n` elements.
        #[kernel(launch_bounds(256, 2))]
        pub unsafe fn $name(
            a: *const $in,
            lda: u32,
            b: *const $in,
            ldb: u32,
            c: *mut $out,
            ldc: u32,
            m: u32,
            n: u32,
            k: u32,
        ) {
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe {
                sm80::gemm::<$in, _, _, $kn>(a, lda, b, ldb, Problem { m, n, k }, GroupM, StoreC { c, ldc })
            }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Gemm80<$in, $kn> for $out {
            type Kernel = $name;
        }
    )*};
    (@b false) => { "Bᵀ (B n x k, rows `ldb` apart)" };
    (@b true) => { "B (k x n, rows `ldb` apart)" };
}

sm80_gemms! {
    gemm80_bf16_bf16_nk: bf16 => bf16, false;
    gemm80_bf16_bf16_kn: bf16 => bf16, true;
    gemm80_bf16_f32_nk: bf16 => f32, false;
    gemm80_bf16_f32_kn: bf16 => f32, true;
    gemm80_f16_f16_nk: f16 => f16, false;
    gemm80_f16_f16_kn: f16 => f16, true;
    gemm80_f16_f32_nk: f16 => f32, false;
    gemm80_f16_f32_kn: f16 => f32, true;
}
