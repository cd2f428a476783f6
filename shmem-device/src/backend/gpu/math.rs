//! nvptx64: f32 functions on the special function unit (`ex2.approx`, `rcp.approx`). The
//! simulator's twin is `sim::math`, which computes them exactly.

#[inline(always)]
pub(crate) fn exp2_approx(x: f32) -> f32 {
    let y: f32;
    // SAFETY: a register-to-register instruction.
    unsafe {
        core::arch::asm!("ex2.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x, options(pure, nomem, nostack))
    };
    y
}

#[inline(always)]
pub(crate) fn rcp_approx(x: f32) -> f32 {
    let y: f32;
    // SAFETY: a register-to-register instruction.
    unsafe {
        core::arch::asm!("rcp.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x, options(pure, nomem, nostack))
    };
    y
}
