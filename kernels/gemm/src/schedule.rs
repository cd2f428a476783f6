//! Which tile a block computes next, and when its operands may load: the [`Schedule`] a
//! mainloop is given, [`GroupM`] (the one a plain GEMM uses), and the [`TileScheduler`] that
//! walks a persistent block through the schedule (of one GEMM, of a grouped GEMM's groups:
//! [`crate::grouped`], or of a GEMM whose K is split: [`crate::split_k`]).

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

/// The order of a GEMM's tiles, what gates their loads, and (for a grouped GEMM) which rows
/// each group has. Every method says where the mainloops call it; they call it there and
/// nowhere else.
pub trait Schedule: Copy {
    /// Whether the problem is *grouped*: `G` GEMMs sharing N and K, group `g` multiplying its
    /// rows of A (those [`Schedule::group`] gives, among the problem's `m`) by the `g`-th of
    /// `G` matrices B stacked one after the other, into the same rows of C. Default: false,
    /// one GEMM.
    const GROUPED: bool = false;

    /// Which tile (along M, along N) is the `t`-th of the schedule; every tile exactly once
    /// for `t` in `0..tiles_m * tiles_n` (of the problem, or of one group of a grouped
    /// problem). Default: [`grouped`].
    #[inline(always)]
    fn tile(&self, t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
        grouped(t, tiles_m, tiles_n)
    }

    /// A grouped schedule's group `g`: its first row of A and C and its number of rows, or
    /// `None` past the last group; the rows lie within the problem's `m`, and groups come in
    /// row order ([`TileScheduler`] cuts a group's start to the previous group's end, so that
    /// no row is computed twice). The scheduler asks for `g = 0, 1, ...` in order, each once
    /// per walk. Default (never called unless [`Schedule::GROUPED`]): `None`.
    #[inline(always)]
    fn group(&self, g: u32) -> Option<(u32, u32)> {
        let _ = g;
        None
    }

    /// Parts K is split into (at least 1, at most the k-steps; 1 for a grouped schedule): each
    /// output tile is then computed `splits` times, part `s` over k-steps `s * steps / splits
    /// ..(s + 1) * steps / splits`, and its epilogue gets partial sums ([`Tile::split`]),
    /// which something else must add up ([`crate::split_k`]). Default: 1.
    #[inline(always)]
    fn splits(&self) -> u32 {
        1
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
/// each placed by [`Schedule::tile`] on tiles of `BM x BN`, its k-steps (of `BK`) in
/// [`Tile::k_step0`] and [`Tile::k_steps`]. Every role of a block walks its own scheduler
/// over the same tiles.
///
/// A split schedule ([`Schedule::splits`] `> 1`) numbers all tiles of part 0 of K, then all
/// of part 1, and so on: blocks that run at once read different parts of B.
///
/// A grouped schedule's tiles are numbered group after group (`ceil(rows / BM) x tiles_n`
/// each, none for an empty group); the walk moves through the groups as its index grows, so
/// each role reads each group's rows once.
#[derive(Clone, Copy, Debug)]
pub struct TileScheduler<S, const BM: u32, const BN: u32, const BK: u32> {
    schedule: S,
    /// The problem's rows: the end of every plain tile's rows.
    m: u32,
    /// Tiles along M of the problem (plain) or of the current group (grouped).
    tiles_m: u32,
    tiles_n: u32,
    /// K's k-steps and the parts they are split into.
    k_steps: u32,
    splits: u32,
    next: u32,
    step: u32,
    /// Grouped: the current group, the index of its first tile, and its rows.
    group: u32,
    first: u32,
    rows: (u32, u32),
}

impl<S: Schedule, const BM: u32, const BN: u32, const BK: u32> TileScheduler<S, BM, BN, BK> {
    /// This block's walk over `problem`'s tiles.
    #[inline(always)]
    pub fn new(schedule: S, problem: Problem) -> Self {
        Self::of_block(
            schedule,
            problem,
            thread::block_idx_x(),
            thread::grid_dim_x(),
        )
    }

    /// The walk of block `block` of a grid of `blocks` (what [`TileScheduler::new`] gives
    /// the calling block).
    #[inline(always)]
    pub fn of_block(schedule: S, problem: Problem, block: u32, blocks: u32) -> Self {
        let (tiles_m, tiles_n) = tiles(problem, BM, BN);
        let k_steps = problem.k.div_ceil(BK);
        Self {
            schedule,
            m: problem.m,
            // Grouped: no group yet; the first `next` moves to group 0.
            tiles_m: if S::GROUPED { 0 } else { tiles_m },
            tiles_n,
            k_steps,
            // Never more parts than k-steps (a part of none would store zeros), never split
            // a grouped walk.
            splits: if S::GROUPED {
                1
            } else {
                schedule.splits().clamp(1, k_steps.max(1))
            },
            next: block,
            step: blocks,
            group: u32::MAX,
            first: 0,
            rows: (0, 0),
        }
    }

    /// The schedule the tiles follow.
    #[inline(always)]
    pub fn schedule(&self) -> &S {
        &self.schedule
    }

    /// Part `split`'s k-steps: (first, count).
    #[inline(always)]
    fn part(&self, split: u32) -> (u32, u32) {
        let at = |s: u32| (u64::from(s) * u64::from(self.k_steps) / u64::from(self.splits)) as u32;
        (at(split), at(split + 1) - at(split))
    }
}

impl<S: Schedule, const BM: u32, const BN: u32, const BK: u32> Iterator
    for TileScheduler<S, BM, BN, BK>
{
    type Item = Tile;

    #[inline(always)]
    fn next(&mut self) -> Option<Tile> {
        let t = self.next;
        if !S::GROUPED {
            let per_split = self.tiles_m * self.tiles_n;
            if t >= per_split * self.splits {
                return None;
            }
            self.next += self.step;
            let (split, r) = if self.splits > 1 {
                (t / per_split, t % per_split)
            } else {
                (0, t)
            };
            let (i, j) = self.schedule.tile(r, self.tiles_m, self.tiles_n);
            let (k_step0, k_steps) = self.part(split);
            return Some(Tile {
                index: t,
                m0: i * BM,
                n0: j * BN,
                group: 0,
                m_end: self.m,
                split,
                k_step0,
                k_steps,
            });
        }
        // On to the group that holds tile `t` (`first <= t` always: `t` only grows).
        while t - self.first >= self.tiles_m * self.tiles_n {
            self.first += self.tiles_m * self.tiles_n;
            self.group = self.group.wrapping_add(1);
            let Some(rows) = self.schedule.group(self.group) else {
                // Past the last group: so is every later call.
                self.tiles_m = 0;
                return None;
            };
            // Never back into the previous group's rows (sizes are data: they may be wrong).
            let end = self.rows.0 + self.rows.1;
            let start = rows.0.max(end);
            self.rows = (start, (rows.0 + rows.1).saturating_sub(start));
            self.tiles_m = self.rows.1.div_ceil(BM);
        }
        self.next += self.step;
        let (i, j) = self
            .schedule
            .tile(t - self.first, self.tiles_m, self.tiles_n);
        Some(Tile {
            index: t,
            m0: self.rows.0 + i * BM,
            n0: j * BN,
            group: self.group,
            m_end: self.rows.0 + self.rows.1,
            split: 0,
            k_step0: 0,
            k_steps: self.k_steps,
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
