//! FP8 experts, for both modes' cases: expert `e`'s weight `W_e` (hidden x hidden, out x in)
//! quantised per 128 x 128 block, one `Ops::grouped_gemm_fp8` over the received rows as they
//! are (A's scales as received), and each token's output checked against an f64 reference of
//! the *dequantised* rows and weights (`byte × scale`, exact in f64), `Σ_kk w_kk y_kk` with
//! `y = W_e x`.
//!
//! **The bound** of [`super::Experts::Fp8Gemm`], per output element, from the steps' roundings:
//!
//! 1. the GEMM's f32 result `Y` of one entry (`docs/gemm.md`, FP8 block scales): `|Y - y| ≤
//!    γ S`, `S = Σ_i |x_i W_i|`, `γ = γ_tc(min(h, 128)) + γ(⌈h / 128⌉ + 3)` — the tensor cores'
//!    sum of a 128-block (`u = 2⁻²⁴` on the simulator; `2⁻¹³` assumed on GPUs, as
//!    `gemm_fp8.rs` does), then per block the scale product, the promotion's multiply and add;
//! 2. its bf16 rounding: `E = γ S + 2⁻⁸ (|y| + γ S)` for the row the combine receives;
//! 3. the combine: `Σ_kk w_kk ỹ_kk` in f32 (at most 16 terms: `2⁻²⁰ Σ |w ỹ|`), rounded once
//!    to bf16 (`2⁻⁸` of its value): `|out - ref| ≤ Σ w E + 2⁻⁸ (|ref| + Σ w E) + 2⁻²⁰ (Σ |w y|
//!    + Σ w E)`, `ref = Σ w y`.

use super::{scales_per_row, Routing};
use rshmem::device::fp8::E4m3;
use rshmem::{bf16, Backend, Shmem, Stream, SymBuffer};
use rshmem_ops::fp8::{self, Blocks, Quantized};
use rshmem_ops::{BLayout, Fp8Scales, GroupRows, GroupedShape, MoeConfig, Ops};

/// Expert `e`'s weight for `seed`, `h x h` (out x in), quantised per 128 x 128 block: bf16
/// values over 2⁻⁶..2² (signs mixed, some zeros), the same on every PE.
fn expert_weight(seed: u64, e: usize, h: usize) -> Quantized {
    let mut st = seed ^ (e as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03) | 1;
    let w: Vec<bf16> = (0..h * h)
        .map(|_| {
            let r = super::xorshift(&mut st);
            if r % 13 == 0 {
                return bf16::ZERO;
            }
            let mag = 2f32.powi((r % 9) as i32 - 6) * (1.0 + (r >> 16) as u8 as f32 / 256.0);
            bf16::from_f32(if r >> 40 & 1 == 1 { -mag } else { mag })
        })
        .collect();
    fp8::quantize(&w, h, h, Blocks::PER_BLOCK)
}

/// An FP8 value times its scale, exactly (4 significant bits times 24 fit an f64).
fn deq(byte: u8, scale: f32) -> f64 {
    f64::from(fp8::to_f32(byte)) * f64::from(scale)
}

/// `γ(n)` for unit roundoff `u`.
fn gamma(n: u32, u: f64) -> f64 {
    let nu = f64::from(n) * u;
    nu / (1.0 - nu)
}

/// This PE's local experts' weights as the FP8 grouped GEMM takes them (B, `local` x h x h,
/// and its block scales), and every expert's, dequantised (for the reference).
pub struct Weights<'s> {
    b: SymBuffer<'s, E4m3>,
    scales: SymBuffer<'s, f32>,
    deq: Vec<Vec<f64>>,
    local: u32,
    hidden: u32,
}

impl<'s> Weights<'s> {
    pub fn new(shmem: &'s Shmem, cfg: &MoeConfig, seed: u64) -> rshmem::Result<Self> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let (h, local) = (cfg.hidden as usize, cfg.experts as usize / n);
        let all: Vec<Quantized> = (0..cfg.experts as usize)
            .map(|e| expert_weight(seed, e, h))
            .collect();
        let mine = &all[me * local..(me + 1) * local];
        let b: Vec<E4m3> = mine.iter().flat_map(|q| q.values().to_vec()).collect();
        let scales: Vec<f32> = mine.iter().flat_map(|q| q.scales.clone()).collect();
        let kb = h.div_ceil(128);
        let deq = all
            .iter()
            .map(|q| {
                (0..h * h)
                    .map(|i| deq(q.bytes[i], q.scales[i / h / 128 * kb + i % h / 128]))
                    .collect()
            })
            .collect();
        Ok(Self {
            b: shmem.alloc_from(&b)?,
            scales: shmem.alloc_from(&scales)?,
            deq,
            local: local as u32,
            hidden: h as u32,
        })
    }

    /// The experts as one FP8 grouped GEMM over received rows as they are: `x` the e4m3
    /// bytes, `scales` A's block scales in the GEMM's layout, groups as `rows` says (one per
    /// local expert), into `eo`.
    pub fn run(
        &self,
        ops: &Ops<'s>,
        stream: &Stream<'_>,
        (x, scales): (&SymBuffer<'s, u8>, &SymBuffer<'s, f32>),
        rows: GroupRows<'_>,
        eo: &mut SymBuffer<'s, bf16>,
    ) -> rshmem::Result<()> {
        let shape = GroupedShape {
            groups: self.local,
            n: self.hidden,
            k: self.hidden,
            b_layout: BLayout::NK,
        };
        let scales = Fp8Scales::Block {
            a: scales.into(),
            b: (&self.scales).into(),
        };
        let a = x.range(..)?.cast::<E4m3>()?;
        ops.grouped_gemm_fp8::<E4m3, bf16>(stream, a, &self.b, eo, shape, rows, scales)
    }
}

/// Checks this PE's combined tokens `got` (poisoned with −7 past them) against the f64
/// reference of the FP8 experts (the module docs' bound); returns the worst error as a
/// fraction of its bound.
pub fn check_fp8_experts(
    backend: Backend,
    cfg: &MoeConfig,
    mine: &Routing,
    w: &Weights<'_>,
    got: &[bf16],
    what: &str,
) -> f64 {
    let (k, h) = (cfg.top_k as usize, cfg.hidden as usize);
    let sr = scales_per_row(cfg);
    let tc = match backend {
        Backend::Sim => 2f64.powi(-24),
        Backend::Gpu => 2f64.powi(-13),
    };
    let gam = gamma(h.min(128) as u32, tc) + gamma(h.div_ceil(128) as u32 + 3, 2f64.powi(-24));
    let mut worst = 0f64;
    for t in 0..mine.tokens {
        let x: Vec<f64> = (0..h)
            .map(|i| deq(mine.x8[t * h + i], mine.scales[t * sr + i / 128]))
            .collect();
        for c in 0..h {
            let (mut want, mut err, mut mag) = (0f64, 0f64, 0f64);
            for kk in 0..k {
                let e = mine.topk[t * k + kk];
                if e < 0 || e as u32 >= cfg.experts {
                    continue;
                }
                let wt = f64::from(mine.weights[t * k + kk]);
                let row = &w.deq[e as usize][c * h..(c + 1) * h];
                let (mut y, mut s) = (0f64, 0f64);
                for (a, b) in x.iter().zip(row) {
                    y += a * b;
                    s += (a * b).abs();
                }
                let sum = gam * s;
                want += wt * y;
                err += wt * (sum + (y.abs() + sum) / 256.0);
                mag += (wt * y).abs();
            }
            let bound = err + (want.abs() + err) / 256.0 + (mag + err) / f64::from(1u32 << 20);
            let v = got[t * h + c].to_f64();
            let off = (v - want).abs();
            assert!(
                off <= bound,
                "{what}: out[{t}][{c}] = {v}, reference {want}, error {off:.3e} above the bound \
                 {bound:.3e}"
            );
            if bound > 0.0 {
                worst = worst.max(off / bound);
            }
        }
    }
    assert!(
        got[mine.tokens * h..]
            .iter()
            .all(|&v| v == bf16::from_f32(-7.0)),
        "{what}: the combine wrote past this PE's tokens"
    );
    worst
}
