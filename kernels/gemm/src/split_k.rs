//! Split-K: a GEMM whose output tiles are too few to keep every SM busy (decode-sized M,
//! where the GEMM is a read of B) computes each tile in `splits` parts of K on different
//! blocks. [`SplitK`] is the schedule (part `s` of every tile before part `s + 1` of any),
//! [`StorePartial`] the epilogue (part `s`'s f32 sums into its own slab of a workspace), and
//! [`reduce`] the second kernel's body, which adds the parts in order 0, 1, ... for every
//! element: the same bits every run, whichever blocks computed which parts when.
//!
//! ```
//! use rshmem_gemm::{Schedule, SplitK, TileScheduler};
//! use rshmem_gemm::Problem;
//! // 2 x 2 tiles of 4 x 8, K = 64 in k-steps of 8, split in 3: 12 partial tiles.
//! let problem = Problem { m: 8, n: 16, k: 64 };
//! let tiles: Vec<_> = TileScheduler::<_, 4, 8, 8>::of_block(SplitK { splits: 3 }, problem, 0, 1).collect();
//! assert_eq!(tiles.len(), 12);
//! let parts: Vec<_> = tiles.iter().map(|t| (t.split, t.k_step0, t.k_steps)).collect();
//! assert_eq!(parts[0], (0, 0, 2));
//! assert_eq!(parts[4], (1, 2, 3));
//! assert_eq!(parts[11], (2, 5, 3));
//! ```

use crate::epilogue::{Epilogue, OutElem, StoreC};
use crate::schedule::Schedule;
use crate::tile::Tile;
use rshmem_device::matrix::{Matrix, MatrixMut};
use rshmem_device::thread;

/// The schedule of a split-K GEMM: [`crate::GroupM`]'s order within each part of K, K in
/// `splits` parts ([`Schedule::splits`]).
#[derive(Clone, Copy, Debug)]
pub struct SplitK {
    /// Parts of K (1: no split).
    pub splits: u32,
}

impl Schedule for SplitK {
    #[inline(always)]
    fn splits(&self) -> u32 {
        self.splits
    }
}

/// The epilogue of a split-K GEMM's partial tiles: part `s`'s sums of row `r` go to row
/// `s * m + r` of `partials` (f32, `splits * m` rows of at least `n` columns).
#[derive(Clone, Copy, Debug)]
pub struct StorePartial {
    /// The workspace: `splits` slabs of `m` rows, one per part of K.
    pub partials: MatrixMut<f32>,
    /// Rows of C: a slab's height.
    pub m: u32,
}

impl Epilogue for StorePartial {
    type Row = *mut f32;

    #[inline(always)]
    unsafe fn row(&self, tile: Tile, row: u32) -> *mut f32 {
        // `partials` holds `splits * m` rows and `tile.split < splits` (the contract).
        self.partials.row(tile.split * self.m + row)
    }

    #[inline(always)]
    unsafe fn store(&self, row: *mut f32, col: u32, v: [f32; 2], both: bool) {
        // SAFETY: the row lies in the workspace, `col < n` (the mainloop's bounds).
        unsafe { StoreC { c: self.partials }.store(row, col, v, both) }
    }
}

/// `c = partials[0] + partials[1] + ... + partials[splits - 1]` (slabs of `m x n` stacked in
/// `partials`, summed in that order, rounded once to `T`), by every thread of a 1-D grid,
/// each taking pairs of columns `index_1d(), index_1d() + threads, ...`.
///
/// # Safety
///
/// `partials` holds `splits * m` rows of at least `n` columns, written before the launch and
/// not while it runs; `c` holds `m x n`, and nothing else reads or writes it meanwhile.
#[inline(always)]
pub unsafe fn reduce<T: OutElem>(
    partials: Matrix<f32>,
    splits: u32,
    m: u32,
    n: u32,
    c: MatrixMut<T>,
) {
    let pairs_per_row = n.div_ceil(2);
    let total = u64::from(m) * u64::from(pairs_per_row);
    let step = u64::from(thread::grid_dim_x()) * u64::from(thread::block_dim_x());
    let aligned = c.ld() % 2 == 0;
    let mut i = u64::from(thread::index_1d());
    while i < total {
        let (row, col) = (
            (i / u64::from(pairs_per_row)) as u32,
            2 * (i % u64::from(pairs_per_row)) as u32,
        );
        let both = col + 1 < n;
        let mut sum = [0.0f32; 2];
        for s in 0..splits {
            let p = partials.row(s * m + row);
            // SAFETY: inside the workspace (the contract): `col < n`, `col + 1 < n` when both.
            unsafe {
                sum[0] += *p.add(col as usize);
                if both {
                    sum[1] += *p.add(col as usize + 1);
                }
            }
        }
        // SAFETY: in C (`row < m`, `col < n`), which this thread alone writes there.
        unsafe { T::store2(c.row(row).add(col as usize), sum, both, aligned) };
        i += step;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::TileScheduler;
    use crate::tile::Problem;

    fn walk(problem: Problem, splits: u32, block: u32, blocks: u32) -> std::vec::Vec<Tile> {
        TileScheduler::<_, 4, 8, 8>::of_block(SplitK { splits }, problem, block, blocks).collect()
    }

    #[test]
    fn every_k_step_of_every_tile_exactly_once() {
        for (m, n, k, splits) in [
            (8, 16, 64, 3),
            (5, 9, 8, 4),
            (13, 30, 200, 7),
            (4, 8, 64, 1),
        ] {
            let problem = Problem { m, n, k };
            let k_steps = k.div_ceil(8);
            let tiles = walk(problem, splits, 0, 1);
            let (tm, tn) = (m.div_ceil(4), n.div_ceil(8));
            let mut seen = std::vec![0u32; (tm * tn * k_steps) as usize];
            for t in &tiles {
                assert!(t.k_steps > 0, "{t:?}");
                for ks in t.k_step0..t.k_step0 + t.k_steps {
                    seen[(((t.m0 / 4) * tn + t.n0 / 8) * k_steps + ks) as usize] += 1;
                }
            }
            assert!(
                seen.iter().all(|&s| s == 1),
                "{m}x{n}x{k} in {splits}: {seen:?}"
            );
            // Never more parts than k-steps.
            assert_eq!(tiles.len() as u32, tm * tn * splits.min(k_steps));
        }
    }

    #[test]
    fn blocks_share_the_partial_tiles() {
        let problem = Problem { m: 9, n: 20, k: 96 };
        let all = walk(problem, 5, 0, 1);
        for blocks in [2, 7, 100] {
            let mut mine: std::vec::Vec<_> = (0..blocks)
                .flat_map(|b| walk(problem, 5, b, blocks))
                .collect();
            mine.sort_by_key(|t| t.index);
            assert_eq!(mine, all, "{blocks} blocks");
        }
    }
}
