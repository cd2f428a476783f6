//! Remote memory access: single-element `p`/`g`, typed `put`/`get` and byte-wise
//! `putmem`/`getmem`, blocking or non-blocking (`_nbi`), at any [`Scope`].
//!
//! Blocking forms return when the local source may be reused (put) or the data has arrived
//! (get). Non-blocking forms return at once; `quiet` completes them.

use super::call::{nv_or_sim, scoped_call};
use super::{Scope, ScopeKind};
use paste::paste;

/// Element types with typed remote access: single-element `p`/`g` and strided `iput`/`iget`
/// (`nvshmem_TYPE_p/g/iput/iget`).
pub trait RmaScalar: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    unsafe fn __p(dest: *mut Self, value: Self, pe: i32);
    #[doc(hidden)]
    unsafe fn __g(source: *const Self, pe: i32) -> Self;
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn __istrided(
        scope: ScopeKind,
        put: bool,
        dest: *mut Self,
        source: *const Self,
        dst: isize,
        sst: isize,
        n: usize,
        pe: i32,
    );
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! rma_scalars {
    ($($t:ty => $c:ident),* $(,)?) => {$( paste! {
        impl sealed::Sealed for $t {}
        impl RmaScalar for $t {
            #[inline(always)]
            unsafe fn __p(dest: *mut Self, value: Self, pe: i32) {
                nv_or_sim!([<nvshmem_ $c _p>](dest: *mut $t, value: $t, pe: i32),
                    sim: crate::sim::rma::p(dest, value, pe))
            }
            #[inline(always)]
            unsafe fn __g(source: *const Self, pe: i32) -> Self {
                nv_or_sim!([<nvshmem_ $c _g>](source: *const $t, pe: i32) -> $t,
                    sim: crate::sim::rma::g(source, pe))
            }
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn __istrided(
                scope: ScopeKind,
                put: bool,
                dest: *mut Self,
                source: *const Self,
                dst: isize,
                sst: isize,
                n: usize,
                pe: i32,
            ) {
                if put {
                    scoped_call!(scope, [<$c _iput>](dest: *mut $t, source: *const $t, dst: isize, sst: isize, n: usize, pe: i32),
                        sim: crate::sim::rma::istrided(scope, true, dest, source, dst, sst, n, pe))
                } else {
                    scoped_call!(scope, [<$c _iget>](dest: *mut $t, source: *const $t, dst: isize, sst: isize, n: usize, pe: i32),
                        sim: crate::sim::rma::istrided(scope, false, dest, source, dst, sst, n, pe))
                }
            }
        }
    })*};
}

rma_scalars! {
    i8 => int8,
    u8 => uint8,
    i16 => int16,
    u16 => uint16,
    i32 => int32,
    u32 => uint32,
    i64 => int64,
    u64 => uint64,
    f32 => float,
    f64 => double,
}

/// bf16/f16 move as 16-bit words (NVSHMEM has no typed RMA for them; same bits, same size).
macro_rules! rma_as_u16 {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl RmaScalar for $t {
            #[inline(always)]
            unsafe fn __p(dest: *mut Self, value: Self, pe: i32) {
                <u16 as RmaScalar>::__p(dest.cast(), value.to_bits(), pe)
            }
            #[inline(always)]
            unsafe fn __g(source: *const Self, pe: i32) -> Self {
                <$t>::from_bits(<u16 as RmaScalar>::__g(source.cast(), pe))
            }
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn __istrided(
                scope: ScopeKind,
                put: bool,
                dest: *mut Self,
                source: *const Self,
                dst: isize,
                sst: isize,
                n: usize,
                pe: i32,
            ) {
                <u16 as RmaScalar>::__istrided(scope, put, dest.cast(), source.cast(), dst, sst, n, pe)
            }
        }
    )*};
}

rma_as_u16!(::half::bf16, ::half::f16);

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
    T::__istrided(S::KIND, true, dest, source, dst, sst, n, pe)
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
    T::__istrided(S::KIND, false, dest, source, dst, sst, n, pe)
}

#[inline(always)]
unsafe fn putmem_impl<S: Scope>(
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    pe: i32,
) {
    scoped_call!(S::KIND, nbi: nbi, putmem(dest: *mut u8, source: *const u8, bytes: usize, pe: i32),
        sim: crate::sim::device::putmem(S::KIND, nbi, dest, source, bytes, pe))
}

#[inline(always)]
unsafe fn getmem_impl<S: Scope>(
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    pe: i32,
) {
    scoped_call!(S::KIND, nbi: nbi, getmem(dest: *mut u8, source: *const u8, bytes: usize, pe: i32),
        sim: crate::sim::device::getmem(S::KIND, nbi, dest, source, bytes, pe))
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
    let dest = dest.cast::<u8>();
    let p: *mut u8 = nv_or_sim!(nvshmem_ptr(dest: *const u8, pe: i32) -> *mut u8,
        sim: crate::sim::rma::ptr(dest, pe));
    p.cast()
}
