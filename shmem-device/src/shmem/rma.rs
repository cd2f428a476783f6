//! Remote memory access: single-element `p`/`g`, typed `put`/`get` and byte-wise
//! `putmem`/`getmem`, blocking or non-blocking (`_nbi`), at any [`Scope`].
//!
//! Blocking forms return when the local source may be reused (put) or the data has arrived
//! (get). Non-blocking forms return at once; `quiet` completes them.

use super::Scope;
use crate::backend;

/// Element types with single-element remote access (`nvshmem_TYPE_p/g`).
pub trait RmaScalar: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    unsafe fn __p(dest: *mut Self, value: Self, pe: i32);
    #[doc(hidden)]
    unsafe fn __g(source: *const Self, pe: i32) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! rma_scalars {
    ($($t:ty => $p:ident, $g:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl RmaScalar for $t {
            #[inline(always)]
            unsafe fn __p(dest: *mut Self, value: Self, pe: i32) {
                #[cfg(target_arch = "nvptx64")]
                {
                    extern "C" { fn $p(dest: *mut $t, value: $t, pe: i32); }
                    $p(dest, value, pe)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                crate::sim::rma::p(dest, value, pe)
            }
            #[inline(always)]
            unsafe fn __g(source: *const Self, pe: i32) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    extern "C" { fn $g(source: *const $t, pe: i32) -> $t; }
                    $g(source, pe)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                crate::sim::rma::g(source, pe)
            }
        }
    )*};
}

rma_scalars! {
    i8 => nvshmem_int8_p, nvshmem_int8_g;
    u8 => nvshmem_uint8_p, nvshmem_uint8_g;
    i16 => nvshmem_int16_p, nvshmem_int16_g;
    u16 => nvshmem_uint16_p, nvshmem_uint16_g;
    i32 => nvshmem_int32_p, nvshmem_int32_g;
    u32 => nvshmem_uint32_p, nvshmem_uint32_g;
    i64 => nvshmem_int64_p, nvshmem_int64_g;
    u64 => nvshmem_uint64_p, nvshmem_uint64_g;
    f32 => nvshmem_float_p, nvshmem_float_g;
    f64 => nvshmem_double_p, nvshmem_double_g;
}

/// Writes one element to `dest` on PE `pe`.
///
/// # Safety
///
/// `dest` must point into a symmetric allocation, valid for a `T` on `pe`, and `pe` must be
/// in `0..n_pes()`.
#[inline(always)]
pub unsafe fn p<T: RmaScalar>(dest: *mut T, value: T, pe: i32) {
    T::__p(dest, value, pe)
}

/// Reads one element from `source` on PE `pe`.
///
/// # Safety
///
/// `source` must point into a symmetric allocation, valid for a `T` on `pe`, and `pe`
/// must be in `0..n_pes()`.
#[inline(always)]
pub unsafe fn g<T: RmaScalar>(source: *const T, pe: i32) -> T {
    T::__g(source, pe)
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
    backend::putmem(S::KIND, false, dest, source, bytes, pe)
}

/// As [`putmem`], but returns at once; the copy completes at the next `quiet` (or barrier).
///
/// # Safety
///
/// As [`putmem`], and `source` must stay unchanged until the copy completes.
#[inline(always)]
pub unsafe fn putmem_nbi<S: Scope>(dest: *mut u8, source: *const u8, bytes: usize, pe: i32) {
    backend::putmem(S::KIND, true, dest, source, bytes, pe)
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
    backend::getmem(S::KIND, false, dest, source, bytes, pe)
}

/// As [`getmem`], but returns at once; `dest` is valid after the next `quiet`.
///
/// # Safety
///
/// As [`getmem`], and `dest` must not be read or written until the copy completes.
#[inline(always)]
pub unsafe fn getmem_nbi<S: Scope>(dest: *mut u8, source: *const u8, bytes: usize, pe: i32) {
    backend::getmem(S::KIND, true, dest, source, bytes, pe)
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
