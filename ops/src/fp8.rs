//! FP8 e4m3 on the host: the conversions, and quantisation with block scales as DeepSeek-V3
//! uses them — one f32 scale per `1 × 128` block of activations (per token, per 128
//! channels) and per `128 × 128` block of weights — for the FP8 paths of the ops
//! ([`crate::Ops::moe_dispatch_fp8`]).
//!
//! e4m3 ("fn": finite, no infinities) has 1 sign, 4 exponent (bias 7) and 3 mantissa bits:
//! largest 448, smallest normal 2⁻⁶, smallest subnormal 2⁻⁹; `0x7F` and `0xFF` are NaN.
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
//!     assert!((v - w).abs() <= fp8::error_bound(v, q.scales[0].max(q.scales[1])));
//! }
//! ```

use rshmem_device::bf16;

/// The largest finite e4m3 value.
pub const MAX: f32 = 448.0;

/// The value of an e4m3 byte (NaN for `0x7F` and `0xFF`).
pub fn to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (exp, man) = ((b >> 3) & 0xF, (b & 7) as f32);
    if exp == 15 && b & 7 == 7 {
        return f32::NAN;
    }
    let mag = if exp == 0 {
        man / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + man / 8.0) * 2f32.powi(exp as i32 - 7)
    };
    sign * mag
}

/// `x` rounded to the nearest e4m3 value (ties to even), saturating at ±[`MAX`]; NaN gives
/// `0x7F`.
pub fn from_f32(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs() as f64;
    let even = |v: f64| {
        let r = v.round();
        // `round` takes ties away from zero: back to the even neighbour.
        if (v - v.floor() - 0.5).abs() == 0.0 && r % 2.0 != 0.0 {
            r - 1.0
        } else {
            r
        }
    };
    if a < 2f64.powi(-6) {
        // Subnormals in steps of 2⁻⁹; a round up to 8 steps is the smallest normal, whose
        // bits are 8 too.
        return sign | even(a * 512.0) as u8;
    }
    let mut e = a.log2().floor() as i32;
    // log2 of a value just below a power of two can round up to it.
    if 2f64.powi(e) > a {
        e -= 1;
    }
    let mut q = even((a / 2f64.powi(e) - 1.0) * 8.0) as i32;
    if q == 8 {
        e += 1;
        q = 0;
    }
    let field = e + 7;
    if field > 15 || (field == 15 && q == 7) {
        return sign | 0x7E;
    }
    sign | (field as u8) << 3 | q as u8
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
}

/// A quantised row-major matrix: e4m3 bytes and the blocks' scales (row-major over the blocks:
/// block `(i, j)` of `⌈rows / b.rows⌉ × ⌈cols / b.cols⌉` at `i × ⌈cols / b.cols⌉ + j`), with
/// `x ≈ to_f32(byte) × scale` of the element's block.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantized {
    /// `rows × cols` e4m3 bytes.
    pub bytes: Vec<u8>,
    /// One f32 per block.
    pub scales: Vec<f32>,
    /// The matrix's rows and columns.
    pub rows: usize,
    /// See `rows`.
    pub cols: usize,
    /// The block shape.
    pub blocks: Blocks,
}

/// Quantises the `rows × cols` row-major `x` with one scale per block: `amax / 448` of the
/// block (1 for an all-zero block), so that the block's largest magnitude maps to 448 and
/// nothing saturates.
pub fn quantize(x: &[bf16], rows: usize, cols: usize, blocks: Blocks) -> Quantized {
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
            scales[i * bc + j] = amax / MAX;
        }
    }
    let bytes = (0..rows * cols)
        .map(|k| {
            let (r, c) = (k / cols, k % cols);
            from_f32(x[k].to_f32() / scales[r / blocks.rows * bc + c / blocks.cols])
        })
        .collect();
    Quantized {
        bytes,
        scales,
        rows,
        cols,
        blocks,
    }
}

impl Quantized {
    /// The scale of element `(r, c)`'s block.
    pub fn scale(&self, r: usize, c: usize) -> f32 {
        let bc = self.cols.div_ceil(self.blocks.cols);
        self.scales[r / self.blocks.rows * bc + c / self.blocks.cols]
    }

    /// The values the bytes and scales stand for, row-major, in f32.
    pub fn dequantize(&self) -> Vec<f32> {
        (0..self.rows * self.cols)
            .map(|k| to_f32(self.bytes[k]) * self.scale(k / self.cols, k % self.cols))
            .collect()
    }
}

/// How far an element of value `x` quantised with block scale `scale` may land from it:
/// half an e4m3 ulp, `2⁻⁴ |x|` among the normals, `2⁻¹⁰ × scale` among the subnormals (the
/// dequantisation's own product is exact in f32 but for its rounding, `2⁻²⁴ |x|`, included).
pub fn error_bound(x: f32, scale: f32) -> f32 {
    x.abs() / 16.0 + scale / 1024.0 + x.abs() * f32::EPSILON
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips() {
        for b in 0..=255u8 {
            let v = to_f32(b);
            if b & 0x7F == 0x7F {
                assert!(v.is_nan());
                continue;
            }
            assert_eq!(from_f32(v), b, "{b:#04x} = {v}");
        }
        assert_eq!(
            (to_f32(0x7E), to_f32(0x08), to_f32(0x01)),
            (448.0, 2f32.powi(-6), 2f32.powi(-9))
        );
    }

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

    #[test]
    fn quantisation_stays_within_its_bound() {
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
        ] {
            // Magnitudes over many binades, zeros, and one all-zero block (the first row's
            // first 128 elements).
            let x: Vec<bf16> = (0..rows * cols)
                .map(|k| {
                    let r = next();
                    if k < cols.min(128) || r % 17 == 0 {
                        return bf16::ZERO;
                    }
                    let mag =
                        2f32.powi((r % 40) as i32 - 20) * (1.0 + (r >> 8) as u16 as f32 / 65536.0);
                    bf16::from_f32(if r & 1 << 60 != 0 { -mag } else { mag })
                })
                .collect();
            let q = quantize(&x, rows, cols, blocks);
            let back = q.dequantize();
            for k in 0..rows * cols {
                let (v, scale) = (x[k].to_f32(), q.scale(k / cols, k % cols));
                assert!(
                    (back[k] - v).abs() <= error_bound(v, scale),
                    "{rows}x{cols} element {k}: {v} came back {} (scale {scale})",
                    back[k]
                );
                // Nothing saturates: the block's largest magnitude maps to 448 at most.
                assert!(to_f32(q.bytes[k]).abs() <= MAX);
            }
            if blocks.rows == 1 {
                assert_eq!(q.scale(0, 0), 1.0, "an all-zero block's scale");
            }
        }
    }
}
