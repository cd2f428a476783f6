//! Activation functions for epilogues ([`crate::Epilogue::store`] applies them to the f32
//! accumulators before rounding): [`gelu`] and the [`exp`] it is made of, and [`silu`]
//! (SwiGLU's gate, [`crate::glu`]) on the special function unit.
//!
//! GELU here is the tanh form `gelu(x) = x / 2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`
//! (PyTorch's `gelu(approximate="tanh")`), evaluated in f32.
//!
//! `core` has no `exp` on nvptx (no libm), so [`exp`] is written here: `e^x = 2^n · 2^f` with
//! `n = round(x · log2 e)`, `|f| <= 1/2`, and `2^f = e^(f ln 2)` by its Taylor polynomial of
//! degree 6 (relative error below 2e-7 for `|f ln 2| <= 0.347`; rounding `x log2 e` adds
//! `1e-7 |x|`). A host reference allows for it: [`gelu`] is within `1e-6 · (1 + |x|)` of the
//! exact tanh form (tested below).

use rshmem_device::math;

/// `e^x` in f32 (see the module docs); 0 below -87, +inf above 88.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    if x < -87.0 {
        return 0.0;
    }
    if x > 88.0 {
        return f32::INFINITY;
    }
    let t = x * core::f32::consts::LOG2_E;
    // Round to nearest without `round` (also a libm function): t + 0.5, truncated toward -inf.
    let n = {
        let s = t + 0.5;
        let i = s as i32;
        if (i as f32) > s {
            i - 1
        } else {
            i
        }
    };
    let y = (t - n as f32) * core::f32::consts::LN_2;
    // e^y, |y| <= 0.347: Horner over 1, y, y²/2, ..., y⁶/720.
    let p = 1.0
        + y * (1.0
            + y * (0.5 + y * (1.0 / 6.0 + y * (1.0 / 24.0 + y * (1.0 / 120.0 + y / 720.0)))));
    // 2^n for n in -126..=127 (the clamp above keeps n there).
    p * f32::from_bits(((n + 127) as u32) << 23)
}

/// The tanh form of GELU in f32 (see the module docs).
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    const C: f32 = 0.797_884_6; // √(2/π)
    let u = C * (x + 0.044_715 * x * x * x);
    // tanh(u) = 1 - 2 / (e^(2u) + 1): 1 for large u (e^(2u) = inf), -1 for very negative u.
    let tanh = 1.0 - 2.0 / (exp(2.0 * u) + 1.0);
    0.5 * x * (1.0 + tanh)
}

/// SiLU (swish) in f32: `x · σ(x) = x / (1 + e^(-x))`, with `e^(-x) = 2^(-x log2 e)` and the
/// reciprocal on the special function unit ([`rshmem_device::math`]): a few instructions where
/// [`exp`] and an IEEE division took some forty, which SwiGLU's epilogue pays per column pair
/// (ncu: the fused MoE layer's gate/up GEMM ran 6 % behind the same GEMM alone, docs/moe.md).
/// `-0` for very negative `x` (the denominator overflows to infinity), `x` for large `x`.
/// Within `1e-6 · |x|` of the exact value on the GPU: `2⁻²²` from `ex2`, one ulp from `rcp`,
/// `|x| 2⁻²⁴` from rounding `x log2 e` (relative to `σ`, so for `|x| ≤ 9`; beyond, `σ` or
/// `x σ` is within `e⁻⁹` of its limit and the error shrinks with it). The simulator's are
/// exact (tested below against that bound too).
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x * math::rcp_approx(1.0 + math::exp2_approx(-x * core::f32::consts::LOG2_E))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn exp_and_gelu_are_within_their_stated_error() {
        let mut x = -90.0f32;
        while x < 90.0 {
            let (got, want) = (f64::from(exp(x)), f64::from(x).exp());
            if want > 1e-37 && want < 1e38 {
                // The polynomial's 2e-7, and the rounding of x log2 e (6e-8 relative, so an
                // absolute error growing with |x|).
                let bound = (4e-7 + 1e-7 * f64::from(x.abs())) * want;
                assert!((got - want).abs() <= bound, "exp({x}) = {got}, want {want}");
            }
            let xd = f64::from(x);
            let g =
                0.5 * xd * (1.0 + (0.797_884_560_802_865_4 * (xd + 0.044_715 * xd.powi(3))).tanh());
            let err = (f64::from(gelu(x)) - g).abs();
            assert!(
                err <= 1e-6 * (1.0 + xd.abs()),
                "gelu({x}) = {}, want {g}",
                gelu(x)
            );
            let s = xd / (1.0 + (-xd).exp());
            assert!(
                (f64::from(silu(x)) - s).abs() <= 1e-6 * xd.abs(),
                "silu({x}) = {}, want {s}",
                silu(x)
            );
            x += 0.0137;
        }
    }

    /// [`silu`]'s bound holds with the GPU's errors, not only the simulator's exact `ex2` and
    /// `rcp`: every sign of `ex2`'s `2⁻²²`, `rcp`'s `2⁻²³` and the `2⁻²⁴` of rounding
    /// `x log2 e`, at their worst together.
    #[test]
    fn silu_is_within_its_bound_under_the_special_function_units_errors() {
        let mut x = -120.0f32;
        while x < 120.0 {
            let xd = f64::from(x);
            let want = xd / (1.0 + (-xd).exp());
            for signs in 0..8 {
                let sign = |bit: u32| if signs >> bit & 1 == 1 { 1.0 } else { -1.0 };
                let t =
                    f64::from(-x * core::f32::consts::LOG2_E) * (1.0 + sign(0) * 2f64.powi(-24));
                let e = t.exp2() * (1.0 + sign(1) * 2f64.powi(-22));
                let got = xd / (1.0 + e) * (1.0 + sign(2) * 2f64.powi(-23));
                assert!(
                    (got - want).abs() <= 1e-6 * xd.abs(),
                    "silu({x}) could be {got}, want {want}"
                );
            }
            x += 0.0731;
        }
    }
}
