//! Remote atomics and signals on the simulator: one `SeqCst` atomic read-modify-write on the
//! target PE's heap, through the atomic type of the operand's size.

use core::mem::{align_of, size_of};

use super::atomic::{update, SimAtomic};
use super::barrier::Call;
use super::context::{with, ThreadCtx};
use super::rma::{put_bytes, remote};
use super::scope::in_scope;
use crate::contract::BitOp;
use crate::contract::RmwOp;
use crate::contract::ScopeKind;

/// The target of an AMO on `dest` at `pe`, checked (in bounds of one live symmetric buffer,
/// aligned, PE in range).
fn target<T>(c: &ThreadCtx<'_>, op: &str, dest: *const T, pe: i32) -> *mut u8 {
    remote(c, op, dest as usize, size_of::<T>(), pe, align_of::<T>())
}

/// `f(old)` → new, applied atomically at `dest` on `pe` after checking the target; returns
/// the old value.
///
/// # Safety
///
/// `T` must be a 4- or 8-byte plain integer or float.
unsafe fn rmw<T: Copy>(op: &'static str, dest: *const T, pe: i32, f: impl Fn(T) -> T) -> T {
    with(op, |c| {
        let at = target(c, op, dest, pe);
        // SAFETY: `at` is checked aligned and in bounds; heap words are accessed only
        // atomically by the simulator.
        unsafe { update(at.cast::<T>(), f) }
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

/// `atomic_fetch_add` (and `add`, `inc`, `fetch_inc`).
///
/// # Safety
///
/// As [`fetch`].
pub(crate) unsafe fn fetch_add<T: SimAtomic>(dest: *mut T, value: T, pe: i32) -> T {
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
pub(crate) unsafe fn fetch_bitwise<T: SimAtomic>(op: BitOp, dest: *mut T, value: T, pe: i32) -> T {
    let op = match op {
        BitOp::And => RmwOp::And,
        BitOp::Or => RmwOp::Or,
        BitOp::Xor => RmwOp::Xor,
    };
    // SAFETY: forwarded.
    unsafe {
        rmw("shmem::atomic_fetch_bitwise", dest, pe, |old| {
            old.bits(op, value)
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
