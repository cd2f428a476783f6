//! Graph capture on a GPU PE: CUDA's stream capture (`cuStreamBeginCapture` in relaxed mode,
//! `cuStreamEndCapture`, `cuGraphInstantiate`) and [`GpuGraph`], the executable graph, launched
//! with `cuGraphLaunch`.
//!
//! While the capture runs, `PeShared::capture` knows which streams record (with the event
//! that marks each one's work before it began recording, see `streams.rs`), the names of what
//! was recorded (a fault in a launch of the graph is pinned on them) and the modules whose
//! kernels were recorded (the graph keeps them loaded). Streams and teams the program drops
//! during the capture are released once it ends.

use super::super::cuda::{CudaError, Event, GraphExec};
use super::state::{lock, GpuCapture, GpuPe, PeShared};
use crate::contract::{Error, GraphBackend, GraphExecBackend, Result, StreamId, TeamBackend};
use std::any::Any;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// How many distinct names a graph's description lists before it counts the rest.
const NAMES_SHOWN: usize = 6;

impl GraphBackend for GpuPe {
    fn begin_capture(&self, id: StreamId) -> Result<()> {
        let sh = &*self.shared;
        let stream = sh.stream(id);
        let mut capture = lock(&sh.capture);
        if let Some(running) = &*capture {
            return Err(Error::Capture {
                call: "Stream::capture",
                message: format!(
                    "PE {} already captures on its stream {}",
                    sh.pe, running.origin.0
                ),
            });
        }
        let before = Event::new(sh.ctx(), false)?;
        before.record(&stream).map_err(|e| sh.fault(e, id))?;
        stream.begin_capture().map_err(|e| sh.fault(e, id))?;
        *capture = Some(GpuCapture {
            origin: id,
            before: BTreeMap::from([(id, Arc::new(before))]),
            names: Vec::new(),
            keep: Vec::new(),
            dropped_streams: Vec::new(),
            dropped_teams: Vec::new(),
        });
        Ok(())
    }

    fn end_capture(&self, id: StreamId) -> Result<Box<dyn GraphExecBackend>> {
        const CALL: &str = "Stream::capture";
        let sh = &*self.shared;
        let stream = sh.stream(id);
        // Held until CUDA has ended the capture: the watchdog queries no stream while the
        // lock holds a capture (a query of a recording stream would invalidate it).
        let mut running = lock(&sh.capture);
        let capture = running.take().ok_or_else(|| Error::Capture {
            call: CALL,
            message: format!("no capture runs on PE {}", sh.pe),
        })?;
        let ended = stream.end_capture();
        drop(running);
        // Every stream that recorded must run its work again; CUDA ends the whole capture with
        // the stream it began on.
        let still: Vec<String> = capture
            .before
            .keys()
            .filter(|&&s| {
                let dropped = capture.dropped_streams.iter().find(|(d, _)| *d == s);
                let stream = match dropped {
                    Some((_, dropped)) => dropped.clone(),
                    None => sh.stream(s), // live: not dropped, and not taken above
                };
                stream.is_capturing().unwrap_or(true)
            })
            .map(|s| s.0.to_string())
            .collect();
        let GpuCapture {
            names,
            keep,
            dropped_streams,
            dropped_teams,
            ..
        } = capture;
        drop(dropped_streams);
        for team in dropped_teams {
            self.team_destroy(team);
        }
        let graph = ended.map_err(|e| not_recorded(&e, &names))?;
        if !still.is_empty() {
            return Err(Error::Capture {
                call: CALL,
                message: format!(
                    "stream(s) {} of PE {} still record after the capture ended; they cannot be \
                     used again",
                    still.join(", "),
                    sh.pe
                ),
            });
        }
        let exec = GraphExec::instantiate(graph).map_err(|e| Error::Capture {
            call: CALL,
            message: format!(
                "CUDA recorded the graph but could not instantiate it: {} failed: {}",
                e.call,
                e.message()
            ),
        })?;
        Ok(Box::new(GpuGraph {
            shared: self.shared.clone(),
            name: describe(&names),
            exec,
            _keep: keep,
        }))
    }
}

/// The error of a capture that CUDA ended without a graph.
fn not_recorded(e: &CudaError, names: &[&'static str]) -> Error {
    let recorded = match names {
        [] => "nothing was recorded".to_string(),
        _ => format!("recorded so far: {}", describe(names)),
    };
    Error::Capture {
        call: "Stream::capture",
        message: format!(
            "CUDA ended the capture without a graph ({} failed: {}): an operation queued during \
             the capture could not be recorded (the driver invalidates the capture on it); \
             {recorded}",
            e.call,
            e.message()
        ),
    }
}

/// A graph's description, for fault reports: its distinct kernels and calls, in order.
fn describe(names: &[&'static str]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for name in names {
        if !distinct.contains(name) {
            distinct.push(name);
        }
    }
    let more = distinct.len().saturating_sub(NAMES_SHOWN);
    distinct.truncate(NAMES_SHOWN);
    let more = match more {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "a graph of {} operation(s): {}{more}",
        names.len(),
        distinct.join(", ")
    )
}

/// A captured graph on the GPU.
struct GpuGraph {
    shared: Arc<PeShared>,
    /// What a fault in a launch is pinned on.
    name: String,
    /// Declared before what it runs: destroyed before the modules are released.
    exec: GraphExec,
    _keep: Vec<Arc<dyn Any + Send + Sync>>,
}

impl GraphExecBackend for GpuGraph {
    unsafe fn launch(&self, id: StreamId) -> Result<()> {
        let sh = &*self.shared;
        let stream = sh.stream(id);
        // SAFETY: the stream is of this graph's context (the graph's PE); the rest is this
        // function's contract.
        unsafe { self.exec.launch(&stream) }.map_err(|e| sh.fault(e, id))?;
        lock(&sh.pending).insert(id, Cow::Owned(self.name.clone()));
        Ok(())
    }
}

impl Drop for GpuGraph {
    fn drop(&mut self) {
        // Its launches may still run; a failure among them is reported by the PE's next
        // synchronisation.
        self.shared.wait_all_quietly();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_is_described_by_its_distinct_names() {
        assert_eq!(
            describe(&["fill", "copy", "fill", "nvshmemx_barrier_all_on_stream"]),
            "a graph of 4 operation(s): fill, copy, nvshmemx_barrier_all_on_stream"
        );
        let many: Vec<&'static str> = vec!["a", "b", "c", "d", "e", "f", "g", "h"];
        assert_eq!(
            describe(&many),
            "a graph of 8 operation(s): a, b, c, d, e, f and 2 more"
        );
    }
}
