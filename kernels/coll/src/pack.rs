//! 16-byte packs: the unit every block moves (one `ld.v4`/`st.v4` per thread), and the
//! lane-wise reduction of packs.
//!
//! A [`Pack`] holds [`Elem::LANES`] elements (8 bf16, 4 f32, 2 i64). Memory is read and
//! written in packs where every pointer involved is 16-byte aligned, element by element
//! elsewhere (the head and tail of a misaligned range, the last partial pack).
//!
//! ```
//! use rshmem_coll::pack::{self, Pack};
//! use rshmem_coll::elem::Sum;
//! let a = pack::from_lanes(&[1.0f32, 2.0, 3.0, 4.0]);
//! let b = pack::from_lanes(&[10.0f32, 20.0, 30.0, 40.0]);
//! let s = pack::reduce::<f32, Sum>(&[a, b], 2);
//! assert_eq!(pack::lane::<f32>(&s, 3), 44.0);
//! ```

use crate::elem::{Elem, Reduce};
pub use rshmem_device::atomic::Words4 as Pack;

/// Bytes per pack.
pub const BYTES: usize = 16;

/// Element `i` (`< E::LANES`) of `p`.
#[inline(always)]
pub fn lane<E: Elem>(p: &Pack, i: usize) -> E {
    debug_assert!(i < E::LANES);
    // SAFETY: `i < LANES`, so the element lies inside the pack's 16 bytes; `Elem` types are
    // plain data, so any bits are a value; the read is unaligned-safe.
    unsafe { (p as *const Pack).cast::<E>().add(i).read_unaligned() }
}

/// Sets element `i` (`< E::LANES`) of `p` to `v`.
#[inline(always)]
pub fn set_lane<E: Elem>(p: &mut Pack, i: usize, v: E) {
    debug_assert!(i < E::LANES);
    // SAFETY: as in `lane`, for a write into the pack this function borrows mutably.
    unsafe { (p as *mut Pack).cast::<E>().add(i).write_unaligned(v) }
}

/// A pack of `lanes` (at most `E::LANES`; the rest zero bits).
#[inline(always)]
pub fn from_lanes<E: Elem>(lanes: &[E]) -> Pack {
    let mut p = Pack::default();
    for (i, &v) in lanes.iter().take(E::LANES).enumerate() {
        set_lane(&mut p, i, v);
    }
    p
}

/// The lane-wise reduction of `packs[0..n]` (`1 <= n <= packs.len()`), in that order: each
/// lane widened to `E::Acc`, combined left to right, rounded once.
#[inline(always)]
pub fn reduce<E: Elem, O: Reduce>(packs: &[Pack], n: usize) -> Pack {
    let mut out = Pack::default();
    for l in 0..E::LANES {
        let mut acc = lane::<E>(&packs[0], l).to_acc();
        for p in &packs[1..n] {
            acc = O::combine(acc, lane::<E>(p, l).to_acc());
        }
        set_lane(&mut out, l, E::from_acc(acc));
    }
    out
}

/// Whether `ptr` is 16-byte aligned.
#[inline(always)]
pub fn aligned<T>(ptr: *const T) -> bool {
    (ptr as usize) % BYTES == 0
}

/// Reads the pack at `p` with a plain vector load.
///
/// # Safety
///
/// `p` valid for 16 bytes of reads and 16-byte aligned; no write to them may race with the
/// read (order them with a signal and wait, [`crate::signal`]).
#[inline(always)]
pub unsafe fn load(p: *const Pack) -> Pack {
    // SAFETY: the caller's contract.
    unsafe { p.read() }
}

/// Writes the pack at `p` with a plain vector store.
///
/// # Safety
///
/// As [`load`], for writes.
#[inline(always)]
pub unsafe fn store(p: *mut Pack, v: Pack) {
    // SAFETY: the caller's contract.
    unsafe { p.write(v) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elem::{Max, Min, Sum};
    use rshmem_device::bf16;

    #[test]
    fn lanes_round_trip_and_reduce_in_order() {
        let xs: [bf16; 8] = core::array::from_fn(|i| bf16::from_f32(i as f32 - 3.5));
        let p = from_lanes(&xs);
        assert!((0..8).all(|i| lane::<bf16>(&p, i) == xs[i]));
        let q = from_lanes(&[bf16::from_f32(10.0); 8]);
        let s = reduce::<bf16, Sum>(&[p, q, p], 3);
        assert!((0..8).all(|i| lane::<bf16>(&s, i).to_f32() == 2.0 * (i as f32 - 3.5) + 10.0));
        let m = from_lanes(&[-5i64, 9]);
        let k = from_lanes(&[3i64, -9]);
        assert_eq!(lane::<i64>(&reduce::<i64, Max>(&[m, k], 2), 0), 3);
        assert_eq!(lane::<i64>(&reduce::<i64, Min>(&[m, k], 2), 1), -9);
        // One source: the pack itself.
        assert_eq!(reduce::<bf16, Sum>(&[p], 1), p);
    }
}
