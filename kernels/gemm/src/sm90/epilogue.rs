//! The consumers' epilogue: one tile's values from the accumulators through the
//! [`Epilogue`], while the producer already loads the next tile.

use super::smem::Smem;
use super::Sm90Config;
use crate::epilogue::Epilogue;
use crate::tile::{Problem, Tile};
use rshmem_device::hopper::wgmma::WgmmaAcc;

/// Hands this warpgroup's 64 rows (from `row0`) of `tile`, in `acc`, to `epilogue`: the
/// wait for the tile-sync thread's `before_epilogue`, each of the thread's two rows' context, the addends (one straight-line pass
/// over the fragment per addend), the stores masked to C; then, when the epilogue asks for
/// [`Epilogue::tile_done`] (or `before_epilogue`), the arrival that tells the tile-sync thread
/// (`tile_sync.rs`).
/// `done` counts the tiles this block's consumers finished before this one.
///
/// # Safety
///
/// Every consumer thread, together, once per tile, with `smem` initialised; the epilogue's
/// own contract; the tile-sync thread runs when the epilogue wants it.
#[inline(always)]
pub(super) unsafe fn store_tile<C: Sm90Config, E: Epilogue, const R: usize>(
    smem: Smem<C>,
    epilogue: &E,
    acc: &mut WgmmaAcc<R>,
    problem: Problem,
    tile: Tile,
    (row0, lane_tid): (u32, u32),
    done: u32,
) {
    if E::BEFORE_EPILOGUE {
        // SAFETY: the tile-sync thread completes `ready`'s phase `done` once it returned from
        // the tile's `before_epilogue` (and not `done + 1` before our `stored` of this tile).
        unsafe { smem.ready().wait_parity(done & 1) };
    }
    // Rows end at the tile's group's end (the problem's m when not grouped).
    let (m, n) = (tile.m_end, problem.n);
    // The thread's two rows (registers i with (i / 2) % 2 = 0 and 1), each worked out by the
    // epilogue once; a row past m gets the last row's context and stores nothing.
    let row_of = |half: u32| tile.m0 + row0 + WgmmaAcc::<R>::coords(lane_tid, 2 * half).0;
    // SAFETY: rows < m, as the epilogue's contract asks.
    let rows = unsafe {
        [
            epilogue.row(tile, row_of(0).min(m - 1)),
            epilogue.row(tile, row_of(1).min(m - 1)),
        ]
    };
    // The addends: one straight-line pass over the fragment per addend (registers 2p and
    // 2p + 1 hold columns c and c + 1 of row half p % 2).
    let most = epilogue.addends(rows[0]).max(epilogue.addends(rows[1]));
    if most > 0 {
        let regs = acc.regs();
        for a in 0..most {
            unroll!(hi in [0, 1, 2, 3, 4, 5, 6, 7] {
                unroll!(lo in [0, 1, 2, 3, 4, 5, 6, 7] {
                    let i = 2 * (8 * hi + lo);
                    // Registers past R (narrower tiles): none, decided at compile time.
                    let (r, c) = WgmmaAcc::<R>::coords(lane_tid, i as u32);
                    let (row, col) = (tile.m0 + row0 + r, tile.n0 + c);
                    let ctx = rows[i / 2 % 2];
                    if i < R && row < m && col < n && a < epilogue.addends(ctx) {
                        // SAFETY: in C's bounds, `a` below the row's addends, as the
                        // epilogue's contract asks.
                        let add = unsafe { epilogue.addend(ctx, a, col, col + 1 < n) };
                        regs[i] += add[0];
                        regs[i + 1] += add[1];
                    }
                });
            });
        }
    }
    let mut pending = 0.0f32;
    acc.for_each(|i, v| {
        if i % 2 == 0 {
            pending = v;
            return;
        }
        let (r, c) = WgmmaAcc::<R>::coords(lane_tid, i - 1);
        let (row, col) = (tile.m0 + row0 + r, tile.n0 + c);
        if row < m && col < n {
            // SAFETY: in C's bounds, as the epilogue's contract asks; `rows[..]` is this
            // row's context (coords' row is row_of((i / 2) % 2)).
            unsafe {
                epilogue.store(
                    rows[((i - 1) / 2 % 2) as usize],
                    col,
                    [pending, v],
                    col + 1 < n,
                )
            };
        }
    });
    if super::tile_sync::wanted::<E>() {
        // `stored` tells tiles apart by the parity of its phase only: its phase `done` may
        // complete only after the tile-sync thread has seen phase `done - 1` complete
        // (`taken`), which it did long ago unless it is slow. The arrival releases this
        // thread's stores to the tile-sync thread (cta scope; its signal then releases them
        // wider).
        // SAFETY: every consumer thread arrives on `stored` once per tile, after the wait on
        // `taken`, whose phase `done - 1` the tile-sync thread completes once per tile.
        unsafe {
            if done > 0 {
                smem.taken().wait_parity((done - 1) & 1);
            }
            smem.stored().arrive();
        }
    }
}
