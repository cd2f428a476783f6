//! The sm_90a kernels behind `rshmem::ops`: [`rshmem_gemm::sm90::gemm`] instantiated with the
//! plain epilogue ([`rshmem_gemm::StoreC`]) for each input and output type. Launch each with
//! 1-D blocks of [`sm90::THREADS`], [`sm90::SHARED_BYTES`] of shared memory and at most one
//! block per SM (the grid walks all tiles; `rshmem::ops` launches one block per SM).

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use rshmem_device::hopper::TensorMap;
use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16};
pub use rshmem_gemm::sm90;
use rshmem_gemm::{Problem, StoreC};

macro_rules! sm90_gemms {
    ($($name:ident: $in:ty => $out:ty, $kn:literal;)*) => {$(
        #[doc = concat!("`C = A · B`: A (m x k) of `", stringify!($in), "`, B k x n (`B_KN = ", stringify!($kn),
            "`) or n x k, through the tensor maps `map_a` and `map_b` ([`sm90::A_BOX`]); C (m x n, rows `ldc` \
             apart) of `", stringify!($out), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm`] (launch shape, maps of this element type in global
        /// memory); `c` is valid for writes of `m` rows of `ldc >= n` elements.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $name(
            map_a: *const TensorMap,
            map_b: *const TensorMap,
            c: *mut $out,
            ldc: u32,
            m: u32,
            n: u32,
            k: u32,
        ) {
            // SAFETY: this kernel's contract is the mainloop's and the epilogue's.
            unsafe { sm90::gemm::<$in, _, $kn>(map_a, map_b, Problem { m, n, k }, StoreC { c, ldc }) }
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
