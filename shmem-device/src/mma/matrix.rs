//! `ldmatrix` and `stmatrix`: the warp loads or stores 1, 2 or 4 8×8 matrices of 16-bit
//! elements in shared memory, each lane giving one row address and holding one register per
//! matrix; and loaders of `mma` fragments built on them.
//!
//! Lanes `8m..8m+8` give the addresses of rows 0..8 of matrix `m` (for `x1` only lanes 0..8,
//! for `x2` lanes 0..16 matter). Lane `l` receives, in register `m`, row `l / 4`, columns
//! `2(l % 4)` (low half) and `2(l % 4) + 1` (high half) of matrix `m`; with `.trans`, of the
//! transpose of matrix `m` as stored. `stmatrix` is the inverse.

use crate::backend;
use crate::half::{bf16, f16};

use super::frag::{Col, FragA, FragB, Operand, Row, M16N8K16};

/// How many 8×8 matrices one `ldmatrix`/`stmatrix` moves: implemented for `[u32; 1]`,
/// `[u32; 2]` and `[u32; 4]` (`.x1`, `.x2`, `.x4`).
pub trait Matrices: sealed::Sealed {}
impl Matrices for [u32; 1] {}
impl Matrices for [u32; 2] {}
impl Matrices for [u32; 4] {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for [u32; 1] {}
    impl Sealed for [u32; 2] {}
    impl Sealed for [u32; 4] {}
}

/// `ldmatrix.sync.aligned.m8n8.x{N}.shared.b16`: loads `N` 8×8 matrices; `row` is the row this
/// lane gives (see the module docs).
///
/// # Safety
///
/// All 32 lanes of the warp call it together, converged. Each lane's `row` that the instruction
/// uses (lanes `0..8N`) points into shared memory (the block's dynamic shared memory), is
/// 16-byte aligned, and has 16 readable bytes (8 elements). sm_75+.
#[inline(always)]
pub unsafe fn ldmatrix<const N: usize>(row: *const u16) -> [u32; N]
where
    [u32; N]: Matrices,
{
    backend::mma::ldmatrix::<N>(row.cast(), false)
}

/// `ldmatrix … .trans`: as [`ldmatrix`], each matrix transposed on the way.
///
/// # Safety
///
/// As [`ldmatrix`].
#[inline(always)]
pub unsafe fn ldmatrix_trans<const N: usize>(row: *const u16) -> [u32; N]
where
    [u32; N]: Matrices,
{
    backend::mma::ldmatrix::<N>(row.cast(), true)
}

/// `stmatrix.sync.aligned.m8n8.x{N}.shared.b16`: stores `N` 8×8 matrices held as
/// [`ldmatrix`] would have loaded them; `row` is the row this lane gives.
///
/// # Safety
///
/// As [`ldmatrix`], with the rows writable and not accessed by other threads meanwhile.
/// Needs sm_90 (PTX ISA 7.8).
#[inline(always)]
pub unsafe fn stmatrix<const N: usize>(row: *mut u16, regs: [u32; N])
where
    [u32; N]: Matrices,
{
    backend::mma::stmatrix::<N>(row.cast(), regs, false)
}

/// `stmatrix … .trans`: as [`stmatrix`], each matrix transposed on the way.
///
/// # Safety
///
/// As [`stmatrix`].
#[inline(always)]
pub unsafe fn stmatrix_trans<const N: usize>(row: *mut u16, regs: [u32; N])
where
    [u32; N]: Matrices,
{
    backend::mma::stmatrix::<N>(row.cast(), regs, true)
}

macro_rules! fragment_loaders {
    ($($t:ident),*) => {$(
        impl FragA<M16N8K16, $t, Row> {
            /// Loads A (16×16, row-major in shared memory at `tile`, `ld` elements per row) with
            /// one `ldmatrix.x4`: matrices (rows 0–7, cols 0–7), (8–15, 0–7), (0–7, 8–15),
            /// (8–15, 8–15) are registers a0a1, a2a3, a4a5, a6a7.
            ///
            /// # Safety
            ///
            /// As [`ldmatrix`]: converged warp; `tile` in shared memory, every row 16-byte
            /// aligned (`tile` aligned and `ld` a multiple of 8).
            #[inline(always)]
            pub unsafe fn ldmatrix(tile: *const $t, ld: usize) -> Self {
                let lane = crate::warp::lane_id() as usize;
                let (row, col) = (lane % 8 + 8 * ((lane / 8) % 2), 8 * (lane / 16));
                // SAFETY: the caller's contract; the row is inside the 16×16 tile.
                Self::from_regs(unsafe { ldmatrix::<4>(tile.add(row * ld + col).cast()) })
            }
        }

        impl FragB<M16N8K16, $t, Col> {
            /// Loads B (16×8) stored N-major in shared memory — `tile[n * ld + k]`, i.e. Bᵀ
            /// row-major, the layout `mma` calls "col" — with one `ldmatrix.x2`.
            ///
            /// # Safety
            ///
            /// As [`FragA::ldmatrix`], for the 8 rows of 16 elements.
            #[inline(always)]
            pub unsafe fn ldmatrix(tile: *const $t, ld: usize) -> Self {
                let lane = crate::warp::lane_id() as usize % 16;
                // SAFETY: the caller's contract; lanes 16..32 repeat 0..16 (ignored by `.x2`).
                Self::from_regs(unsafe { ldmatrix::<2>(tile.add((lane % 8) * ld + 8 * (lane / 8)).cast()) })
            }

            /// Loads B (16×8) stored K-major (row-major K×N: `tile[k * ld + n]`) in shared memory
            /// with one `ldmatrix.x2.trans`.
            ///
            /// # Safety
            ///
            /// As [`FragA::ldmatrix`], for the 16 rows of 8 elements.
            #[inline(always)]
            pub unsafe fn ldmatrix_trans(tile: *const $t, ld: usize) -> Self {
                let lane = crate::warp::lane_id() as usize % 16;
                // SAFETY: the caller's contract; row `lane` of the 16 K rows.
                Self::from_regs(unsafe { ldmatrix_trans::<2>(tile.add(lane * ld).cast()) })
            }
        }
    )*};
}

fragment_loaders!(bf16, f16);

// The loaders above assume the register order of the fragment tables; a compile-time check
// that the shapes they rely on hold.
const _: () = {
    assert!(<FragA<M16N8K16, bf16, Row>>::ELEMS == 8);
    assert!(<FragB<M16N8K16, f16, Col>>::ELEMS == 4);
    assert!(<bf16 as Operand<M16N8K16>>::PER_REG == 2);
};
