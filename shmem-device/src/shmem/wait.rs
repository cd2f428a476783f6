//! Point-to-point synchronisation: wait (block) or test (poll once) until local symmetric
//! variables, written by other PEs, compare true against a value — one variable, or all /
//! any / some of an array, with one comparison value or one per element (`_vector`).
//!
//! `status` arrays (may be null) exclude elements whose entry is non-zero.

use super::Cmp;
use crate::backend;

/// Types that can be waited on: `i32`, `u32`, `i64`, `u64`.
pub trait WaitScalar: Copy + sealed::Sealed + backend::Wait + 'static {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! wait_scalars {
    ($($t:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl WaitScalar for $t {}
    )*};
}

wait_scalars!(i32, u32, i64, u64);

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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::wait_until(ivar, cmp as i32, value) }
}

/// Whether `*ivar cmp value` holds now.
///
/// # Safety
///
/// `ivar` must point to a symmetric, aligned `T`.
#[inline(always)]
pub unsafe fn test<T: WaitScalar>(ivar: *const T, cmp: Cmp, value: T) -> bool {
    // SAFETY: forwarded from this function's contract.
    (unsafe { <T as backend::Wait>::test(ivar, cmp as i32, value) }) != 0
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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::wait_until_all(ivars, n, status, cmp as i32, value) }
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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::wait_until_any(ivars, n, status, cmp as i32, value) }
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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::wait_until_some(ivars, n, indices, status, cmp as i32, value) }
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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::wait_until_all_vector(ivars, n, status, cmp as i32, values) }
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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::wait_until_any_vector(ivars, n, status, cmp as i32, values) }
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
    // SAFETY: forwarded from this function's contract.
    unsafe {
        <T as backend::Wait>::wait_until_some_vector(ivars, n, indices, status, cmp as i32, values)
    }
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
    // SAFETY: forwarded from this function's contract.
    (unsafe { <T as backend::Wait>::test_all(ivars, n, status, cmp as i32, value) }) != 0
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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::test_any(ivars, n, status, cmp as i32, value) }
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
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Wait>::test_some(ivars, n, indices, status, cmp as i32, value) }
}
