//! Which tile a block computes next, and when its operands may load: the [`Schedule`] a
//! mainloop is given, [`GroupM`] (the one a plain GEMM uses), and the [`TileScheduler`] that
//! walks a persistent block through the schedule.

use crate::tile::{tiles, Problem, Tile};
use rshmem_device::thread;

/// Rows of tiles walked together by [`grouped`]: 8 tiles of A stay in L2 while the block of
/// B tiles they meet streams past, as CUTLASS's and Triton's "group M" orders do.
pub const GROUP_M: u32 = 8;

/// Tile `t` of `tiles_m x tiles_n` in group-M order: down [`GROUP_M`] rows of tiles, then
/// the next column, then the next band of rows.
#[inline(always)]
pub const fn grouped(t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
    let per_group = GROUP_M * tiles_n;
    let first_m = t / per_group * GROUP_M;
    let rows = if tiles_m - first_m < GROUP_M {
        tiles_m - first_m
    } else {
        GROUP_M
    };
    let i = t % per_group;
    (first_m + i % rows, i / rows)
}

/// The order of a GEMM's tiles and what gates their loads. Every method says where the
/// mainloops call it; they call it there and nowhere else.
pub trait Schedule: Copy {
    /// Which tile (along M, along N) is the `t`-th of the schedule; every tile exactly once
    /// for `t` in `0..tiles_m * tiles_n`. Default: [`grouped`].
    #[inline(always)]
    fn tile(&self, t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
        grouped(t, tiles_m, tiles_n)
    }

    /// Called by each thread that issues loads of `tile`'s operands, before its first load
    /// of them (one thread on sm90, every thread on sm80): an all-gather GEMM waits here for
    /// the peer's signal that the tile's rows of A arrived. Default: nothing.
    ///
    /// # Safety
    ///
    /// What the implementation's own contract requires (a wait on a signal must be for
    /// one that will come).
    #[inline(always)]
    unsafe fn before_loads(&self, tile: Tile) {
        let _ = tile;
    }
}

/// The plain schedule: [`grouped`] order, loads never held back.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupM;

impl Schedule for GroupM {}

/// A persistent block's tiles: `blockIdx.x`, `blockIdx.x + gridDim.x`, ... of the schedule,
/// each placed by [`Schedule::tile`] on tiles of `BM x BN`. Every role of a block walks its
/// own scheduler over the same tiles.
#[derive(Clone, Copy, Debug)]
pub struct TileScheduler<S, const BM: u32, const BN: u32> {
    schedule: S,
    tiles_m: u32,
    tiles_n: u32,
    next: u32,
    step: u32,
}

impl<S: Schedule, const BM: u32, const BN: u32> TileScheduler<S, BM, BN> {
    /// This block's walk over `problem`'s tiles.
    #[inline(always)]
    pub fn new(schedule: S, problem: Problem) -> Self {
        let (tiles_m, tiles_n) = tiles(problem, BM, BN);
        Self {
            schedule,
            tiles_m,
            tiles_n,
            next: thread::block_idx_x(),
            step: thread::grid_dim_x(),
        }
    }

    /// The schedule the tiles follow.
    #[inline(always)]
    pub fn schedule(&self) -> &S {
        &self.schedule
    }
}

impl<S: Schedule, const BM: u32, const BN: u32> Iterator for TileScheduler<S, BM, BN> {
    type Item = Tile;

    #[inline(always)]
    fn next(&mut self) -> Option<Tile> {
        let t = self.next;
        if t >= self.tiles_m * self.tiles_n {
            return None;
        }
        self.next += self.step;
        let (i, j) = self.schedule.tile(t, self.tiles_m, self.tiles_n);
        Some(Tile {
            index: t,
            m0: i * BM,
            n0: j * BN,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_order_visits_every_tile_once() {
        for (tm, tn) in [(1, 1), (3, 5), (8, 4), (17, 3), (64, 32), (9, 1)] {
            let mut seen = std::vec![0u32; (tm * tn) as usize];
            for t in 0..tm * tn {
                let (i, j) = grouped(t, tm, tn);
                assert!(i < tm && j < tn, "{t} of {tm}x{tn} -> ({i}, {j})");
                seen[(i * tn + j) as usize] += 1;
            }
            assert!(seen.iter().all(|&s| s == 1), "{tm}x{tn}");
        }
        // Down the first band of rows first.
        assert_eq!(grouped(1, 64, 32), (1, 0));
        assert_eq!(grouped(8, 64, 32), (0, 1));
    }
}
