//! Warp-level tensor cores on the simulator: `mma.sync`, `ldmatrix`, `stmatrix` as meetings of
//! the warp (see `meet`), with the PTX ISA's fragment layouts (`layout`), and `cp.async` with
//! its groups (`cp_async`).
//!
//! `mma` multiplies exactly: every product of two bf16, f16 or tf32 values is exact in f64, the
//! k products and C are summed in f64 and rounded once to f32 (nearest even). The hardware's
//! rounding of that sum is not specified by the ISA (it is within a few f32 ulps of the sum's
//! magnitude); tests bound the difference. A NaN result is the canonical NaN `0x7FFF_FFFF`.
//! What the simulator refuses, with the operation and the kernel named: tf32 operands whose 13
//! low bits are not zero (the hardware's use of them is unspecified: round with
//! `half::to_tf32`), row addresses of `ldmatrix`/`stmatrix` that are not 16-byte aligned or not
//! inside the block's dynamic shared memory, `cp.async` addresses that are misaligned or in the
//! wrong memory, partial warps, and lanes of one warp making different operations.

mod cp_async;
mod layout;
mod matrix;
mod meet;
#[cfg(test)]
mod tests;

pub(crate) use cp_async::{cp_async, cp_async_commit, cp_async_wait_all, cp_async_wait_group};
pub(crate) use matrix::{ldmatrix, stmatrix};

use std::format;

use super::cvt;
use meet::{meet, place};

/// How the 16-bit halves of an operand register read.
#[derive(Clone, Copy)]
enum Operand {
    Bf16,
    F16,
    Tf32,
}

impl Operand {
    /// Element `i` of a fragment whose registers are `regs` (two 16-bit elements per register,
    /// the lower index in the low half; one tf32 per register).
    fn elem(self, regs: &[u32], i: usize) -> f64 {
        f64::from(match self {
            Operand::Bf16 => cvt::bf16_to_f32((regs[i / 2] >> (16 * (i % 2))) as u16),
            Operand::F16 => cvt::f16_to_f32((regs[i / 2] >> (16 * (i % 2))) as u16),
            Operand::Tf32 => f32::from_bits(regs[i]),
        })
    }
}

/// The shape of one `mma`: its name, K, the element count of A and B per lane, and the
/// layouts.
struct Mma {
    op: &'static str,
    k: usize,
    operand: Operand,
    a_elems: usize,
    b_elems: usize,
    a_at: fn(usize, usize) -> (usize, usize),
    b_at: fn(usize, usize) -> (usize, usize),
}

impl Mma {
    /// D = A·B + C for this lane, from every lane's registers `[a.., b.., c..]`.
    fn run(&self, a: &[u32], b: &[u32], c: [f32; 4]) -> [f32; 4] {
        let (na, nb) = (a.len(), b.len());
        let mut mine = std::vec::Vec::with_capacity(na + nb + 4);
        mine.extend_from_slice(a);
        mine.extend_from_slice(b);
        mine.extend(c.iter().map(|x| x.to_bits()));
        meet(self.op, &mine, |ctx, lane, all| {
            if let Operand::Tf32 = self.operand {
                for (l, words) in all.iter().enumerate() {
                    if let Some(r) = words[..na + nb].iter().position(|w| w & 0x1FFF != 0) {
                        let (what, reg) = if r < na { ("A", r) } else { ("B", r - na) };
                        ctx.fail(format!(
                            "{}: lane {l}'s {what} register {reg} holds {:#010x}, whose 13 low bits \
                             are not zero: the hardware's use of them is not specified, so the \
                             simulator cannot run it; round the values with half::to_tf32",
                            place(ctx, self.op),
                            words[r]
                        ));
                    }
                }
            }
            let mut am = [[0f64; 16]; 16];
            let mut bm = [[0f64; 8]; 16];
            let mut cm = [[0f64; 8]; 16];
            for (l, words) in all.iter().enumerate() {
                for i in 0..self.a_elems {
                    let (r, k) = (self.a_at)(l, i);
                    am[r][k] = self.operand.elem(&words[..na], i);
                }
                for i in 0..self.b_elems {
                    let (k, n) = (self.b_at)(l, i);
                    bm[k][n] = self.operand.elem(&words[na..na + nb], i);
                }
                for i in 0..4 {
                    let (r, n) = layout::c_m16n8(l, i);
                    cm[r][n] = f64::from(f32::from_bits(words[na + nb + i]));
                }
            }
            core::array::from_fn(|i| {
                let (r, n) = layout::c_m16n8(lane, i);
                let d = (0..self.k).fold(cm[r][n], |s, k| s + am[r][k] * bm[k][n]) as f32;
                if d.is_nan() {
                    f32::from_bits(cvt::NAN32)
                } else {
                    d
                }
            })
        })
    }
}

macro_rules! mma_m16n8k16 {
    ($($name:ident: $operand:ident, $op:literal;)*) => {$(
        pub(crate) fn $name(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
            Mma {
                op: $op,
                k: 16,
                operand: Operand::$operand,
                a_elems: 8,
                b_elems: 4,
                a_at: layout::a_m16n8k16,
                b_at: layout::b_m16n8k16,
            }
            .run(&a, &b, c)
        }
    )*};
}

mma_m16n8k16! {
    mma_m16n8k16_bf16: Bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
    mma_m16n8k16_f16: F16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
}

pub(crate) fn mma_m16n8k8_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    Mma {
        op: "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        k: 8,
        operand: Operand::Tf32,
        a_elems: 4,
        b_elems: 2,
        a_at: layout::a_m16n8k8_tf32,
        b_at: layout::b_m16n8k8_tf32,
    }
    .run(&a, &b, c)
}
