//! A gated linear unit in the epilogue: [`SwiGlu`], which turns the GEMM `[gate | up] = A ·
//! W₁ᵀ` of a gated MLP (LLaMA's, DeepSeek's experts) into `silu(gate) × up` as it stores, so
//! the `m x 2i` product never reaches memory.
//!
//! **Layout.** The mainloops hand an epilogue two adjacent columns of one row at a time
//! ([`Epilogue::store`]: columns `c` and `c + 1`, `c` even), and that pair is all one call
//! sees. So W₁'s rows are *interleaved*: row `2j` is the gate's row `j`, row `2j + 1` the up
//! projection's row `j` (W₁ is `2i x k`, N x K as a `Linear`'s weight is stored); each store
//! then holds `gate[j]` and `up[j]` of its row and writes `silu(gate[j]) × up[j]` to column
//! `j` of the `m x i` output. Blocks of the gate's rows followed by the same block of up's
//! (the "blocks of 8" of some kernels) would put the two halves of a pair in different
//! stores (sm90's fragment holds columns `8q + 2 (lane % 4)` and `+ 1`): the pair interleave
//! is the one the epilogue interface serves without state across stores.
//!
//! **Precision.** `gate` and `up` are the f32 accumulators (not rounded to bf16 first, as an
//! unfused GEMM's output would be); SiLU is [`crate::act::silu`] in f32; the product is
//! rounded once to the output type.

use crate::act::silu;
use crate::epilogue::{Epilogue, OutElem};
use crate::tile::Tile;
use rshmem_device::matrix::MatrixMut;

/// The SwiGLU epilogue: C (`m x 2i`, gate and up interleaved by column pairs: see the module
/// docs) becomes `out[r][j] = silu(C[r][2j]) × C[r][2j + 1]`, `out` `m x i` of `T`.
#[derive(Clone, Copy, Debug)]
pub struct SwiGlu<T: OutElem> {
    /// The output, `m x i` (half of C's columns).
    pub out: MatrixMut<T>,
}

impl<T: OutElem> Epilogue for SwiGlu<T> {
    /// The row's first element in `out`.
    type Row = *mut T;

    #[inline(always)]
    unsafe fn row(&self, _tile: Tile, row: u32) -> *mut T {
        self.out.row(row)
    }

    #[inline(always)]
    unsafe fn store(&self, row: *mut T, col: u32, v: [f32; 2], both: bool) {
        // C has an even number of columns (2i), so every pair is whole; a lone last column
        // (an odd n, which the host refuses) has no partner and is dropped.
        if both {
            // SAFETY: `col / 2 < i` for `col + 1 < 2i`, in `out`'s row (the contract).
            unsafe {
                T::store2(
                    row.add(col as usize / 2),
                    [silu(v[0]) * v[1], 0.0],
                    false,
                    false,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_device::half::{bf16, Half};

    /// Stores of every column pair of a row land in the right output column, from an
    /// interleaved `[g0, u0, g1, u1, ...]` row.
    #[test]
    fn pairs_become_their_output_column() {
        let mut out = [bf16::from_f32_rn(-9.0); 3];
        // SAFETY: `out` holds one row of 3.
        let m = unsafe { MatrixMut::from_raw_parts(out.as_mut_ptr(), 1, 3, 3) };
        let e = SwiGlu { out: m };
        let row = [1.0f32, 2.0, -1.0, 4.0, 0.0, 5.0];
        let tile = Tile {
            index: 0,
            m0: 0,
            n0: 0,
            group: 0,
            m_end: 1,
            split: 0,
            k_step0: 0,
            k_steps: 1,
        };
        // SAFETY: row 0, even columns below 6, as the mainloops call.
        unsafe {
            let r = e.row(tile, 0);
            for c in [0u32, 2, 4] {
                e.store(r, c, [row[c as usize], row[c as usize + 1]], true);
            }
        }
        for j in 0..3 {
            let (g, u) = (row[2 * j] as f64, row[2 * j + 1] as f64);
            let want = g / (1.0 + (-g).exp()) * u;
            let got = out[j].to_f32_exact() as f64;
            assert!(
                (got - want).abs() <= want.abs() / 256.0,
                "{j}: {got} vs {want}"
            );
        }
    }
}
