//! The grouped GEMM's schedule: `G` GEMMs sharing N and K (a mixture-of-experts layer's
//! experts), one persistent launch over all groups' tiles. Group `g` multiplies its rows of A
//! by the `g`-th of `G` matrices B stacked one after the other (`G x n x k` or `G x k x n`)
//! into the same rows of C; which rows are a group's is data on the device ([`GroupRows`]),
//! so a dispatch kernel can write them and the GEMM follow it on the stream, or in a graph.
//!
//! ```ignore
//! #[kernel(launch_bounds(384, 1))]
//! pub unsafe fn my_grouped(maps: Sm90Maps, problem: Problem, rows: GroupRows, c: MatrixMut<bf16>) {
//!     // SAFETY: `rows.sizes` holds `rows.groups` counts in global memory (the caller's contract).
//!     let schedule = unsafe { Grouped::new(rows, problem) };
//!     unsafe { sm90::gemm::<bf16, _, _, false>(maps.a, maps.b, problem, schedule, StoreC { c }) }
//! }
//! ```

use crate::schedule::Schedule;
use crate::tile::Problem;
use rshmem_device::KernelArg;

/// Which rows of A and C each group has, as a kernel argument: `groups` sizes in global
/// memory, read as the tiles are walked.
///
/// * `masked_rows == 0` (**offsets**, `torch._grouped_mm`'s `offs`): `sizes[g]` is the end
///   of group `g`'s rows, which start where group `g - 1`'s end (group 0's at row 0).
/// * `masked_rows > 0` (**masked**): group `g`'s rows start at row `g x masked_rows`, and the
///   first `sizes[g]` of them are computed (a count: a low-latency MoE dispatch's).
///
/// Sizes that do not fit are clamped, never followed: an end before an earlier one or past
/// `m` (offsets), or a count above `masked_rows`, gives the group the rows that do fit (none,
/// or all of its own), so no garbage size makes the GEMM touch a row outside A and C or
/// compute a row twice.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupRows {
    /// `groups` u32s: cumulative ends (offsets) or counts (masked).
    pub sizes: *const u32,
    /// Groups, `G`.
    pub groups: u32,
    /// Rows per group in the masked layout; 0 for offsets.
    pub masked_rows: u32,
}

// SAFETY: `#[repr(C)]` of a pointer and two `u32`s (16 bytes, no padding): the same bytes and
// meaning on the host and the device; what `sizes` points to is the kernel's contract.
unsafe impl KernelArg for GroupRows {}

/// The grouped schedule: groups in order, each group's tiles in [`crate::schedule::grouped`]
/// order, loads never held back.
#[derive(Clone, Copy, Debug)]
pub struct Grouped {
    rows: GroupRows,
    /// The problem's rows, which every group's lie within.
    m: u32,
}

impl Grouped {
    /// The schedule of `rows` over `problem` (`m`: every group's rows lie below it; in the
    /// masked layout `m` is `groups x masked_rows`).
    ///
    /// # Safety
    ///
    /// `rows.sizes` points to `rows.groups` u32s in global memory that nothing writes while
    /// the kernel runs.
    #[inline(always)]
    pub const unsafe fn new(rows: GroupRows, problem: Problem) -> Self {
        Self { rows, m: problem.m }
    }

    /// `sizes[g]`.
    #[inline(always)]
    fn size(&self, g: u32) -> u32 {
        // SAFETY: `g < groups` (the callers), and `new`'s contract.
        unsafe { self.rows.sizes.add(g as usize).read() }
    }
}

impl Schedule for Grouped {
    const GROUPED: bool = true;

    #[inline(always)]
    fn group(&self, g: u32) -> Option<(u32, u32)> {
        if g >= self.rows.groups {
            return None;
        }
        let per = self.rows.masked_rows;
        if per > 0 {
            let row0 = g * per;
            return Some((row0, self.size(g).min(per).min(self.m.saturating_sub(row0))));
        }
        let start = if g == 0 {
            0
        } else {
            self.size(g - 1).min(self.m)
        };
        let end = self.size(g).clamp(start, self.m);
        Some((start, end - start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::TileScheduler;

    /// Every tile of a walk of `sizes` over tiles of 4 x 8 by a grid of one block.
    fn walk(sizes: &[u32], masked: u32, m: u32, n: u32) -> std::vec::Vec<crate::Tile> {
        walk_of(sizes, masked, m, n, 0, 1)
    }

    /// Block `block` of `blocks`' tiles of [`walk`].
    fn walk_of(
        sizes: &[u32],
        masked: u32,
        m: u32,
        n: u32,
        block: u32,
        blocks: u32,
    ) -> std::vec::Vec<crate::Tile> {
        let rows = GroupRows {
            sizes: sizes.as_ptr(),
            groups: sizes.len() as u32,
            masked_rows: masked,
        };
        let problem = Problem { m, n, k: 8 };
        // SAFETY: `sizes` lives through the walk.
        let schedule = unsafe { Grouped::new(rows, problem) };
        TileScheduler::<_, 4, 8, 8>::of_block(schedule, problem, block, blocks).collect()
    }

    #[test]
    fn offsets_cover_each_groups_rows_once_and_skip_empty_groups() {
        // Groups of 0, 5, 0, 1 and 6 rows; n = 9: two tiles along N.
        let tiles = walk(&[0, 5, 5, 6, 12], 0, 12, 9);
        let mut seen = std::vec![0u32; 12 * 2];
        for t in &tiles {
            assert!(t.m_end <= 12 && t.m0 < t.m_end, "{t:?}");
            for r in t.m0..t.m_end.min(t.m0 + 4) {
                seen[(r * 2 + t.n0 / 8) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&s| s == 1), "{seen:?}");
        // 2 + 1 + 2 tiles along M, twice along N; group numbers as given.
        assert_eq!(tiles.len(), 10);
        let groups: std::vec::Vec<u32> = tiles.iter().map(|t| t.group).collect();
        assert_eq!(groups, [1, 1, 1, 1, 3, 3, 4, 4, 4, 4]);
        assert_eq!((tiles[4].m0, tiles[4].m_end), (5, 6));
        assert!(tiles.iter().enumerate().all(|(i, t)| t.index == i as u32));
    }

    #[test]
    fn garbage_sizes_are_clamped_inside_the_problem() {
        // Offsets: decreasing and past m: group 2 takes rows 7..10 only.
        let tiles = walk(&[7, 3, 100], 0, 10, 8);
        let spans: std::vec::Vec<(u32, u32, u32)> =
            tiles.iter().map(|t| (t.group, t.m0, t.m_end)).collect();
        assert_eq!(spans, [(0, 0, 7), (0, 4, 7), (2, 7, 10)]);
        // Masked: a count above the group's rows gives it its own rows only.
        let tiles = walk(&[2, 99, 0], 5, 15, 8);
        let spans: std::vec::Vec<(u32, u32, u32)> =
            tiles.iter().map(|t| (t.group, t.m0, t.m_end)).collect();
        assert_eq!(spans, [(0, 0, 2), (1, 5, 10), (1, 9, 10)]);
    }

    #[test]
    fn blocks_of_a_grid_share_the_tiles() {
        let sizes = [3, 3, 11, 30, 30, 31];
        let all = walk(&sizes, 0, 31, 20);
        for blocks in [2, 3, 7, 100] {
            let mut mine: std::vec::Vec<_> = (0..blocks)
                .flat_map(|b| walk_of(&sizes, 0, 31, 20, b, blocks))
                .collect();
            mine.sort_by_key(|t| t.index);
            assert_eq!(mine, all, "{blocks} blocks");
        }
    }

    #[test]
    fn no_groups_or_only_empty_ones_is_no_tiles() {
        assert!(walk(&[], 0, 0, 8).is_empty());
        assert!(walk(&[0, 0, 0], 0, 4, 8).is_empty());
        assert!(walk(&[0, 0], 3, 6, 8).is_empty());
    }
}
