//! Remote atomics and signals on the simulator: one `SeqCst` atomic read-modify-write on the
//! target PE's heap, through the atomic type of the operand's size.

use core::mem::{align_of, size_of, transmute_copy};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};

use super::barrier::Call;
use super::context::{with, ThreadCtx};
use super::device::in_scope;
use super::rma::{put_bytes, remote};
use crate::shmem::amo::BitOp;
use crate::shmem::ScopeKind;

/// Runs `$body` with `A` the atomic type and `U` the unsigned integer of `T`'s size (4 or 8
/// bytes: every AMO type).
macro_rules! by_size {
    ($t:ty, |$a:ident, $u:ident| $body:expr) => {
        match size_of::<$t>() {
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
            n => unreachable!("AMO types are 4 or 8 bytes, not {n}"),
        }
    };
}

/// The target of an AMO on `dest` at `pe`, checked (in bounds of one live symmetric buffer,
/// aligned, PE in range).
fn target<T>(c: &ThreadCtx<'_>, op: &str, dest: *const T, pe: i32) -> *mut u8 {
    remote(c, op, dest as usize, size_of::<T>(), pe, align_of::<T>())
}

/// `f(bits)` → new bits, applied atomically; returns the old value.
///
/// # Safety
///
/// `T` must be a 4- or 8-byte plain integer or float.
unsafe fn rmw<T: Copy>(op: &'static str, dest: *const T, pe: i32, f: impl Fn(T) -> T) -> T {
    with(op, |c| {
        let at = target(c, op, dest, pe);
        by_size!(T, |A, U| {
            // SAFETY: `at` is checked aligned and in bounds; heap words are accessed only
            // atomically by the simulator; `T` and `U` have the same size and `T` is plain.
            let atomic = unsafe { A::from_ptr(at.cast::<U>()) };
            let old = atomic
                .fetch_update(SeqCst, SeqCst, |bits| {
                    // SAFETY: as above.
                    let value = unsafe { transmute_copy::<U, T>(&bits) };
                    Some(unsafe { transmute_copy::<T, U>(&f(value)) })
                })
                .unwrap_or_else(|bits| bits);
            // SAFETY: as above.
            unsafe { transmute_copy::<U, T>(&old) }
        })
    })
}

/// `atomic_fetch`: one `SeqCst` load.
///
/// # Safety
///
/// `T` is an AMO type; the address and PE are checked.
pub(crate) unsafe fn fetch<T: Copy>(source: *const T, pe: i32) -> T {
    with("shmem::atomic_fetch", |c| {
        let at = target(c, "shmem::atomic_fetch", source, pe);
        // SAFETY: checked aligned and in bounds.
        unsafe { super::mem::scalar::load(at.cast::<T>().cast_const()) }
    })
}

/// `atomic_swap` (and `atomic_set`, which ignores the result).
///
/// # Safety
///
/// As [`fetch`].
pub(crate) unsafe fn swap<T: Copy>(dest: *mut T, value: T, pe: i32) -> T {
    // SAFETY: forwarded.
    unsafe { rmw("shmem::atomic_swap", dest, pe, |_| value) }
}

/// `atomic_compare_swap`.
///
/// # Safety
///
/// As [`fetch`].
pub(crate) unsafe fn compare_swap<T: Copy + PartialEq>(
    dest: *mut T,
    cond: T,
    value: T,
    pe: i32,
) -> T {
    // SAFETY: forwarded.
    unsafe {
        rmw("shmem::atomic_compare_swap", dest, pe, |old| {
            if old == cond {
                value
            } else {
                old
            }
        })
    }
}

/// Integer AMO types: wrapping add and bitwise ops on their bits.
pub(crate) trait AmoBits: Copy {
    fn wrapping_add(self, other: Self) -> Self;
    fn bitwise(self, op: BitOp, other: Self) -> Self;
}

macro_rules! amo_bits {
    ($($t:ty),*) => {$(
        impl AmoBits for $t {
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            fn bitwise(self, op: BitOp, other: Self) -> Self {
                match op {
                    BitOp::And => self & other,
                    BitOp::Or => self | other,
                    BitOp::Xor => self ^ other,
                }
            }
        }
    )*};
}
amo_bits!(i32, u32, i64, u64);

/// `atomic_fetch_add` (and `add`, `inc`, `fetch_inc`).
///
/// # Safety
///
/// As [`fetch`].
pub(crate) unsafe fn fetch_add<T: AmoBits>(dest: *mut T, value: T, pe: i32) -> T {
    // SAFETY: forwarded.
    unsafe {
        rmw("shmem::atomic_fetch_add", dest, pe, |old| {
            old.wrapping_add(value)
        })
    }
}

/// `atomic_fetch_and/or/xor` (and the non-fetching forms).
///
/// # Safety
///
/// As [`fetch`].
pub(crate) unsafe fn fetch_bitwise<T: AmoBits>(op: BitOp, dest: *mut T, value: T, pe: i32) -> T {
    // SAFETY: forwarded.
    unsafe {
        rmw("shmem::atomic_fetch_bitwise", dest, pe, |old| {
            old.bitwise(op, value)
        })
    }
}

/// `signal_op`: set (9) or add (10) on the signal word at `pe`.
///
/// # Safety
///
/// `sig` is checked like any AMO target.
pub(crate) unsafe fn signal_op(sig: *mut u64, value: u64, op: i32, pe: i32) {
    // SAFETY: forwarded.
    unsafe {
        match op {
            9 => {
                rmw("shmem::signal_op", sig, pe, |_| value);
            }
            10 => {
                rmw("shmem::signal_op", sig, pe, |old| old.wrapping_add(value));
            }
            other => with("shmem::signal_op", |c| {
                c.fail(std::format!(
                    "shmem::signal_op: {other} is not a signal operation (9 = set, 10 = add)"
                ))
            }),
        }
    }
}

const PUT_SIGNAL_ARGS: &[(&str, bool)] = &[
    ("dest", true),
    ("source", true),
    ("bytes", false),
    ("sig", true),
];

/// `putmem_signal[_nbi]` at `scope`: the bytes, then the signal, once per calling group.
///
/// # Safety
///
/// `source` valid for reading `bytes` bytes (the symmetric side is checked).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn putmem_signal(
    scope: ScopeKind,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    sig: *mut u64,
    value: u64,
    op: i32,
    pe: i32,
) {
    let name = "shmem::putmem_signal";
    with(name, |c| {
        let call = Call {
            op: name,
            names: PUT_SIGNAL_ARGS,
            args: [dest as usize, source as usize, bytes, sig as usize],
        };
        in_scope(c, scope, call, || {
            // SAFETY: forwarded from this function's contract; the data is complete (and
            // fenced) before the signal is written, as NVSHMEM orders them.
            unsafe {
                put_bytes(c, name, dest, source, bytes, pe);
                signal_op(sig, value, op, pe);
            }
        })
    })
}
