//! 16-bit floats: [`bf16`] and [`f16`], the `half` crate's types, the same on the host
//! (`SymBuffer<bf16>`, kernel arguments) and in kernels, with conversions that are PTX's `cvt` on
//! the GPU and the same bits on the simulator.
//!
//! ```ignore
//! use rshmem_device::half::{bf16, Half};
//! let h = bf16::from_f32_rn(1.0 / 3.0); // cvt.rn.bf16.f32 on the GPU
//! let x: f32 = h.to_f32_exact();       // exact widening
//! ```
//!
//! Use [`Half::from_f32_rn`] and [`Half::to_f32_exact`] (or [`to_bf16`], [`to_f16`], ...) in
//! kernels rather than the `half` crate's own `from_f32`/`to_f32`: those are software
//! conversions on every target (slow on the GPU) and return other NaN bit patterns. What these
//! return, on both backends:
//!
//! | conversion | GPU instruction | rounding | NaN | ±∞, overflow | subnormals |
//! |---|---|---|---|---|---|
//! | f32 → bf16 | `cvt.rn.bf16.f32` | nearest, ties to even | canonical `0x7FFF` | overflow → ±∞ | kept |
//! | f32 → f16 | `cvt.rn.f16.f32` | nearest, ties to even | canonical `0x7FFF` | ≥ 65520 → ±∞ | kept |
//! | bf16 → f32 | 16-bit shift | exact | bits kept | kept | kept |
//! | f16 → f32 | `cvt.f32.f16` | exact | canonical `0x7FFF_FFFF` | kept | kept |
//! | f32 → tf32 | `cvt.rna.tf32.f32` | nearest, ties away from zero | canonical `0x7FFF_FFFF` | overflow → ±∞ | kept |
//!
//! Both types are `bytemuck::Pod`, [`KernelArg`] and [`RmaScalar`]
//! (`shmem::p`/`g`/`iput`/`iget` move them as 16-bit words: NVSHMEM has no bf16 RMA type).
//!
//! [`RmaScalar`]: crate::shmem::RmaScalar

use crate::backend::cvt;
use crate::kernel::KernelArg;

pub use ::half::{bf16, f16};

/// bf16 and f16: conversions to and from `f32` that are one PTX `cvt` on the GPU.
pub trait Half: Copy + Default + PartialEq + sealed::Sealed + 'static {
    /// `"bf16"` or `"f16"`, for messages.
    const NAME: &'static str;
    /// Rounds `x` to the nearest value, ties to even (see the module table for NaN and ∞).
    fn from_f32_rn(x: f32) -> Self;
    /// The exact `f32` value (see the module table for NaN).
    fn to_f32_exact(self) -> f32;
    /// The bit pattern.
    fn to_bits(self) -> u16;
    /// From a bit pattern.
    fn from_bits(bits: u16) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! halves {
    ($($t:ident: $from:ident, $to:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Half for $t {
            const NAME: &'static str = stringify!($t);
            #[inline(always)]
            fn from_f32_rn(x: f32) -> Self {
                $t::from_bits(cvt::$from(x))
            }
            #[inline(always)]
            fn to_f32_exact(self) -> f32 {
                cvt::$to(self.to_bits())
            }
            #[inline(always)]
            fn to_bits(self) -> u16 {
                $t::to_bits(self)
            }
            #[inline(always)]
            fn from_bits(bits: u16) -> Self {
                $t::from_bits(bits)
            }
        }
        // SAFETY: `repr(transparent)` over `u16` in the `half` crate, on every target.
        unsafe impl KernelArg for $t {}
    )*};
}

halves! {
    bf16: bf16_from_f32, bf16_to_f32;
    f16: f16_from_f32, f16_to_f32;
}

/// `x` rounded to bf16 (`cvt.rn.bf16.f32`).
#[inline(always)]
pub fn to_bf16(x: f32) -> bf16 {
    bf16::from_f32_rn(x)
}

/// `x` rounded to f16 (`cvt.rn.f16.f32`).
#[inline(always)]
pub fn to_f16(x: f32) -> f16 {
    f16::from_f32_rn(x)
}

/// The exact value of `h`.
#[inline(always)]
pub fn from_bf16(h: bf16) -> f32 {
    h.to_f32_exact()
}

/// The exact value of `h`.
#[inline(always)]
pub fn from_f16(h: f16) -> f32 {
    h.to_f32_exact()
}

/// `x` rounded to tf32 (`cvt.rna.tf32.f32`: nearest, ties away from zero), as the 32-bit word
/// the `m16n8k8` tf32 `mma` reads (its 13 low bits are zero).
#[inline(always)]
pub fn to_tf32(x: f32) -> u32 {
    cvt::tf32_from_f32(x)
}

/// Two 16-bit values in one 32-bit register, `lo` in bits 0..16 (the element with the lower
/// index, as every `mma`/`ldmatrix` fragment holds them).
#[inline(always)]
pub fn pack<T: Half>(lo: T, hi: T) -> u32 {
    u32::from(lo.to_bits()) | u32::from(hi.to_bits()) << 16
}

/// The two 16-bit values of a register, `(bits 0..16, bits 16..32)`.
#[inline(always)]
pub fn unpack<T: Half>(word: u32) -> (T, T) {
    (T::from_bits(word as u16), T::from_bits((word >> 16) as u16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_types_are_halfs_with_cvt_conversions() {
        assert_eq!(to_bf16(1.0).to_bits(), 0x3F80);
        assert_eq!(to_f16(-2.0).to_bits(), 0xC000);
        assert_eq!(from_bf16(bf16::from_bits(0x4049)), 3.140625);
        assert_eq!(from_f16(f16::from_bits(0x3555)), 0.333_251_95);
        assert_eq!(to_f16(f32::NAN).to_bits(), 0x7FFF);
        let w = pack(to_bf16(1.0), to_bf16(-1.0));
        assert_eq!(w, 0xBF80_3F80);
        assert_eq!(unpack::<bf16>(w), (to_bf16(1.0), to_bf16(-1.0)));
        assert_eq!(<bf16 as Half>::NAME, "bf16");
    }
}
