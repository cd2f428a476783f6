//! Remote atomics: add/inc and their fetch forms (row 6), compare-and-swap (row 7), swap
//! (row 8), bitwise and/or/xor and their fetch forms, and fetch/set/swap of every AMO type
//! including `f32`/`f64`. Each kernel takes the element type as `ty` (`i32`, `u32`, `i64`,
//! `u64`; `set_fetch_swap` also `f32`, `f64`) and untyped pointers.
//!
//! Many threads of every PE race on the same words, so the results check atomicity, not just
//! arithmetic: a lost update changes the final value, a torn one the fetched values.

use super::{barrier_all_at, right, with_int_type, with_type, Elem, BLOCK, THREAD};
use rshmem_device::prelude::*;
use rshmem_device::shmem::{AmoBitwise, AmoScalar};

/// `op` of the bitwise kernels: `and`.
pub const AND: u32 = 0;
/// `op` of the bitwise kernels: `or`.
pub const OR: u32 = 1;
/// `op` of the bitwise kernels: `xor`.
pub const XOR: u32 = 2;

/// Row 6. Thread `t` of every PE, for every PE `pe`: `atomic_add(ctr[0], me + 1)`,
/// `olds[t * n + pe] = atomic_fetch_add(ctr[1], me + 1)`,
/// `incs[t * n + pe] = atomic_fetch_inc(ctr[2])` and `atomic_inc(ctr[3])`. One block.
///
/// # Safety
///
/// `ctr` is 4 symmetric `T`s; `olds` and `incs` hold `block_dim * n_pes` each.
unsafe fn add_as<T: AmoBitwise + Elem>(ctr: *mut T, olds: *mut T, incs: *mut T) {
    let (t, me, n) = (thread::thread_idx_x(), shmem::my_pe(), shmem::n_pes());
    let step = T::from_bits(me as u64 + 1);
    for pe in 0..n {
        let slot = (t * n as u32 + pe as u32) as usize;
        shmem::atomic_add(ctr, step, pe);
        *olds.add(slot) = shmem::atomic_fetch_add(ctr.add(1), step, pe);
        *incs.add(slot) = shmem::atomic_fetch_inc(ctr.add(2), pe);
        shmem::atomic_inc(ctr.add(3), pe);
    }
}

/// Row 7, step `step` of 4; the PEs meet between steps (see [`cswap`](fn@cswap)). `target` starts at
/// `cond` everywhere. 0: thread `t` `compare_swap`s `(cond → tokens[t])` on the right
/// neighbour, into `olds[t]`: exactly one wins. 1: thread 0 fetches the right neighbour's
/// value into `fin[0]`. 2: every thread tries the stale compare again (`cond → junk`, into
/// `olds[block_dim + t]`), which must fail. 3: `fin[1]` is fetched again.
///
/// # Safety
///
/// `target` is one symmetric `T`; `tokens` holds `block_dim`, `olds` `2 * block_dim`,
/// `fin` 2.
unsafe fn cswap_step<T: AmoBitwise + Elem>(
    step: u32,
    target: *mut T,
    cond: T,
    tokens: *const T,
    junk: T,
    olds: *mut T,
    fin: *mut T,
) {
    let (t, nt) = (
        thread::thread_idx_x() as usize,
        thread::block_dim_x() as usize,
    );
    match step {
        0 => *olds.add(t) = shmem::atomic_compare_swap(target, cond, *tokens.add(t), right()),
        2 => *olds.add(nt + t) = shmem::atomic_compare_swap(target, cond, junk, right()),
        _ if t == 0 => *fin.add(step as usize / 2) = shmem::atomic_fetch(target, right()),
        _ => {}
    }
}

/// Row 8, step `step` of 2 (see [`swap`](fn@swap)). 0: thread `t` `atomic_swap`s `tokens[t]` into the
/// right neighbour's `target`, keeping the old value in `olds[t]`. 1: thread 0 fetches the
/// final value into `fin`. The old values and the final one are the initial value and the
/// tokens, each once.
///
/// # Safety
///
/// `target` is one symmetric `T`; `tokens` and `olds` hold `block_dim`.
unsafe fn swap_step<T: AmoBitwise + Elem>(
    step: u32,
    target: *mut T,
    tokens: *const T,
    olds: *mut T,
    fin: *mut T,
) {
    let t = thread::thread_idx_x() as usize;
    match step {
        0 => *olds.add(t) = shmem::atomic_swap(target, *tokens.add(t), right()),
        _ if t == 0 => *fin = shmem::atomic_fetch(target, right()),
        _ => {}
    }
}

/// Bitwise AMOs. Thread `t` applies `op` with `masks[t]` to the right neighbour's `ctr[0]`
/// (plain form) and `ctr[1]` (fetch form, old value into `olds[t]`). One block.
///
/// # Safety
///
/// `ctr` is 2 symmetric `T`s; `masks` and `olds` hold `block_dim`.
unsafe fn bitwise_as<T: AmoBitwise + Elem>(op: u32, ctr: *mut T, masks: *const T, olds: *mut T) {
    let t = thread::thread_idx_x() as usize;
    let (m, pe, old) = (*masks.add(t), right(), olds.add(t));
    match op {
        AND => {
            shmem::atomic_and(ctr, m, pe);
            *old = shmem::atomic_fetch_and(ctr.add(1), m, pe);
        }
        OR => {
            shmem::atomic_or(ctr, m, pe);
            *old = shmem::atomic_fetch_or(ctr.add(1), m, pe);
        }
        _ => {
            shmem::atomic_xor(ctr, m, pe);
            *old = shmem::atomic_fetch_xor(ctr.add(1), m, pe);
        }
    }
}

/// `atomic_set`, `atomic_fetch`, `atomic_swap` of any AMO type, one thread per PE, step
/// `step` of 4; the PEs meet between steps (see [`set_fetch_swap`](fn@set_fetch_swap)). 0: set the right
/// neighbour's `target` to `vals[0]`. 1: `out[0]` = own `target` (the left neighbour's
/// `vals[0]`). 2: `out[1]` = swap `vals[1]` into the right neighbour's (this PE's `vals[0]`).
/// 3: `out[2]` = own `target` again (the left neighbour's `vals[1]`).
///
/// # Safety
///
/// `target` is one symmetric `T`; `vals` holds 2, `out` 3.
unsafe fn set_fetch_swap_step<T: AmoScalar + Elem>(
    step: u32,
    target: *mut T,
    vals: *const T,
    out: *mut T,
) {
    let me = shmem::my_pe();
    match step {
        0 => shmem::atomic_set(target, *vals, right()),
        1 => *out = shmem::atomic_fetch(target, me),
        2 => *out.add(1) = shmem::atomic_swap(target, *vals.add(1), right()),
        _ => *out.add(2) = shmem::atomic_fetch(target, me),
    }
}

/// `add_as` for element type `ty` (an integer AMO type). One block.
///
/// # Safety
///
/// As `add_as`, with `ty` naming `T`; every PE launches it.
#[kernel]
pub unsafe fn add(ty: u32, ctr: *mut u8, olds: *mut u8, incs: *mut u8) {
    with_int_type!(ty, T => add_as::<T>(ctr.cast(), olds.cast(), incs.cast()))
}

/// Row 7 (`cswap_step`) for element type `ty` (an integer AMO type); `cond` and `junk` are
/// the bits of `T` values. One block, cooperative.
///
/// # Safety
///
/// As `cswap_step`, with `ty` naming `T`; every PE launches it.
#[kernel]
pub unsafe fn cswap(
    ty: u32,
    target: *mut u8,
    cond: u64,
    tokens: *const u8,
    junk: u64,
    olds: *mut u8,
    fin: *mut u8,
) {
    // Typed steps with the meetings between them outside the type dispatch, so the kernel
    // holds one barrier call site rather than one per type.
    for step in 0..4 {
        if step > 0 {
            barrier_all_at(BLOCK);
        }
        with_int_type!(ty, T => cswap_step::<T>(
            step, target.cast(), T::from_bits(cond), tokens.cast(), T::from_bits(junk),
            olds.cast(), fin.cast()));
    }
}

/// Row 8 (`swap_step`) for element type `ty` (an integer AMO type). One block, cooperative.
///
/// # Safety
///
/// As `swap_step`, with `ty` naming `T`; every PE launches it.
#[kernel]
pub unsafe fn swap(ty: u32, target: *mut u8, tokens: *const u8, olds: *mut u8, fin: *mut u8) {
    for step in 0..2 {
        if step > 0 {
            barrier_all_at(BLOCK);
        }
        with_int_type!(ty, T => swap_step::<T>(
            step, target.cast(), tokens.cast(), olds.cast(), fin.cast()));
    }
}

/// `bitwise_as` for element type `ty` (an integer AMO type). One block.
///
/// # Safety
///
/// As `bitwise_as`, with `ty` naming `T`; every PE launches it.
#[kernel]
pub unsafe fn bitwise(ty: u32, op: u32, ctr: *mut u8, masks: *const u8, olds: *mut u8) {
    with_int_type!(ty, T => bitwise_as::<T>(
        op, ctr.cast(), masks.cast(), olds.cast()))
}

/// `set_fetch_swap_step` for element type `ty` (any AMO type, floats included). One
/// thread, cooperative.
///
/// # Safety
///
/// As `set_fetch_swap_step`, with `ty` naming `T`; every PE launches it.
#[kernel]
pub unsafe fn set_fetch_swap(ty: u32, target: *mut u8, vals: *const u8, out: *mut u8) {
    for step in 0..4 {
        if step > 0 {
            barrier_all_at(THREAD);
        }
        with_type!(ty, T in [i32, u32, i64, u64, f32, f64] => set_fetch_swap_step::<T>(
            step, target.cast(), vals.cast(), out.cast()));
    }
}
