//! bf16/f16/tf32 conversions on the simulator: the bit patterns PTX's `cvt` produces on the GPU,
//! computed in software. Pure functions of their input (no kernel context needed), so host code
//! and tests may call them through [`crate::half`] too.
//!
//! Narrowing (`cvt.rn.{bf16,f16}.f32`) rounds to nearest, ties to even, keeps subnormals (no
//! `.ftz`), overflows to ±∞, and turns every NaN into the canonical NaN `0x7FFF` (sign and
//! payload dropped), as CUDA's conversions do. `cvt.rna.tf32.f32` rounds to nearest, ties away
//! from zero, and leaves the 13 low bits zero; a NaN keeps its sign and its payload's upper
//! bits, the 13 low bits cut (`0x7F80_1FFF` becomes `+∞`). Widening is exact; bf16 → f32 is the 16-bit shift
//! (NaNs keep their bits, as the GPU side does), f16 → f32 (`cvt.f32.f16`) turns a NaN into
//! the canonical `0x7FFF_FFFF`. The GPU tests in `testing/device-tests/tests/tensor.rs` pin each of these
//! against the hardware.

/// The canonical NaN of bf16 and of f16.
pub(crate) const NAN16: u16 = 0x7FFF;
/// The canonical NaN of f32.
pub(crate) const NAN32: u32 = 0x7FFF_FFFF;

/// Rounds `x` (whose value is `x / 2^shift` in units of the result) to nearest, ties to even.
#[inline]
fn round_shift_rne(x: u32, shift: u32) -> u32 {
    let q = x >> shift;
    let rem = x & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    q + u32::from(rem > half || (rem == half && q & 1 == 1))
}

#[inline]
pub(crate) fn bf16_from_f32(x: f32) -> u16 {
    let b = x.to_bits();
    if b & 0x7FFF_FFFF > 0x7F80_0000 {
        return NAN16;
    }
    // The low 16 bits are dropped with round-to-nearest-even; a carry out of the mantissa
    // moves to the next binade and past the largest finite value to ∞, as IEEE requires.
    round_shift_rne(b, 16) as u16
}

#[inline]
pub(crate) fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

#[inline]
pub(crate) fn f16_from_f32(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7FFF_FFFF;
    if a > 0x7F80_0000 {
        return NAN16;
    }
    if a >= 0x477F_F000 {
        // 65520 = 65504 (the largest f16) + half an ulp: the tie goes to the even "next" value, ∞.
        return sign | 0x7C00;
    }
    if a >= 0x3880_0000 {
        // Normal in f16 (≥ 2^-14): rebias the exponent, round 13 mantissa bits away; a carry
        // ripples into the exponent correctly.
        let rebased = a - ((127 - 15) << 23);
        return sign | round_shift_rne(rebased, 13) as u16;
    }
    if a <= 0x3300_0000 {
        // At most 2^-25, half the smallest subnormal: rounds to zero (2^-25 itself is a tie to 0).
        return sign;
    }
    // Subnormal in f16: the value in units of 2^-24 is mant * 2^(exp - 126), exp in 102..=112
    // (a normal f32, so the implicit bit is there).
    let exp = a >> 23;
    let mant = (a & 0x007F_FFFF) | 0x0080_0000;
    sign | round_shift_rne(mant, 126 - exp) as u16
}

#[inline]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1F;
    let mant = u32::from(h & 0x3FF);
    f32::from_bits(match (exp, mant) {
        (0x1F, 0) => sign | 0x7F80_0000,
        (0x1F, _) => NAN32,
        (0, 0) => sign,
        // Subnormal: mant * 2^-24, exact in f32.
        (0, m) => sign | (m as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    })
}

#[inline]
pub(crate) fn tf32_from_f32(x: f32) -> u32 {
    let b = x.to_bits();
    if b & 0x7FFF_FFFF > 0x7F80_0000 {
        // As the H200 does (measured, scripts/cuda/cvt_nan_probe.cu): a NaN's low 13 bits are
        // cut, not rounded, so a NaN whose payload lies only there becomes ±∞.
        return b & 0xFFFF_E000;
    }
    if b & 0x7FFF_FFFF == 0x7F80_0000 {
        return b;
    }
    // Ties away from zero: add half an ulp of the 10-bit mantissa to the magnitude, truncate.
    (b + 0x1000) & 0xFFFF_E000
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Every finite non-negative value of a 16-bit format, ascending, by brute force: the
    /// reference the rounding is checked against (independent of the bit tricks above).
    fn finite_values(to_f32: fn(u16) -> f32, max_bits: u16) -> Vec<(f64, u16)> {
        (0..=max_bits).map(|h| (f64::from(to_f32(h)), h)).collect()
    }

    /// Round-to-nearest-even of `x` by search over `values` (ascending, non-negative); `inf`
    /// is the bit pattern of +∞ and `limit` the value from which results overflow.
    fn reference(values: &[(f64, u16)], x: f32, inf: u16) -> u16 {
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        let ax = f64::from(x.abs());
        let (max, max_bits) = *values.last().unwrap();
        let ulp_top = max - values[values.len() - 2].0;
        if ax >= max + ulp_top / 2.0 {
            // At or past the midpoint to the next (unrepresentable) value: the largest finite
            // has an odd mantissa in both formats, so the tie also goes to ∞.
            return sign | inf;
        }
        if ax > max {
            return sign | max_bits;
        }
        let i = values.partition_point(|&(v, _)| v < ax);
        let (hi, hi_bits) = values[i];
        if hi == ax || i == 0 {
            return sign | hi_bits;
        }
        let (lo, lo_bits) = values[i - 1];
        let pick = if ax - lo < hi - ax {
            lo_bits
        } else if hi - ax < ax - lo {
            hi_bits
        } else if lo_bits & 1 == 0 {
            lo_bits
        } else {
            hi_bits
        };
        sign | pick
    }

    /// f32 inputs that hit every case: all bf16/f16 values and their midpoints, neighbours of
    /// midpoints, powers of two across the range, and pseudo-random bits.
    fn probes() -> Vec<f32> {
        let mut v = Vec::new();
        for h in 0..=0xFFFFu32 {
            for f in [f32::from_bits(h << 16), f16_to_f32(h as u16)] {
                let b = f.to_bits();
                for d in [
                    0u32, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1000, 0xFFF, 0x1001,
                ] {
                    v.push(f32::from_bits(b.wrapping_add(d)));
                    v.push(f32::from_bits(b.wrapping_sub(d)));
                }
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(f32::from_bits((x >> 32) as u32));
        }
        v
    }

    #[test]
    fn f32_to_bf16_and_f16_round_to_nearest_even() {
        let bf = finite_values(bf16_to_f32, 0x7F7F);
        let hf = finite_values(f16_to_f32, 0x7BFF);
        for x in probes() {
            if x.is_nan() {
                assert_eq!(bf16_from_f32(x), NAN16, "{:#x}", x.to_bits());
                assert_eq!(f16_from_f32(x), NAN16, "{:#x}", x.to_bits());
                continue;
            }
            assert_eq!(
                bf16_from_f32(x),
                reference(&bf, x, 0x7F80),
                "bf16 of {x:e} ({:#x})",
                x.to_bits()
            );
            assert_eq!(
                f16_from_f32(x),
                reference(&hf, x, 0x7C00),
                "f16 of {x:e} ({:#x})",
                x.to_bits()
            );
        }
    }

    #[test]
    fn ties_go_to_even() {
        // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: even is 1.0.
        assert_eq!(bf16_from_f32(1.0 + 2f32.powi(-8)), 0x3F80);
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: goes up.
        assert_eq!(bf16_from_f32(1.0 + 3.0 * 2f32.powi(-8)), 0x3F82);
        assert_eq!(f16_from_f32(1.0 + 2f32.powi(-11)), 0x3C00);
        assert_eq!(f16_from_f32(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02);
        // Subnormal ties: 2^-25 → 0, 3·2^-25 → 2·2^-24 (even), 65520 → ∞.
        assert_eq!(f16_from_f32(2f32.powi(-25)), 0);
        assert_eq!(f16_from_f32(3.0 * 2f32.powi(-25)), 2);
        assert_eq!(f16_from_f32(65520.0), 0x7C00);
        assert_eq!(f16_from_f32(65519.996), 0x7BFF);
        assert_eq!(f16_from_f32(-65520.0), 0xFC00);
        // tf32 ties away from zero.
        assert_eq!(
            tf32_from_f32(1.0 + 2f32.powi(-11)),
            (1.0 + 2f32.powi(-10)).to_bits()
        );
        assert_eq!(
            tf32_from_f32(-(1.0 + 2f32.powi(-11))),
            (-(1.0 + 2f32.powi(-10))).to_bits()
        );
    }

    #[test]
    fn specials() {
        for (x, b, h) in [
            (f32::INFINITY, 0x7F80, 0x7C00),
            (f32::NEG_INFINITY, 0xFF80, 0xFC00),
            (0.0, 0, 0),
            (-0.0, 0x8000, 0x8000),
            (f32::MAX, 0x7F80, 0x7C00),
            (f32::from_bits(1), 0, 0),
            (-f32::from_bits(1), 0x8000, 0x8000),
            (f32::from_bits(0x0040_0000), 0x0040, 0),
        ] {
            assert_eq!(bf16_from_f32(x), b, "bf16({x:e})");
            assert_eq!(f16_from_f32(x), h, "f16({x:e})");
        }
        assert_eq!(bf16_from_f32(-f32::NAN), NAN16);
        assert_eq!(f16_from_f32(f32::from_bits(0xFF80_0001)), NAN16);
        assert_eq!(f16_to_f32(0x7E00).to_bits(), NAN32);
        assert_eq!(f16_to_f32(0xFC01).to_bits(), NAN32);
        assert_eq!(bf16_to_f32(0xFFC1).to_bits(), 0xFFC1_0000);
        assert_eq!(f16_to_f32(1), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x83FF), -1023.0 * 2f32.powi(-24));
        assert_eq!(tf32_from_f32(f32::NAN), 0x7FC0_0000);
        assert_eq!(tf32_from_f32(f32::from_bits(0xFFFF_FFFF)), 0xFFFF_E000);
        assert_eq!(tf32_from_f32(f32::from_bits(0x7F80_1FFF)), 0x7F80_0000);
        assert_eq!(tf32_from_f32(f32::NEG_INFINITY), 0xFF80_0000);
        assert_eq!(tf32_from_f32(f32::MAX), 0x7F80_0000);
    }

    #[test]
    fn widening_is_exact_and_round_trips() {
        for h in 0..=0xFFFFu16 {
            let (b, f) = (bf16_to_f32(h), f16_to_f32(h));
            if !b.is_nan() {
                assert_eq!(bf16_from_f32(b), h);
                assert_eq!(f64::from(b), f64::from(::half::bf16::from_bits(h).to_f32()));
            }
            if !f.is_nan() {
                assert_eq!(f16_from_f32(f), h);
                assert_eq!(f, ::half::f16::from_bits(h).to_f32(), "{h:#x}");
            }
        }
    }
}
