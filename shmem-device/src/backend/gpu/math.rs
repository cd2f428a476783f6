//! nvptx64: f32 functions on the special function unit (`ex2.approx`, `rcp.approx`). The
//! simulator's twin is `sim::math`, which computes them exactly.

/// `pub(crate) fn $name(x: f32) -> f32` as the one PTX instruction `$op`.
macro_rules! sfu_f32 {
    ($($name:ident => $op:literal;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name(x: f32) -> f32 {
            let y: f32;
            // SAFETY: a register-to-register instruction.
            unsafe {
                core::arch::asm!(concat!($op, " {y}, {x};"), y = out(reg32) y, x = in(reg32) x, options(pure, nomem, nostack))
            };
            y
        }
    )*};
}

sfu_f32! {
    exp2_approx => "ex2.approx.ftz.f32";
    rcp_approx => "rcp.approx.ftz.f32";
}
