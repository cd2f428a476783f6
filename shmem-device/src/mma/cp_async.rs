//! `cp.async`: copies from global to shared memory that run in the background of the issuing
//! thread, in groups. Issue copies, [`commit_group`] them, and [`wait_group`] until all but the
//! newest `N` groups have landed (or [`wait_all`]). Only the issuing thread may read the
//! destination after its wait; other threads after a `sync_threads` that follows the wait.
//!
//! ```ignore
//! cp_async_cg(smem.add(16 * lane), global.add(16 * lane)); // 16 bytes
//! commit_group();
//! wait_group::<0>();
//! thread::sync_threads();
//! ```

use crate::backend;

/// Copy sizes of `cp.async.ca`: implemented for `[u8; 4]`, `[u8; 8]` and `[u8; 16]`.
pub trait CpSize: sealed::Sealed {}
impl CpSize for [u8; 4] {}
impl CpSize for [u8; 8] {}
impl CpSize for [u8; 16] {}

/// The group counts [`wait_group`] takes, `0..=7` (an immediate in PTX).
pub trait WaitCount: sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for [u8; 4] {}
    impl Sealed for [u8; 8] {}
    impl Sealed for [u8; 16] {}
    pub struct Count<const N: usize>;
    impl Sealed for Count<0> {}
    impl Sealed for Count<1> {}
    impl Sealed for Count<2> {}
    impl Sealed for Count<3> {}
    impl Sealed for Count<4> {}
    impl Sealed for Count<5> {}
    impl Sealed for Count<6> {}
    impl Sealed for Count<7> {}
}
impl<const N: usize> WaitCount for sealed::Count<N> where sealed::Count<N>: sealed::Sealed {}

/// `cp.async.ca.shared.global [dst], [src], BYTES`: copies `BYTES` (4, 8 or 16) bytes, cached
/// in L1 and L2.
///
/// # Safety
///
/// `dst` points into the block's shared memory and `src` into global memory, both aligned to
/// `BYTES` and valid for `BYTES` bytes; neither is written by anyone until the copy's group has
/// been waited for, and `dst` is not read before then. sm_80+.
#[inline(always)]
pub unsafe fn cp_async_ca<const BYTES: usize>(dst: *mut u8, src: *const u8)
where
    [u8; BYTES]: CpSize,
{
    backend::mma::cp_async(dst, src, BYTES, BYTES, false)
}

/// `cp.async.cg.shared.global [dst], [src], 16`: copies 16 bytes, cached in L2 only (the
/// usual choice for GEMM tiles).
///
/// # Safety
///
/// As [`cp_async_ca`] with 16 bytes.
#[inline(always)]
pub unsafe fn cp_async_cg(dst: *mut u8, src: *const u8) {
    backend::mma::cp_async(dst, src, 16, 16, true)
}

/// `cp.async.cg.shared.global [dst], [src], 16, src_bytes`: copies the first `src_bytes` (at
/// most 16) bytes of `src` and zero-fills the rest of the 16 bytes at `dst` (for tiles at a
/// matrix edge; `src_bytes == 0` only zero-fills).
///
/// # Safety
///
/// As [`cp_async_cg`], with `src` valid for `src_bytes` bytes only and `src_bytes <= 16`.
#[inline(always)]
pub unsafe fn cp_async_cg_zfill(dst: *mut u8, src: *const u8, src_bytes: usize) {
    backend::mma::cp_async(dst, src, 16, src_bytes, true)
}

/// `cp.async.commit_group`: closes this thread's copies issued since the last commit into a
/// group (possibly empty).
#[inline(always)]
pub fn commit_group() {
    backend::mma::cp_async_commit()
}

/// `cp.async.wait_group N`: waits until at most the newest `N` of this thread's committed groups
/// are still in flight; the copies of the others have landed. Copies not yet committed are not
/// waited for.
#[inline(always)]
pub fn wait_group<const N: usize>()
where
    sealed::Count<N>: WaitCount,
{
    backend::mma::cp_async_wait_group(N)
}

/// `cp.async.wait_all`: commits the open copies and waits for every group.
#[inline(always)]
pub fn wait_all() {
    backend::mma::cp_async_wait_all()
}
