//! Remote atomic memory operations (AMOs) on symmetric objects: `fetch`, `set`, `swap` for
//! every [`AmoScalar`]; `compare_swap`, `inc`, `add` and their fetch forms for every
//! [`AmoInt`]; `and`, `or`, `xor` and their fetch forms for every [`AmoBitwise`].
//!
//! Each operation is atomic with respect to every other AMO on the same object from any PE
//! (not with respect to plain puts or stores). Order an AMO after earlier puts to the same
//! PE with [`super::fence`].

use super::call::nv_or_sim;
use paste::paste;

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
pub trait AmoInt: AmoScalar {
    #[doc(hidden)]
    unsafe fn __compare_swap(dest: *mut Self, cond: Self, value: Self, pe: i32) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_add(dest: *mut Self, value: Self, pe: i32) -> Self;
    #[doc(hidden)]
    unsafe fn __add(dest: *mut Self, value: Self, pe: i32);
    #[doc(hidden)]
    unsafe fn __fetch_inc(dest: *mut Self, pe: i32) -> Self;
    #[doc(hidden)]
    unsafe fn __inc(dest: *mut Self, pe: i32);
}

/// Integer types with remote bitwise `and`, `or`, `xor`: `i32`, `u32`, `i64`, `u64`.
pub trait AmoBitwise: AmoInt {
    #[doc(hidden)]
    unsafe fn __fetch_bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) -> Self;
    #[doc(hidden)]
    unsafe fn __bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32);
}

/// A bitwise AMO.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
}

mod sealed {
    pub trait Sealed {}
}

/// `$t` uses NVSHMEM's `$c` names (`nvshmem_$c_atomic_*`) for fetch/set/swap.
macro_rules! amo_scalar {
    ($($t:ty => $c:ident),* $(,)?) => {$( paste! {
        impl sealed::Sealed for $t {}
        impl AmoScalar for $t {
            #[inline(always)]
            unsafe fn __fetch(source: *const Self, pe: i32) -> Self {
                nv_or_sim!([<nvshmem_ $c _atomic_fetch>](source: *const $t, pe: i32) -> $t,
                    sim: crate::sim::amo::fetch(source, pe))
            }
            #[inline(always)]
            unsafe fn __set(dest: *mut Self, value: Self, pe: i32) {
                nv_or_sim!([<nvshmem_ $c _atomic_set>](dest: *mut $t, value: $t, pe: i32),
                    sim: { crate::sim::amo::swap(dest, value, pe); })
            }
            #[inline(always)]
            unsafe fn __swap(dest: *mut Self, value: Self, pe: i32) -> Self {
                nv_or_sim!([<nvshmem_ $c _atomic_swap>](dest: *mut $t, value: $t, pe: i32) -> $t,
                    sim: crate::sim::amo::swap(dest, value, pe))
            }
        }
    })*};
}

/// `$t` uses `$c` names for compare_swap and bitwise ops and `$a` names for add/inc (NVSHMEM
/// has no `int64` add, only `long`).
macro_rules! amo_int {
    ($($t:ty => $c:ident, $a:ident),* $(,)?) => {$( paste! {
        impl AmoInt for $t {
            #[inline(always)]
            unsafe fn __compare_swap(dest: *mut Self, cond: Self, value: Self, pe: i32) -> Self {
                nv_or_sim!([<nvshmem_ $c _atomic_compare_swap>](dest: *mut $t, cond: $t, value: $t, pe: i32) -> $t,
                    sim: crate::sim::amo::compare_swap(dest, cond, value, pe))
            }
            #[inline(always)]
            unsafe fn __fetch_add(dest: *mut Self, value: Self, pe: i32) -> Self {
                nv_or_sim!([<nvshmem_ $a _atomic_fetch_add>](dest: *mut $t, value: $t, pe: i32) -> $t,
                    sim: crate::sim::amo::fetch_add(dest, value, pe))
            }
            #[inline(always)]
            unsafe fn __add(dest: *mut Self, value: Self, pe: i32) {
                nv_or_sim!([<nvshmem_ $a _atomic_add>](dest: *mut $t, value: $t, pe: i32),
                    sim: { crate::sim::amo::fetch_add(dest, value, pe); })
            }
            #[inline(always)]
            unsafe fn __fetch_inc(dest: *mut Self, pe: i32) -> Self {
                nv_or_sim!([<nvshmem_ $a _atomic_fetch_inc>](dest: *mut $t, pe: i32) -> $t,
                    sim: crate::sim::amo::fetch_add(dest, 1, pe))
            }
            #[inline(always)]
            unsafe fn __inc(dest: *mut Self, pe: i32) {
                nv_or_sim!([<nvshmem_ $a _atomic_inc>](dest: *mut $t, pe: i32),
                    sim: { crate::sim::amo::fetch_add(dest, 1, pe); })
            }
        }
        impl AmoBitwise for $t {
            #[inline(always)]
            unsafe fn __fetch_bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) -> Self {
                match op {
                    BitOp::And => nv_or_sim!([<nvshmem_ $c _atomic_fetch_and>](dest: *mut $t, value: $t, pe: i32) -> $t,
                        sim: crate::sim::amo::fetch_bitwise(op, dest, value, pe)),
                    BitOp::Or => nv_or_sim!([<nvshmem_ $c _atomic_fetch_or>](dest: *mut $t, value: $t, pe: i32) -> $t,
                        sim: crate::sim::amo::fetch_bitwise(op, dest, value, pe)),
                    BitOp::Xor => nv_or_sim!([<nvshmem_ $c _atomic_fetch_xor>](dest: *mut $t, value: $t, pe: i32) -> $t,
                        sim: crate::sim::amo::fetch_bitwise(op, dest, value, pe)),
                }
            }
            #[inline(always)]
            unsafe fn __bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) {
                match op {
                    BitOp::And => nv_or_sim!([<nvshmem_ $c _atomic_and>](dest: *mut $t, value: $t, pe: i32),
                        sim: { crate::sim::amo::fetch_bitwise(op, dest, value, pe); }),
                    BitOp::Or => nv_or_sim!([<nvshmem_ $c _atomic_or>](dest: *mut $t, value: $t, pe: i32),
                        sim: { crate::sim::amo::fetch_bitwise(op, dest, value, pe); }),
                    BitOp::Xor => nv_or_sim!([<nvshmem_ $c _atomic_xor>](dest: *mut $t, value: $t, pe: i32),
                        sim: { crate::sim::amo::fetch_bitwise(op, dest, value, pe); }),
                }
            }
        }
    })*};
}

amo_scalar!(i32 => int32, u32 => uint32, i64 => int64, u64 => uint64);

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
                <$t>::from_bits(<$bits>::__fetch(source.cast(), pe))
            }
            #[inline(always)]
            unsafe fn __set(dest: *mut Self, value: Self, pe: i32) {
                <$bits>::__set(dest.cast(), value.to_bits(), pe)
            }
            #[inline(always)]
            unsafe fn __swap(dest: *mut Self, value: Self, pe: i32) -> Self {
                <$t>::from_bits(<$bits>::__swap(dest.cast(), value.to_bits(), pe))
            }
        }
    )*};
}

amo_float!(f32 => u32, f64 => u64);
amo_int!(i32 => int32, int32, u32 => uint32, uint32, i64 => int64, long, u64 => uint64, uint64);

/// Declares the public generic AMO functions, each with its contract.
macro_rules! amo_fns {
    ($(
        $(#[$doc:meta])*
        fn $name:ident<$bound:ident>($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $imp:ident($($call:expr),*);
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The pointer must point to a properly aligned `T` inside a symmetric allocation,
        /// and `pe` must be in `0..n_pes()`.
        #[inline(always)]
        pub unsafe fn $name<T: $bound>($($arg: $ty),*) $(-> $ret)? {
            T::$imp($($call),*)
        }
    )*};
}

amo_fns! {
    /// Atomically reads `source` on PE `pe`.
    fn atomic_fetch<AmoScalar>(source: *const T, pe: i32) -> T => __fetch(source, pe);
    /// Atomically writes `value` to `dest` on PE `pe`.
    fn atomic_set<AmoScalar>(dest: *mut T, value: T, pe: i32) => __set(dest, value, pe);
    /// Atomically writes `value` to `dest` on PE `pe` and returns the old value.
    fn atomic_swap<AmoScalar>(dest: *mut T, value: T, pe: i32) -> T => __swap(dest, value, pe);
    /// Writes `value` to `dest` on PE `pe` if it equals `cond`; returns the old value either way.
    fn atomic_compare_swap<AmoInt>(dest: *mut T, cond: T, value: T, pe: i32) -> T => __compare_swap(dest, cond, value, pe);
    /// Adds `value` to `dest` on PE `pe` (wrapping) and returns the old value.
    fn atomic_fetch_add<AmoInt>(dest: *mut T, value: T, pe: i32) -> T => __fetch_add(dest, value, pe);
    /// Adds `value` to `dest` on PE `pe` (wrapping).
    fn atomic_add<AmoInt>(dest: *mut T, value: T, pe: i32) => __add(dest, value, pe);
    /// Adds one to `dest` on PE `pe` and returns the old value.
    fn atomic_fetch_inc<AmoInt>(dest: *mut T, pe: i32) -> T => __fetch_inc(dest, pe);
    /// Adds one to `dest` on PE `pe`.
    fn atomic_inc<AmoInt>(dest: *mut T, pe: i32) => __inc(dest, pe);
    /// `dest &= value` on PE `pe`; returns the old value.
    fn atomic_fetch_and<AmoBitwise>(dest: *mut T, value: T, pe: i32) -> T => __fetch_bitwise(BitOp::And, dest, value, pe);
    /// `dest &= value` on PE `pe`.
    fn atomic_and<AmoBitwise>(dest: *mut T, value: T, pe: i32) => __bitwise(BitOp::And, dest, value, pe);
    /// `dest |= value` on PE `pe`; returns the old value.
    fn atomic_fetch_or<AmoBitwise>(dest: *mut T, value: T, pe: i32) -> T => __fetch_bitwise(BitOp::Or, dest, value, pe);
    /// `dest |= value` on PE `pe`.
    fn atomic_or<AmoBitwise>(dest: *mut T, value: T, pe: i32) => __bitwise(BitOp::Or, dest, value, pe);
    /// `dest ^= value` on PE `pe`; returns the old value.
    fn atomic_fetch_xor<AmoBitwise>(dest: *mut T, value: T, pe: i32) -> T => __fetch_bitwise(BitOp::Xor, dest, value, pe);
    /// `dest ^= value` on PE `pe`.
    fn atomic_xor<AmoBitwise>(dest: *mut T, value: T, pe: i32) => __bitwise(BitOp::Xor, dest, value, pe);
}
