//! What becomes of each tile of C: the [`Epilogue`] a mainloop is given, and the one every
//! plain GEMM uses ([`StoreC`]).
//!
//! A mainloop computes one tile of C at a time into registers; its epilogue may hold the
//! tile's stores back ([`Epilogue::before_epilogue`]: a GEMM + reduce-scatter waits there for
//! the peers' partial tiles), works out each row's context once ([`Epilogue::row`]), adds
//! what the row has to add ([`Epilogue::addend`]), receives the finished values
//! ([`Epilogue::store`], two adjacent columns at a time) and hears when every thread has
//! stored a tile ([`Epilogue::tile_done`]: a GEMM + reduce-scatter signals the peer there).

use crate::tile::Tile;
use rshmem_device::global;
use rshmem_device::half::{bf16, f16, Half};
use rshmem_device::matrix::MatrixMut;

/// What a GEMM does with its tiles of C. Every method says where the mainloops call it; they
/// call it there and nowhere else.
pub trait Epilogue: Copy {
    /// Whether the mainloop calls [`Epilogue::tile_done`]: it costs a barrier of the consumer
    /// threads per tile, so it is off unless the epilogue needs it.
    const TILE_DONE: bool = false;

    /// Whether the mainloop calls [`Epilogue::before_epilogue`] (set it when you implement
    /// it): on sm90 it runs on a thread outside the consumers, who wait for it on a barrier.
    const BEFORE_EPILOGUE: bool = false;

    /// Called once per tile when [`Epilogue::BEFORE_EPILOGUE`] is set, before the tile's first
    /// [`Epilogue::store`]: where a GEMM + reduce-scatter waits for the peers' partial tiles it
    /// adds in its stores. sm80: by every thread, after the tile's mainloop. sm90: by one
    /// thread of the producer warpgroup, in the block's schedule order, the consumers waiting
    /// on a barrier for its return (a wait loop among the consumers cost the next tile's
    /// k-loop its uniform datapath), so what it acquires is visible to their stores.
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

    /// What [`Epilogue::store`] needs to know of one row of C (where the row goes, which PE
    /// owns it), worked out once per row by [`Epilogue::row`]. A thread's fragment holds few
    /// rows (2 per tile on sm90, 8 on sm80) and many columns, and the epilogue is unrolled
    /// over the columns: a decision made per row inside `store` was repeated at every one of
    /// those stores (the reduce-scatter kernel was 15 k SASS instructions, 6 times the plain
    /// GEMM's, and 1.8 times slower than it on one PE: docs/fused.md).
    type Row: Copy;

    /// The context of `row` (`row < m`) for `tile`'s stores of it; called by each consumer
    /// thread before its first [`Epilogue::store`] of the row in the tile, after
    /// [`Epilogue::before_epilogue`]. Most epilogues need the row alone; a split-K one the
    /// tile's part of K ([`Tile::split`]).
    ///
    /// # Safety
    ///
    /// What the implementation requires (as for [`Epilogue::store`]).
    unsafe fn row(&self, tile: Tile, row: u32) -> Self::Row;

    /// How many addends [`Epilogue::addend`] has for this row: values the epilogue adds to the
    /// accumulators before it stores them (a residual; the peers' partial products of a
    /// reduce-scatter). The sm90 epilogue adds them in one pass over its fragment per addend,
    /// so the per-addend code is not repeated at every store. Default: none.
    #[inline(always)]
    fn addends(&self, row: Self::Row) -> u32 {
        let _ = row;
        0
    }

    /// Addend `a` (`a < addends(row)`) at `(row, col)` and, when `both`, `(row, col + 1)`;
    /// the same bounds as [`Epilogue::store`]. Called before the stores of the row, after
    /// [`Epilogue::before_epilogue`]. Default: zeros (never called when `addends` is 0).
    ///
    /// # Safety
    ///
    /// As for [`Epilogue::store`].
    #[inline(always)]
    unsafe fn addend(&self, row: Self::Row, a: u32, col: u32, both: bool) -> [f32; 2] {
        let _ = (row, a, col, both);
        [0.0; 2]
    }

    /// C's values at `(row, col)` and, when `both`, `(row, col + 1)`: `v[0]` and `v[1]`, with
    /// `row` the context [`Epilogue::row`] gave for the row. The row `< m`, `col < n` and
    /// `col + 1 < n` when `both`; `col` is even. Every value of C is given to exactly one
    /// call, by one of the tile's consumer threads.
    ///
    /// # Safety
    ///
    /// What the implementation requires (pointers valid for the problem's C); `row` came from
    /// [`Epilogue::row`] of this epilogue value.
    unsafe fn store(&self, row: Self::Row, col: u32, v: [f32; 2], both: bool);

    /// Called once per tile when [`Epilogue::TILE_DONE`] is set, by one thread of the block
    /// (sm90: a thread of the producer warpgroup, so that the consumers never wait for it;
    /// sm80: thread 0), after every thread has returned from its [`Epilogue::store`] calls of
    /// `tile` (their writes happen before, at block scope: release wider before publishing
    /// them). Tiles come in the block's schedule order.
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
    /// Stores `v` at `p` and `p + 1` (`both`) or `v[0]` at `p`, with `st.global`
    /// (`rshmem_device::global`: what the PTX had before C came through a struct);
    /// `pair_aligned` says
    /// `p` is aligned for both at once.
    ///
    /// # Safety
    ///
    /// `p` (and `p + 1` when `both`) are valid for writes, in global memory (C, or a peer's
    /// mapping of a symmetric buffer).
    unsafe fn store2(p: *mut Self, v: [f32; 2], both: bool, pair_aligned: bool);
}

impl OutElem for f32 {
    #[inline(always)]
    unsafe fn store2(p: *mut f32, v: [f32; 2], both: bool, pair_aligned: bool) {
        // SAFETY: the caller's contract; `pair_aligned` means 8-byte aligned.
        unsafe {
            if both && pair_aligned {
                // One 8-byte store (`[f32; 2]` is only 4-aligned: it would be two).
                let pair = u64::from(v[0].to_bits()) | u64::from(v[1].to_bits()) << 32;
                global::store(p.cast::<u64>(), pair);
            } else {
                global::store(p, v[0]);
                if both {
                    global::store(p.add(1), v[1]);
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
                        let pair = u32::from(lo.to_bits()) | u32::from(hi.to_bits()) << 16;
                        global::store(p.cast::<u32>(), pair);
                    } else {
                        global::store(p.cast::<u16>(), lo.to_bits());
                        if both {
                            global::store(p.add(1).cast::<u16>(), hi.to_bits());
                        }
                    }
                }
            }
        }
    )*};
}
half_out!(bf16, f16);

/// The plain epilogue: C, converted to `T`, into the matrix `c` (at least m x n).
#[derive(Clone, Copy, Debug)]
pub struct StoreC<T: OutElem> {
    /// C.
    pub c: MatrixMut<T>,
}

impl<T: OutElem> Epilogue for StoreC<T> {
    /// The row's first element.
    type Row = *mut T;

    #[inline(always)]
    unsafe fn row(&self, _tile: Tile, row: u32) -> *mut T {
        // In C (`c` holds m rows) for the rows the mainloops ask for.
        self.c.row(row)
    }

    #[inline(always)]
    unsafe fn store(&self, row: *mut T, col: u32, v: [f32; 2], both: bool) {
        // SAFETY: in C (the mainloop's bounds and this epilogue's contract: `row` is a row of C
        // and `col < n`); an even leading dimension keeps the even column's pair aligned.
        unsafe { T::store2(row.add(col as usize), v, both, self.c.ld() % 2 == 0) }
    }
}

/// `inner` with every value multiplied by `*scale_a * scale_b[tile.group]` first: a
/// per-tensor scaled GEMM's epilogue (FP8 with one scale per operand, a grouped GEMM's B one
/// per group). The scales are read from device memory
/// (once per row of a tile), so a graph that recorded the GEMM uses the values they hold
/// when it runs. The inner epilogue's addends ([`Epilogue::addends`]) are not used (they would
/// be added before the scale): none of the plain epilogues has any.
#[derive(Clone, Copy, Debug)]
pub struct Scaled<E> {
    /// What the scaled values become.
    pub inner: E,
    /// A's scale: one f32 in global memory.
    pub scale_a: *const f32,
    /// B's scale: one f32 in global memory; a grouped GEMM's B one per group (`G` of them,
    /// group `g`'s tiles scaled by `scale_b[g]`; a plain GEMM's tiles are all of group 0).
    pub scale_b: *const f32,
}

impl<E: Epilogue> Epilogue for Scaled<E> {
    const TILE_DONE: bool = E::TILE_DONE;
    const BEFORE_EPILOGUE: bool = E::BEFORE_EPILOGUE;

    /// The inner epilogue's row and the scale.
    type Row = (E::Row, f32);

    #[inline(always)]
    unsafe fn before_epilogue(&self, tile: Tile) {
        // SAFETY: forwarded contract.
        unsafe { self.inner.before_epilogue(tile) }
    }

    #[inline(always)]
    unsafe fn row(&self, tile: Tile, row: u32) -> (E::Row, f32) {
        // SAFETY: the scales are f32s in global memory, B's one per group (this epilogue's
        // contract); the rest is the inner epilogue's.
        unsafe {
            let scale_b = *self.scale_b.add(tile.group as usize);
            (self.inner.row(tile, row), *self.scale_a * scale_b)
        }
    }

    #[inline(always)]
    unsafe fn store(&self, (row, scale): (E::Row, f32), col: u32, v: [f32; 2], both: bool) {
        // SAFETY: forwarded contract.
        unsafe {
            self.inner
                .store(row, col, [v[0] * scale, v[1] * scale], both)
        }
    }

    #[inline(always)]
    unsafe fn tile_done(&self, tile: Tile) {
        // SAFETY: forwarded contract.
        unsafe { self.inner.tile_done(tile) }
    }
}
