//! The problem a mainloop solves and the tiles it cuts C into.

use rshmem_device::KernelArg;

/// The shape of `C (m x n) = A (m x k) · B (k x n)`; a kernel argument (what the host's
/// launch helpers, `rshmem::ops::Sm90Launch::problem`, give).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// The reduction length; a multiple of 8.
    pub k: u32,
}

// SAFETY: `#[repr(C)]` of three `u32`s (12 bytes, no padding): the same bytes and meaning on
// the host and the device.
unsafe impl KernelArg for Problem {}

/// One output tile: its place in the schedule, its first row and column of C, (for a grouped
/// GEMM) its group and the end of that group's rows, and (for a split-K GEMM) which part of
/// the reduction it sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Its index in the schedule (0..tiles).
    pub index: u32,
    /// Row of C (and A) of its first row.
    pub m0: u32,
    /// Column of C of its first column.
    pub n0: u32,
    /// Its group, whose B it multiplies: 0 unless the schedule is grouped
    /// ([`crate::Schedule::GROUPED`]).
    pub group: u32,
    /// One past the last row of C the tile may store: `problem.m`, or the end of its group's
    /// rows (the rows after it, up to the tile's edge, belong to the next group or to none).
    pub m_end: u32,
    /// Its part of K, 0 unless the schedule splits K ([`crate::Schedule::splits`]): partial
    /// tiles of the same `(m0, n0)` differ by it alone.
    pub split: u32,
    /// Its first k-step (of the mainloop's `BK`) and its number of k-steps: all of K (`0`,
    /// `ceil(k / BK)`) unless K is split.
    pub k_step0: u32,
    /// See [`Tile::k_step0`].
    pub k_steps: u32,
}

/// The tiles of `problem` for tiles of `bm x bn`: (along M, along N).
#[inline(always)]
pub const fn tiles(problem: Problem, bm: u32, bn: u32) -> (u32, u32) {
    (problem.m.div_ceil(bm), problem.n.div_ceil(bn))
}
