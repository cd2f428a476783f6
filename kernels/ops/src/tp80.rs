//! The kernels of rshmem's fused tensor-parallel ops for sm_80 and later:
//! [`rshmem_gemm::sm80::gemm`] with the schedules and epilogues of [`rshmem_tp`] (bf16 inputs, f32
//! accumulation, bf16 output, B N x K (`_nk`) or K x N (`_kn`)), and the two small kernels
//! every fused call uses on any GPU:
//!
//! * `ag_gemm80_*`: `C = all_gather(A) · B` ([`rshmem_tp::ag`]), A `m x k`, C `m x n`;
//! * `gemm_rs80_*`: this rank's rows of `Σ_ranks A_r · B_r` ([`rshmem_tp::rs`]), A_r `m x k`,
//!   C `m / size x n`;
//! * `tp_barrier`: the barrier that starts every call and advances the call counter the
//!   other kernels read their epoch from ([`rshmem_tp::barrier`]);
//! * `rs_fixup`: the reduce-scatter's rows of bands straddling two chunks, or its whole chunk
//!   when the call reduces after the GEMM ([`rshmem_tp::rs::fixup`]), after either GEMM (its
//!   `bm`, `bn`); `rs_wait` before it, one block, where PEs share a GPU
//!   ([`rshmem_tp::rs::wait_for_partials`]);
//! * `ag_wait`: the all-gather's wait for every chunk before its GEMM, one block, where PEs
//!   share a GPU ([`rshmem_tp::ag::wait_for_chunks`]).
//!
//! Launch the GEMMs with 1-D blocks of [`sm80::THREADS`], [`sm80::SHARED_BYTES`] of shared
//! memory and at most one block per SM (the reduce-scatter's waits need every block resident).
//!
//! On the host, [`Tp80`] names the two GEMM kernels of each layout of B.

use rshmem_device::bf16;
use rshmem_device::prelude::*;
pub use rshmem_gemm::sm80;
use rshmem_gemm::StoreC;
use rshmem_tp::{AgSchedule, RsEpilogue, TpCall};

/// The all-gather kernels' arguments: `(a, b, c, flags, call)`.
pub type AgArgs = (*const bf16, *const bf16, *mut bf16, *const u64, TpCall);
/// The reduce-scatter kernels' arguments: `(a, b, out, recv, flags, call)`.
pub type RsArgs = (
    *const bf16,
    *const bf16,
    *mut bf16,
    *mut bf16,
    *mut u64,
    TpCall,
);

/// The fused sm_80 kernels of one layout of B ([`crate::Layout`]), from this module's table.
#[cfg(not(target_arch = "nvptx64"))]
pub trait Tp80 {
    /// `C = all_gather(A) · B`.
    type AllGather: rshmem_device::Kernel<Args = AgArgs>;
    /// This rank's rows of `Σ A_r · B_r`.
    type ReduceScatter: rshmem_device::Kernel<Args = RsArgs>;
}

/// A (m x k) and B (n x k, or k x n when `B_KN`) of `call`, dense, as the mainloop takes them.
///
/// # Safety
///
/// `a` and `b` hold those elements.
#[inline(always)]
unsafe fn operands<const B_KN: bool>(
    a: *const bf16,
    b: *const bf16,
    call: TpCall,
) -> (Matrix<bf16>, Matrix<bf16>) {
    let (m, n, k) = (call.m, call.n, call.k);
    let (b_rows, b_cols) = if B_KN { (k, n) } else { (n, k) };
    // SAFETY: the caller's.
    unsafe {
        (
            Matrix::from_raw_parts(a, m, k, k),
            Matrix::from_raw_parts(b, b_rows, b_cols, b_cols),
        )
    }
}

macro_rules! tp80_kernels {
    ($($ag:ident, $rs:ident: $kn:tt;)*) => {$(
        #[doc = concat!("`C = all_gather(A) · B` on sm_80+, B ", tp80_kernels!(@b $kn),
            " (see the crate docs).")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm80::gemm`] (launch shape; `a` `m x k` and `b` of bf16,
        /// 16-byte aligned, rows `k` (`b`: `k` or `n`) apart, `k` a multiple of 8); `c` valid
        /// for writes of `m x n`; `flags` this PE's copy of the call's flag buffer; every rank
        /// of the team runs the call (same epoch) after its barrier, and pushes its chunk of A
        /// here with `put_signal` on `arrived_slot`.
        #[kernel(launch_bounds(256, 2))]
        pub unsafe fn $ag(a: *const bf16, b: *const bf16, c: *mut bf16, flags: *const u64, call: TpCall) {
            // SAFETY: `flags` is this PE's flag buffer, after the call's barrier (the contract).
            let call = unsafe { call.load_epoch(flags) };
            let schedule = AgSchedule::<false> { call, bm: sm80::BM, flags };
            // SAFETY: `c` holds m x n (the contract).
            let epilogue = StoreC { c: unsafe { MatrixMut::from_raw_parts(c, call.m, call.n, call.n) } };
            // SAFETY: a and b hold the problem's A and B (the contract).
            let (a, b) = unsafe { operands::<$kn>(a, b, call) };
            // SAFETY: this kernel's contract is the mainloop's, the schedule's and the epilogue's.
            unsafe { sm80::gemm::<bf16, _, _, $kn>(a, b, call.problem(), schedule, epilogue) }
        }

        #[doc = concat!("This rank's rows of `Σ A_r · B_r` on sm_80+, B ", tp80_kernels!(@b $kn),
            " (see the crate docs).")]
        ///
        /// # Safety
        ///
        /// The contract of [`sm80::gemm`] (as for the all-gather kernel, A this rank's
        /// `m x k`); `out` valid for writes of `m / size x n`; `recv` and `flags` this PE's
        /// copies of the call's symmetric workspace (`size` slots of `m / size x n`) and flag
        /// buffer; every rank runs the call (same epoch) after its barrier, with at most one
        /// block per SM, all resident.
        #[kernel(launch_bounds(256, 2))]
        pub unsafe fn $rs(
            a: *const bf16,
            b: *const bf16,
            out: *mut bf16,
            recv: *mut bf16,
            flags: *mut u64,
            call: TpCall,
        ) {
            // SAFETY: `flags` is this PE's flag buffer, after the call's barrier (the contract).
            let call = unsafe { call.load_epoch(flags) };
            // SAFETY: `recv` is the symmetric workspace, after the barrier (the contract).
            let epilogue = unsafe { RsEpilogue::new(call, (sm80::BM, sm80::BN), flags, recv, out) };
            // SAFETY: a and b hold the problem's A and B (the contract).
            let (a, b) = unsafe { operands::<$kn>(a, b, call) };
            // SAFETY: this kernel's contract is the mainloop's, the schedule's and the epilogue's.
            unsafe { sm80::gemm::<bf16, _, _, $kn>(a, b, call.problem(), epilogue.schedule(), epilogue) }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl Tp80 for crate::Layout<$kn> {
            type AllGather = $ag;
            type ReduceScatter = $rs;
        }
    )*};
    (@b false) => { "N x K" };
    (@b true) => { "K x N" };
}

tp80_kernels! {
    ag_gemm80_nk, gemm_rs80_nk: false;
    ag_gemm80_kn, gemm_rs80_kn: true;
}

/// The barrier that starts every fused call ([`rshmem_tp::barrier`]): one block of
/// `rshmem_tp::barrier::threads(call.size)` threads.
///
/// # Safety
///
/// `flags` is this PE's copy of the call's symmetric flag buffer; every rank of the team
/// launches the barrier of the same call.
#[kernel]
pub unsafe fn tp_barrier(flags: *mut u64, call: TpCall) {
    // SAFETY: this kernel's contract is the barrier's.
    unsafe { rshmem_tp::barrier::barrier(flags, call) }
}

/// Waits (one block) for every other rank's chunk of the all-gather
/// ([`rshmem_tp::ag::wait_for_chunks`]), so that the GEMM after it on the same stream waits
/// for nothing: where PEs share a GPU one block per PE spins, not the GEMM's grid.
///
/// # Safety
///
/// `flags` is this PE's copy of the call's flag buffer, after the call's barrier (queued
/// before on the stream); every rank of the team pushes its chunk.
#[kernel]
pub unsafe fn ag_wait(flags: *const u64, call: TpCall) {
    // SAFETY: this kernel's contract is the wait's.
    unsafe { rshmem_tp::ag::wait_for_chunks(&call, flags) }
}

/// Waits (one block) for the peers' partials `rs_fixup` reduces
/// ([`rshmem_tp::rs::wait_for_partials`]), so that the fix-up after it on the same stream
/// finds them there: where PEs share a GPU one block per PE spins, not the fix-up's grid.
///
/// # Safety
///
/// As `rs_fixup`'s, this PE's GEMM of the call queued before it on the stream.
#[kernel]
pub unsafe fn rs_wait(
    out: *mut bf16,
    recv: *mut bf16,
    flags: *mut u64,
    call: TpCall,
    bm: u32,
    bn: u32,
) {
    // SAFETY: this kernel's contract is the epilogue's and the wait's.
    unsafe { rshmem_tp::rs::wait_for_partials(&rs_epilogue(out, recv, flags, call, (bm, bn))) }
}

/// The reduce-scatter's rows outside its whole bands ([`rshmem_tp::rs::fixup`]),
/// after this PE's GEMM of the call (on its stream), whose tile shape is `bm x bn`. Any 1-D
/// launch.
///
/// # Safety
///
/// The arguments are those of this PE's reduce-scatter GEMM of the call, which has finished.
#[kernel]
pub unsafe fn rs_fixup(
    out: *mut bf16,
    recv: *mut bf16,
    flags: *mut u64,
    call: TpCall,
    bm: u32,
    bn: u32,
) {
    // SAFETY: this kernel's contract is the epilogue's and the fix-up's.
    unsafe { rshmem_tp::rs::fixup(&rs_epilogue(out, recv, flags, call, (bm, bn))) }
}

/// The epilogue of this PE's reduce-scatter GEMM of the call (tiles `bm x bn`), as the kernels
/// after it on the stream see it: the call's epoch read from `flags`.
///
/// # Safety
///
/// The arguments are those of that GEMM, queued before on the stream (after the barrier).
#[inline(always)]
unsafe fn rs_epilogue(
    out: *mut bf16,
    recv: *mut bf16,
    flags: *mut u64,
    call: TpCall,
    tile: (u32, u32),
) -> RsEpilogue {
    // SAFETY: `flags` is this PE's flag buffer, after the call's barrier (the contract).
    let call = unsafe { call.load_epoch(flags) };
    // SAFETY: as for the GEMM (the contract).
    unsafe { RsEpilogue::new(call, tile, flags, recv, out) }
}
