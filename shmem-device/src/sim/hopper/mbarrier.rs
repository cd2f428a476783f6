//! `mbarrier` objects: state kept per shared address in the block's table.

use std::format;
use std::string::String;
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::state::{Landing, Mbar};
use super::{shared_offset, smem_write, with, ThreadCtx};
use crate::sim::wait::wait_limit;

impl Mbar {
    fn complete_if_done(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.count;
        }
    }

    /// Writes the copies in flight into shared memory, retiring their bytes.
    fn land(&mut self, c: &ThreadCtx<'_>) {
        for l in core::mem::take(&mut self.inflight) {
            for (j, chunk) in l.data.chunks(16).enumerate() {
                smem_write(c, l.swizzle.apply(l.dst + 16 * j as u32), chunk);
            }
            self.tx -= l.data.len() as i64;
            self.complete_if_done();
        }
    }
}

fn describe(off: u32) -> String {
    format!("the mbarrier at shared address {off:#x}")
}

/// Runs `f` on the live barrier at `bar`; fails if there is none.
pub(super) fn with_bar<R>(
    c: &ThreadCtx<'_>,
    op: &str,
    bar: *mut u64,
    f: impl FnOnce(&mut Mbar, u32) -> R,
) -> R {
    let off = shared_offset(c, op, "mbarrier", bar.cast(), 8, 8);
    let mut table = c
        .block
        .hopper
        .mbarriers
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    match table.get_mut(&off) {
        Some(m) => f(m, off),
        None => {
            drop(table);
            c.fail(format!(
                "{op}: {} was never initialised (or was invalidated): call MBarrier::init first",
                describe(off)
            ))
        }
    }
}

/// Adds a copy in flight, with its poison already written by the caller.
pub(super) fn push_landing(c: &ThreadCtx<'_>, op: &str, bar: *mut u64, landing: Landing) {
    with_bar(c, op, bar, |m, _| m.inflight.push(landing))
}

/// # Safety
///
/// No preconditions on the simulator (checked).
pub(crate) unsafe fn mbarrier_init(bar: *mut u64, count: u32) {
    let op = "MBarrier::init";
    with(op, |c| {
        let off = shared_offset(c, op, "mbarrier", bar.cast(), 8, 8);
        if count == 0 || count >= 1 << 20 {
            c.fail(format!("{op}: count {count} is outside 1..2^20"));
        }
        let mut table = c
            .block
            .hopper
            .mbarriers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if table.contains_key(&off) {
            drop(table);
            c.fail(format!(
                "{op}: {} is already initialised: invalidate it (MBarrier::inval) before reusing it",
                describe(off)
            ));
        }
        table.insert(
            off,
            Mbar {
                count,
                pending: count,
                tx: 0,
                phase: 0,
                inflight: Vec::new(),
            },
        );
    })
}

fn arrive(c: &ThreadCtx<'_>, op: &str, bar: *mut u64, tx: u32) {
    let over = with_bar(c, op, bar, |m, off| {
        m.tx += tx as i64;
        if m.pending == 0 {
            return Some(off);
        }
        m.pending -= 1;
        m.complete_if_done();
        None
    });
    if let Some(off) = over {
        c.fail(format!(
            "{op}: more arrivals on {} than its count in one phase",
            describe(off)
        ));
    }
}

/// # Safety
///
/// No preconditions on the simulator (checked).
pub(crate) unsafe fn mbarrier_arrive(bar: *mut u64) {
    with("MBarrier::arrive", |c| {
        arrive(c, "MBarrier::arrive", bar, 0)
    })
}

/// # Safety
///
/// No preconditions on the simulator (checked).
pub(crate) unsafe fn mbarrier_arrive_expect_tx(bar: *mut u64, bytes: u32) {
    let op = "MBarrier::arrive_expect_tx";
    with(op, |c| arrive(c, op, bar, bytes))
}

/// # Safety
///
/// No preconditions on the simulator (checked).
pub(crate) unsafe fn mbarrier_expect_tx(bar: *mut u64, bytes: u32) {
    let op = "MBarrier::expect_tx";
    with(op, |c| with_bar(c, op, bar, |m, _| m.tx += bytes as i64))
}

fn try_wait(c: &ThreadCtx<'_>, op: &str, bar: *mut u64, parity: u32) -> bool {
    with_bar(c, op, bar, |m, _| {
        m.land(c);
        m.phase & 1 != parity
    })
}

/// # Safety
///
/// No preconditions on the simulator (checked).
pub(crate) unsafe fn mbarrier_try_wait_parity(bar: *mut u64, parity: u32) -> bool {
    let op = "MBarrier::try_wait_parity";
    let done = with(op, |c| try_wait(c, op, bar, parity));
    if !done {
        // A spinning caller must let the threads it waits for run.
        std::thread::yield_now();
    }
    done
}

/// # Safety
///
/// No preconditions on the simulator (checked; waits are bounded).
pub(crate) unsafe fn mbarrier_wait_parity(bar: *mut u64, parity: u32) {
    let op = "MBarrier::wait_parity";
    let start = Instant::now();
    for round in 0u64.. {
        if with(op, |c| try_wait(c, op, bar, parity)) {
            return;
        }
        match round {
            0..=63 => core::hint::spin_loop(),
            64..=1023 => std::thread::yield_now(),
            _ => std::thread::sleep(Duration::from_micros(50)),
        }
        if round % 64 == 63 {
            // Only this block's threads and copies complete its barriers, so only this
            // launch's abort ends the wait early (not a failure elsewhere in the job).
            with(op, |c| {
                if c.launch.aborted.load(core::sync::atomic::Ordering::SeqCst) {
                    c.abort();
                }
                let limit = wait_limit();
                if start.elapsed() > limit {
                    let state = with_bar(c, op, bar, |m, off| {
                        format!(
                            "{} (phase parity {parity} awaited; {} phases completed, {} of {} \
                             arrivals pending, {} transaction bytes outstanding)",
                            describe(off),
                            m.phase,
                            m.pending,
                            m.count,
                            m.tx
                        )
                    });
                    c.fail(format!(
                        "{op}: still waiting on {state} after {:.0} s (RSHMEM_SIM_WAIT_TIMEOUT sets \
                         the bound)",
                        limit.as_secs_f64()
                    ));
                }
            });
        }
    }
}

/// # Safety
///
/// No preconditions on the simulator (checked).
pub(crate) unsafe fn mbarrier_inval(bar: *mut u64) {
    let op = "MBarrier::inval";
    with(op, |c| {
        let off = shared_offset(c, op, "mbarrier", bar.cast(), 8, 8);
        let removed = c
            .block
            .hopper
            .mbarriers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&off);
        match removed {
            Some(m) if !m.inflight.is_empty() => c.fail(format!(
                "{op}: {} still has {} TMA copies in flight",
                describe(off),
                m.inflight.len()
            )),
            Some(_) => {}
            None => c.fail(format!("{op}: {} is not initialised", describe(off))),
        }
    })
}
