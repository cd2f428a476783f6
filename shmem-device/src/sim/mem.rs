//! Byte copies made of atomic accesses.
//!
//! Several PEs (host threads) may touch the same symmetric bytes at once, which a GPU allows
//! and Rust calls a data race unless every access is atomic. So the simulator moves heap
//! data only through relaxed atomic loads and stores, as wide as the two pointers' common
//! alignment allows (on x86-64 and AArch64 these are ordinary moves), and orders each whole
//! operation with `SeqCst` fences at its call site.

use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};

/// An unsigned integer with an atomic twin of the same size and alignment.
trait Word: Copy {
    const SIZE: usize;
    const ZERO: Self;
    /// # Safety
    ///
    /// `p` must be aligned, valid for reads, and accessed only atomically while this runs.
    unsafe fn load(p: *const u8) -> Self;
    /// # Safety
    ///
    /// `p` must be aligned, valid for writes, and accessed only atomically while this runs.
    unsafe fn store(p: *mut u8, v: Self);
}

macro_rules! words {
    ($($t:ty => $a:ty),*) => {$(
        impl Word for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            const ZERO: Self = 0;
            #[inline(always)]
            unsafe fn load(p: *const u8) -> Self {
                // SAFETY: forwarded from the caller; `$a` has `$t`'s size and alignment, and
                // an atomic load through a `*mut` never writes.
                unsafe { <$a>::from_ptr(p as *mut $t).load(Relaxed) }
            }
            #[inline(always)]
            unsafe fn store(p: *mut u8, v: Self) {
                // SAFETY: forwarded from the caller.
                unsafe { <$a>::from_ptr(p as *mut $t).store(v, Relaxed) }
            }
        }
    )*};
}
words!(u8 => AtomicU8, u16 => AtomicU16, u32 => AtomicU32, u64 => AtomicU64);

/// Copies `len` bytes from `src` to `dst` with relaxed atomic accesses, one byte at a time up
/// to the first aligned word, whole words of `W`, then the remaining bytes.
///
/// # Safety
///
/// As [`atomic_copy`], and `dst` and `src` must have the same address modulo `W::SIZE`.
unsafe fn copy_with<W: Word>(dst: *mut u8, src: *const u8, len: usize) {
    let head = dst.align_offset(W::SIZE).min(len);
    let words = (len - head) / W::SIZE;
    let tail = head + words * W::SIZE;
    // SAFETY: every offset is below `len`, so in bounds for both pointers; after `head`
    // bytes both are `W`-aligned because they agree modulo `W::SIZE`; the caller rules out
    // overlap and non-atomic accesses.
    unsafe {
        for i in 0..head {
            u8::store(dst.add(i), u8::load(src.add(i)));
        }
        for w in 0..words {
            let off = head + w * W::SIZE;
            W::store(dst.add(off), W::load(src.add(off)));
        }
        for i in tail..len {
            u8::store(dst.add(i), u8::load(src.add(i)));
        }
    }
}

/// Copies `len` bytes from `src` to `dst`, every access a relaxed atomic one.
///
/// # Safety
///
/// `src` must be valid for reading and `dst` for writing `len` bytes, the ranges must not
/// overlap, and no non-atomic access to either range may run concurrently.
pub(crate) unsafe fn atomic_copy(dst: *mut u8, src: *const u8, len: usize) {
    let skew = (dst as usize) ^ (src as usize);
    // SAFETY: forwarded from the caller; each arm's word size divides the pointers' common
    // alignment, as `skew`'s low bits show.
    unsafe {
        if skew % 8 == 0 {
            copy_with::<u64>(dst, src, len)
        } else if skew % 4 == 0 {
            copy_with::<u32>(dst, src, len)
        } else if skew % 2 == 0 {
            copy_with::<u16>(dst, src, len)
        } else {
            copy_with::<u8>(dst, src, len)
        }
    }
}

/// Sets `len` bytes at `dst` to zero with relaxed atomic stores.
///
/// # Safety
///
/// `dst` must be valid for writing `len` bytes, and no non-atomic access to them may run
/// concurrently.
pub(crate) unsafe fn atomic_zero(dst: *mut u8, len: usize) {
    let head = dst.align_offset(8).min(len);
    let words = (len - head) / 8;
    // SAFETY: all offsets are below `len`; after `head` bytes `dst` is 8-aligned.
    unsafe {
        for i in 0..head {
            u8::store(dst.add(i), u8::ZERO);
        }
        for w in 0..words {
            u64::store(dst.add(head + w * 8), u64::ZERO);
        }
        for i in head + words * 8..len {
            u8::store(dst.add(i), u8::ZERO);
        }
    }
}

/// Reads or writes one `T` of 1, 2, 4 or 8 bytes as a single `SeqCst` atomic access: the
/// simulator's `p` and `g`.
pub(crate) mod scalar {
    use core::mem::{size_of, transmute_copy};
    use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};

    /// Runs `$body` with `$a` bound to the atomic type of `T`'s size.
    macro_rules! by_size {
        ($t:ty, |$a:ident, $u:ident| $body:expr) => {
            match size_of::<$t>() {
                1 => {
                    type $a = AtomicU8;
                    type $u = u8;
                    $body
                }
                2 => {
                    type $a = AtomicU16;
                    type $u = u16;
                    $body
                }
                4 => {
                    type $a = AtomicU32;
                    type $u = u32;
                    $body
                }
                8 => {
                    type $a = AtomicU64;
                    type $u = u64;
                    $body
                }
                n => unreachable!("RmaScalar types are 1, 2, 4 or 8 bytes, not {n}"),
            }
        };
    }

    /// Stores `value` at `dst`.
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writes and aligned to `size_of::<T>()` (the alignment of the
    /// atomic of that size); `T` must be a plain integer or float (every bit pattern of its
    /// size valid, no padding); other accesses to `*dst` that may run concurrently must be
    /// atomic.
    pub(crate) unsafe fn store<T: Copy>(dst: *mut T, value: T) {
        by_size!(T, |A, U| {
            // SAFETY: `T` and `U` have the same size and `T` is plain data, so the copy is a
            // reinterpretation; the caller aligned `dst` to the size, which is `A`'s alignment.
            unsafe { A::from_ptr(dst.cast::<U>()).store(transmute_copy::<T, U>(&value), SeqCst) }
        })
    }

    /// Loads a `T` from `src`.
    ///
    /// # Safety
    ///
    /// As [`store`], for reads.
    pub(crate) unsafe fn load<T: Copy>(src: *const T) -> T {
        by_size!(T, |A, U| {
            // SAFETY: as in `store`; the load does not write through the `*mut`.
            unsafe { transmute_copy::<U, T>(&A::from_ptr(src.cast_mut().cast::<U>()).load(SeqCst)) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn copies_every_alignment_and_length() {
        let src: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        for s in 0..9 {
            for d in 0..9 {
                for len in [0, 1, 7, 8, 9, 63, 150] {
                    let mut dst = [0u8; 200];
                    // SAFETY: both ranges are in bounds (9 + 150 < 200) and distinct buffers.
                    unsafe { atomic_copy(dst.as_mut_ptr().add(d), src.as_ptr().add(s), len) };
                    assert_eq!(&dst[d..d + len], &src[s..s + len], "s={s} d={d} len={len}");
                    assert!(dst[..d].iter().chain(&dst[d + len..]).all(|&b| b == 0));
                }
            }
        }
    }

    #[test]
    fn zeroes_exactly_the_range() {
        for off in 0..9 {
            for len in [0, 1, 8, 13, 100] {
                let mut buf = [0xAAu8; 128];
                // SAFETY: in bounds, exclusive.
                unsafe { atomic_zero(buf.as_mut_ptr().add(off), len) };
                assert!(buf[off..off + len].iter().all(|&b| b == 0));
                assert!(buf[..off]
                    .iter()
                    .chain(&buf[off + len..])
                    .all(|&b| b == 0xAA));
            }
        }
    }

    #[test]
    fn scalars_round_trip() {
        let mut x = 0f64;
        let mut y = 0i16;
        // SAFETY: aligned locals.
        unsafe {
            scalar::store(&mut x, -2.5f64);
            scalar::store(&mut y, -7i16);
            assert_eq!(scalar::load(&x), -2.5);
            assert_eq!(scalar::load(&y), -7);
        }
    }
}
