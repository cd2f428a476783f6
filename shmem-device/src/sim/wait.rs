//! Point-to-point waits on the simulator: poll the local variables with `SeqCst` loads,
//! backing off from spinning to yielding to short sleeps. A wait that can never end — a PE or
//! a kernel of the job failed, or (debug bound) `RSHMEM_SIM_WAIT_TIMEOUT` seconds passed,
//! default 120 — fails the thread loudly instead of hanging.

use core::mem::{align_of, size_of};
use std::time::{Duration, Instant};

use super::context::{with, ThreadCtx};
use super::mem::scalar;
use super::rma::remote;
use crate::contract::Cmp;

fn cmp_of(c: &ThreadCtx<'_>, op: &str, raw: i32) -> Cmp {
    Cmp::from_raw(raw).unwrap_or_else(|| {
        c.fail(std::format!(
            "{op}: {raw} is not a comparison (NVSHMEM_CMP_EQ..NVSHMEM_CMP_GE = 0..5)"
        ))
    })
}

/// The checked local address of `ivars[i]`.
fn local<T>(c: &ThreadCtx<'_>, op: &str, ivars: *const T, i: usize) -> *const T {
    let addr = ivars as usize + i * size_of::<T>();
    remote(c, op, addr, size_of::<T>(), c.pe() as i32, align_of::<T>())
        .cast_const()
        .cast()
}

pub(crate) fn wait_limit() -> Duration {
    std::env::var("RSHMEM_SIM_WAIT_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(Duration::from_secs(120), Duration::from_secs_f64)
}

/// Polls `ready` until it returns `Some`, backing off, failing the thread if the job can no
/// longer satisfy it.
fn poll<R>(c: &ThreadCtx<'_>, op: &str, mut ready: impl FnMut() -> Option<R>) -> R {
    let start = Instant::now();
    let limit = wait_limit();
    for round in 0u64.. {
        if let Some(r) = ready() {
            return r;
        }
        if c.launch.aborted.load(core::sync::atomic::Ordering::SeqCst) {
            c.abort();
        }
        if round % 64 == 63 {
            if let Some(e) = c.world().device_blocked() {
                c.world().blame_wait(c.pe(), &e);
                c.fail(std::format!("{op}: {e}"));
            }
            if start.elapsed() > limit {
                c.fail(std::format!(
                    "{op}: still waiting after {:.0} s: nobody satisfied the condition (a missing \
                     put or signal, or a deadlock); RSHMEM_SIM_WAIT_TIMEOUT sets the bound",
                    limit.as_secs_f64()
                ));
            }
        }
        match round {
            0..=63 => core::hint::spin_loop(),
            64..=1023 => std::thread::yield_now(),
            _ => std::thread::sleep(Duration::from_micros(50)),
        }
    }
    unreachable!()
}

/// For spinning waits written outside this module (the symmetric queue's, which poll remote
/// words): ends the wait the way [`poll`] ends its own, instead of hanging. Unwinds quietly if
/// the launch was aborted by another thread's failure; fails the thread if a PE or kernel of
/// the job failed, or once `waited` exceeds `RSHMEM_SIM_WAIT_TIMEOUT` (default 120 s), with
/// `what()` saying what was awaited. Cheap enough to call every few dozen polls.
pub(crate) fn check_spin(op: &str, waited: Duration, what: &dyn Fn() -> std::string::String) {
    with(op, |c| {
        if c.launch.aborted.load(core::sync::atomic::Ordering::SeqCst) {
            c.abort();
        }
        if let Some(e) = c.world().device_blocked() {
            c.world().blame_wait(c.pe(), &e);
            c.fail(std::format!("{op}: {}: {e}", what()));
        }
        let limit = wait_limit();
        if waited > limit {
            c.fail(std::format!(
                "{op}: {}: still waiting after {:.0} s (RSHMEM_SIM_WAIT_TIMEOUT sets the bound)",
                what(),
                limit.as_secs_f64()
            ));
        }
    })
}

/// Whether `ivars[i]` satisfies the comparison now; excluded elements (`status[i] != 0`) are
/// `None`.
///
/// # Safety
///
/// `status` null or valid for `i + 1` reads.
unsafe fn check<T: Copy + PartialOrd>(
    c: &ThreadCtx<'_>,
    op: &str,
    ivars: *const T,
    i: usize,
    status: *const i32,
    cmp: Cmp,
    value: T,
) -> Option<bool> {
    // SAFETY: the caller's contract on `status`.
    if !status.is_null() && unsafe { *status.add(i) } != 0 {
        return None;
    }
    let at = local(c, op, ivars, i);
    // SAFETY: checked aligned and in bounds of this PE's heap.
    Some(cmp.holds(unsafe { scalar::load(at) }, value))
}

pub(crate) unsafe fn wait_until<T: Copy + PartialOrd>(ivar: *const T, cmp: i32, value: T) {
    let op = "shmem::wait_until";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        poll(c, op, || {
            // SAFETY: null status.
            unsafe { check(c, op, ivar, 0, core::ptr::null(), cmp, value) }
                .filter(|&t| t)
                .map(drop)
        })
    })
}

pub(crate) unsafe fn test<T: Copy + PartialOrd>(ivar: *const T, cmp: i32, value: T) -> i32 {
    let op = "shmem::test";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        // SAFETY: null status.
        unsafe { check(c, op, ivar, 0, core::ptr::null(), cmp, value) }.unwrap_or(false) as i32
    })
}

pub(crate) unsafe fn signal_wait_until(sig: *const u64, cmp: i32, value: u64) -> u64 {
    let op = "shmem::signal_wait_until";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        let at = local(c, op, sig, 0);
        poll(c, op, || {
            // SAFETY: checked aligned and in bounds.
            let v = unsafe { scalar::load(at) };
            cmp.holds(v, value).then_some(v)
        })
    })
}

/// `wait_until_all[_vector]`: `value_at(i)` is the comparison value of element `i`.
pub(crate) unsafe fn wait_all<T: Copy + PartialOrd>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: i32,
    value_at: impl Fn(usize) -> T,
) {
    let op = "shmem::wait_until_all";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        poll(c, op, || {
            (0..n)
                .all(|i| {
                    // SAFETY: the caller's contract on `status`.
                    unsafe { check(c, op, ivars, i, status, cmp, value_at(i)) }.unwrap_or(true)
                })
                .then_some(())
        })
    })
}

/// `wait_until_any[_vector]`: an index that qualifies, or `usize::MAX` if all are excluded.
pub(crate) unsafe fn wait_any<T: Copy + PartialOrd>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: i32,
    value_at: impl Fn(usize) -> T,
) -> usize {
    let op = "shmem::wait_until_any";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        // SAFETY: the caller's contract on `status`.
        let live = (0..n).any(|i| status.is_null() || unsafe { *status.add(i) } == 0);
        if !live {
            return usize::MAX;
        }
        poll(c, op, || {
            // SAFETY: as above.
            (0..n).find(
                |&i| unsafe { check(c, op, ivars, i, status, cmp, value_at(i)) } == Some(true),
            )
        })
    })
}

/// `wait_until_some[_vector]`: writes every qualifying index, returns how many (≥ 1 unless
/// all are excluded).
pub(crate) unsafe fn wait_some<T: Copy + PartialOrd>(
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const i32,
    cmp: i32,
    value_at: impl Fn(usize) -> T,
) -> usize {
    let op = "shmem::wait_until_some";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        // SAFETY: the caller's contract on `status`.
        let live = (0..n).any(|i| status.is_null() || unsafe { *status.add(i) } == 0);
        if !live {
            return 0;
        }
        poll(c, op, || {
            // SAFETY: the caller's contracts on `status` and `indices` (room for `n`).
            let found = unsafe { collect(c, op, ivars, n, indices, status, cmp, &value_at) };
            (found > 0).then_some(found)
        })
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn collect<T: Copy + PartialOrd>(
    c: &ThreadCtx<'_>,
    op: &str,
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const i32,
    cmp: Cmp,
    value_at: &dyn Fn(usize) -> T,
) -> usize {
    let mut found = 0;
    for i in 0..n {
        // SAFETY: the caller's contracts.
        if unsafe { check(c, op, ivars, i, status, cmp, value_at(i)) } == Some(true) {
            // SAFETY: `indices` has room for `n` entries (the caller's contract), and
            // `found <= i < n`.
            unsafe { *indices.add(found) = i };
            found += 1;
        }
    }
    found
}

pub(crate) unsafe fn test_all<T: Copy + PartialOrd>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: i32,
    value: T,
) -> i32 {
    let op = "shmem::test_all";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        // SAFETY: the caller's contract on `status`.
        (0..n).all(|i| unsafe { check(c, op, ivars, i, status, cmp, value) }.unwrap_or(true)) as i32
    })
}

pub(crate) unsafe fn test_any<T: Copy + PartialOrd>(
    ivars: *const T,
    n: usize,
    status: *const i32,
    cmp: i32,
    value: T,
) -> usize {
    let op = "shmem::test_any";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        // SAFETY: the caller's contract on `status`.
        (0..n)
            .find(|&i| unsafe { check(c, op, ivars, i, status, cmp, value) } == Some(true))
            .unwrap_or(usize::MAX)
    })
}

pub(crate) unsafe fn test_some<T: Copy + PartialOrd>(
    ivars: *const T,
    n: usize,
    indices: *mut usize,
    status: *const i32,
    cmp: i32,
    value: T,
) -> usize {
    let op = "shmem::test_some";
    with(op, |c| {
        let cmp = cmp_of(c, op, cmp);
        // SAFETY: the caller's contracts.
        unsafe { collect(c, op, ivars, n, indices, status, cmp, &|_| value) }
    })
}
