//! Units (rows, pieces of rows) numbered across experts, expert 0's first: [`ExpertWalk`]
//! finds the expert of a unit reading the experts' counts 32 at a time, a lane's each, scanned
//! in the warp. A walk expert by expert waits for one load per expert, each a round trip to L2:
//! 256 of them per block in the fused layer's send at 4096 tokens, top-8 of 256, whose 701 µs
//! (one H100, 2026-12-07) this walk was written to cut — the cause inferred from the code, the
//! gain not yet measured (docs/moe.md, sixteenth session).

use rshmem_device::warp::{self, FULL_MASK};

/// A warp's walk over experts `0..experts`, expert `j` owning `units(j)` consecutive unit
/// numbers. Every lane of the warp holds the same walk and makes the same calls (the whole
/// warp, every lane active); units are asked for in increasing order.
///
/// ```ignore
/// // Rows of every local expert, one block a row (`recv_count[j]` rows each).
/// let mut walk = ExpertWalk::new(local, |j| unsafe { recv_count.add(j as usize).read() });
/// let mut w = thread::block_idx_x();
/// while let Some((j, at)) = walk.find(w) {
///     // row `at` of expert `j`
///     w += thread::grid_dim_x();
/// }
/// ```
pub struct ExpertWalk<F> {
    units: F,
    experts: u32,
    /// The window's first expert: lane `i` holds expert `j0 + i`.
    j0: u32,
    /// Units of the experts before the window.
    before: u32,
    /// This lane's expert's first unit within the window.
    start: u32,
    /// Units of the window's experts.
    total: u32,
}

impl<F: Fn(u32) -> u32> ExpertWalk<F> {
    /// The walk, at expert 0; `units(j)` is called for `j < experts` only.
    #[inline(always)]
    pub fn new(experts: u32, units: F) -> Self {
        let mut walk = ExpertWalk {
            units,
            experts,
            j0: 0,
            before: 0,
            start: 0,
            total: 0,
        };
        walk.load();
        walk
    }

    /// The window at `j0`: each lane's expert's units, their starts by a warp scan.
    #[inline(always)]
    fn load(&mut self) {
        let j = self.j0 + warp::lane_id();
        let units = if j < self.experts { (self.units)(j) } else { 0 };
        (self.start, self.total) = warp::exclusive_sum(units);
    }

    /// The expert of unit `u` and `u`'s index among that expert's units; `None` past the
    /// last expert's. `u` is at least the previous call's.
    #[inline(always)]
    pub fn find(&mut self, u: u32) -> Option<(u32, u32)> {
        if self.j0 >= self.experts {
            return None;
        }
        while u >= self.before + self.total {
            self.j0 += warp::WARP_SIZE;
            if self.j0 >= self.experts {
                return None;
            }
            self.before += self.total;
            self.load();
        }
        let at = u - self.before;
        // The last lane starting at or below `at`: an empty expert starts where the next one
        // does, so it is never the last.
        let lane = 31 - warp::ballot(FULL_MASK, self.start <= at).leading_zeros();
        Some((
            self.j0 + lane,
            at - warp::shfl_idx(FULL_MASK, self.start, lane),
        ))
    }
}
