//! FP8 on the host: quantisation with block scales as DeepSeek-V3 uses them — one f32 scale
//! per `1 × 128` block of activations (per token, per 128 channels) and per `128 × 128` block
//! of weights — or one scale per tensor, for the FP8 paths of the ops
//! (`Ops::gemm_fp8`, [`crate::Ops::moe_dispatch_fp8`]), in either FP8 format of
//! `rshmem_device::fp8` ([`E4m3`], [`E5m2`]), whose conversions (round to nearest even,
//! saturating) are the ones kernels use: one implementation.
//!
//! e4m3 ("fn": finite, no infinities) has 1 sign, 4 exponent (bias 7) and 3 mantissa bits:
//! largest 448, smallest normal 2⁻⁶, smallest subnormal 2⁻⁹; `0x7F` and `0xFF` are NaN.
//! e5m2 has 5 exponent bits (bias 15) and 2 mantissa bits: largest 57344, smallest normal
//! 2⁻¹⁴, smallest subnormal 2⁻¹⁶.
//!
//! ```
//! use rshmem_device::bf16;
//! use rshmem_ops::fp8::{self, Blocks};
//! let x: Vec<bf16> = (0..256).map(|i| bf16::from_f32(i as f32 - 100.0)).collect();
//! let q = fp8::quantize(&x, 1, 256, Blocks::PER_TOKEN); // one row, two blocks of 128
//! assert_eq!((q.bytes.len(), q.scales.len()), (256, 2));
//! let back = q.dequantize();
//! for (v, w) in x.iter().zip(&back) {
//!     let v = v.to_f32();
//!     assert!((v - w).abs() <= q.error_bound(v, q.scales[0].max(q.scales[1])));
//! }
//! // e5m2, one scale for the whole tensor:
//! let q5 = fp8::quantize_as::<fp8::E5m2>(&x, 1, 256, Blocks::tensor(1, 256));
//! assert_eq!(q5.scales.len(), 1);
//! ```

use rshmem_device::bf16;
pub use rshmem_device::fp8::{E4m3, E5m2, Fp8};
use std::marker::PhantomData;

/// The largest finite e4m3 value.
pub const MAX: f32 = <E4m3 as Fp8>::MAX;

/// The value of an e4m3 byte (NaN for `0x7F` and `0xFF`): [`E4m3::to_f32`].
pub fn to_f32(b: u8) -> f32 {
    E4m3::from_bits(b).to_f32()
}

/// `x` rounded to the nearest e4m3 value (ties to even), saturating at ±[`MAX`]; NaN gives
/// `0x7F`: [`E4m3::from_f32`].
pub fn from_f32(x: f32) -> u8 {
    E4m3::from_f32(x).to_bits()
}

/// The shape of a quantisation block: `rows × cols` elements share a scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocks {
    /// Rows per block.
    pub rows: usize,
    /// Columns per block.
    pub cols: usize,
}

impl Blocks {
    /// Activations: one scale per token and 128 channels.
    pub const PER_TOKEN: Blocks = Blocks { rows: 1, cols: 128 };
    /// Weights: one scale per 128 × 128 block.
    pub const PER_BLOCK: Blocks = Blocks {
        rows: 128,
        cols: 128,
    };

    /// One scale for the whole `rows × cols` matrix (per-tensor scaling).
    pub const fn tensor(rows: usize, cols: usize) -> Blocks {
        Blocks {
            rows: if rows == 0 { 1 } else { rows },
            cols: if cols == 0 { 1 } else { cols },
        }
    }
}

/// A quantised row-major matrix: `F` values (e4m3 by default) and the blocks' scales
/// (row-major over the blocks: block `(i, j)` of `⌈rows / b.rows⌉ × ⌈cols / b.cols⌉` at
/// `i × ⌈cols / b.cols⌉ + j`), with `x ≈ value × scale` of the element's block.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantized<F: Fp8 = E4m3> {
    /// `rows × cols` FP8 values, as bytes ([`Quantized::values`] gives them typed).
    pub bytes: Vec<u8>,
    /// One f32 per block.
    pub scales: Vec<f32>,
    /// The matrix's rows and columns.
    pub rows: usize,
    /// See `rows`.
    pub cols: usize,
    /// The block shape.
    pub blocks: Blocks,
    format: PhantomData<F>,
}

/// Quantises the `rows × cols` row-major `x` to e4m3 with one scale per block: see
/// [`quantize_as`].
pub fn quantize(x: &[bf16], rows: usize, cols: usize, blocks: Blocks) -> Quantized {
    quantize_as::<E4m3>(x, rows, cols, blocks)
}

/// Quantises the `rows × cols` row-major `x` to `F` with one scale per block: `amax / F::MAX`
/// of the block (1 for an all-zero block), so that the block's largest magnitude maps to the
/// format's largest value and nothing saturates.
pub fn quantize_as<F: Fp8>(x: &[bf16], rows: usize, cols: usize, blocks: Blocks) -> Quantized<F> {
    assert_eq!(
        x.len(),
        rows * cols,
        "fp8::quantize: {rows} x {cols} needs that many elements"
    );
    assert!(
        blocks.rows > 0 && blocks.cols > 0,
        "fp8::quantize: empty blocks"
    );
    let (br, bc) = (rows.div_ceil(blocks.rows), cols.div_ceil(blocks.cols));
    let mut scales = vec![1.0f32; br * bc];
    for (i, j) in (0..br).flat_map(|i| (0..bc).map(move |j| (i, j))) {
        let mut amax = 0f32;
        for r in i * blocks.rows..((i + 1) * blocks.rows).min(rows) {
            for c in j * blocks.cols..((j + 1) * blocks.cols).min(cols) {
                amax = amax.max(x[r * cols + c].to_f32().abs());
            }
        }
        if amax > 0.0 {
            scales[i * bc + j] = amax / F::MAX;
        }
    }
    let bytes = (0..rows * cols)
        .map(|k| {
            let (r, c) = (k / cols, k % cols);
            let scale = scales[r / blocks.rows * bc + c / blocks.cols];
            F::from_f32(x[k].to_f32() / scale).to_bits()
        })
        .collect();
    Quantized {
        bytes,
        scales,
        rows,
        cols,
        blocks,
        format: PhantomData,
    }
}

impl<F: Fp8> Quantized<F> {
    /// The values, typed (what a `SymBuffer<F>` is made from).
    pub fn values(&self) -> &[F] {
        bytemuck::cast_slice(&self.bytes)
    }

    /// The scale of element `(r, c)`'s block.
    pub fn scale(&self, r: usize, c: usize) -> f32 {
        let bc = self.cols.div_ceil(self.blocks.cols);
        self.scales[r / self.blocks.rows * bc + c / self.blocks.cols]
    }

    /// The scales column-major over the blocks: block `(i, j)` at `j × ⌈rows / b.rows⌉ + i`.
    /// For activations quantised per token ([`Blocks::PER_TOKEN`]) this is the layout
    /// `Ops::gemm_fp8` reads A's scales in: `⌈k / 128⌉` rows of `m` scales, one per
    /// row of A (M contiguous, as DeepGEMM's and `torch._scaled_mm`'s 1 × 128 scales).
    pub fn scales_column_major(&self) -> Vec<f32> {
        let (br, bc) = (
            self.rows.div_ceil(self.blocks.rows),
            self.cols.div_ceil(self.blocks.cols),
        );
        (0..br * bc)
            .map(|t| self.scales[(t % br) * bc + t / br])
            .collect()
    }

    /// The values the bytes and scales stand for, row-major, in f32.
    pub fn dequantize(&self) -> Vec<f32> {
        (0..self.rows * self.cols)
            .map(|k| {
                F::from_bits(self.bytes[k]).to_f32() * self.scale(k / self.cols, k % self.cols)
            })
            .collect()
    }

    /// How far an element of value `x` quantised to `F` with block scale `scale` may land from
    /// it: [`error_bound_of`].
    pub fn error_bound(&self, x: f32, scale: f32) -> f32 {
        error_bound_of::<F>(x, scale)
    }
}

/// How far an element of value `x` quantised to `F` with block scale `scale` may land from
/// it: half an ulp of `F`, `2^-(mantissa bits + 1) |x|` among the normals (2⁻⁴ for e4m3, 2⁻³
/// for e5m2), half the smallest subnormal times `scale` among the subnormals (2⁻¹⁰ and
/// 2⁻¹⁷), plus the rounding of the dequantisation's f32 product, `2⁻²⁴ |x|` (counted as
/// `2⁻²³`).
pub fn error_bound_of<F: Fp8>(x: f32, scale: f32) -> f32 {
    let bias = (1i32 << (F::EXP_BITS - 1)) - 1;
    let half_ulp = 2f32.powi(-(F::MAN_BITS as i32) - 1);
    let half_subnormal = 2f32.powi(1 - bias - F::MAN_BITS as i32 - 1);
    x.abs() * half_ulp + scale * half_subnormal + x.abs() * f32::EPSILON
}

/// [`error_bound_of`] for e4m3: `2⁻⁴ |x| + 2⁻¹⁰ scale + 2⁻²³ |x|`.
pub fn error_bound(x: f32, scale: f32) -> f32 {
    error_bound_of::<E4m3>(x, scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_to_nearest_even_and_saturates() {
        // Between 1 (0x38) and 1.125 (0x39): the tie goes to the even mantissa, 1.
        assert_eq!(from_f32(1.0625), 0x38);
        // Between 1.125 and 1.25 (0x3A): the tie goes to 1.25.
        assert_eq!(from_f32(1.1875), 0x3A);
        assert_eq!((from_f32(1.05), from_f32(1.07)), (0x38, 0x39));
        assert_eq!(from_f32(1.1), 0x39);
        // Just below a power of two rounds up to it.
        assert_eq!(from_f32(1.99), 0x40);
        assert_eq!(
            (from_f32(1e6), from_f32(-1e6), from_f32(464.0)),
            (0x7E, 0xFE, 0x7E)
        );
        assert_eq!(
            (from_f32(0.0), from_f32(-0.0), from_f32(f32::NAN)),
            (0x00, 0x80, 0x7F)
        );
        // Subnormal ties: 2⁻¹⁰ is half the smallest step, to even (0).
        assert_eq!(
            (from_f32(2f32.powi(-10)), from_f32(3.0 * 2f32.powi(-10))),
            (0x00, 0x02)
        );
    }

    fn quantisation_stays_within_its_bound_in<F: Fp8>() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for (rows, cols, blocks) in [
            (3, 300, Blocks::PER_TOKEN),
            (130, 260, Blocks::PER_BLOCK),
            (2, 5, Blocks::PER_TOKEN),
            (7, 33, Blocks::tensor(7, 33)),
        ] {
            // Magnitudes over many binades, zeros, and one all-zero block (the first row's
            // first 128 elements).
            let x: Vec<bf16> = (0..rows * cols)
                .map(|k| {
                    let r = next();
                    if (k < cols.min(128) && blocks.rows == 1) || r % 17 == 0 {
                        return bf16::ZERO;
                    }
                    let mag =
                        2f32.powi((r % 40) as i32 - 20) * (1.0 + (r >> 8) as u16 as f32 / 65536.0);
                    bf16::from_f32(if r & 1 << 60 != 0 { -mag } else { mag })
                })
                .collect();
            let q = quantize_as::<F>(&x, rows, cols, blocks);
            let back = q.dequantize();
            for k in 0..rows * cols {
                let (v, scale) = (x[k].to_f32(), q.scale(k / cols, k % cols));
                assert!(
                    (back[k] - v).abs() <= q.error_bound(v, scale),
                    "{} {rows}x{cols} element {k}: {v} came back {} (scale {scale})",
                    F::NAME,
                    back[k]
                );
                // Nothing saturates: the block's largest magnitude maps to the largest value.
                assert!(q.values()[k].to_f32().abs() <= F::MAX);
            }
            if blocks.rows == 1 {
                assert_eq!(q.scale(0, 0), 1.0, "an all-zero block's scale");
            }
            // Column-major scales: block (i, j) at j x block-rows + i.
            let t = q.scales_column_major();
            let br = rows.div_ceil(blocks.rows);
            for r in (0..rows).step_by(blocks.rows) {
                for c in (0..cols).step_by(blocks.cols) {
                    let (i, j) = (r / blocks.rows, c / blocks.cols);
                    assert_eq!(t[j * br + i], q.scale(r, c));
                }
            }
        }
    }

    #[test]
    fn quantisation_stays_within_its_bound() {
        quantisation_stays_within_its_bound_in::<E4m3>();
        quantisation_stays_within_its_bound_in::<E5m2>();
        assert_eq!(error_bound(8.0, 2.0), error_bound_of::<E4m3>(8.0, 2.0));
        assert_eq!(error_bound_of::<E5m2>(0.0, 1.0), 2f32.powi(-17));
    }
}
