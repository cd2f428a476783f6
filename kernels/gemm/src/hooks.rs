//! What a GEMM does around its mainloop, and the one every plain GEMM uses ([`StoreC`]).
//!
//! A mainloop computes one tile of C at a time into registers; its [`Hooks`] decide which
//! tile comes next ([`Hooks::tile`]), may hold back the loads of a tile until its operands
//! exist ([`Hooks::before_loads`]: an all-gather GEMM waits there for the peer's signal),
//! hold back a tile's epilogue ([`Hooks::before_epilogue`]: a GEMM + reduce-scatter waits
//! there for the peers' partial tiles), receive the finished values ([`Hooks::store`], two
//! adjacent columns at a time) and hear
//! when every thread has stored a tile ([`Hooks::tile_done`]: a GEMM + reduce-scatter
//! signals the peer there).

use rshmem_device::half::{bf16, f16, Half};
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

/// One output tile: its place in the schedule and its first row and column of C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Its index in the schedule (0..tiles).
    pub index: u32,
    /// Row of C of its first row.
    pub m0: u32,
    /// Column of C of its first column.
    pub n0: u32,
}

/// The tiles of `problem` for tiles of `bm x bn`: (along M, along N).
#[inline(always)]
pub const fn tiles(problem: Problem, bm: u32, bn: u32) -> (u32, u32) {
    (problem.m.div_ceil(bm), problem.n.div_ceil(bn))
}

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

/// A GEMM's behaviour around its mainloop. Every method has the place it is called from in
/// its documentation; the mainloops call them there and nowhere else.
pub trait Hooks: Copy {
    /// Whether the mainloop calls [`Hooks::tile_done`]: it costs a barrier of the consumer
    /// threads per tile, so it is off unless a hook needs it.
    const TILE_DONE: bool = false;

    /// Which tile (along M, along N) is the `t`-th of the schedule; every tile exactly once
    /// for `t` in `0..tiles_m * tiles_n`. Default: [`grouped`].
    #[inline(always)]
    fn tile(&self, t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
        grouped(t, tiles_m, tiles_n)
    }

    /// Called by each thread that issues loads of `tile`'s operands, before its first load
    /// of them (one thread on sm90, every thread on sm80). Default: nothing.
    ///
    /// # Safety
    ///
    /// What the implementation's own contract requires (a wait on a signal must be for
    /// one that will come).
    #[inline(always)]
    unsafe fn before_loads(&self, tile: Tile) {
        let _ = tile;
    }

    /// Called by each consumer thread once per tile, after the tile's mainloop and before its
    /// first [`Hooks::store`] of the tile (whether or not it stores any value of it): where a
    /// GEMM + reduce-scatter waits for the peers' partial tiles it adds in its stores.
    /// Default: nothing.
    ///
    /// # Safety
    ///
    /// What the implementation's own contract requires (a wait on a signal must be for
    /// one that will come, without waiting for anything this tile's block still has to do).
    #[inline(always)]
    unsafe fn before_epilogue(&self, tile: Tile) {
        let _ = tile;
    }

    /// What [`Hooks::store`] needs to know of one row of C (where the row goes, which PE
    /// owns it), worked out once per row by [`Hooks::row`]. A thread's fragment holds few
    /// rows (2 per tile on sm90, 8 on sm80) and many columns, and the epilogue is unrolled
    /// over the columns: a decision made per row inside `store` was repeated at every one of
    /// those stores (the reduce-scatter kernel was 15 k SASS instructions, 6 times the plain
    /// GEMM's, and 1.8 times slower than it on one PE: docs/fused.md).
    type Row: Copy;

    /// The context of `row` (`row < m`) for this tile's stores of it; called by each consumer
    /// thread before its first [`Hooks::store`] of the row, after [`Hooks::before_epilogue`].
    ///
    /// # Safety
    ///
    /// What the implementation requires (as for [`Hooks::store`]).
    unsafe fn row(&self, row: u32) -> Self::Row;

    /// How many addends [`Hooks::addend`] has for this row: values the epilogue adds to the
    /// accumulators before it stores them (a residual; the peers' partial products of a
    /// reduce-scatter). The sm90 epilogue adds them in one pass over its fragment per addend,
    /// so the per-addend code is not repeated at every store. Default: none.
    #[inline(always)]
    fn addends(&self, row: Self::Row) -> u32 {
        let _ = row;
        0
    }

    /// Addend `a` (`a < addends(row)`) at `(row, col)` and, when `both`, `(row, col + 1)`;
    /// the same bounds as [`Hooks::store`]. Called before the stores of the row, after
    /// [`Hooks::before_epilogue`]. Default: zeros (never called when `addends` is 0).
    ///
    /// # Safety
    ///
    /// As for [`Hooks::store`].
    #[inline(always)]
    unsafe fn addend(&self, row: Self::Row, a: u32, col: u32, both: bool) -> [f32; 2] {
        let _ = (row, a, col, both);
        [0.0; 2]
    }

    /// C's values at `(row, col)` and, when `both`, `(row, col + 1)`: `v[0]` and `v[1]`, with
    /// `row` the context [`Hooks::row`] gave for the row. The row `< m`, `col < n` and
    /// `col + 1 < n` when `both`; `col` is even. Every value of C is given to exactly one
    /// call, by one of the tile's consumer threads.
    ///
    /// # Safety
    ///
    /// What the implementation requires (pointers valid for the problem's C); `row` came from
    /// [`Hooks::row`] of this hook value.
    unsafe fn store(&self, row: Self::Row, col: u32, v: [f32; 2], both: bool);

    /// Called once per tile when [`Hooks::TILE_DONE`] is set, by one consumer thread, after
    /// every consumer thread has returned from its [`Hooks::store`] calls of `tile` (their
    /// writes happen before, at block scope: fence wider before publishing them).
    ///
    /// # Safety
    ///
    /// What the implementation requires.
    #[inline(always)]
    unsafe fn tile_done(&self, tile: Tile) {
        let _ = tile;
    }
}

/// Output element types: f32, bf16 and f16 (rounded to nearest even).
pub trait OutElem: Copy + 'static {
    /// Stores `v` at `p` and `p + 1` (`both`) or `v[0]` at `p`; `pair_aligned` says `p` is
    /// aligned for both at once.
    ///
    /// # Safety
    ///
    /// `p` (and `p + 1` when `both`) are valid for writes.
    unsafe fn store2(p: *mut Self, v: [f32; 2], both: bool, pair_aligned: bool);
}

impl OutElem for f32 {
    #[inline(always)]
    unsafe fn store2(p: *mut f32, v: [f32; 2], both: bool, pair_aligned: bool) {
        // SAFETY: the caller's contract; `pair_aligned` means 8-byte aligned.
        unsafe {
            if both && pair_aligned {
                // One 8-byte store (`[f32; 2]` is only 4-aligned: it would be two).
                p.cast::<u64>()
                    .write(u64::from(v[0].to_bits()) | u64::from(v[1].to_bits()) << 32);
            } else {
                p.write(v[0]);
                if both {
                    p.add(1).write(v[1]);
                }
            }
        }
    }
}

macro_rules! half_out {
    ($($t:ty),*) => {$(
        impl OutElem for $t {
            #[inline(always)]
            unsafe fn store2(p: *mut $t, v: [f32; 2], both: bool, pair_aligned: bool) {
                let (lo, hi) = (<$t>::from_f32_rn(v[0]), <$t>::from_f32_rn(v[1]));
                // SAFETY: the caller's contract; `pair_aligned` means 4-byte aligned.
                unsafe {
                    if both && pair_aligned {
                        // One 4-byte store (`[$t; 2]` is only 2-aligned: it would be two).
                        p.cast::<u32>()
                            .write(u32::from(lo.to_bits()) | u32::from(hi.to_bits()) << 16);
                    } else {
                        p.write(lo);
                        if both {
                            p.add(1).write(hi);
                        }
                    }
                }
            }
        }
    )*};
}
half_out!(bf16, f16);

/// The plain epilogue: C row-major with rows `ldc` elements apart, converted to `T`.
#[derive(Clone, Copy, Debug)]
pub struct StoreC<T: OutElem> {
    /// C's first element.
    pub c: *mut T,
    /// Elements between rows of C (at least n).
    pub ldc: u32,
}

impl<T: OutElem> Hooks for StoreC<T> {
    /// The row's first element.
    type Row = *mut T;

    #[inline(always)]
    unsafe fn row(&self, row: u32) -> *mut T {
        // In C (`c` holds m rows of `ldc`) for the rows the mainloops ask for.
        self.c.wrapping_add(row as usize * self.ldc as usize)
    }

    #[inline(always)]
    unsafe fn store(&self, row: *mut T, col: u32, v: [f32; 2], both: bool) {
        // SAFETY: in C (the mainloop's bounds and this hook's contract: `row` is a row of C
        // and `col < n`); an even `ldc` keeps the even column's pair aligned.
        unsafe { T::store2(row.add(col as usize), v, both, self.ldc % 2 == 0) }
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
