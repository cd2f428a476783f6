//! nvptx64: bf16/f16/tf32 conversions with PTX `cvt` (sm_80+). The simulator's twin is
//! `sim::cvt`, which documents the bit patterns these produce.

#[inline(always)]
pub(crate) fn bf16_from_f32(x: f32) -> u16 {
    let h: u16;
    // SAFETY: a register-to-register conversion.
    unsafe {
        core::arch::asm!("cvt.rn.bf16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x, options(pure, nomem, nostack))
    };
    h
}

#[inline(always)]
pub(crate) fn bf16_to_f32(h: u16) -> f32 {
    // Exact: bf16 is the high half of an f32 (`cvt.f32.bf16` needs sm_90; this is the same on
    // every architecture and keeps NaN bits, as the simulator does).
    f32::from_bits(u32::from(h) << 16)
}

#[inline(always)]
pub(crate) fn f16_from_f32(x: f32) -> u16 {
    let h: u16;
    // SAFETY: a register-to-register conversion.
    unsafe {
        core::arch::asm!("cvt.rn.f16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x, options(pure, nomem, nostack))
    };
    h
}

#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let x: f32;
    // SAFETY: a register-to-register conversion.
    unsafe {
        core::arch::asm!("cvt.f32.f16 {x}, {h};", x = out(reg32) x, h = in(reg16) h, options(pure, nomem, nostack))
    };
    x
}

#[inline(always)]
pub(crate) fn tf32_from_f32(x: f32) -> u32 {
    let t: u32;
    // SAFETY: a register-to-register conversion.
    unsafe {
        core::arch::asm!("cvt.rna.tf32.f32 {t}, {x};", t = out(reg32) t, x = in(reg32) x, options(pure, nomem, nostack))
    };
    t
}
