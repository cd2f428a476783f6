//! The special function unit's f32 functions on the simulator: computed exactly (`2^x`, `1 /
//! x`), where the GPU's `ex2.approx.ftz` and `rcp.approx.ftz` are within a few units in the
//! last place and flush subnormals ([`crate::math`] states the bounds kernels may rely on).

#[inline]
pub(crate) fn exp2_approx(x: f32) -> f32 {
    x.exp2()
}

#[inline]
pub(crate) fn rcp_approx(x: f32) -> f32 {
    1.0 / x
}
