//! Remote memory access: single-element `p`/`g`, typed `put`/`get` and byte-wise
//! `putmem`/`getmem`, blocking or non-blocking (`_nbi`), at any [`Scope`].
//!
//! Blocking forms return when the local source may be reused (put) or the data has arrived
//! (get). Non-blocking forms return at once; `quiet` completes them.

use super::Scope;
use crate::backend;

/// Element types with typed remote access: single-element `p`/`g` and strided `iput`/`iget`
/// (`nvshmem_TYPE_p/g/iput/iget`): integers of 8 to 64 bits, `f32`, `f64`, `bf16`, `f16`.
pub trait RmaScalar: Copy + sealed::Sealed + backend::Rma + 'static {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! rma_scalars {
    ($($t:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl RmaScalar for $t {}
    )*};
}

rma_scalars!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

// bf16 and f16 too: each backend moves them as 16-bit words.
rma_scalars!(::half::bf16, ::half::f16);

/// Writes one element to `dest` on PE `pe`.
///
/// # Safety
///
/// `dest` must point into a symmetric allocation, valid for a `T` on `pe`, and `pe` must be
/// in `0..n_pes()`.
#[inline(always)]
pub unsafe fn p<T: RmaScalar>(dest: *mut T, value: T, pe: i32) {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Rma>::p(dest, value, pe) }
}

/// Reads one element from `source` on PE `pe`.
///
/// # Safety
///
/// `source` must point into a symmetric allocation, valid for a `T` on `pe`, and `pe`
/// must be in `0..n_pes()`.
#[inline(always)]
pub unsafe fn g<T: RmaScalar>(source: *const T, pe: i32) -> T {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Rma>::g(source, pe) }
}

/// Copies `bytes` bytes from local `source` to symmetric `dest` on PE `pe`; returns when
/// `source` may be reused. All threads of scope `S` call it with the same arguments.
///
/// # Safety
///
/// `dest` must be symmetric and valid for `bytes` bytes on `pe`; `source` valid for reading
/// `bytes` bytes (local or symmetric); the ranges must not overlap on `pe`; `pe` in range.
#[inline(always)]
pub unsafe fn putmem<S: Scope>(dest: *mut u8, source: *const u8, bytes: usize, pe: i32) {
    putmem_impl::<S>(false, dest, source, bytes, pe)
}

/// As [`putmem`], but returns at once; the copy completes at the next `quiet` (or barrier).
///
/// # Safety
///
/// As [`putmem`], and `source` must stay unchanged until the copy completes.
#[inline(always)]
pub unsafe fn putmem_nbi<S: Scope>(dest: *mut u8, source: *const u8, bytes: usize, pe: i32) {
    putmem_impl::<S>(true, dest, source, bytes, pe)
}

/// Copies `bytes` bytes from symmetric `source` on PE `pe` into local `dest`; returns when
/// the data is in `dest`. All threads of scope `S` call it with the same arguments.
///
/// # Safety
///
/// `source` must be symmetric and valid for `bytes` bytes on `pe`; `dest` valid for writing
/// `bytes` bytes; `pe` in range.
#[inline(always)]
pub unsafe fn getmem<S: Scope>(dest: *mut u8, source: *const u8, bytes: usize, pe: i32) {
    getmem_impl::<S>(false, dest, source, bytes, pe)
}

/// As [`getmem`], but returns at once; `dest` is valid after the next `quiet`.
///
/// # Safety
///
/// As [`getmem`], and `dest` must not be read or written until the copy completes.
#[inline(always)]
pub unsafe fn getmem_nbi<S: Scope>(dest: *mut u8, source: *const u8, bytes: usize, pe: i32) {
    getmem_impl::<S>(true, dest, source, bytes, pe)
}

/// Typed [`putmem`]: copies `count` elements of `T`.
///
/// # Safety
///
/// As [`putmem`] for `count * size_of::<T>()` bytes.
#[inline(always)]
pub unsafe fn put<S: Scope, T: Copy>(dest: *mut T, source: *const T, count: usize, pe: i32) {
    putmem::<S>(
        dest.cast(),
        source.cast(),
        count * core::mem::size_of::<T>(),
        pe,
    )
}

/// Typed [`putmem_nbi`].
///
/// # Safety
///
/// As [`putmem_nbi`] for `count * size_of::<T>()` bytes.
#[inline(always)]
pub unsafe fn put_nbi<S: Scope, T: Copy>(dest: *mut T, source: *const T, count: usize, pe: i32) {
    putmem_nbi::<S>(
        dest.cast(),
        source.cast(),
        count * core::mem::size_of::<T>(),
        pe,
    )
}

/// Typed [`getmem`].
///
/// # Safety
///
/// As [`getmem`] for `count * size_of::<T>()` bytes.
#[inline(always)]
pub unsafe fn get<S: Scope, T: Copy>(dest: *mut T, source: *const T, count: usize, pe: i32) {
    getmem::<S>(
        dest.cast(),
        source.cast(),
        count * core::mem::size_of::<T>(),
        pe,
    )
}

/// Typed [`getmem_nbi`].
///
/// # Safety
///
/// As [`getmem_nbi`] for `count * size_of::<T>()` bytes.
#[inline(always)]
pub unsafe fn get_nbi<S: Scope, T: Copy>(dest: *mut T, source: *const T, count: usize, pe: i32) {
    getmem_nbi::<S>(
        dest.cast(),
        source.cast(),
        count * core::mem::size_of::<T>(),
        pe,
    )
}

/// Strided put: `dest[i * dst] = source[i * sst]` on PE `pe` for `i < n` (strides in
/// elements). All threads of scope `S` call it with the same arguments.
///
/// # Safety
///
/// `dest` must be symmetric and valid on `pe` for every strided element written, `source`
/// valid for every element read; strides positive; `pe` in range.
#[inline(always)]
pub unsafe fn iput<S: Scope, T: RmaScalar>(
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    n: usize,
    pe: i32,
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Rma>::istrided(S::KIND, true, dest, source, dst, sst, n, pe) }
}

/// Strided get: `dest[i * dst] = source[i * sst]` read from PE `pe`, for `i < n`.
///
/// # Safety
///
/// As [`iput`], with `source` symmetric and `dest` local.
#[inline(always)]
pub unsafe fn iget<S: Scope, T: RmaScalar>(
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    n: usize,
    pe: i32,
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Rma>::istrided(S::KIND, false, dest, source, dst, sst, n, pe) }
}

/// # Safety
///
/// As [`putmem`] (`nbi`: [`putmem_nbi`]).
#[inline(always)]
unsafe fn putmem_impl<S: Scope>(
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    pe: i32,
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::putmem(S::KIND, nbi, dest, source, bytes, pe) }
}

/// # Safety
///
/// As [`getmem`] (`nbi`: [`getmem_nbi`]).
#[inline(always)]
unsafe fn getmem_impl<S: Scope>(
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    pe: i32,
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::getmem(S::KIND, nbi, dest, source, bytes, pe) }
}

/// A pointer through which this thread can load and store `dest`'s copy on PE `pe` directly
/// (over NVLink, or locally), or null if `pe` is not reachable that way.
///
/// # Safety
///
/// `dest` must point into a symmetric allocation; `pe` in range. Accesses through the result
/// are plain loads and stores: order them with fences as for any shared memory.
#[inline(always)]
pub unsafe fn ptr<T>(dest: *const T, pe: i32) -> *mut T {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::ptr(dest.cast(), pe).cast() }
}
