//! The sm_90a kernels of rshmem's fused tensor-parallel ops: [`rshmem_gemm::sm90::gemm`] with
//! the schedules and epilogues of [`rshmem_tp`], for bf16 inputs, f32 accumulation and bf16 output, B either
//! N x K (`_nk`) or K x N (`_kn`):
//!
//! * `ag_gemm90_*`: `C = all_gather(A) · B` ([`rshmem_tp::ag`]): A (`m x k`, every rank's
//!   chunk of rows) through the tensor map `map_a`, C `m x n`;
//! * `gemm_rs90_*`: this rank's chunk of rows of `Σ_ranks A_r · B_r` ([`rshmem_tp::rs`]):
//!   A_r (`m x k`, this rank's share of K) through `map_a`, C `m / size x n`.
//!
//! Launch each with 1-D blocks of [`sm90::THREADS`], [`sm90::SHARED_BYTES`] of shared memory
//! and at most one block per SM, after the call's barrier (`tp_barrier` of [`crate::tp80`]); the reduce-scatter is followed by `rs_fixup` (the same) with `bm = sm90::BM`,
//! `bn = sm90::BN`.
//!
//! On the host, [`Tp90`] names the two kernels of each layout of B
//! (`<Layout<true> as Tp90>::AllGather` is `ag_gemm90_kn`).

use rshmem_device::bf16;
use rshmem_device::hopper::TensorMap;
use rshmem_device::prelude::*;
pub use rshmem_gemm::sm90;
use rshmem_gemm::StoreC;
use rshmem_tp::{AgSchedule, RsEpilogue, TpCall};

/// The all-gather kernels' arguments: `(map_a, map_b, c, flags, call)`.
pub type AgArgs = (
    *const TensorMap,
    *const TensorMap,
    *mut bf16,
    *const u64,
    TpCall,
);
/// The reduce-scatter kernels' arguments: `(map_a, map_b, out, recv, flags, call)`.
pub type RsArgs = (
    *const TensorMap,
    *const TensorMap,
    *mut bf16,
    *mut bf16,
    *mut u64,
    TpCall,
);

/// The fused sm_90a kernels of one layout of B ([`crate::Layout`]), from this module's table.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Tp90 {
    /// `C = all_gather(A) · B`.
    type AllGather: rshmem_device::Kernel<Args = AgArgs>;
    /// This rank's rows of `Σ A_r · B_r`.
    type ReduceScatter: rshmem_device::Kernel<Args = RsArgs>;
}

macro_rules! tp90_kernels {
    ($($ag:ident, $rs:ident: $kn:tt;)*) => {$(
        #[doc = concat!("`C = all_gather(A) · B` on sm_90a, B ", tp90_kernels!(@b $kn),
            " (see the crate docs).")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm`] (launch shape; maps of bf16 over A, `m x k`, and B in
        /// global memory); `c` valid for writes of `m x n`; `flags` this PE's copy of the
        /// call's flag buffer; every rank of the team runs the call after its barrier (which
        /// advanced the call counter this kernel reads), and pushes its chunk of A here with `put_signal` on `arrived_slot`.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $ag(
            map_a: *const TensorMap,
            map_b: *const TensorMap,
            c: *mut bf16,
            flags: *const u64,
            call: TpCall,
        ) {
            // SAFETY: `flags` is this PE's flag buffer, after the call's barrier (the contract).
            let call = unsafe { call.load_epoch(flags) };
            let schedule = AgSchedule::<true> { call, bm: sm90::BM, flags };
            // SAFETY: `c` holds m x n (the contract).
            let epilogue = StoreC { c: unsafe { MatrixMut::from_raw_parts(c, call.m, call.n, call.n) } };
            // SAFETY: this kernel's contract is the mainloop's, the schedule's and the epilogue's.
            unsafe { sm90::gemm::<bf16, _, _, $kn>(map_a, map_b, call.problem(), schedule, epilogue) }
        }

        #[doc = concat!("This rank's rows of `Σ A_r · B_r` on sm_90a, B ", tp90_kernels!(@b $kn),
            " (see the crate docs).")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm90::gemm`] (launch shape; maps of bf16 over this rank's A,
        /// `m x k`, and B in global memory); `out` valid for writes of `m / size x n`; `recv`
        /// and `flags` this PE's copies of the call's symmetric workspace (`size` slots of
        /// `m / size x n`) and flag buffer; every rank of the team runs the call (same epoch)
        /// after its barrier, with at most one block per SM, all resident.
        #[kernel(launch_bounds(384, 1))]
        pub unsafe fn $rs(
            map_a: *const TensorMap,
            map_b: *const TensorMap,
            out: *mut bf16,
            recv: *mut bf16,
            flags: *mut u64,
            call: TpCall,
        ) {
            // SAFETY: `flags` is this PE's flag buffer, after the call's barrier (the contract).
            let call = unsafe { call.load_epoch(flags) };
            // SAFETY: `recv` is the symmetric workspace, after the barrier (the contract).
            let epilogue = unsafe { RsEpilogue::new(call, (sm90::BM, sm90::BN), flags, recv, out) };
            // SAFETY: this kernel's contract is the mainloop's, the schedule's and the epilogue's.
            unsafe { sm90::gemm::<bf16, _, _, $kn>(map_a, map_b, call.problem(), epilogue.schedule(), epilogue) }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Tp90 for crate::Layout<$kn> {
            type AllGather = $ag;
            type ReduceScatter = $rs;
        }
    )*};
    (@b false) => { "N x K" };
    (@b true) => { "K x N" };
}

tp90_kernels! {
    ag_gemm90_nk, gemm_rs90_nk: false;
    ag_gemm90_kn, gemm_rs90_kn: true;
}
