//! Signals: a `u64` symmetric word updated atomically, alone ([`signal_op`]) or after data
//! ([`putmem_signal`]: the data is delivered before the signal, so a receiver that sees the
//! signal may read the data), and waited on ([`signal_wait_until`]).
//!
//! `signal_wait_until` returns without a trailing fence (as in NVSHMEM): read the data it
//! guards after it, not by polling the signal word with plain loads.

use super::{Cmp, Scope};
use crate::backend;

/// How a signal word is updated.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalOp {
    /// Overwrite: `*sig = value` (`NVSHMEM_SIGNAL_SET`).
    Set = 9,
    /// Atomic add: `*sig += value` (`NVSHMEM_SIGNAL_ADD`).
    Add = 10,
}

/// Updates the signal word `sig` on PE `pe` atomically.
///
/// # Safety
///
/// `sig` must point to a symmetric, 8-byte aligned `u64`; `pe` in `0..n_pes()`.
#[inline(always)]
pub unsafe fn signal_op(sig: *mut u64, value: u64, op: SignalOp, pe: i32) {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::signal_op(sig, value, op as i32, pe) }
}

/// Atomically reads the local signal word.
///
/// # Safety
///
/// `sig` must point to a symmetric, 8-byte aligned `u64`.
#[inline(always)]
pub unsafe fn signal_fetch(sig: *const u64) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::signal_fetch(sig) }
}

/// Waits until the local signal word compares true against `value`; returns its value then.
///
/// # Safety
///
/// `sig` must point to a symmetric, 8-byte aligned `u64`. Someone must eventually satisfy the
/// condition (else this thread waits forever; on GPUs the whole grid must be resident, so
/// launch cooperatively when the signaller is another block).
#[inline(always)]
pub unsafe fn signal_wait_until(sig: *const u64, cmp: Cmp, value: u64) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::signal_wait_until(sig, cmp as i32, value) }
}

/// Copies `bytes` bytes from `source` to symmetric `dest` on PE `pe`, then updates `sig` on PE
/// `pe` with `op`/`value`; the signal is delivered after the data. Blocking: returns when
/// `source` may be reused. All threads of scope `S` call it with the same arguments.
///
/// # Safety
///
/// As [`super::putmem`] for the data, and as [`signal_op`] for `sig`.
#[inline(always)]
pub unsafe fn putmem_signal<S: Scope>(
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    sig: *mut u64,
    value: u64,
    op: SignalOp,
    pe: i32,
) {
    put_signal_impl::<S>(false, dest, source, bytes, sig, value, op, pe)
}

/// As [`putmem_signal`], but returns at once; `quiet` completes it.
///
/// # Safety
///
/// As [`putmem_signal`], and `source` must stay unchanged until completion.
#[inline(always)]
pub unsafe fn putmem_signal_nbi<S: Scope>(
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    sig: *mut u64,
    value: u64,
    op: SignalOp,
    pe: i32,
) {
    put_signal_impl::<S>(true, dest, source, bytes, sig, value, op, pe)
}

/// Typed [`putmem_signal`]: `count` elements of `T`.
///
/// # Safety
///
/// As [`putmem_signal`] for `count * size_of::<T>()` bytes.
#[inline(always)]
pub unsafe fn put_signal<S: Scope, T: Copy>(
    dest: *mut T,
    source: *const T,
    count: usize,
    sig: *mut u64,
    value: u64,
    op: SignalOp,
    pe: i32,
) {
    let bytes = count * core::mem::size_of::<T>();
    put_signal_impl::<S>(false, dest.cast(), source.cast(), bytes, sig, value, op, pe)
}

/// Typed [`putmem_signal_nbi`].
///
/// # Safety
///
/// As [`putmem_signal_nbi`] for `count * size_of::<T>()` bytes.
#[inline(always)]
pub unsafe fn put_signal_nbi<S: Scope, T: Copy>(
    dest: *mut T,
    source: *const T,
    count: usize,
    sig: *mut u64,
    value: u64,
    op: SignalOp,
    pe: i32,
) {
    let bytes = count * core::mem::size_of::<T>();
    put_signal_impl::<S>(true, dest.cast(), source.cast(), bytes, sig, value, op, pe)
}

/// # Safety
///
/// As [`putmem_signal`] (`nbi`: [`putmem_signal_nbi`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn put_signal_impl<S: Scope>(
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    sig: *mut u64,
    value: u64,
    op: SignalOp,
    pe: i32,
) {
    // SAFETY: forwarded from this function's contract.
    unsafe { backend::putmem_signal(S::KIND, nbi, dest, source, bytes, sig, value, op as i32, pe) }
}
