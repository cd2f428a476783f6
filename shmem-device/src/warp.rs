//! Warp-level operations: lane index, active mask, shuffles and votes, shaped like
//! `cuda_std::warp`. Every lane named in `mask` must call the operation together (as CUDA's
//! `__shfl_sync`/`__all_sync`); the simulator requires the whole warp (`FULL_MASK`, or the
//! lanes that exist in a partial last warp).

use crate::backend;

/// All 32 lanes.
pub const FULL_MASK: u32 = u32::MAX;

pub use crate::contract::WARP_SIZE;

/// This thread's lane in its warp, `0..32`.
#[inline(always)]
pub fn lane_id() -> u32 {
    backend::lane_id()
}

/// The warp of this thread within its block.
#[inline(always)]
pub fn warp_id() -> u32 {
    crate::thread::thread_rank_in_block() / WARP_SIZE
}

/// The lanes of this warp that are executing now (`activemask`).
#[inline(always)]
pub fn active_mask() -> u32 {
    backend::active_mask()
}

/// Synchronises the lanes of `mask` (`__syncwarp`).
#[inline(always)]
pub fn sync_warp(mask: u32) {
    backend::sync_warp(mask)
}

pub use crate::contract::Shuffle;

/// Values that can be shuffled: 32- and 64-bit integers and floats.
pub trait WarpValue: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn to_bits(self) -> u64;
    #[doc(hidden)]
    fn from_bits(bits: u64) -> Self;
    #[doc(hidden)]
    const WIDE: bool;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! warp_values {
    ($($t:ty => $wide:expr, |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl WarpValue for $t {
            #[inline(always)]
            fn to_bits(self) -> u64 { let $v = self; $to }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self { let $b = bits; $from }
            const WIDE: bool = $wide;
        }
    )*};
}

warp_values! {
    u32 => false, |v| v as u64, |b| b as u32;
    i32 => false, |v| v as u32 as u64, |b| b as u32 as i32;
    f32 => false, |v| v.to_bits() as u64, |b| f32::from_bits(b as u32);
    u64 => true, |v| v, |b| b;
    i64 => true, |v| v as u64, |b| b as i64;
    f64 => true, |v| v.to_bits(), |b| f64::from_bits(b);
}

/// Reads `value` from another lane of the warp, chosen by `mode` and `arg`.
#[inline(always)]
pub fn shuffle<T: WarpValue>(mask: u32, mode: Shuffle, value: T, arg: u32) -> T {
    let bits = value.to_bits();
    let lo = backend::shuffle32(mask, mode, bits as u32, arg);
    let hi = if T::WIDE {
        backend::shuffle32(mask, mode, (bits >> 32) as u32, arg)
    } else {
        0
    };
    T::from_bits(((hi as u64) << 32) | lo as u64)
}

/// `__shfl_sync`: the value of lane `src`.
#[inline(always)]
pub fn shfl_idx<T: WarpValue>(mask: u32, value: T, src: u32) -> T {
    shuffle(mask, Shuffle::Idx, value, src)
}

/// `__shfl_up_sync`: the value of lane `lane - delta`.
#[inline(always)]
pub fn shfl_up<T: WarpValue>(mask: u32, value: T, delta: u32) -> T {
    shuffle(mask, Shuffle::Up, value, delta)
}

/// `__shfl_down_sync`: the value of lane `lane + delta`.
#[inline(always)]
pub fn shfl_down<T: WarpValue>(mask: u32, value: T, delta: u32) -> T {
    shuffle(mask, Shuffle::Down, value, delta)
}

/// `__shfl_xor_sync`: the value of lane `lane ^ lane_mask`.
#[inline(always)]
pub fn shfl_xor<T: WarpValue>(mask: u32, value: T, lane_mask: u32) -> T {
    shuffle(mask, Shuffle::Xor, value, lane_mask)
}

/// Whether `pred` holds on every lane of `mask`.
#[inline(always)]
pub fn all(mask: u32, pred: bool) -> bool {
    ballot(mask, pred) == ballot(mask, true)
}

/// Whether `pred` holds on any lane of `mask`.
#[inline(always)]
pub fn any(mask: u32, pred: bool) -> bool {
    ballot(mask, pred) != 0
}

/// Bit `i` set where `pred` holds on lane `i` (`__ballot_sync`).
#[inline(always)]
pub fn ballot(mask: u32, pred: bool) -> u32 {
    backend::ballot(mask, pred)
}

/// The lanes of `mask` whose `value` equals this lane's (`__match_any_sync`): one
/// instruction where telling equal keys apart by ballots takes one vote per bit.
#[inline(always)]
pub fn match_any(mask: u32, value: u32) -> u32 {
    backend::match_any(mask, value)
}

/// Sum of `value` over the 32 lanes, on every lane (a butterfly of `shfl_xor`).
#[inline(always)]
pub fn sum<T: WarpValue + core::ops::Add<Output = T>>(value: T) -> T {
    let mut v = value;
    let mut offset = WARP_SIZE / 2;
    while offset > 0 {
        v = v + shfl_xor(FULL_MASK, v, offset);
        offset /= 2;
    }
    v
}

/// The sum of `value` over the lanes below this one (0 on lane 0), and over all 32 lanes: an
/// exclusive scan (Hillis-Steele over `shfl_up`), for numbering what each lane contributes.
/// Every lane calls.
#[inline(always)]
pub fn exclusive_sum<T>(value: T) -> (T, T)
where
    T: WarpValue + core::ops::Add<Output = T> + core::ops::Sub<Output = T>,
{
    let lane = lane_id();
    let mut inclusive = value;
    let mut d = 1;
    while d < WARP_SIZE {
        let below = shfl_up(FULL_MASK, inclusive, d);
        if lane >= d {
            inclusive = inclusive + below;
        }
        d *= 2;
    }
    (
        inclusive - value,
        shfl_idx(FULL_MASK, inclusive, WARP_SIZE - 1),
    )
}
