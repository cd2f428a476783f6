//! Remote atomic memory operations (AMOs) on symmetric objects: `fetch`, `set`, `swap` for
//! every [`AmoScalar`]; `compare_swap`, `inc`, `add` and their fetch forms for every
//! [`AmoInt`]; `and`, `or`, `xor` and their fetch forms for every [`AmoBitwise`].
//!
//! Each operation is atomic with respect to every other AMO on the same object from any PE
//! (not with respect to plain puts or stores). Order an AMO after earlier puts to the same
//! PE with [`super::fence`].

use crate::backend;

#[doc(hidden)]
pub use crate::contract::BitOp;

/// Types with remote `fetch`, `set` and `swap`: `i32`, `u32`, `i64`, `u64`, `f32`, `f64`.
pub trait AmoScalar: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    unsafe fn __fetch(source: *const Self, pe: i32) -> Self;
    #[doc(hidden)]
    unsafe fn __set(dest: *mut Self, value: Self, pe: i32);
    #[doc(hidden)]
    unsafe fn __swap(dest: *mut Self, value: Self, pe: i32) -> Self;
}

/// Integer types with remote `compare_swap`, `inc` and `add`: `i32`, `u32`, `i64`, `u64`.
pub trait AmoInt: AmoScalar + backend::Amo {}

/// Integer types with remote bitwise `and`, `or`, `xor`: `i32`, `u32`, `i64`, `u64`.
pub trait AmoBitwise: AmoInt {}

mod sealed {
    pub trait Sealed {}
}

/// The integers: every AMO, straight to the backend.
macro_rules! amo_int {
    ($($t:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl AmoScalar for $t {
            #[inline(always)]
            unsafe fn __fetch(source: *const Self, pe: i32) -> Self {
                // SAFETY: forwarded from the caller's (`atomic_fetch`'s) contract.
                unsafe { <$t as backend::Amo>::fetch(source, pe) }
            }
            #[inline(always)]
            unsafe fn __set(dest: *mut Self, value: Self, pe: i32) {
                // SAFETY: forwarded from the caller's (`atomic_set`'s) contract.
                unsafe { <$t as backend::Amo>::set(dest, value, pe) }
            }
            #[inline(always)]
            unsafe fn __swap(dest: *mut Self, value: Self, pe: i32) -> Self {
                // SAFETY: forwarded from the caller's (`atomic_swap`'s) contract.
                unsafe { <$t as backend::Amo>::swap(dest, value, pe) }
            }
        }
        impl AmoInt for $t {}
        impl AmoBitwise for $t {}
    )*};
}

amo_int!(i32, u32, i64, u64);

/// Float AMOs move the bits through the unsigned integer of the same size. NVSHMEM 3.4.5's
/// own `nvshmem_double_atomic_swap` returned the old value's bit pattern converted to a
/// number (4.69e18 for 225243.25) on an H200 — found by the conformance suite — and the
/// bitwise path has the same cost.
macro_rules! amo_float {
    ($($t:ty => $bits:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl AmoScalar for $t {
            #[inline(always)]
            unsafe fn __fetch(source: *const Self, pe: i32) -> Self {
                // SAFETY: `$bits` has `$t`'s size and alignment; the rest is the caller's.
                <$t>::from_bits(unsafe { <$bits>::__fetch(source.cast(), pe) })
            }
            #[inline(always)]
            unsafe fn __set(dest: *mut Self, value: Self, pe: i32) {
                // SAFETY: as `__fetch`.
                unsafe { <$bits>::__set(dest.cast(), value.to_bits(), pe) }
            }
            #[inline(always)]
            unsafe fn __swap(dest: *mut Self, value: Self, pe: i32) -> Self {
                // SAFETY: as `__fetch`.
                <$t>::from_bits(unsafe { <$bits>::__swap(dest.cast(), value.to_bits(), pe) })
            }
        }
    )*};
}

amo_float!(f32 => u32, f64 => u64);

/// Declares the public generic AMO functions, each with its contract.
macro_rules! amo_fns {
    ($(
        $(#[$doc:meta])*
        fn $name:ident<$bound:ident>($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $call:expr;
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The pointer must point to a properly aligned `T` inside a symmetric allocation,
        /// and `pe` must be in `0..n_pes()`.
        #[inline(always)]
        pub unsafe fn $name<T: $bound>($($arg: $ty),*) $(-> $ret)? {
            // SAFETY: forwarded from this function's contract.
            unsafe { $call }
        }
    )*};
}

amo_fns! {
    /// Atomically reads `source` on PE `pe`.
    fn atomic_fetch<AmoScalar>(source: *const T, pe: i32) -> T => T::__fetch(source, pe);
    /// Atomically writes `value` to `dest` on PE `pe`.
    fn atomic_set<AmoScalar>(dest: *mut T, value: T, pe: i32) => T::__set(dest, value, pe);
    /// Atomically writes `value` to `dest` on PE `pe` and returns the old value.
    fn atomic_swap<AmoScalar>(dest: *mut T, value: T, pe: i32) -> T => T::__swap(dest, value, pe);
    /// Writes `value` to `dest` on PE `pe` if it equals `cond`; returns the old value either way.
    fn atomic_compare_swap<AmoInt>(dest: *mut T, cond: T, value: T, pe: i32) -> T => <T as backend::Amo>::compare_swap(dest, cond, value, pe);
    /// Adds `value` to `dest` on PE `pe` (wrapping) and returns the old value.
    fn atomic_fetch_add<AmoInt>(dest: *mut T, value: T, pe: i32) -> T => <T as backend::Amo>::fetch_add(dest, value, pe);
    /// Adds `value` to `dest` on PE `pe` (wrapping).
    fn atomic_add<AmoInt>(dest: *mut T, value: T, pe: i32) => <T as backend::Amo>::add(dest, value, pe);
    /// Adds one to `dest` on PE `pe` and returns the old value.
    fn atomic_fetch_inc<AmoInt>(dest: *mut T, pe: i32) -> T => <T as backend::Amo>::fetch_inc(dest, pe);
    /// Adds one to `dest` on PE `pe`.
    fn atomic_inc<AmoInt>(dest: *mut T, pe: i32) => <T as backend::Amo>::inc(dest, pe);
    /// `dest &= value` on PE `pe`; returns the old value.
    fn atomic_fetch_and<AmoBitwise>(dest: *mut T, value: T, pe: i32) -> T => <T as backend::Amo>::fetch_bitwise(BitOp::And, dest, value, pe);
    /// `dest &= value` on PE `pe`.
    fn atomic_and<AmoBitwise>(dest: *mut T, value: T, pe: i32) => <T as backend::Amo>::bitwise(BitOp::And, dest, value, pe);
    /// `dest |= value` on PE `pe`; returns the old value.
    fn atomic_fetch_or<AmoBitwise>(dest: *mut T, value: T, pe: i32) -> T => <T as backend::Amo>::fetch_bitwise(BitOp::Or, dest, value, pe);
    /// `dest |= value` on PE `pe`.
    fn atomic_or<AmoBitwise>(dest: *mut T, value: T, pe: i32) => <T as backend::Amo>::bitwise(BitOp::Or, dest, value, pe);
    /// `dest ^= value` on PE `pe`; returns the old value.
    fn atomic_fetch_xor<AmoBitwise>(dest: *mut T, value: T, pe: i32) -> T => <T as backend::Amo>::fetch_bitwise(BitOp::Xor, dest, value, pe);
    /// `dest ^= value` on PE `pe`.
    fn atomic_xor<AmoBitwise>(dest: *mut T, value: T, pe: i32) => <T as backend::Amo>::bitwise(BitOp::Xor, dest, value, pe);
}
