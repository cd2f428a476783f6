//! 8-bit floats: [`E4m3`] (OCP's `E4M3FN`: finite, no infinities) and [`E5m2`], the
//! element types of FP8 GEMMs (`wgmma ... .e4m3` / `.e5m2`), the same on the host
//! (`SymBuffer<E4m3>`) and in kernels, with exact conversions to and from `f32` written once
//! for both.
//!
//! | format | sign, exponent (bias), mantissa | largest | smallest normal | smallest subnormal | specials |
//! |---|---|---|---|---|---|
//! | [`E4m3`] | 1, 4 (7), 3 | 448 | 2⁻⁶ | 2⁻⁹ | NaN `0x7F`/`0xFF`, no ∞ |
//! | [`E5m2`] | 1, 5 (15), 2 | 57344 | 2⁻¹⁴ | 2⁻¹⁶ | ±∞ `0x7C`/`0xFC`, NaN `0x7D..=0x7F` (and negative) |
//!
//! [`Fp8::from_f32`] rounds to nearest, ties to even, and saturates: a magnitude past the
//! largest finite value (±∞ included) gives ± that value, NaN gives `0x7F` — what PTX's
//! `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` is documented to do (not yet compared with a GPU).
//! [`Fp8::to_f32`] is exact (every FP8 value is an f32). Both are integer arithmetic on the bit
//! patterns: the same code, and the same bits, on the host, the simulator and the GPU.
//!
//! ```
//! use rshmem_device::fp8::{E4m3, E5m2, Fp8};
//! assert_eq!(E4m3::from_f32(1.0).to_bits(), 0x38);
//! assert_eq!(E4m3::from_f32(1.0625).to_f32(), 1.0); // a tie: to the even mantissa
//! assert_eq!(E4m3::from_f32(1e9).to_f32(), 448.0); // saturates
//! assert_eq!(E5m2::from_f32(-3.0).to_bits(), 0xC2);
//! assert_eq!(E5m2::from_bits(0x7C).to_f32(), f32::INFINITY);
//! ```

use crate::kernel::KernelArg;

/// An FP8 format: its bits, and exact conversions to and from `f32`.
pub trait Fp8:
    Copy + Default + PartialEq + bytemuck::Pod + KernelArg + sealed::Sealed + 'static
{
    /// `"e4m3"` or `"e5m2"`, for messages (the PTX type suffix).
    const NAME: &'static str;
    /// Exponent bits.
    const EXP_BITS: u32;
    /// Mantissa bits.
    const MAN_BITS: u32;
    /// The largest finite value.
    const MAX: f32;
    /// The bit pattern of the largest finite magnitude (`0x7E`, `0x7B`).
    const MAX_BITS: u8;
    /// `x` rounded to nearest, ties to even, saturating at ±[`Fp8::MAX`]; NaN gives `0x7F`.
    fn from_f32(x: f32) -> Self;
    /// The exact value.
    fn to_f32(self) -> f32;
    /// The bit pattern.
    fn to_bits(self) -> u8;
    /// From a bit pattern.
    fn from_bits(bits: u8) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

/// The value of `b` in the format of `exp` exponent and `man` mantissa bits (bias
/// `2^(exp-1) - 1`); `ieee` says whether the top exponent holds ±∞/NaN (e5m2) or only NaN at
/// all-ones (e4m3fn).
#[inline(always)]
const fn decode(b: u8, exp: u32, man: u32, ieee: bool) -> f32 {
    let sign = ((b >> 7) as u32) << 31;
    let e = ((b as u32) >> man) & ((1 << exp) - 1);
    let m = b as u32 & ((1 << man) - 1);
    let bias = (1 << (exp - 1)) - 1;
    let top = (1 << exp) - 1;
    if ieee && e == top {
        return f32::from_bits(sign | 0x7F80_0000 | if m != 0 { 0x40_0000 } else { 0 });
    }
    if !ieee && e == top && m == (1 << man) - 1 {
        return f32::from_bits(sign | 0x7FC0_0000);
    }
    if e == 0 {
        // Subnormal: m * 2^(1 - bias - man), a small integer times a power of two (exact).
        let scale = f32::from_bits((127 + 1 - bias - man) << 23);
        let v = m as f32 * scale;
        return f32::from_bits(v.to_bits() | sign);
    }
    f32::from_bits(sign | (e + 127 - bias) << 23 | m << (23 - man))
}

/// `v >> s` rounded to nearest, ties to even (`s` in 1..32).
#[inline(always)]
const fn shift_rne(v: u32, s: u32) -> u32 {
    let q = v >> s;
    let rem = v & ((1 << s) - 1);
    let half = 1 << (s - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

/// `x` in the format of `exp` exponent and `man` mantissa bits, rounded to nearest even,
/// saturating at the magnitude `max_bits`; NaN gives `0x7F`.
#[inline(always)]
const fn encode(x: f32, exp: u32, man: u32, max_bits: u8) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 31) as u8) << 7;
    let abs = bits & 0x7FFF_FFFF;
    if abs > 0x7F80_0000 {
        return 0x7F;
    }
    let bias = (1 << (exp - 1)) - 1;
    // The smallest normal's biased f32 exponent.
    let min_normal = 127 + 1 - bias;
    let e = abs >> 23;
    let code = if e >= min_normal {
        // Normal: rebias, drop the mantissa's low bits; a carry moves into the exponent.
        shift_rne(abs - ((127 - bias) << 23), 23 - man)
    } else if e == 0 {
        // f32 subnormals are far below every FP8 value: zero.
        0
    } else {
        // FP8 subnormal: steps of 2^(min_normal - 127 - man).
        let s = (23 - man) + (min_normal - e);
        if s >= 25 {
            // Below half the smallest step (the significand is below 2^24).
            0
        } else {
            shift_rne(abs & 0x7F_FFFF | 0x80_0000, s)
        }
    };
    if code > max_bits as u32 {
        sign | max_bits
    } else {
        sign | code as u8
    }
}

macro_rules! fp8_types {
    ($($(#[$doc:meta])* $t:ident: $name:literal, $exp:literal, $man:literal, $ieee:literal, $max:literal, $max_bits:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub struct $t(u8);

        impl $t {
            /// The largest finite value.
            pub const MAX: $t = $t($max_bits);
            /// Zero.
            pub const ZERO: $t = $t(0);
            /// One.
            pub const ONE: $t = $t(((1u8 << ($exp - 1)) - 1) << $man);

            /// From a bit pattern.
            #[inline(always)]
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }

            /// The bit pattern.
            #[inline(always)]
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// `x` rounded to nearest, ties to even, saturating (see the module docs).
            #[inline(always)]
            pub const fn from_f32(x: f32) -> Self {
                Self(encode(x, $exp, $man, $max_bits))
            }

            /// The exact value.
            #[inline(always)]
            pub const fn to_f32(self) -> f32 {
                decode(self.0, $exp, $man, $ieee)
            }
        }

        impl sealed::Sealed for $t {}
        impl Fp8 for $t {
            const NAME: &'static str = $name;
            const EXP_BITS: u32 = $exp;
            const MAN_BITS: u32 = $man;
            const MAX: f32 = $max;
            const MAX_BITS: u8 = $max_bits;
            #[inline(always)]
            fn from_f32(x: f32) -> Self {
                $t::from_f32(x)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                $t::to_f32(self)
            }
            #[inline(always)]
            fn to_bits(self) -> u8 {
                self.0
            }
            #[inline(always)]
            fn from_bits(bits: u8) -> Self {
                Self(bits)
            }
        }

        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}({:#04x} = {})", $name, self.0, self.to_f32())
            }
        }

        // SAFETY: `repr(transparent)` over `u8`: no padding, every bit pattern valid.
        unsafe impl bytemuck::Zeroable for $t {}
        // SAFETY: as above; `Copy` and `'static`.
        unsafe impl bytemuck::Pod for $t {}
        // SAFETY: one byte with the same meaning on the host and the device.
        unsafe impl KernelArg for $t {}
    )*};
}

fp8_types! {
    /// FP8 e4m3 (`E4M3FN`): 1 sign, 4 exponent (bias 7) and 3 mantissa bits; largest 448, no
    /// infinities, NaN `0x7F` and `0xFF`.
    E4m3: "e4m3", 4, 3, false, 448.0, 0x7E;
    /// FP8 e5m2: 1 sign, 5 exponent (bias 15) and 2 mantissa bits (the top byte of an f16);
    /// largest 57344, ±∞ and NaNs as IEEE.
    E5m2: "e5m2", 5, 2, true, 57344.0, 0x7B;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Every finite value of the format, with its bits, ascending by value over the
    /// non-negative ones.
    fn finite<F: Fp8>() -> Vec<(f64, u8)> {
        let mut v: Vec<(f64, u8)> = (0..=0x7Fu8)
            .map(|b| (F::from_bits(b).to_f32() as f64, b))
            .filter(|(x, _)| x.is_finite())
            .collect();
        v.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        v
    }

    /// The nearest value of the format by search (ties to the even bit pattern), saturating.
    fn nearest<F: Fp8>(table: &[(f64, u8)], x: f32) -> u8 {
        if x.is_nan() {
            return 0x7F;
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = (x as f64).abs();
        let (mut best, mut dist) = (0u8, f64::INFINITY);
        for &(v, b) in table {
            let d = (v - a).abs();
            if d < dist || (d == dist && b & 1 == 0) {
                (best, dist) = (b, d);
            }
        }
        if a > F::MAX as f64 {
            best = F::MAX_BITS;
        }
        sign | best
    }

    fn formats_round_like_the_search<F: Fp8>() {
        let table = finite::<F>();
        // Every byte back and forth (NaNs to the canonical 0x7F, ±∞ of e5m2 to ±max).
        for b in 0..=255u8 {
            let v = F::from_bits(b).to_f32();
            let back = F::from_f32(v).to_bits();
            if v.is_nan() {
                assert_eq!(back, 0x7F, "{} {b:#04x}", F::NAME);
            } else if v.is_infinite() {
                assert_eq!(back, (b & 0x80) | F::MAX_BITS, "{} {b:#04x}", F::NAME);
            } else {
                assert_eq!(back, b, "{} {b:#04x} = {v}", F::NAME);
            }
        }
        // Midpoints (ties), just beside them, and random bit patterns.
        let mut probes: Vec<f32> = Vec::new();
        for w in table.windows(2) {
            let mid = (w[0].0 + w[1].0) / 2.0;
            let m = mid as f32;
            probes.extend([
                m,
                f32::from_bits(m.to_bits() + 1),
                f32::from_bits(m.to_bits() - 1),
            ]);
        }
        let mut s = 0x9E37_79B9u32;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            probes.push(f32::from_bits(s));
            // Mostly near the format's range.
            probes.push(f32::from_bits(s & 0x83FF_FFFF | 0x3800_0000));
        }
        probes.extend([
            0.0,
            -0.0,
            F::MAX * 1.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        probes.extend([f32::MIN_POSITIVE, f32::from_bits(1), 1e-30]);
        for x in probes.into_iter().flat_map(|x| [x, -x]) {
            let got = F::from_f32(x).to_bits();
            assert_eq!(
                got,
                nearest::<F>(&table, x),
                "{} of {x:e} ({:#010x})",
                F::NAME,
                x.to_bits()
            );
        }
    }

    #[test]
    fn e4m3_rounds_to_nearest_even_and_saturates() {
        formats_round_like_the_search::<E4m3>();
        assert_eq!(E4m3::from_bits(0x7E).to_f32(), 448.0);
        assert_eq!(E4m3::from_bits(0x08).to_f32(), 2f32.powi(-6));
        assert_eq!(E4m3::from_bits(0x01).to_f32(), 2f32.powi(-9));
        assert!(E4m3::from_bits(0xFF).to_f32().is_nan());
        assert_eq!(E4m3::from_f32(1.1875).to_bits(), 0x3A);
        assert_eq!(E4m3::from_f32(464.0).to_bits(), 0x7E);
        assert_eq!(E4m3::from_f32(-0.0).to_bits(), 0x80);
        assert_eq!(E4m3::ONE.to_f32(), 1.0);
    }

    #[test]
    fn e5m2_rounds_to_nearest_even_and_saturates() {
        formats_round_like_the_search::<E5m2>();
        assert_eq!(E5m2::from_bits(0x7B).to_f32(), 57344.0);
        assert_eq!(E5m2::from_bits(0x01).to_f32(), 2f32.powi(-16));
        assert_eq!(E5m2::from_bits(0xFC).to_f32(), f32::NEG_INFINITY);
        assert!(E5m2::from_bits(0x7D).to_f32().is_nan());
        assert_eq!(E5m2::ONE.to_f32(), 1.0);
        // e5m2 is the top byte of an f16.
        for b in 0..=255u8 {
            let h = half::f16::from_bits(u16::from(b) << 8).to_f32();
            let v = E5m2::from_bits(b).to_f32();
            assert!(v == h || (v.is_nan() && h.is_nan()), "{b:#04x}");
        }
    }
}
