//! What a GPU PE holds ([`GpuPe`]) and shares with its modules ([`PeShared`]): the data the
//! other files of `gpu::pe` work on, each through the contract's trait it implements.

use super::super::cuda::{Context, Event, Stream};
use super::super::heap_accounting::{Accounting, HeapLimit};
use super::super::mps;
use super::super::nvshmem::{sys, Nvshmem};
use super::fault::Mailbox;
use crate::contract::{Error, GpuSharing, Result, StreamId, MPS_START};
use rshmem_device::shmem::Team;
use std::any::Any;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One PE's backend on its GPU.
pub(crate) struct GpuPe {
    pub(super) shared: Arc<PeShared>,
    pub(super) limit: HeapLimit,
    /// Symmetric scratch for the size exchange before each allocation: two banks, used in
    /// turn so a fast PE's next exchange never overwrites data a slow PE has yet to read.
    pub(super) control: u64,
    /// Set when this PE's closure failed: other PEs may be anywhere, so no collective
    /// teardown may run.
    pub(super) abandoned: AtomicBool,
    /// Held for its `Drop`. Declared last: it stops after the teardown in `GpuPe`'s `Drop`,
    /// which it watches too.
    pub(super) _watchdog: Option<super::term::Watchdog>,
}

/// What the PE and its modules share.
pub(crate) struct PeShared {
    pub(super) nvshmem: &'static Nvshmem,
    /// The PE's own stream, `StreamId::PE`.
    pub(super) stream: Arc<Stream>,
    /// The streams made by `create_stream` that are not yet destroyed.
    pub(super) user_streams: Mutex<UserStreams>,
    pub(super) pe: usize,
    pub(super) npes: usize,
    /// Where the first faulting GPU thread of the PE leaves its facts (every image the PE
    /// loads is told where it is).
    pub(super) mailbox: Mailbox,
    /// Held around every NVSHMEM call (see the module docs).
    pub(super) serial: Mutex<HeapState>,
    /// Per stream, the last kernel (or NVSHMEM on-stream operation, or graph) queued since
    /// the stream was last synchronised without error. A destroyed stream's entry stays if its
    /// final wait failed, until every stream has been synchronised without error.
    pub(super) pending: Mutex<BTreeMap<StreamId, Cow<'static, str>>>,
    /// The graph capture running on this PE, if one is.
    pub(super) capture: Mutex<Option<GpuCapture>>,
    /// Set once a kernel fault has been reported to the PE's code (the context is dead from
    /// then on, and every later call reports the same sticky error).
    pub(super) fault_reported: AtomicBool,
    /// Counts work queued and blocking calls returned: the watchdog's sign of progress.
    pub(super) progress: AtomicU64,
    /// The blocking host calls under way (by name), for the watchdog.
    pub(super) blocking: Mutex<Vec<&'static str>>,
    /// How the GPU is shared: in NVSHMEM's limited multi-process-per-GPU mode
    /// ([`GpuSharing::TimeSliced`]) it ends the process on host-side team splits and
    /// collectives.
    pub(super) sharing: GpuSharing,
}

/// A blocking call under way ([`PeShared::blocking`]).
pub(super) struct Blocking<'a> {
    shared: &'a PeShared,
    call: &'static str,
}

impl Drop for Blocking<'_> {
    fn drop(&mut self) {
        let mut calls = lock(&self.shared.blocking);
        if let Some(at) = calls.iter().rposition(|c| *c == self.call) {
            calls.remove(at);
        }
        self.shared.progress.fetch_add(1, Ordering::Relaxed);
    }
}

/// The program's streams, by id.
#[derive(Default)]
pub(super) struct UserStreams {
    /// The last id handed out (ids are never reused, so a stale one cannot alias).
    pub(super) last: u32,
    pub(super) live: HashMap<StreamId, Arc<Stream>>,
}

/// A graph capture in progress (see `graph.rs`).
pub(super) struct GpuCapture {
    /// The stream it began on.
    pub(super) origin: StreamId,
    /// Per recording stream: an event recorded on it just before it began recording. Waiting
    /// for a recording stream's earlier work waits for this event: a recording stream itself
    /// cannot be synchronised (CUDA would invalidate the capture).
    pub(super) before: BTreeMap<StreamId, Arc<Event>>,
    /// What the recorded work launches, in order: kernels and NVSHMEM calls by name.
    pub(super) names: Vec<&'static str>,
    /// Kept as long as the graph: the modules whose kernels were recorded.
    pub(super) keep: Vec<Arc<dyn Any + Send + Sync>>,
    /// Recording streams the program dropped: destroyed once the capture ends.
    pub(super) dropped_streams: Vec<(StreamId, Arc<Stream>)>,
    /// Split teams the program dropped during the capture: destroyed once it ends (NVSHMEM's
    /// destroy synchronises the device, which a capture cannot have).
    pub(super) dropped_teams: Vec<Team>,
}

/// The heap bookkeeping guarded by the NVSHMEM lock.
#[derive(Default)]
pub(super) struct HeapState {
    pub(super) accounting: Accounting,
    /// Allocations dropped but not yet passed to `nvshmem_free` (see `free` in `alloc.rs`).
    pub(super) pending_frees: Vec<u64>,
    /// Counts size exchanges; its parity picks the control block's bank.
    pub(super) exchanges: u64,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; the PE is being torn down.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PeShared {
    pub(super) fn ctx(&self) -> &Arc<Context> {
        self.stream.context()
    }

    /// Whether stream `id` records a graph now.
    pub(super) fn recording(&self, id: StreamId) -> bool {
        lock(&self.capture)
            .as_ref()
            .is_some_and(|c| c.before.contains_key(&id))
    }

    /// Notes what queuing `name` on stream `id` means: recorded into the running capture (and
    /// `keep` kept with its graph), or now the stream's pending work. Called with the work
    /// queued.
    pub(super) fn queued(
        &self,
        id: StreamId,
        name: &'static str,
        keep: impl FnOnce() -> Option<Arc<dyn Any + Send + Sync>>,
    ) {
        if let Some(capture) = &mut *lock(&self.capture) {
            if capture.before.contains_key(&id) {
                capture.names.push(name);
                if let Some(kept) = keep() {
                    if !capture.keep.iter().any(|k| Arc::ptr_eq(k, &kept)) {
                        capture.keep.push(kept);
                    }
                }
                return;
            }
        }
        lock(&self.pending).insert(id, Cow::Borrowed(name));
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes that the blocking call `call` is under way until the guard drops (which counts as
    /// progress), for the watchdog.
    pub(super) fn blocking(&self, call: &'static str) -> Blocking<'_> {
        lock(&self.blocking).push(call);
        Blocking { shared: self, call }
    }

    pub(super) fn lib(&self) -> &'static sys::Lib {
        self.nvshmem.lib()
    }

    /// NVSHMEM's limited multi-process-per-GPU mode.
    pub(super) fn limited_mpg(&self) -> bool {
        self.sharing == GpuSharing::TimeSliced
    }

    /// Refuses `call` where NVSHMEM would end the process for it (limited MPG mode).
    pub(super) fn require_host_collectives(&self, call: &'static str) -> Result<()> {
        if !self.limited_mpg() {
            return Ok(());
        }
        Err(Error::Unsupported {
            call,
            reason: format!(
                "in NVSHMEM's limited multi-process-per-GPU mode, where NVSHMEM ends the \
                 process on host-side team splits and collectives (it does not refuse puts, \
                 gets and barrier_all_on_stream there); {}",
                limited_mpg_remedy()
            ),
        })
    }
}

/// Why NVSHMEM runs its limited multi-process-per-GPU mode here, and the way out.
pub(super) fn limited_mpg_remedy() -> String {
    if !mps::active() {
        return format!(
            "several PEs share a GPU without MPS (RSHMEM_GPU_OVERSUBSCRIBE=1): run one PE per \
             GPU, or start MPS ({}), under which NVSHMEM runs its full mode",
            MPS_START
        );
    }
    let percentage = std::env::var(mps::PERCENTAGE_VAR).unwrap_or_else(|_| "<unset>".into());
    format!(
        "MPS runs, but the {} of the PEs sharing this GPU add up to more than 100 (this PE's: \
         {percentage}), so NVSHMEM chose its limited mode: leave it unset under rshmem's \
         launcher (which gives each PE 100 / its GPU's PEs), or set \
         NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1",
        mps::PERCENTAGE_VAR
    )
}
