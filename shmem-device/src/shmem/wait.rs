//! Point-to-point synchronisation: wait (block) or test (poll once) until local symmetric
//! variables, written by other PEs, compare true against a value — one variable, or all /
//! any / some of an array, with one comparison value or one per element (`_vector`).
//!
//! `status` arrays (may be null) exclude elements whose entry is non-zero.

use super::call::nv_or_sim;
use super::Cmp;
use paste::paste;

/// Types that can be waited on: `i32`, `u32`, `i64`, `u64`.
pub trait WaitScalar: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    unsafe fn __wait_until(ivar: *const Self, cmp: i32, value: Self);
    #[doc(hidden)]
    unsafe fn __test(ivar: *const Self, cmp: i32, value: Self) -> i32;
    #[doc(hidden)]
    unsafe fn __wait_until_all(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    );
    #[doc(hidden)]
    unsafe fn __wait_until_any(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
    #[doc(hidden)]
    unsafe fn __wait_until_some(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
    #[doc(hidden)]
    unsafe fn __wait_until_all_vector(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    );
    #[doc(hidden)]
    unsafe fn __wait_until_any_vector(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    ) -> usize;
    #[doc(hidden)]
    unsafe fn __wait_until_some_vector(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    ) -> usize;
    #[doc(hidden)]
    unsafe fn __test_all(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> i32;
    #[doc(hidden)]
    unsafe fn __test_any(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
    #[doc(hidden)]
    unsafe fn __test_some(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! wait_scalar {
    ($($t:ty => $c:ident),* $(,)?) => {$( paste! {
        impl sealed::Sealed for $t {}
        impl WaitScalar for $t {
            #[inline(always)]
            unsafe fn __wait_until(ivar: *const Self, cmp: i32, value: Self) {
                nv_or_sim!([<nvshmem_ $c _wait_until>](ivar: *const $t, cmp: i32, value: $t),
                    sim: crate::sim::wait::wait_until(ivar, cmp, value))
            }
            #[inline(always)]
            unsafe fn __test(ivar: *const Self, cmp: i32, value: Self) -> i32 {
                nv_or_sim!([<nvshmem_ $c _test>](ivar: *const $t, cmp: i32, value: $t) -> i32,
                    sim: crate::sim::wait::test(ivar, cmp, value))
            }
            #[inline(always)]
            unsafe fn __wait_until_all(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) {
                nv_or_sim!([<nvshmem_ $c _wait_until_all>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t),
                    sim: crate::sim::wait::wait_all(ivars, n, status, cmp, |_| value))
            }
            #[inline(always)]
            unsafe fn __wait_until_any(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) -> usize {
                nv_or_sim!([<nvshmem_ $c _wait_until_any>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> usize,
                    sim: crate::sim::wait::wait_any(ivars, n, status, cmp, |_| value))
            }
            #[inline(always)]
            unsafe fn __wait_until_some(ivars: *const Self, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: Self) -> usize {
                nv_or_sim!([<nvshmem_ $c _wait_until_some>](ivars: *const $t, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: $t) -> usize,
                    sim: crate::sim::wait::wait_some(ivars, n, indices, status, cmp, |_| value))
            }
            #[inline(always)]
            unsafe fn __wait_until_all_vector(ivars: *const Self, n: usize, status: *const i32, cmp: i32, values: *const Self) {
                nv_or_sim!([<nvshmem_ $c _wait_until_all_vector>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, values: *const $t),
                    sim: crate::sim::wait::wait_all(ivars, n, status, cmp, |i| *values.add(i)))
            }
            #[inline(always)]
            unsafe fn __wait_until_any_vector(ivars: *const Self, n: usize, status: *const i32, cmp: i32, values: *const Self) -> usize {
                nv_or_sim!([<nvshmem_ $c _wait_until_any_vector>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, values: *const $t) -> usize,
                    sim: crate::sim::wait::wait_any(ivars, n, status, cmp, |i| *values.add(i)))
            }
            #[inline(always)]
            unsafe fn __wait_until_some_vector(ivars: *const Self, n: usize, indices: *mut usize, status: *const i32, cmp: i32, values: *const Self) -> usize {
                nv_or_sim!([<nvshmem_ $c _wait_until_some_vector>](ivars: *const $t, n: usize, indices: *mut usize, status: *const i32, cmp: i32, values: *const $t) -> usize,
                    sim: crate::sim::wait::wait_some(ivars, n, indices, status, cmp, |i| *values.add(i)))
            }
            #[inline(always)]
            unsafe fn __test_all(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) -> i32 {
                nv_or_sim!([<nvshmem_ $c _test_all>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> i32,
                    sim: crate::sim::wait::test_all(ivars, n, status, cmp, value))
            }
            #[inline(always)]
            unsafe fn __test_any(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) -> usize {
                nv_or_sim!([<nvshmem_ $c _test_any>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> usize,
                    sim: crate::sim::wait::test_any(ivars, n, status, cmp, value))
            }
            #[inline(always)]
            unsafe fn __test_some(ivars: *const Self, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: Self) -> usize {
                nv_or_sim!([<nvshmem_ $c _test_some>](ivars: *const $t, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: $t) -> usize,
                    sim: crate::sim::wait::test_some(ivars, n, indices, status, cmp, value))
            }
        }
    })*};
}

wait_scalar!(i32 => int32, u32 => uint32, i64 => int64, u64 => uint64);

/// `usize::MAX`, what `wait_until_any`/`test_any` return when no element qualifies (all
/// excluded by `status`, or none true yet for `test_any`) — NVSHMEM's `SIZE_MAX`.
pub const NONE: usize = usize::MAX;

/// Waits until `*ivar cmp value` holds.
///
/// # Safety
///
/// `ivar` must point to a symmetric, aligned `T` that another PE (or thread) will update so
/// that the condition becomes true.
#[inline(always)]
pub unsafe fn wait_until<T: WaitScalar>(ivar: *const T, cmp: Cmp, value: T) {
    T::__wait_until(ivar, cmp as i32, value)
}

/// Whether `*ivar cmp value` holds now.
///
/// # Safety
///
/// `ivar` must point to a symmetric, aligned `T`.
#[inline(always)]
pub unsafe fn test<T: WaitScalar>(ivar: *const T, cmp: Cmp, value: T) -> bool {
    T::__test(ivar, cmp as i32, value) != 0
}

/// Waits until every non-excluded `ivars[i] cmp value` holds.
///
/// # Safety
///
/// `ivars` must point to `n` symmetric, aligned `T`s; `status` is null or points to `n`
/// `i32`s; the conditions must eventually hold.
#[inline(always)]
pub unsafe fn wait_until_all<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: Cmp,
    value: T,
) {
    T::__wait_until_all(ivars, n, status, cmp as i32, value)
}

/// Waits until some non-excluded `ivars[i] cmp value` holds; returns such an `i` ([`NONE`] if
/// every element is excluded).
///
/// # Safety
///
/// As [`wait_until_all`].
#[inline(always)]
pub unsafe fn wait_until_any<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: Cmp,
    value: T,
) -> usize {
    T::__wait_until_any(ivars, n, status, cmp as i32, value)
}

/// Waits until at least one non-excluded `ivars[i] cmp value` holds; writes every such `i`
/// into `indices` and returns how many.
///
/// # Safety
///
/// As [`wait_until_all`], and `indices` must have room for `n` entries.
#[inline(always)]
pub unsafe fn wait_until_some<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const i32,
    cmp: Cmp,
    value: T,
) -> usize {
    T::__wait_until_some(ivars, n, indices, status, cmp as i32, value)
}

/// [`wait_until_all`] with one comparison value per element.
///
/// # Safety
///
/// As [`wait_until_all`], and `values` must point to `n` `T`s.
#[inline(always)]
pub unsafe fn wait_until_all_vector<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: Cmp,
    values: *const T,
) {
    T::__wait_until_all_vector(ivars, n, status, cmp as i32, values)
}

/// [`wait_until_any`] with one comparison value per element.
///
/// # Safety
///
/// As [`wait_until_all_vector`].
#[inline(always)]
pub unsafe fn wait_until_any_vector<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: Cmp,
    values: *const T,
) -> usize {
    T::__wait_until_any_vector(ivars, n, status, cmp as i32, values)
}

/// [`wait_until_some`] with one comparison value per element.
///
/// # Safety
///
/// As [`wait_until_some`], and `values` must point to `n` `T`s.
#[inline(always)]
pub unsafe fn wait_until_some_vector<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const i32,
    cmp: Cmp,
    values: *const T,
) -> usize {
    T::__wait_until_some_vector(ivars, n, indices, status, cmp as i32, values)
}

/// Whether every non-excluded `ivars[i] cmp value` holds now.
///
/// # Safety
///
/// `ivars` must point to `n` symmetric, aligned `T`s; `status` null or `n` `i32`s.
#[inline(always)]
pub unsafe fn test_all<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: Cmp,
    value: T,
) -> bool {
    T::__test_all(ivars, n, status, cmp as i32, value) != 0
}

/// An `i` whose `ivars[i] cmp value` holds now, or [`NONE`].
///
/// # Safety
///
/// As [`test_all`].
#[inline(always)]
pub unsafe fn test_any<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: Cmp,
    value: T,
) -> usize {
    T::__test_any(ivars, n, status, cmp as i32, value)
}

/// Writes every `i` whose `ivars[i] cmp value` holds now into `indices`; returns how many.
///
/// # Safety
///
/// As [`test_all`], and `indices` must have room for `n` entries.
#[inline(always)]
pub unsafe fn test_some<T: WaitScalar>(
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const i32,
    cmp: Cmp,
    value: T,
) -> usize {
    T::__test_some(ivars, n, indices, status, cmp as i32, value)
}
