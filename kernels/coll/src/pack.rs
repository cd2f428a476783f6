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
//! let mut v = [Pack::default(); rshmem_coll::MAX_PEERS];
//! (v[0], v[1]) = (a, b);
//! let s = pack::reduce::<f32, Sum>(&v, 2);
//! assert_eq!(pack::lane::<f32>(&s, 3), 44.0);
//! ```

use core::mem::size_of;

use crate::elem::{Elem, Reduce};
use crate::peers::MAX_PEERS;
use rshmem_device::vector;
pub use rshmem_device::vector::Words4 as Pack;

/// Bytes per pack.
pub const BYTES: usize = 16;

/// Element `i` (`< E::LANES`) of `p`, taken from its 32-bit words by shifts (so that packs
/// stay in registers once the lane loops are unrolled).
#[inline(always)]
pub fn lane<E: Elem>(p: &Pack, i: usize) -> E {
    debug_assert!(i < E::LANES);
    let w = &p.0;
    E::from_bits64(match size_of::<E>() {
        2 => u64::from(w[i / 2] >> (16 * (i % 2))) & 0xFFFF,
        4 => u64::from(w[i]),
        _ => u64::from(w[2 * i]) | u64::from(w[2 * i + 1]) << 32,
    })
}

/// Sets element `i` (`< E::LANES`) of `p` to `v`.
#[inline(always)]
pub fn set_lane<E: Elem>(p: &mut Pack, i: usize, v: E) {
    debug_assert!(i < E::LANES);
    let bits = v.to_bits64();
    let w = &mut p.0;
    match size_of::<E>() {
        2 => {
            let shift = 16 * (i % 2);
            w[i / 2] = (w[i / 2] & !(0xFFFF << shift)) | ((bits as u32) & 0xFFFF) << shift;
        }
        4 => w[i] = bits as u32,
        _ => {
            w[2 * i] = bits as u32;
            w[2 * i + 1] = (bits >> 32) as u32;
        }
    }
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

/// Runs `$body` with `$i` bound to `0, 1, …, 7` where `$i < $n`, written out eight times:
/// with constant indices, the arrays the body indexes stay in registers (a loop LLVM did not
/// unroll would put them in local memory). `$n` is a constant or a small runtime bound.
#[macro_export]
#[doc(hidden)]
macro_rules! unroll8 {
    ($i:ident < $n:expr => $body:block) => {{
        let n: usize = $n;
        { let $i: usize = 0; if $i < n $body }
        { let $i: usize = 1; if $i < n $body }
        { let $i: usize = 2; if $i < n $body }
        { let $i: usize = 3; if $i < n $body }
        { let $i: usize = 4; if $i < n $body }
        { let $i: usize = 5; if $i < n $body }
        { let $i: usize = 6; if $i < n $body }
        { let $i: usize = 7; if $i < n $body }
    }};
}

/// Lane `l` of `packs[0..n]` reduced in that order, unrounded (in `E::Acc`): for a kernel
/// that combines the reduction with more arithmetic before rounding once.
#[inline(always)]
pub fn reduce_lane<E: Elem, O: Reduce>(packs: &[Pack; MAX_PEERS], n: usize, l: usize) -> E::Acc {
    let mut acc = lane::<E>(&packs[0], l).to_acc();
    crate::unroll8!(r < n => {
        if r > 0 {
            acc = O::combine(acc, lane::<E>(&packs[r], l).to_acc());
        }
    });
    acc
}

/// The lane-wise reduction of `packs[0..n]` (`1 <= n <= MAX_PEERS`), in that order: each
/// lane widened to `E::Acc`, combined left to right, rounded once. Lanes and sources are
/// unrolled, so packs stay in registers.
#[inline(always)]
pub fn reduce<E: Elem, O: Reduce>(packs: &[Pack; MAX_PEERS], n: usize) -> Pack {
    const { assert!(MAX_PEERS == 8, "unroll8! covers MAX_PEERS sources") };
    let mut out = Pack::default();
    crate::unroll8!(l < E::LANES => {
        set_lane(&mut out, l, E::from_acc(reduce_lane::<E, O>(packs, n, l)));
    });
    out
}

/// Whether `ptr` is 16-byte aligned.
#[inline(always)]
pub fn aligned<T>(ptr: *const T) -> bool {
    (ptr as usize) % BYTES == 0
}

/// Reads the pack at `p` with one plain vector load (`ld.v4.b32`).
///
/// # Safety
///
/// `p` valid for 16 bytes of reads and 16-byte aligned; no write to them may race with the
/// read (order them with a signal and wait, [`crate::signal`]).
#[inline(always)]
pub unsafe fn load(p: *const Pack) -> Pack {
    // SAFETY: the caller's contract.
    unsafe { vector::load(p) }
}

/// Writes the pack at `p` with one plain vector store (`st.v4.b32`).
///
/// # Safety
///
/// As [`load`], for writes.
#[inline(always)]
pub unsafe fn store(p: *mut Pack, v: Pack) {
    // SAFETY: the caller's contract.
    unsafe { vector::store(p, v) }
}

/// As [`store`], cached evict-first (`st.cs.v4.b32`, `rshmem_device::vector::store_streaming`):
/// for output this GPU will not read again soon.
///
/// # Safety
///
/// As [`store`].
#[inline(always)]
pub unsafe fn store_streaming(p: *mut Pack, v: Pack) {
    // SAFETY: the caller's contract.
    unsafe { vector::store_streaming(p, v) }
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
        let v = |ps: &[Pack]| -> [Pack; MAX_PEERS] {
            core::array::from_fn(|i| ps.get(i).copied().unwrap_or_default())
        };
        let s = reduce::<bf16, Sum>(&v(&[p, q, p]), 3);
        assert!((0..8).all(|i| lane::<bf16>(&s, i).to_f32() == 2.0 * (i as f32 - 3.5) + 10.0));
        let m = from_lanes(&[-5i64, 9]);
        let k = from_lanes(&[3i64, -9]);
        assert_eq!(lane::<i64>(&reduce::<i64, Max>(&v(&[m, k]), 2), 0), 3);
        assert_eq!(lane::<i64>(&reduce::<i64, Min>(&v(&[m, k]), 2), 1), -9);
        // One source: the pack itself; lanes set one by one keep their neighbours.
        assert_eq!(reduce::<bf16, Sum>(&v(&[p]), 1), p);
        let mut h = p;
        set_lane(&mut h, 3, bf16::from_f32(7.0));
        assert!(
            (0..8).all(|i| lane::<bf16>(&h, i) == if i == 3 { bf16::from_f32(7.0) } else { xs[i] })
        );
    }
}
