//! f32 functions on the GPU's special function unit: one instruction each where `core` (no
//! libm on nvptx) would need a polynomial or an IEEE division of some forty. For epilogues
//! whose arithmetic runs beside a memory-bound mainloop (SwiGLU's SiLU: `rshmem_gemm::act`).
//!
//! Bounds (PTX ISA, `ex2.approx.ftz.f32`, `rcp.approx.ftz.f32`): [`exp2_approx`] within
//! `2⁻²²` of `2^x` relative (+∞ above 128, 0 below -126: subnormal results flush to zero);
//! [`rcp_approx`] within one unit in the last place of `1 / x` (`1 / ±∞ = ±0`). The
//! simulator computes both exactly, so a host check of a kernel that uses them must allow
//! for these bounds, not for the simulator's result.
//!
//! ```
//! use rshmem_device::math;
//! let sigmoid = |x: f32| math::rcp_approx(1.0 + math::exp2_approx(-x * core::f32::consts::LOG2_E));
//! assert!((sigmoid(0.0) - 0.5).abs() < 1e-6);
//! assert_eq!(sigmoid(-200.0), 0.0);
//! ```

use crate::backend;

/// `2^x` on the special function unit (module docs for its bounds).
#[inline(always)]
pub fn exp2_approx(x: f32) -> f32 {
    backend::math::exp2_approx(x)
}

/// `1 / x` on the special function unit (module docs for its bounds).
#[inline(always)]
pub fn rcp_approx(x: f32) -> f32 {
    backend::math::rcp_approx(x)
}
