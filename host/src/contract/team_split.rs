//! How a 2-D team split is made of strided splits, as NVSHMEM makes it: the default of
//! [`TeamBackend::team_split_2d`](super::TeamBackend::team_split_2d).

/// Which team of a 2-D split a strided split makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Axis {
    /// `xrange` consecutive parent PEs (NVSHMEM's x axis).
    Row = 0,
    /// Parent PEs `xrange` apart (the y axis).
    Column = 1,
}

/// The strided splits that make a 2-D split of an `n`-PE parent into rows of `xrange`
/// (clamped to `n`, as NVSHMEM does), in NVSHMEM's order: every row, then every column. The
/// last row and the last columns are short when `xrange` does not divide `n`.
pub(crate) fn split_2d_triplets(n: usize, xrange: usize) -> Vec<(Axis, [usize; 3])> {
    let x = xrange.clamp(1, n.max(1));
    let rows = (0..n.div_ceil(x)).map(|r| (Axis::Row, [r * x, 1, x.min(n - r * x)]));
    let columns = (0..x.min(n)).map(|c| (Axis::Column, [c, x, (n - c).div_ceil(x)]));
    rows.chain(columns).collect()
}
