//! Signals: `put_signal` (blocking and `_nbi`) at every scope with `Set` and `Add` (row 11),
//! `signal_op`, `signal_wait_until` and `signal_fetch` (row 12).
//!
//! `signal_wait_until` returns without an acquire (as in NVSHMEM), so the kernels `fence`
//! after it before reading the data the signal guards.

use super::{group, right, share, with_scope};
use rshmem_device::prelude::*;

/// `op` value for [`SignalOp::Set`].
pub const SET: u32 = 0;
/// `op` value for [`SignalOp::Add`].
pub const ADD: u32 = 1;

fn signal_op(op: u32) -> SignalOp {
    if op == SET {
        SignalOp::Set
    } else {
        SignalOp::Add
    }
}

/// Row 11: a relay around the ring. Each group of `scope` owns `sigs[group]` and its share of
/// the data. PE 0 sends its share of `src` to PE 1 with `put_signal` (`op`, `value`; `_nbi`
/// then `quiet` if `nbi != 0`); every other PE waits for its signal to equal `expect`, then
/// forwards what it received (its `data`) to its right neighbour the same way; PE 0 finally
/// waits for the data to come back. Every PE's `data` must then equal PE 0's `src`. One block.
///
/// # Safety
///
/// Every PE launches it cooperatively with the same arguments; `data` and `src` hold `len`
/// symmetric `u32`s, `sigs` one symmetric `u64` per group, each starting at a value that
/// becomes `expect` after one `op` with `value` (and not before); `len` at least the number
/// of groups.
#[kernel]
pub unsafe fn relay(
    scope: u32,
    op: u32,
    nbi: u32,
    data: *mut u32,
    src: *const u32,
    sigs: *mut u64,
    value: u64,
    expect: u64,
    len: usize,
) {
    let me = shmem::my_pe();
    let g = group(scope);
    let (start, count) = share(len, g.index, g.count);
    let sig = sigs.add(g.index as usize);
    if me != 0 {
        shmem::signal_wait_until(sig, Cmp::Eq, expect);
        // Acquire: the data is read (forwarded) below.
        shmem::fence();
    }
    let from = if me == 0 { src } else { data.cast_const() };
    let (d, s, op) = (data.add(start), from.add(start), signal_op(op));
    with_scope!(scope, S => if nbi != 0 {
        shmem::put_signal_nbi::<S, u32>(d, s, count, sig, value, op, right());
    } else {
        shmem::put_signal::<S, u32>(d, s, count, sig, value, op, right());
    });
    shmem::quiet();
    if me == 0 {
        shmem::signal_wait_until(sig, Cmp::Eq, expect);
    }
}

/// Row 12. Every group of `scope` puts its share of `src` into block `my_pe` of `data` on every
/// PE with `put_signal(Add, 1)` on `sigs[0]`; thread 0 also adds `my_pe` to `sigs[1]` on every
/// PE and sets `sigs[2]` on the right neighbour to `tokens[my_pe]` (`signal_op`). Then every
/// thread `t` of `nt`: `got[t]` = `signal_wait_until(sigs[0] == n_pes * groups)`;
/// `got[nt + t]` = `signal_fetch(sigs[1])` once `sigs[1] >= n(n-1)/2`; `got[2nt + t]` =
/// `signal_wait_until(sigs[2] == tokens[left])`; and it copies its share of `data` (all PEs'
/// blocks) into `seen`. One block.
///
/// # Safety
///
/// Every PE launches it cooperatively; `data` and `seen` hold `n_pes * len` symmetric
/// `u32`s, `src` `len` (at least the block size), `sigs` 3 symmetric `u64`s starting at 0, 0
/// and a value none of `tokens` (`n_pes`, distinct), `got` `3 * block_dim`.
#[kernel]
pub unsafe fn all_signal(
    scope: u32,
    data: *mut u32,
    src: *const u32,
    sigs: *mut u64,
    tokens: *const u64,
    got: *mut u64,
    seen: *mut u32,
    len: usize,
) {
    let (me, n) = (shmem::my_pe(), shmem::n_pes());
    let g = group(scope);
    let (start, count) = share(len, g.index, g.count);
    for pe in 0..n {
        let d = data.add(me as usize * len + start);
        with_scope!(scope, S => shmem::put_signal::<S, u32>(
            d, src.add(start), count, sigs, 1, SignalOp::Add, pe));
    }
    let (t, nt) = (
        thread::thread_idx_x() as usize,
        thread::block_dim_x() as usize,
    );
    if t == 0 {
        for pe in 0..n {
            shmem::signal_op(sigs.add(1), me as u64, SignalOp::Add, pe);
        }
        shmem::signal_op(
            sigs.add(2),
            *tokens.add(me as usize),
            SignalOp::Set,
            right(),
        );
    }
    let (n, groups) = (n as u64, u64::from(g.count));
    *got.add(t) = shmem::signal_wait_until(sigs, Cmp::Eq, n * groups);
    shmem::signal_wait_until(sigs.add(1), Cmp::Ge, n * (n - 1) / 2);
    *got.add(nt + t) = shmem::signal_fetch(sigs.add(1));
    let left = super::left() as usize;
    *got.add(2 * nt + t) = shmem::signal_wait_until(sigs.add(2), Cmp::Eq, *tokens.add(left));
    // Acquire, then read what the signals guard.
    shmem::fence();
    let (first, mine) = share(n as usize * len, t as u32, nt as u32);
    for i in first..first + mine {
        *seen.add(i) = core::ptr::read_volatile(data.add(i));
    }
}
