//! Scoped atomics on the simulator: host atomics, sequentially consistent, at any scope
//! (every simulated thread of every PE shares one address space).

use core::mem::{size_of, transmute_copy};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};

use crate::contract::RmwOp;

/// Integer operands of the scoped atomics and of the integer AMOs, with their arithmetic.
pub(crate) trait SimAtomic: Copy + Ord {
    /// One, for `atomic_inc`.
    const ONE: Self;
    fn wrapping_add(self, other: Self) -> Self;
    /// `And`, `Or` or `Xor` (any other op is `Xor`).
    fn bits(self, op: RmwOp, other: Self) -> Self;
}

macro_rules! sim_atomics {
    ($($t:ty),*) => {$(
        impl SimAtomic for $t {
            const ONE: Self = 1;
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            fn bits(self, op: RmwOp, other: Self) -> Self {
                match op {
                    RmwOp::And => self & other,
                    RmwOp::Or => self | other,
                    _ => self ^ other,
                }
            }
        }
    )*};
}
sim_atomics!(u32, i32, u64, i64);

/// Replaces `*ptr` by `f(*ptr)` atomically (a `SeqCst` compare-exchange loop on the atomic of
/// `T`'s size); returns the old value. The one read-modify-write of the simulator: scoped
/// atomics and remote AMOs both come here.
///
/// # Safety
///
/// `ptr` valid, aligned, accessed concurrently only atomically; `T` a 4- or 8-byte plain
/// integer or float.
pub(super) unsafe fn update<T: Copy>(ptr: *mut T, f: impl Fn(T) -> T) -> T {
    macro_rules! go {
        ($a:ty, $u:ty) => {{
            // SAFETY: the caller's contract; `T` and `$u` have the same size.
            let atomic = unsafe { <$a>::from_ptr(ptr.cast::<$u>()) };
            let old = atomic
                .fetch_update(SeqCst, SeqCst, |bits| {
                    // SAFETY: same size, plain integers.
                    Some(unsafe { transmute_copy::<T, $u>(&f(transmute_copy::<$u, T>(&bits))) })
                })
                .unwrap_or_else(|b| b);
            // SAFETY: as above.
            unsafe { transmute_copy::<$u, T>(&old) }
        }};
    }
    match size_of::<T>() {
        4 => go!(AtomicU32, u32),
        _ => go!(AtomicU64, u64),
    }
}

/// # Safety
///
/// As `update`.
pub(crate) unsafe fn rmw<T: SimAtomic>(op: RmwOp, ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded.
    unsafe {
        update(ptr, |old| match op {
            RmwOp::Add => old.wrapping_add(value),
            RmwOp::Exch => value,
            RmwOp::Min => old.min(value),
            RmwOp::Max => old.max(value),
            RmwOp::And | RmwOp::Or | RmwOp::Xor => old.bits(op, value),
        })
    }
}

/// # Safety
///
/// As `update`.
pub(crate) unsafe fn cas<T: SimAtomic>(ptr: *mut T, current: T, new: T) -> T {
    // SAFETY: forwarded.
    unsafe { update(ptr, |old| if old == current { new } else { old }) }
}

/// # Safety
///
/// As `update`.
pub(crate) unsafe fn load<T: SimAtomic>(ptr: *const T) -> T {
    // SAFETY: forwarded; `scalar::load` is one SeqCst access of `T`'s size.
    unsafe { super::mem::scalar::load(ptr) }
}

/// # Safety
///
/// As `update`.
pub(crate) unsafe fn store<T: SimAtomic>(ptr: *mut T, value: T) {
    // SAFETY: forwarded.
    unsafe { super::mem::scalar::store(ptr, value) }
}
