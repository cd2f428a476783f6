//! Where a native op call's host time goes, step by step (docs/python.md, the per-call
//! overhead): off unless `_native.profile(True)` turned it on, then each op call adds its
//! steps' nanoseconds to process-wide counters that `_native.profile_take()` returns and
//! clears. Off, a step costs one relaxed load.
//!
//! ```text
//! >>> _native.profile(True); [rshmem.all_reduce(x) for _ in range(1000)]
//! >>> _native.profile_take()   # {"args": (1000, ns), "release_gil": (1000, ns), ...}
//! ```

use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;

/// The steps of a native op call, in the order they run.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// The tensors found on the heap (or as device memory), the team, the options parsed
    /// (counted for the reductions and `gemm`, the ops the overhead rows time).
    Args,
    /// Releasing the GIL, up to the first line of the closure that runs without it.
    ReleaseGil,
    /// The PE's live state and the stream (adopted once per handle).
    Stream,
    /// The `Ops` call itself: what a Rust program calls.
    Op,
    /// Taking the GIL back.
    TakeGil,
}

const STEPS: [(Step, &str); 5] = [
    (Step::Args, "args"),
    (Step::ReleaseGil, "release_gil"),
    (Step::Stream, "stream"),
    (Step::Op, "op"),
    (Step::TakeGil, "take_gil"),
];

static ON: AtomicBool = AtomicBool::new(false);
static NS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
static CALLS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

/// A point in time, when profiling is on.
#[derive(Clone, Copy)]
pub struct Mark(Option<u64>);

fn now_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Now, if profiling is on.
#[inline]
pub fn mark() -> Mark {
    Mark(ON.load(Relaxed).then(now_ns))
}

impl Mark {
    /// Adds the time since this mark to `step`; returns now, the next step's start.
    #[inline]
    pub fn end(self, step: Step) -> Mark {
        let Some(start) = self.0 else {
            return self;
        };
        let now = now_ns();
        NS[step as usize].fetch_add(now - start, Relaxed);
        CALLS[step as usize].fetch_add(1, Relaxed);
        Mark(Some(now))
    }
}

/// Turns the step counters on or off (they keep their sums: `profile_take` clears them).
#[pyfunction]
fn profile(on: bool) {
    ON.store(on, Relaxed);
}

/// Each step's `(calls, total ns)` since the last take, by name; clears them.
#[pyfunction]
fn profile_take() -> BTreeMap<&'static str, (u64, u64)> {
    STEPS
        .iter()
        .map(|&(step, name)| {
            let i = step as usize;
            (name, (CALLS[i].swap(0, Relaxed), NS[i].swap(0, Relaxed)))
        })
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(profile, m)?)?;
    m.add_function(wrap_pyfunction!(profile_take, m)?)
}
