//! Kernels for the host's stream tests: a fill that takes a set time (to make an ordering
//! mistake between streams visible), a dependent copy, and a flag handshake that completes only
//! when two kernels run at the same time.

use rshmem_device::atomic::{self, Gpu, Ordering};
use rshmem_device::prelude::*;

/// [`await_flag`]'s verdicts, in `result[0]`.
pub const FLAG_SEEN: u64 = 1;
/// See [`FLAG_SEEN`].
pub const FLAG_TIMED_OUT: u64 = 2;

/// Waits until `delay_ns` have passed since the kernel's thread started, then writes
/// `out[t] = value + t` for `t < n`.
///
/// # Safety
///
/// `out` is valid for `n` writes of `u32`.
#[kernel]
pub unsafe fn slow_fill(out: *mut u32, n: u32, value: u32, delay_ns: u64) {
    let start = thread::globaltimer_ns();
    while thread::globaltimer_ns().wrapping_sub(start) < delay_ns {
        thread::nanosleep(10_000);
    }
    let t = thread::index_1d();
    if t < n {
        *out.add(t as usize) = value.wrapping_add(t);
    }
}

/// `out[t] = src[t] + 1` for `t < n`.
///
/// # Safety
///
/// `src` is valid for `n` reads and `out` for `n` writes of `u32`.
#[kernel]
pub unsafe fn copy_plus_one(src: *const u32, out: *mut u32, n: u32) {
    let t = thread::index_1d();
    if t < n {
        *out.add(t as usize) = (*src.add(t as usize)).wrapping_add(1);
    }
}

/// Thread 0 waits for `*flag != 0` for at most `timeout_ns`, then writes its verdict
/// ([`FLAG_SEEN`] or [`FLAG_TIMED_OUT`]) to `result[0]` and the nanoseconds it waited to
/// `result[1]`.
///
/// # Safety
///
/// `flag` is an aligned `u32` written only atomically; `result` is valid for two `u64` writes.
#[kernel]
pub unsafe fn await_flag(flag: *const u32, result: *mut u64, timeout_ns: u64) {
    if thread::index_1d() != 0 {
        return;
    }
    let start = thread::globaltimer_ns();
    let verdict = loop {
        if atomic::load::<Gpu, u32>(flag, Ordering::Acquire) != 0 {
            break FLAG_SEEN;
        }
        if thread::globaltimer_ns().wrapping_sub(start) >= timeout_ns {
            break FLAG_TIMED_OUT;
        }
        thread::nanosleep(1_000);
    };
    *result = verdict;
    *result.add(1) = thread::globaltimer_ns().wrapping_sub(start);
}

/// Sets `*flag = 1` for [`await_flag`].
///
/// # Safety
///
/// `flag` is an aligned `u32` read only atomically.
#[kernel]
pub unsafe fn raise_flag(flag: *mut u32) {
    if thread::index_1d() == 0 {
        atomic::store::<Gpu, u32>(flag, 1, Ordering::Release);
    }
}
