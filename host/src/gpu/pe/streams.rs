//! A GPU PE's streams, and how a fault is pinned on a kernel: every stream remembers the last
//! kernel queued on it since it was last synchronised without error, and a fault (sticky,
//! reported on whichever stream is waited for next) names that one first.
//!
//! During a graph capture (`graph.rs`) a recording stream is never synchronised (CUDA would
//! invalidate the capture): a wait for it waits for the event recorded on it just before it
//! began recording, i.e. for the work that really runs; a stream that forks from the capture
//! gets that event first; a recording stream the program drops is destroyed after the
//! capture.

use super::super::cuda::{CudaError, Event, Stream};
use super::state::{lock, GpuPe, PeShared};
use crate::contract::{Error, GpuSharing, Result, StreamBackend, StreamId, MPS_SHARED_FAULT};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl PeShared {
    /// The stream `id`, which `Shmem` passes only while it lives (a recording stream the
    /// program dropped lives until the capture ends).
    pub(super) fn stream(&self, id: StreamId) -> Arc<Stream> {
        if id == StreamId::PE {
            return self.stream.clone();
        }
        let live = lock(&self.user_streams).live.get(&id).cloned();
        let stream = live.or_else(|| {
            let capture = lock(&self.capture);
            let dropped = &capture.as_ref()?.dropped_streams;
            dropped
                .iter()
                .find(|(d, _)| *d == id)
                .map(|(_, s)| s.clone())
        });
        stream.unwrap_or_else(|| panic!("rshmem: stream {id:?} used after it was destroyed"))
    }

    /// Every live stream, the PE's own first.
    pub(super) fn all_streams(&self) -> Vec<(StreamId, Arc<Stream>)> {
        let streams = lock(&self.user_streams);
        let user = streams.live.iter().map(|(id, s)| (*id, s.clone()));
        std::iter::once((StreamId::PE, self.stream.clone()))
            .chain(user)
            .collect()
    }

    /// Turns a driver failure reported on stream `on` into the runtime's error, naming the
    /// kernel for device faults: the one pending on `on`, else one pending elsewhere (a
    /// fault is sticky: it shows on whichever stream is waited for first).
    pub(super) fn fault(&self, e: CudaError, on: StreamId) -> Error {
        if !e.is_kernel_fault() {
            return e.into();
        }
        let pending = lock(&self.pending);
        let suspects = suspects(&pending, on);
        let Some((kernel, others)) = suspects.split_first() else {
            return e.into();
        };
        self.fault_reported.store(true, Ordering::SeqCst);
        let others = match others {
            [] => String::new(),
            _ => format!(
                " (also in flight on this PE's other streams, so possibly the faulting one: {})",
                others.join(", ")
            ),
        };
        let trapped = format!("{}, reported by {}", e.message(), e.call);
        // What the faulting thread recorded, if it did (assertions, panics, checked calls);
        // a fault of the hardware (a bad access) leaves nothing, and the driver's code is all.
        let message = match self.mailbox.describe(&trapped) {
            Some(facts) => format!("{facts}{others}; the GPU context is unusable from here on"),
            None if self.sharing == GpuSharing::Mps => format!(
                "{trapped}{others}; the GPU context is unusable from here on (no thread of this \
                 PE recorded a fault, and {MPS_SHARED_FAULT}: another PE's fault, if one was \
                 recorded, is the cause; else compute-sanitizer shows the faulting access)"
            ),
            None => format!(
                "{trapped}{others}; the GPU context is unusable from here on \
                 (compute-sanitizer shows the faulting access)"
            ),
        };
        Error::KernelFailed {
            kernel: kernel.to_string(),
            pe: self.pe,
            message,
        }
    }

    /// Waits for stream `id`; device faults are attributed to the pending kernels.
    pub(super) fn sync_stream(&self, id: StreamId) -> Result<()> {
        self.sync_one(id, &self.stream(id))
    }

    pub(super) fn sync_one(&self, id: StreamId, stream: &Stream) -> Result<()> {
        let recording = lock(&self.capture)
            .as_ref()
            .and_then(|c| c.before.get(&id).cloned());
        if let Some(before) = recording {
            // Its work before the capture; what it recorded runs only in the graph.
            return before.synchronize().map_err(|e| self.fault(e, id));
        }
        let before = lock(&self.pending).get(&id).cloned();
        let blocking = self.blocking("synchronize");
        stream.synchronize().map_err(|e| self.fault(e, id))?;
        drop(blocking);
        let mut pending = lock(&self.pending);
        // Only what was queued before the wait is known to be done; another thread may have
        // queued more since.
        if pending.get(&id) == before.as_ref() {
            pending.remove(&id);
        }
        Ok(())
    }

    /// Waits for every stream of the PE, going on past failures (which the next
    /// synchronisation reports): before releasing what their work may use.
    pub(super) fn wait_all_quietly(&self) {
        for (id, stream) in self.all_streams() {
            let _ = self.sync_one(id, &stream);
        }
    }

    /// Waits for every stream of the PE; then destroyed streams' leftover entries are moot.
    pub(super) fn sync(&self) -> Result<()> {
        let streams = self.all_streams();
        for (id, stream) in &streams {
            self.sync_one(*id, stream)?;
        }
        lock(&self.pending).retain(|id, _| streams.iter().any(|(live, _)| live == id));
        Ok(())
    }
}

/// The kernels that may have caused a fault reported on stream `on`: the one pending there
/// first, then those pending on the PE's other streams, by stream id.
fn suspects<'a>(pending: &'a BTreeMap<StreamId, Cow<'static, str>>, on: StreamId) -> Vec<&'a str> {
    let elsewhere = pending.iter().filter(|(id, _)| **id != on);
    pending
        .get(&on)
        .into_iter()
        .chain(elsewhere.map(|(_, kernel)| kernel))
        .map(|kernel| &**kernel)
        .collect()
}

impl StreamBackend for GpuPe {
    fn synchronize(&self) -> Result<()> {
        self.shared.sync()
    }

    fn create_stream(&self) -> Result<StreamId> {
        let stream = Arc::new(Stream::new(self.shared.ctx())?);
        let mut streams = lock(&self.shared.user_streams);
        streams.last += 1;
        let id = StreamId(streams.last);
        streams.live.insert(id, stream);
        Ok(id)
    }

    unsafe fn adopt_stream(&self, raw: u64) -> Result<StreamId> {
        // SAFETY: this function's contract: a live stream of this PE's context.
        let stream = Arc::new(unsafe { Stream::borrowed(self.shared.ctx(), raw) });
        let mut streams = lock(&self.shared.user_streams);
        streams.last += 1;
        let id = StreamId(streams.last);
        streams.live.insert(id, stream);
        Ok(id)
    }

    fn destroy_stream(&self, id: StreamId) {
        let sh = &*self.shared;
        let Some(stream) = lock(&sh.user_streams).live.remove(&id) else {
            return;
        };
        if let Some(capture) = &mut *lock(&sh.capture) {
            if capture.before.contains_key(&id) {
                // Destroyed when the capture ends (its recorded work is the graph's).
                capture.dropped_streams.push((id, stream));
                return;
            }
        }
        // Waiting here keeps the kernel names of a failure that happens on this stream
        // meaningful; if the wait fails, the entry stays for the next synchronisation to
        // name.
        if stream.synchronize().is_ok() {
            lock(&sh.pending).remove(&id);
        }
    }

    fn synchronize_stream(&self, id: StreamId) -> Result<()> {
        self.shared.sync_stream(id)
    }

    fn stream_is_captured(&self, id: StreamId) -> Result<bool> {
        Ok(self.shared.stream(id).is_capturing()?)
    }

    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()> {
        let sh = &*self.shared;
        let (waiter_stream, on_stream) = (sh.stream(waiter), sh.stream(on));
        // A fork from a capture: mark the end of the waiter's real work first.
        let fork = (sh.recording(on) && !sh.recording(waiter))
            .then(|| -> Result<Arc<Event>> {
                let before = Event::new(sh.ctx(), false)?;
                before
                    .record(&waiter_stream)
                    .map_err(|e| sh.fault(e, waiter))?;
                Ok(Arc::new(before))
            })
            .transpose()?;
        let event = Event::new(sh.ctx(), false)?;
        event.record(&on_stream).map_err(|e| sh.fault(e, on))?;
        // The wait captures the event's state now; dropping the event afterwards is fine.
        waiter_stream
            .wait(&event)
            .map_err(|e| sh.fault(e, waiter))?;
        if let (Some(before), Some(capture)) = (fork, &mut *lock(&sh.capture)) {
            capture.before.insert(waiter, before);
        }
        Ok(())
    }

    fn time(&self, id: StreamId, f: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        let sh = &*self.shared;
        let stream = sh.stream(id);
        let start = Event::new(sh.ctx(), true)?;
        let end = Event::new(sh.ctx(), true)?;
        start.record(&stream)?;
        f()?;
        end.record(&stream).map_err(|e| sh.fault(e, id))?;
        end.synchronize().map_err(|e| sh.fault(e, id))?;
        let ms = end.elapsed_ms_since(&start)?;
        Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_name_the_waited_streams_kernel_first() {
        let pending = BTreeMap::from([
            (StreamId::PE, Cow::Borrowed("fill")),
            (StreamId(2), Cow::Borrowed("trap")),
            (StreamId(5), Cow::Owned("copy".to_string())),
        ]);
        assert_eq!(suspects(&pending, StreamId(2)), ["trap", "fill", "copy"]);
        assert_eq!(suspects(&pending, StreamId::PE), ["fill", "trap", "copy"]);
        assert_eq!(suspects(&pending, StreamId(3)), ["fill", "trap", "copy"]);
        assert!(suspects(&BTreeMap::new(), StreamId::PE).is_empty());
    }
}
