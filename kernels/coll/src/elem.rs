//! What the collectives reduce and how: the element types ([`Elem`]: bf16, f16, f32, i32,
//! i64), their accumulators ([`Acc`]: f32 for the floats, the integer itself otherwise) and
//! the reductions ([`Reduce`]: [`Sum`], [`Max`], [`Min`]).
//!
//! A reduction of `n` values widens each to its accumulator, combines them in the order given
//! (the collectives give team-rank order, so every PE computes bitwise the same result) and
//! rounds once at the end: a bf16 sum of 8 PEs is 7 f32 additions and one rounding to bf16.
//!
//! **NaN, zeros and infinities** (floats). [`Max`] and [`Min`] are IEEE 754-2019's `maximum`
//! and `minimum`, the rule of `torch.max`/`torch.min`: a NaN among the values makes the result
//! a NaN (it is never dropped, as `fmaxf` drops it), `−0.0 < +0.0` (the maximum of −0 and +0
//! is +0, the minimum −0), and ±∞ order as usual. [`Sum`] is IEEE addition in f32 (a NaN, or
//! +∞ and −∞ together, give a NaN). Every NaN a reduction returns is the canonical NaN,
//! [`CANONICAL_NAN`] (`0x7FFF_FFFF`) in f32 and `0x7FFF` in bf16 and f16 (what PTX's
//! `max.NaN` and `cvt` return), whatever the inputs' signs and payloads: so the result does not
//! depend on the order values are combined in, and every algorithm, backend and member gives
//! the same bits — teams of one included (their input passes through [`Elem::from_acc`]).
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

/// The NaN every float reduction returns (`0x7FFF_FFFF`, PTX's canonical NaN; bf16 and f16
/// round it to theirs, `0x7FFF`). See the [module docs](self).
pub const CANONICAL_NAN: f32 = f32::from_bits(0x7FFF_FFFF);

/// A reduction's working type: f32 for the float elements, the integer itself for integers
/// (sums wrap, as NCCL's and NVSHMEM's do).
pub trait Acc: Copy + sealed::Sealed + 'static {
    /// `self + other` (wrapping for integers).
    fn sum(self, other: Self) -> Self;
    /// The larger; for floats IEEE `maximum`: [`CANONICAL_NAN`] if either is a NaN, +0 over −0.
    fn max(self, other: Self) -> Self;
    /// The smaller; for floats IEEE `minimum`: [`CANONICAL_NAN`] if either is a NaN, −0 over +0.
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
        // Not `f32::max` (`max.f32`, `fmaxf`): it returns the number when one is a NaN. Equal
        // values differ only as ±0, where the AND of the bits is +0.
        if self.is_nan() || other.is_nan() {
            CANONICAL_NAN
        } else if self == other {
            f32::from_bits(self.to_bits() & other.to_bits())
        } else if self > other {
            self
        } else {
            other
        }
    }
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        // As `max`; the OR of ±0's bits is −0.
        if self.is_nan() || other.is_nan() {
            CANONICAL_NAN
        } else if self == other {
            f32::from_bits(self.to_bits() | other.to_bits())
        } else if self < other {
            self
        } else {
            other
        }
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
    /// The accumulator rounded to this type (nearest, ties to even, for bf16 and f16; a NaN
    /// becomes the type's canonical NaN, see the [module docs](self)).
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
    ($($t:ident: $float:expr, |$a:ident| $round:expr, |$v:ident| $to:expr, |$b:ident| $from:expr);*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = $float;
            type Acc = $t;
            #[inline(always)]
            fn to_acc(self) -> $t {
                self
            }
            #[inline(always)]
            fn from_acc($a: $t) -> Self {
                $round
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
    // A sum's NaN has the hardware's bits (the simulator's keep an input's payload): canonical.
    f32: true, |a| if a.is_nan() { CANONICAL_NAN } else { a },
        |v| u64::from(v.to_bits()), |b| f32::from_bits(b as u32);
    i32: false, |a| a, |v| u64::from(v as u32), |b| b as u32 as i32;
    i64: false, |a| a, |v| v as u64, |b| b as i64
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
/// The maximum (floats: a NaN wins, +0 over −0; see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;
/// The minimum (floats: a NaN wins, −0 over +0; see the [module docs](self)).
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
        assert_eq!(Max::combine(-1i64, -7), -1);
    }

    /// The bits of `x ∘ y` and of `y ∘ x`, which must agree.
    fn both<O: Reduce>(x: f32, y: f32) -> u32 {
        let (a, b) = (O::combine(x, y).to_bits(), O::combine(y, x).to_bits());
        assert_eq!(a, b, "{} of {x:?} and {y:?} depends on the order", O::NAME);
        a
    }

    #[test]
    fn float_max_min_propagate_nan_order_zeros_and_keep_infinities() {
        let inf = f32::INFINITY;
        let nans = [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001), // signalling
            f32::from_bits(0xFFFF_FFFF), // the flag-in-data "empty" word
            f32::from_bits(0x7FC0_7FC0), // what that word is sent as
        ];
        for nan in nans {
            for x in [
                0.0,
                -0.0,
                1.5,
                -2.0,
                inf,
                -inf,
                f32::MAX,
                f32::MIN_POSITIVE,
                nan,
            ] {
                assert_eq!(both::<Max>(nan, x), 0x7FFF_FFFF, "max({nan:?}, {x:?})");
                assert_eq!(both::<Min>(nan, x), 0x7FFF_FFFF, "min({nan:?}, {x:?})");
            }
        }
        assert_eq!(both::<Max>(0.0, -0.0), 0.0f32.to_bits());
        assert_eq!(both::<Min>(0.0, -0.0), (-0.0f32).to_bits());
        assert_eq!(both::<Max>(-0.0, -0.0), (-0.0f32).to_bits());
        assert_eq!(both::<Min>(0.0, 0.0), 0.0f32.to_bits());
        assert_eq!(both::<Max>(inf, -inf), inf.to_bits());
        assert_eq!(both::<Min>(inf, -inf), (-inf).to_bits());
        assert_eq!(both::<Max>(-inf, -3.0), (-3.0f32).to_bits());
        assert_eq!(both::<Min>(inf, 3.0), 3.0f32.to_bits());
        assert_eq!(both::<Max>(-1.0, 2.0), 2.0f32.to_bits());
        assert_eq!(both::<Min>(-1.0, 2.0), (-1.0f32).to_bits());
        assert_eq!(
            both::<Max>(-0.0, f32::from_bits(1)),
            1,
            "the smallest subnormal"
        );
    }

    #[test]
    fn every_float_nan_result_is_canonical() {
        // Sums: a NaN input, or +∞ and −∞.
        let sum_nan = Sum::combine(f32::from_bits(0xFFC0_1234), 1.0);
        assert_eq!(f32::from_acc(sum_nan).to_bits(), 0x7FFF_FFFF);
        let inf = Sum::combine(f32::INFINITY, f32::NEG_INFINITY);
        assert_eq!(f32::from_acc(inf).to_bits(), 0x7FFF_FFFF);
        // A team of one: its value alone, through the accumulator.
        let lone = f32::from_bits(0xFFFF_FFFF);
        assert_eq!(f32::from_acc(lone.to_acc()).to_bits(), 0x7FFF_FFFF);
        for bits in [0x7FC0u16, 0xFFFF, 0x7C01, 0xFF81] {
            let (b, h) = (bf16::from_bits(bits), f16::from_bits(bits));
            if b.is_nan() {
                assert_eq!(
                    bf16::from_acc(b.to_acc()).to_bits(),
                    0x7FFF,
                    "bf16 {bits:#x}"
                );
                let m = Max::combine(b.to_acc(), 1.0);
                assert_eq!(bf16::from_acc(m).to_bits(), 0x7FFF);
            }
            if h.is_nan() {
                assert_eq!(f16::from_acc(h.to_acc()).to_bits(), 0x7FFF, "f16 {bits:#x}");
                let m = Min::combine(-1.0, h.to_acc());
                assert_eq!(f16::from_acc(m).to_bits(), 0x7FFF);
            }
        }
        // Numbers keep their bits, −0 included.
        for x in [-0.0f32, 0.0, 1.0, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(f32::from_acc(x).to_bits(), x.to_bits());
        }
        assert_eq!(bf16::from_acc(-0.0).to_bits(), 0x8000);
        assert_eq!(f16::from_acc(-0.0).to_bits(), 0x8000);
    }
}
