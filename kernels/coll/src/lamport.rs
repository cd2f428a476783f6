//! Flag-in-data tiles (Lamport style): the data carries its own "arrived" flag, so a consumer
//! needs no separate signal and the producer no fence — one one-way trip over NVLink.
//!
//! A slot (16-byte packs in the consumer's symmetric memory) starts *empty*: every 32-bit
//! word [`EMPTY`] (`0xFFFF_FFFF`, a NaN in f32, bf16 and f16 alike). The producer stores its
//! packs into the slot with [`publish_tile`]; a word that happens to be `EMPTY` is first
//! replaced by [`NAN_WORD`] (`0x7FC0_7FC0`, also a NaN in every float type: NaN stays NaN,
//! only its payload changes), so no stored word is `EMPTY`. The consumer polls each pack with
//! relaxed 32-bit-atomic loads ([`take_pack`]) until none of its words is `EMPTY` — each word
//! is written by one single-copy-atomic store, so a word is either all old or all new — then
//! writes `EMPTY` back, making the slot ready for reuse. Only float elements have a free
//! pattern; integer collectives use signals ([`crate::signal`]).
//!
//! **NaN inputs.** A NaN in the data is never taken for "not arrived": a NaN word other than
//! `EMPTY` is stored as it is, an `EMPTY` one (an f32 NaN `0xFFFF_FFFF`, or two bf16/f16 NaNs
//! `0xFFFF` side by side) as `NAN_WORD`, NaN again. The reduction then treats it like any NaN
//! ([`crate::elem`]: Max, Min and Sum return the canonical NaN), so the flag-in-data all-reduce
//! gives the same bits as the other algorithms.
//!
//! **Reuse.** A slot may be written again only after its consumer has emptied it. The
//! collectives ([`crate::algo::lamport_all_reduce`]) alternate two slots per (row, source)
//! by the parity of the pair's step count ([`crate::signal::Steps`]): a producer at step `s`
//! writes slot `s % 2`, which the consumer emptied during step `s − 2`; the producer has
//! finished step `s − 1`, for which it read what the consumer published at step `s − 1`, which
//! the consumer did after finishing step `s − 2` (its emptying stores, followed by a
//! `fence.acq_rel.sys` at the end of that kernel, [`finish`]). Each side's closing fence is
//! the release (consumer) and the acquire (producer) of that chain, so the emptying stores
//! happen before the new data: message passing, which needs no sequentially consistent fence
//! (`tests/lamport_loom.rs` model-checks the rule, and fails without the fence or with one
//! slot). One slot would not do: a fast producer may start step `s + 1` before the consumer
//! has read step `s`.
//!
//! ```ignore
//! // Producer: my tile into the consumer's slot (a peer mapping).
//! lamport::publish_tile(remote_slot, my_data, len);
//! // Consumer: pack i, once it has arrived; the slot is empty again afterwards.
//! let p = lamport::take_pack(local_slot.add(i), &mut poll);
//! ```

use rshmem_device::atomic::{self, Ordering, Sys, Words4};
use rshmem_device::thread::{self, Poll};

use crate::elem::{Elem, Reduce};
use crate::pack::{self, Pack};
use crate::peers::MAX_PEERS;
use crate::tile::block_lanes;

/// The 32-bit word of an empty slot.
pub const EMPTY: u32 = 0xFFFF_FFFF;
/// What a data word equal to [`EMPTY`] is stored as (a quiet NaN in f32, and two in bf16/f16).
pub const NAN_WORD: u32 = 0x7FC0_7FC0;
/// An empty pack.
pub const EMPTY_PACK: Pack = Words4([EMPTY; 4]);

/// `p` with every [`EMPTY`] word replaced by [`NAN_WORD`].
#[inline(always)]
pub fn canonical(p: Pack) -> Pack {
    Words4(p.0.map(|w| if w == EMPTY { NAN_WORD } else { w }))
}

/// Whether every word of `p` has been written.
#[inline(always)]
pub fn is_full(p: &Pack) -> bool {
    p.0.iter().all(|&w| w != EMPTY)
}

/// Pack `i` of the elements `src[0..count]`: a vector load where `src` is 16-byte aligned and
/// the pack is whole, elements otherwise (the lanes past `count` zero).
///
/// # Safety
///
/// `src` valid for `count` reads; `i * E::LANES < count`; no write races with the read.
#[inline(always)]
pub unsafe fn read_pack<E: Elem>(src: *const E, i: usize, count: usize) -> Pack {
    let first = i * E::LANES;
    if pack::aligned(src) && first + E::LANES <= count {
        // SAFETY: a whole, aligned pack inside `src[0..count]`.
        return unsafe { pack::load(src.cast::<Pack>().add(i)) };
    }
    let mut p = Pack::default();
    crate::unroll8!(l < E::LANES.min(count - first) => {
        // SAFETY: `first + l < count`.
        pack::set_lane(&mut p, l, unsafe { src.add(first + l).read() });
    });
    p
}

/// Writes pack `i` of the elements `dst[0..count]` (lanes past `count` are not written).
///
/// # Safety
///
/// `dst` valid for `count` writes; `i * E::LANES < count`.
#[inline(always)]
pub unsafe fn write_pack<E: Elem>(dst: *mut E, i: usize, count: usize, p: Pack) {
    let first = i * E::LANES;
    if pack::aligned(dst) && first + E::LANES <= count {
        // SAFETY: a whole, aligned pack inside `dst[0..count]`.
        return unsafe { pack::store(dst.cast::<Pack>().add(i), p) };
    }
    crate::unroll8!(l < E::LANES.min(count - first) => {
        // SAFETY: `first + l < count`.
        unsafe { dst.add(first + l).write(pack::lane(&p, l)) };
    });
}

/// Stores the local elements `src[0..count]` into `slot` (the consumer's slot, through its
/// peer mapping), `count.div_ceil(E::LANES)` packs, the last one padded with zero lanes, every
/// pack [`canonical`]. Every thread of the block calls it.
///
/// # Safety
///
/// `slot` is a peer-mapped (or local) address of an empty slot of at least that many packs,
/// 16-byte aligned, which nobody else writes until its consumer has emptied it; `src` valid
/// for `count` reads.
#[inline(always)]
pub unsafe fn publish_tile<E: Elem>(slot: *mut Pack, src: *const E, count: usize) {
    let (t, nt) = block_lanes();
    let packs = count.div_ceil(E::LANES);
    let mut i = t;
    while i < packs {
        // SAFETY: `i < packs`: inside `src[0..count]` and the slot; the slot's words are
        // accessed only atomically.
        unsafe {
            let p = canonical(read_pack(src, i, count));
            atomic::store_relaxed_x4::<Sys>(slot.add(i), p);
        }
        i += nt;
    }
}

/// Waits until the local pack `p` of a slot is full, returns it and empties it.
///
/// # Safety
///
/// `p` a 16-byte aligned pack of a slot in this PE's memory whose producer will publish it;
/// its words are accessed only atomically.
#[inline(always)]
pub unsafe fn take_pack(p: *mut Pack, poll: &mut Poll) -> Pack {
    loop {
        // SAFETY: the caller's contract.
        let v = unsafe { atomic::load_relaxed_x4::<Sys>(p) };
        if is_full(&v) {
            // SAFETY: as above; the producer writes it again only after this (see the
            // module docs on reuse).
            unsafe { atomic::store_relaxed_x4::<Sys>(p, EMPTY_PACK) };
            return v;
        }
        poll.pause("rshmem-coll: waiting for a peer's flag-in-data tile");
    }
}

/// For `i` in `0..count`: `dst[i] = reduce over members r in rank order of xᵣ[i]`, where
/// `x_rank` is the local `own[0..count]` and every other `xᵣ` arrives in the local slot
/// `slots[r]` ([`publish_tile`] by member `r`); each slot is emptied as it is read. Every
/// thread of the block calls it. `dst` may equal `own`.
///
/// # Safety
///
/// `slots[r]` for `r != rank` are local, 16-byte aligned slots of `count.div_ceil(LANES)`
/// packs that member `r` fills; `own` valid for `count` reads, `dst` for `count` writes;
/// `n = slots.len() <= MAX_PEERS`, `rank < n`.
#[inline(always)]
pub unsafe fn reduce_tile<E: Elem, O: Reduce>(
    dst: *mut E,
    own: *const E,
    slots: &[*mut Pack],
    rank: usize,
    count: usize,
) {
    let n = slots.len();
    debug_assert!(n <= MAX_PEERS && rank < n);
    let (t, nt) = block_lanes();
    let packs = count.div_ceil(E::LANES);
    let mut poll = Poll::new();
    let s: [*mut Pack; MAX_PEERS] = core::array::from_fn(|r| {
        if r < n {
            slots[r]
        } else {
            core::ptr::null_mut()
        }
    });
    let mut i = t;
    while i < packs {
        let mut v = [Pack::default(); MAX_PEERS];
        crate::unroll8!(r < n => {
            // SAFETY: pack `i` of `own` and of each slot (the caller's contract).
            v[r] = unsafe {
                if r == rank {
                    read_pack(own, i, count)
                } else {
                    take_pack(s[r].add(i), &mut poll)
                }
            };
        });
        // SAFETY: pack `i` of `dst`; the same thread read `own`'s pack `i` above.
        unsafe { write_pack(dst, i, count, pack::reduce::<E, O>(&v, n)) };
        i += nt;
    }
}

/// Ends a block's use of its slots in a kernel: a block barrier, then one `fence.acq_rel.sys`:
/// the release of the emptying stores before anything this PE does in a later kernel, and the
/// acquire of the words read here (see the module docs on reuse). Acquire-release, not
/// `fence.sc.sys`: the rule is message passing, and the SC fence cost 0.6–0.9 µs per call
/// (docs/mps.md). Every thread of the block calls it.
#[inline(always)]
pub fn finish() {
    thread::sync_threads();
    if thread::thread_rank_in_block() == 0 {
        atomic::fence::<Sys>(Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_device::bf16;

    #[test]
    fn canonical_packs_are_full_and_keep_values() {
        let p = pack::from_lanes(&[1.0f32, f32::from_bits(EMPTY), -0.0, 3.5]);
        assert!(!is_full(&p));
        let c = canonical(p);
        assert!(is_full(&c));
        assert!(pack::lane::<f32>(&c, 1).is_nan());
        assert_eq!(pack::lane::<f32>(&c, 2).to_bits(), (-0.0f32).to_bits());
        let h = pack::from_lanes(&[bf16::from_bits(0xFFFF); 8]);
        let ch = canonical(h);
        assert!(is_full(&ch));
        assert!((0..8).all(|i| pack::lane::<bf16>(&ch, i).is_nan()));
        assert!(!is_full(&EMPTY_PACK));
        assert!(f32::from_bits(NAN_WORD).is_nan());
    }

    #[test]
    fn an_empty_looking_nan_arrives_and_reduces_to_the_canonical_nan() {
        use crate::elem::{Max, Min, Sum};
        use crate::peers::MAX_PEERS;
        // Member 1 sends NaNs whose words are EMPTY (all ones); member 0 numbers.
        let nums = pack::from_lanes(&[bf16::from_f32(2.0); 8]);
        let sent = canonical(pack::from_lanes(&[bf16::from_bits(0xFFFF); 8]));
        assert!(is_full(&sent));
        let mut v = [Pack::default(); MAX_PEERS];
        (v[0], v[1]) = (nums, sent);
        for out in [
            pack::reduce::<bf16, Max>(&v, 2),
            pack::reduce::<bf16, Min>(&v, 2),
            pack::reduce::<bf16, Sum>(&v, 2),
        ] {
            assert!((0..8).all(|i| pack::lane::<bf16>(&out, i).to_bits() == 0x7FFF));
        }
        let sent = canonical(pack::from_lanes(&[f32::from_bits(EMPTY), 1.0, -0.0, 0.0]));
        v[0] = pack::from_lanes(&[5.0f32, f32::NEG_INFINITY, 0.0, -0.0]);
        v[1] = sent;
        let max = pack::reduce::<f32, Max>(&v, 2);
        let bits: [u32; 4] = core::array::from_fn(|i| pack::lane::<f32>(&max, i).to_bits());
        assert_eq!(bits, [0x7FFF_FFFF, 1.0f32.to_bits(), 0, 0]);
        let min = pack::reduce::<f32, Min>(&v, 2);
        let bits: [u32; 4] = core::array::from_fn(|i| pack::lane::<f32>(&min, i).to_bits());
        let (ninf, nzero) = (f32::NEG_INFINITY.to_bits(), (-0.0f32).to_bits());
        assert_eq!(bits, [0x7FFF_FFFF, ninf, nzero, nzero]);
    }
}
