//! Graph capture on a simulated PE: while a capture runs ([`Capture`], shared by the PE and its
//! modules), the operations queued on a recording stream are kept as closures over copies of
//! their arguments instead of being run; [`SimGraph`] runs them again, in the order they were
//! recorded, at each launch.
//!
//! Which streams record follows CUDA: the stream the capture began on, and every stream that
//! waits for a recording stream from then on (a fork), until the capture ends. The rules on
//! forks and joins are `Shmem`'s (its capture bookkeeping), the same on both backends.
//!
//! ```ignore
//! capture.begin(StreamId::PE)?;
//! pe.queue(StreamId::PE, move || job.barrier(pe, "barrier_all_on_stream"))?; // recorded
//! let graph = capture.end(StreamId::PE)?;
//! unsafe { graph.launch(StreamId::PE)? }; // the barrier, now
//! ```

use crate::contract::{Error, GraphExecBackend, Result, StreamId};
use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// One recorded operation: runs it with the arguments it was recorded with.
pub(crate) type Recorded = Box<dyn Fn() -> Result<()> + Send + Sync>;

/// The capture running on a simulated PE, if any.
#[derive(Default)]
pub(crate) struct Capture(Mutex<Option<Recording>>);

/// A running capture: the streams that record, and what they recorded, in order.
struct Recording {
    origin: StreamId,
    streams: BTreeSet<StreamId>,
    ops: Vec<Recorded>,
}

impl Capture {
    fn lock(&self) -> MutexGuard<'_, Option<Recording>> {
        // Plain data, consistent after any panic.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts recording what is queued on `stream`.
    pub(crate) fn begin(&self, stream: StreamId) -> Result<()> {
        let mut capture = self.lock();
        if let Some(running) = &*capture {
            return Err(Error::Capture {
                call: "Stream::capture",
                message: format!(
                    "the simulated PE already captures on its stream {}",
                    running.origin.0
                ),
            });
        }
        *capture = Some(Recording {
            origin: stream,
            streams: BTreeSet::from([stream]),
            ops: Vec::new(),
        });
        Ok(())
    }

    /// Ends the capture begun on `stream` and returns what was recorded, as a graph.
    pub(crate) fn end(&self, stream: StreamId) -> Result<Box<dyn GraphExecBackend>> {
        let mut capture = self.lock();
        match capture.take() {
            Some(recording) if recording.origin == stream => {
                Ok(Box::new(SimGraph { ops: recording.ops }))
            }
            other => {
                let origin = other.as_ref().map(|r| r.origin.0);
                *capture = other;
                Err(Error::Capture {
                    call: "Stream::capture",
                    message: format!(
                        "no capture began on stream {} of this simulated PE (the running one \
                         began on {origin:?})",
                        stream.0
                    ),
                })
            }
        }
    }

    /// Notes that `waiter` waits for `on`: `waiter` records from now on if `on` does.
    pub(crate) fn wait(&self, waiter: StreamId, on: StreamId) {
        if let Some(recording) = &mut *self.lock() {
            if recording.streams.contains(&on) {
                recording.streams.insert(waiter);
            }
        }
    }

    /// Records `op` if `stream` records (the arguments `op` owns are its recorded ones), or
    /// hands it back to be run now.
    pub(crate) fn record<F>(&self, stream: StreamId, op: F) -> std::result::Result<(), F>
    where
        F: Fn() -> Result<()> + Send + Sync + 'static,
    {
        match &mut *self.lock() {
            Some(recording) if recording.streams.contains(&stream) => {
                recording.ops.push(Box::new(op));
                Ok(())
            }
            _ => Err(op),
        }
    }

    /// Whether `stream` records.
    pub(crate) fn records(&self, stream: StreamId) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|r| r.streams.contains(&stream))
    }
}

/// A captured graph on the simulator: its recorded operations, in order.
struct SimGraph {
    ops: Vec<Recorded>,
}

impl GraphExecBackend for SimGraph {
    unsafe fn launch(&self, _stream: StreamId) -> Result<()> {
        // Every stream's work runs when queued here, so the graph runs now, whichever stream
        // it is launched on.
        self.ops.iter().try_for_each(|op| op())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn recorded_ops_run_at_each_launch_in_order() {
        let capture = Capture::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let push = |v: u32| {
            let log = log.clone();
            move || {
                log.lock().unwrap().push(v);
                Ok(())
            }
        };
        // Not capturing: handed back to run now.
        assert!(capture.record(StreamId::PE, push(0)).is_err());
        capture.begin(StreamId::PE).unwrap();
        assert!(capture.begin(StreamId(2)).is_err());
        assert!(capture.record(StreamId::PE, push(1)).is_ok());
        // Stream 2 records only once it waited for a recording stream.
        assert!(capture.record(StreamId(2), push(9)).is_err());
        capture.wait(StreamId(2), StreamId::PE);
        assert!(capture.records(StreamId(2)));
        assert!(capture.record(StreamId(2), push(2)).is_ok());
        assert!(
            capture.end(StreamId(2)).is_err(),
            "ended on the wrong stream"
        );
        let graph = capture.end(StreamId::PE).unwrap();
        assert!(!capture.records(StreamId(2)));
        assert!(log.lock().unwrap().is_empty());
        for _ in 0..2 {
            // SAFETY: the recorded closures only push to the log.
            unsafe { graph.launch(StreamId(5)).unwrap() };
        }
        assert_eq!(*log.lock().unwrap(), [1, 2, 1, 2]);
    }

    #[test]
    fn a_failing_op_stops_the_launch_with_its_error() {
        let capture = Capture::default();
        let ran = Arc::new(AtomicU32::new(0));
        capture.begin(StreamId::PE).unwrap();
        let fail = || {
            Err(Error::InvalidArgument {
                call: "put_on_stream",
                message: "out of the heap".into(),
            })
        };
        assert!(capture.record(StreamId::PE, fail).is_ok());
        let after = ran.clone();
        let count = move || {
            after.fetch_add(1, Ordering::SeqCst);
            Ok(())
        };
        assert!(capture.record(StreamId::PE, count).is_ok());
        let graph = capture.end(StreamId::PE).unwrap();
        // SAFETY: the recorded closures touch no device memory.
        let err = unsafe { graph.launch(StreamId::PE) }.unwrap_err();
        assert!(err.to_string().contains("out of the heap"), "{err}");
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}
