//! What the collectives reduce and how: the element types ([`Elem`]: bf16, f16, f32, i32,
//! i64), their accumulators ([`Acc`]: f32 for the floats, the integer itself otherwise) and
//! the reductions ([`Reduce`]: [`Sum`], [`Max`], [`Min`]).
//!
//! A reduction of `n` values widens each to its accumulator, combines them in the order given
//! (the collectives give team-rank order, so every PE computes bitwise the same result) and
//! rounds once at the end: a bf16 sum of 8 PEs is 7 f32 additions and one rounding to bf16.
//!
//! ```
//! use rshmem_coll::elem::{Elem, Reduce, Sum, Max};
//! use rshmem_device::bf16;
//! let xs = [bf16::from_f32(1.5), bf16::from_f32(2.25), bf16::from_f32(-0.75)];
//! let sum = xs.iter().skip(1).fold(xs[0].to_acc(), |a, x| Sum::combine(a, x.to_acc()));
//! assert_eq!(bf16::from_acc(sum), bf16::from_f32(3.0));
//! assert_eq!(Max::combine(3i64, -4i64), 3);
//! ```

use rshmem_device::half::{bf16, f16, Half};

mod sealed {
    pub trait Sealed {}
}

/// A reduction's working type: f32 for the float elements, the integer itself for integers
/// (sums wrap, as NCCL's and NVSHMEM's do).
pub trait Acc: Copy + sealed::Sealed + 'static {
    /// `self + other` (wrapping for integers).
    fn sum(self, other: Self) -> Self;
    /// The larger (for floats `f32::max`: a NaN loses to a number).
    fn max(self, other: Self) -> Self;
    /// The smaller (for floats `f32::min`: a NaN loses to a number).
    fn min(self, other: Self) -> Self;
}

impl sealed::Sealed for f32 {}
impl Acc for f32 {
    #[inline(always)]
    fn sum(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        f32::max(self, other)
    }
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        f32::min(self, other)
    }
}

macro_rules! int_accs {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Acc for $t {
            #[inline(always)]
            fn sum(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                Ord::max(self, other)
            }
            #[inline(always)]
            fn min(self, other: Self) -> Self {
                Ord::min(self, other)
            }
        }
    )*};
}
int_accs!(i32, i64);

/// An element type of the collectives: 2, 4 or 8 bytes, moved 16 bytes ([`LANES`](Elem::LANES)
/// elements) at a time.
pub trait Elem: Copy + Default + PartialEq + sealed::Sealed + 'static {
    /// Its name in messages and kernel names: `"bf16"`, `"f16"`, `"f32"`, `"i32"`, `"i64"`.
    const NAME: &'static str;
    /// Elements per 16-byte pack.
    const LANES: usize = 16 / core::mem::size_of::<Self>();
    /// Whether it is a float: the flag-in-data protocol ([`crate::lamport`]) needs a bit
    /// pattern no value takes, which only the floats have (a NaN).
    const FLOAT: bool;
    /// What values are widened to while reducing.
    type Acc: Acc;
    /// The exact value, widened.
    fn to_acc(self) -> Self::Acc;
    /// The accumulator rounded to this type (nearest, ties to even, for bf16 and f16).
    fn from_acc(acc: Self::Acc) -> Self;
    /// Its bit pattern, zero-extended.
    fn to_bits64(self) -> u64;
    /// The value of a bit pattern (the low `8 × size` bits of `bits`).
    fn from_bits64(bits: u64) -> Self;
}

macro_rules! halves {
    ($($t:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = true;
            type Acc = f32;
            #[inline(always)]
            fn to_acc(self) -> f32 {
                self.to_f32_exact()
            }
            #[inline(always)]
            fn from_acc(acc: f32) -> Self {
                <$t as Half>::from_f32_rn(acc)
            }
            #[inline(always)]
            fn to_bits64(self) -> u64 {
                u64::from(<$t as Half>::to_bits(self))
            }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self {
                <$t as Half>::from_bits(bits as u16)
            }
        }
    )*};
}
halves!(bf16, f16);

macro_rules! plain {
    ($($t:ident: $float:expr, |$v:ident| $to:expr, |$b:ident| $from:expr);*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = $float;
            type Acc = $t;
            #[inline(always)]
            fn to_acc(self) -> $t {
                self
            }
            #[inline(always)]
            fn from_acc(acc: $t) -> Self {
                acc
            }
            #[inline(always)]
            fn to_bits64(self) -> u64 {
                let $v = self;
                $to
            }
            #[inline(always)]
            fn from_bits64(bits: u64) -> Self {
                let $b = bits;
                $from
            }
        }
    )*};
}
plain!(
    f32: true, |v| u64::from(v.to_bits()), |b| f32::from_bits(b as u32);
    i32: false, |v| u64::from(v as u32), |b| b as u32 as i32;
    i64: false, |v| v as u64, |b| b as i64
);

/// A reduction: combines two accumulators. [`Sum`], [`Max`] or [`Min`].
pub trait Reduce: Copy + Default + sealed::Sealed + 'static {
    /// `"sum"`, `"max"` or `"min"`.
    const NAME: &'static str;
    /// `a ∘ b`.
    fn combine<A: Acc>(a: A, b: A) -> A;
}

/// Addition (wrapping for integers).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum;
/// The maximum.
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;
/// The minimum.
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;

impl sealed::Sealed for Sum {}
impl sealed::Sealed for Max {}
impl sealed::Sealed for Min {}

impl Reduce for Sum {
    const NAME: &'static str = "sum";
    #[inline(always)]
    fn combine<A: Acc>(a: A, b: A) -> A {
        a.sum(b)
    }
}

impl Reduce for Max {
    const NAME: &'static str = "max";
    #[inline(always)]
    fn combine<A: Acc>(a: A, b: A) -> A {
        a.max(b)
    }
}

impl Reduce for Min {
    const NAME: &'static str = "min";
    #[inline(always)]
    fn combine<A: Acc>(a: A, b: A) -> A {
        a.min(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_and_rounding() {
        assert_eq!(
            (bf16::LANES, f16::LANES, f32::LANES, i32::LANES, i64::LANES),
            (8, 8, 4, 4, 2)
        );
        // 1 + 3 * 2^-9 rounds once to 1 + 2^-7; rounding after each addition would give 1.
        let one = bf16::from_f32(1.0);
        let tiny = bf16::from_f32(2f32.powi(-9));
        let acc = (0..3).fold(one.to_acc(), |a, _| Sum::combine(a, tiny.to_acc()));
        assert_eq!(bf16::from_acc(acc), bf16::from_f32(1.0 + 2f32.powi(-7)));
        assert_eq!(Sum::combine(i32::MAX, 1), i32::MIN);
        assert_eq!(Min::combine(f32::NAN, 2.0), 2.0);
        assert_eq!(Max::combine(-1i64, -7), -1);
    }
}
