//! Weighted sums of a token's bf16 rows, in f32, in entry order: what both combines compute
//! (`Σ weight × row` over a token's entries). A thread takes eight elements (one 16-byte pack
//! of each row); [`Rows`] holds up to eight of the token's entries, so `top_k` up to 16 is two
//! of them.

use crate::call::NONE;
use rshmem_coll::pack::{self, Pack};
use rshmem_device::bf16;
use rshmem_device::half::Half;

/// Up to eight entries of a token: each a row ([`NONE`] where unused) and its weight.
#[derive(Clone, Copy)]
pub(crate) struct Rows {
    rows: [u32; 8],
    weights: [f32; 8],
    /// The first used row, or [`NONE`].
    any: u32,
}

impl Rows {
    /// Entries `8 × half ..` of `top_k`, `entry(kk)` giving each one's row and weight (or
    /// `None` where it is not summed here).
    #[inline(always)]
    pub(crate) fn gather(top_k: u32, half: u32, entry: impl Fn(u32) -> Option<(u32, f32)>) -> Self {
        let mut r = Self {
            rows: [NONE; 8],
            weights: [0.0; 8],
            any: NONE,
        };
        rshmem_coll::unroll8!(slot < 8 => {
            let kk = 8 * half + slot as u32;
            if kk < top_k {
                if let Some((row, w)) = entry(kk) {
                    (r.rows[slot], r.weights[slot]) = (row, w);
                    if r.any == NONE {
                        r.any = row;
                    }
                }
            }
        });
        r
    }
}

/// A token's entries (`top_k` of them, in two [`Rows`]) over the rows of `base` (`h`
/// elements each).
pub(crate) struct Sum {
    halves: [Rows; 2],
    two: bool,
    /// A used row, loaded where an entry is unused (the loads are not behind branches).
    fallback: u32,
    base: *const bf16,
    h: usize,
}

impl Sum {
    /// The sum of `entry(kk)` for `kk < top_k` over `base`'s rows.
    #[inline(always)]
    pub(crate) fn new(
        top_k: u32,
        base: *const bf16,
        h: usize,
        entry: impl Fn(u32) -> Option<(u32, f32)>,
    ) -> Self {
        let two = top_k > 8;
        let first = Rows::gather(top_k, 0, &entry);
        let second = if two {
            Rows::gather(top_k, 1, &entry)
        } else {
            first
        };
        let fallback = match (first.any, second.any) {
            (NONE, NONE) => 0,
            (NONE, row) | (row, _) => row,
        };
        Self {
            halves: [first, second],
            two,
            fallback,
            base,
            h,
        }
    }

    /// Whether the rows' packs can be used: `h` whole packs and `base` 16-byte aligned.
    #[inline(always)]
    pub(crate) fn packed(&self) -> bool {
        self.h % 8 == 0 && pack::aligned(self.base)
    }

    /// Elements `8 g .. 8 g + 8` of the sum.
    ///
    /// # Safety
    ///
    /// [`Sum::packed`]; every used row (and `fallback`) lies in `base`, pack `g` inside.
    #[inline(always)]
    pub(crate) unsafe fn pack(&self, g: usize) -> [f32; 8] {
        let mut acc = [0.0f32; 8];
        // SAFETY: the caller's.
        unsafe { self.add(&mut acc, &self.halves[0], g) };
        if self.two {
            // SAFETY: as above.
            unsafe { self.add(&mut acc, &self.halves[1], g) };
        }
        acc
    }

    /// Element `e` of the sum.
    ///
    /// # Safety
    ///
    /// Every used row lies in `base`, `e < h`.
    #[inline(always)]
    pub(crate) unsafe fn element(&self, e: usize) -> f32 {
        // The halves by constant index, as in `pack`: a slice of them by a runtime length put
        // the whole `Sum` in local memory, read back per pack in the hot loop.
        let mut acc = 0.0f32;
        // SAFETY: the caller's.
        unsafe { self.add_element(&mut acc, &self.halves[0], e) };
        if self.two {
            // SAFETY: the caller's.
            unsafe { self.add_element(&mut acc, &self.halves[1], e) };
        }
        acc
    }

    /// Adds one [`Rows`]' share of element `e` to `acc`, in entry order.
    ///
    /// # Safety
    ///
    /// As [`Sum::element`].
    #[inline(always)]
    unsafe fn add_element(&self, acc: &mut f32, half: &Rows, e: usize) {
        rshmem_coll::unroll8!(j < 8 => {
            if half.rows[j] != NONE {
                // SAFETY: the caller's.
                let x = unsafe { self.base.add(half.rows[j] as usize * self.h + e).read() };
                *acc += half.weights[j] * x.to_f32_exact();
            }
        });
    }

    /// Adds one [`Rows`]' share of pack `g` to `acc`, in entry order. Every entry's pack is
    /// loaded before any is added (an unused one loads `fallback`'s), so the loads overlap: a
    /// load behind a branch would wait for the adds before it.
    ///
    /// # Safety
    ///
    /// As [`Sum::pack`].
    #[inline(always)]
    unsafe fn add(&self, acc: &mut [f32; 8], half: &Rows, g: usize) {
        let mut p = [Pack::default(); 8];
        rshmem_coll::unroll8!(j < 8 => {
            let row = if half.rows[j] != NONE { half.rows[j] } else { self.fallback };
            // SAFETY: the caller's.
            p[j] = unsafe { pack::load(self.base.add(row as usize * self.h).cast::<Pack>().add(g)) };
        });
        rshmem_coll::unroll8!(j < 8 => {
            if half.rows[j] != NONE {
                rshmem_coll::unroll8!(l < 8 => {
                    acc[l] += half.weights[j] * pack::lane::<bf16>(&p[j], l).to_f32_exact();
                });
            }
        });
    }
}

/// Eight f32 rounded to bf16 (nearest, ties to even), as one pack.
#[inline(always)]
pub(crate) fn bf16_pack(acc: &[f32; 8]) -> Pack {
    let mut v = Pack::default();
    rshmem_coll::unroll8!(l < 8 => {
        pack::set_lane::<bf16>(&mut v, l, bf16::from_f32_rn(acc[l]));
    });
    v
}
