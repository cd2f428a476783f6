//! The order in which a fused GEMM walks its tiles: the plain GEMM's group-M order
//! ([`rshmem_gemm::schedule::grouped`]) over the bands (rows of tiles) rotated to start at a
//! chosen band, so that each PE begins where its data is ready and ends where it has to wait.
//!
//! * All-gather + GEMM ([`ag_first_band`]): rank `r` starts at the first band that lies wholly
//!   in its own chunk of A (present before the call), then walks up through the chunks of
//!   ranks `r + 1, r + 2, ...` — the order in which they arrive, since rank `q` pushes its
//!   chunk to `q - 1, q - 2, ...` in turn — and ends with the band that straddles ranks
//!   `r - 1` and `r`, whose rows arrive last.
//! * GEMM + reduce-scatter ([`rs_first_band`]): rank `r` starts just past its own chunk and
//!   ends with the bands that meet its own rows, whose peer partials it waits for: by then
//!   every peer has computed them, since each peer also leaves only its *own* bands for last.
//!
//! ```
//! use rshmem_tp::{order, TpCall};
//! // M = 1000 rows over 4 PEs (250 each), 128-row bands: 8 bands, bands 1 and 5 straddle.
//! let call = |rank| TpCall::new((1000, 64, 64), (0, 1, 4, rank));
//! // Rank 1 (rows 250..500): its first whole band is band 2 (rows 256..384).
//! assert_eq!(order::ag_first_band(&call(1), 128), 2);
//! // Rank 1's last band that meets its rows is band 3 (rows 384..512): start at band 4.
//! assert_eq!(order::rs_first_band(&call(1), 128), 4);
//! // The last rank's chunk ends at the last band: start again at band 0.
//! assert_eq!(order::rs_first_band(&call(3), 128), 0);
//! ```

use crate::call::TpCall;
use rshmem_gemm::schedule::grouped;

/// Tile `t` of `tiles_m x tiles_n` in group-M order over the bands rotated to start at band
/// `first`: every tile exactly once for `t < tiles_m * tiles_n`.
#[inline(always)]
pub const fn rotated(t: u32, tiles_m: u32, tiles_n: u32, first: u32) -> (u32, u32) {
    let (i, j) = grouped(t, tiles_m, tiles_n);
    ((i + first) % tiles_m, j)
}

/// Bands of `bm` rows over the call's `m` rows.
#[inline(always)]
const fn bands(call: &TpCall, bm: u32) -> u32 {
    call.m.div_ceil(bm)
}

/// The all-gather GEMM's first band on this rank: the first band that starts inside its
/// chunk (the chunk's first band when the chunk starts on a band boundary).
#[inline(always)]
pub const fn ag_first_band(call: &TpCall, bm: u32) -> u32 {
    call.first_row(call.rank).div_ceil(bm) % bands(call, bm)
}

/// The reduce-scatter GEMM's first band on this rank: the band after the last one that
/// meets its chunk.
#[inline(always)]
pub const fn rs_first_band(call: &TpCall, bm: u32) -> u32 {
    let last_row = call.first_row(call.rank + 1) - 1;
    (last_row / bm + 1) % bands(call, bm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_visit_every_tile_once() {
        for (tm, tn) in [(1, 1), (3, 5), (9, 4), (17, 2)] {
            for first in 0..tm {
                let mut seen = std::vec![0u32; (tm * tn) as usize];
                for t in 0..tm * tn {
                    let (i, j) = rotated(t, tm, tn, first);
                    seen[(i * tn + j) as usize] += 1;
                }
                assert!(seen.iter().all(|&s| s == 1), "{tm}x{tn} from {first}");
                assert_eq!(rotated(0, tm, tn, first), (first, 0));
            }
        }
    }

    #[test]
    fn own_bands_come_first_for_the_all_gather_and_last_for_the_reduce_scatter() {
        // m = 8 * 37 over 8 ranks (37 rows each) and bands of 16: chunks straddle bands.
        for size in [1, 2, 3, 4, 8] {
            let m = size * 37;
            for rank in 0..size {
                let call = TpCall::new((m, 8, 8), (0, 1, size, rank));
                let tm = m.div_ceil(16);
                let band = |t| rotated(t, tm, 1, ag_first_band(&call, 16)).0;
                // The first band starts inside the chunk (or is band 0 of a chunk at 0).
                let (lo, hi) = (call.first_row(rank), call.first_row(rank + 1));
                let b0 = band(0) * 16;
                assert!(
                    (lo..hi).contains(&b0) || tm == 1 || (lo % 16 != 0 && hi - lo < 16),
                    "ag rank {rank}/{size}: first band at {b0}, chunk {lo}..{hi}"
                );
                // Reduce-scatter: every band that meets the chunk comes after every band
                // that does not.
                let rs = |t| rotated(t, tm, 1, rs_first_band(&call, 16)).0;
                let meets = |b: u32| b * 16 < hi && (b + 1) * 16 > lo;
                let first_own = (0..tm).position(|t| meets(rs(t))).unwrap() as u32;
                assert!(
                    (first_own..tm).all(|t| meets(rs(t))),
                    "rs rank {rank}/{size}: own bands are not last"
                );
            }
        }
    }
}
