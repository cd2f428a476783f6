//! One PE on one GPU: [`GpuPe`] implements the runtime's `PeBackend` (symmetric heap, copies,
//! barriers, module loading, timing) and [`GpuModule`] its `ModuleBackend` (launches).
//!
//! Threading: NVSHMEM is initialised `NVSHMEM_THREAD_SERIALIZED`, so every NVSHMEM call is made
//! under one lock (which also guards the heap accounting); CUDA handles bind the PE's context
//! on whichever thread uses them.
//!
//! Streams: the PE's own stream (`StreamId::PE`, where heap copies and the allocation's
//! barrier go) and those the program makes (`create_stream`), kept by id.
//!
//! Failures of device code surface asynchronously, and, the context being dead from then on,
//! on whichever stream is waited for next; the PE remembers the last kernel queued on each
//! stream since that stream was last synchronised without error and names it in
//! [`Error::KernelFailed`] (with those in flight on its other streams, which may be the
//! culprits).

use super::cuda::{Context, CudaError, Dims, Event, Function, Image, Module, Stream};
use super::heap::{decide, heap_limit, Accounting, HeapLimit};
use super::nvshmem::{result as nv, sys, Nvshmem};
use crate::error::{Error, Result};
use crate::module::{Code, KernelImage, LaunchConfig};
use crate::runtime::{ModuleBackend, PeBackend};
use crate::stream::StreamId;
use crate::stream_ops::{CollOp, ElemKind};
use rshmem_device::shmem::{ReduceOp, Team};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Dynamic shared memory a kernel may use without opting in (`cuFuncSetAttribute`).
const DEFAULT_SHARED_MEM_LIMIT: u32 = 48 << 10;

/// What the PE and its modules share.
struct PeShared {
    nvshmem: &'static Nvshmem,
    /// The PE's own stream, `StreamId::PE`.
    stream: Arc<Stream>,
    /// The streams made by `create_stream` that are not yet destroyed.
    user_streams: Mutex<UserStreams>,
    pe: usize,
    npes: usize,
    /// Held around every NVSHMEM call (see the module docs).
    serial: Mutex<HeapState>,
    /// Per stream, the last kernel (or NVSHMEM on-stream operation) queued since the stream
    /// was last synchronised without error. A destroyed stream's entry stays if its final
    /// wait failed, until every stream has been synchronised without error.
    pending: Mutex<BTreeMap<StreamId, &'static str>>,
    /// Set once a kernel fault has been reported to the PE's code (the context is dead from
    /// then on, and every later call reports the same sticky error).
    fault_reported: Arc<AtomicBool>,
    /// NVSHMEM runs in limited multi-process-per-GPU mode (several PEs per GPU, no MPS),
    /// where it ends the process on host-side team splits and collectives.
    limited_mpg: bool,
}

/// The program's streams, by id.
#[derive(Default)]
struct UserStreams {
    /// The last id handed out (ids are never reused, so a stale one cannot alias).
    last: u32,
    live: HashMap<StreamId, Arc<Stream>>,
}

/// The heap bookkeeping guarded by the NVSHMEM lock.
#[derive(Default)]
struct HeapState {
    accounting: Accounting,
    /// Allocations dropped but not yet passed to `nvshmem_free` (see [`GpuPe::free`]).
    pending_frees: Vec<u64>,
    /// Counts size exchanges; its parity picks the control block's bank.
    exchanges: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; the PE is being torn down.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PeShared {
    fn ctx(&self) -> &Arc<Context> {
        self.stream.context()
    }

    fn lib(&self) -> &'static super::nvshmem::sys::Lib {
        self.nvshmem.lib()
    }

    /// The stream `id`, which `Shmem` passes only while it lives.
    fn stream(&self, id: StreamId) -> Arc<Stream> {
        if id == StreamId::PE {
            return self.stream.clone();
        }
        let streams = lock(&self.user_streams);
        let stream = streams.live.get(&id).cloned();
        stream.unwrap_or_else(|| panic!("rshmem: stream {id:?} used after it was destroyed"))
    }

    /// Every live stream, the PE's own first.
    fn all_streams(&self) -> Vec<(StreamId, Arc<Stream>)> {
        let streams = lock(&self.user_streams);
        let user = streams.live.iter().map(|(id, s)| (*id, s.clone()));
        std::iter::once((StreamId::PE, self.stream.clone()))
            .chain(user)
            .collect()
    }

    /// Turns a driver failure reported on stream `on` into the runtime's error, naming the
    /// kernel for device faults: the one pending on `on`, else one pending elsewhere (a
    /// fault is sticky: it shows on whichever stream is waited for first).
    fn fault(&self, e: CudaError, on: StreamId) -> Error {
        if !e.is_kernel_fault() {
            return e.into();
        }
        let suspects = suspects(&lock(&self.pending), on);
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
        Error::KernelFailed {
            kernel: kernel.to_string(),
            pe: self.pe,
            message: format!(
                "{}, reported by {}{others}; the GPU context is unusable from here on \
                 (compute-sanitizer shows the faulting access)",
                e.message(),
                e.call
            ),
        }
    }

    /// Waits for stream `id`; device faults are attributed to the pending kernels.
    fn sync_stream(&self, id: StreamId) -> Result<()> {
        self.sync_one(id, &self.stream(id))
    }

    fn sync_one(&self, id: StreamId, stream: &Stream) -> Result<()> {
        let before = lock(&self.pending).get(&id).copied();
        stream.synchronize().map_err(|e| self.fault(e, id))?;
        let mut pending = lock(&self.pending);
        // Only what was queued before the wait is known to be done; another thread may have
        // queued more since.
        if pending.get(&id).copied() == before {
            pending.remove(&id);
        }
        Ok(())
    }

    /// Waits for every stream of the PE; then destroyed streams' leftover entries are moot.
    fn sync(&self) -> Result<()> {
        let streams = self.all_streams();
        for (id, stream) in &streams {
            self.sync_one(*id, stream)?;
        }
        lock(&self.pending).retain(|id, _| streams.iter().any(|(live, _)| live == id));
        Ok(())
    }

    /// Refuses `call` where NVSHMEM would end the process for it (limited MPG mode).
    fn require_host_collectives(&self, call: &'static str) -> Result<()> {
        if !self.limited_mpg {
            return Ok(());
        }
        Err(Error::Unsupported {
            call,
            reason: "in NVSHMEM's limited multi-process-per-GPU mode (several PEs share a GPU \
                     without MPS, e.g. with RSHMEM_GPU_OVERSUBSCRIBE=1), where NVSHMEM ends the \
                     process on host-side team splits and collectives; run one PE per GPU, or \
                     start MPS (nvidia-cuda-mps-control -d) so that NVSHMEM runs in full MPG \
                     mode. NVSHMEM does not refuse puts, gets and barrier_all_on_stream there"
                .into(),
        })
    }

    /// Runs `f` under the NVSHMEM lock with the PE's context bound, after the stream's
    /// earlier work has completed without error: NVSHMEM's host-side team calls synchronise
    /// the device themselves and end the process on a CUDA error, so a kernel fault must
    /// surface (as this PE's error) before them.
    fn team_call<R>(&self, f: impl FnOnce(&'static sys::Lib) -> Result<R>) -> Result<R> {
        let _serial = lock(&self.serial);
        self.ctx().bind()?;
        self.sync()?;
        f(self.lib())
    }

    /// Queues an NVSHMEM on-stream operation `call` on stream `id` under the NVSHMEM lock; a
    /// fault in it is reported as `call`'s by the next synchronisation.
    fn on_stream(
        &self,
        call: &'static str,
        id: StreamId,
        f: impl FnOnce(&'static sys::Lib, cudarc::driver::sys::CUstream) -> Result<()>,
    ) -> Result<()> {
        let stream = self.stream(id);
        let _serial = lock(&self.serial);
        self.ctx().bind()?;
        f(self.lib(), stream.raw())?;
        lock(&self.pending).insert(id, call);
        Ok(())
    }
}

/// The kernels that may have caused a fault reported on stream `on`: the one pending there
/// first, then those pending on the PE's other streams, by stream id.
fn suspects(pending: &BTreeMap<StreamId, &'static str>, on: StreamId) -> Vec<&'static str> {
    let elsewhere = pending.iter().filter(|(id, _)| **id != on);
    pending
        .get(&on)
        .into_iter()
        .chain(elsewhere.map(|(_, kernel)| kernel))
        .copied()
        .collect()
}

/// A PE number or team triplet value as NVSHMEM's `int`.
fn c_int_of(call: &'static str, what: &str, v: usize) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::InvalidArgument {
        call,
        message: format!("{what} {v} does not fit NVSHMEM's int"),
    })
}

/// Where `op` is in `sys::REDUCE_OPS` (and so in a `TypedColls` reduction table).
fn reduce_op_index(op: ReduceOp) -> usize {
    // `ReduceOp`'s variants are declared in the order of `sys::REDUCE_OPS` (tested below).
    op as usize
}

/// Bytes of one bank of the control block: this PE's `[requested, room]`, then every PE's.
fn bank_bytes(npes: usize) -> usize {
    (2 + 2 * npes) * std::mem::size_of::<u64>()
}

/// One PE's backend on its GPU.
pub(crate) struct GpuPe {
    shared: Arc<PeShared>,
    limit: HeapLimit,
    /// Symmetric scratch for the size exchange before each allocation: two banks, used in
    /// turn so a fast PE's next exchange never overwrites data a slow PE has yet to read.
    control: u64,
    /// Set when this PE's closure failed: other PEs may be anywhere, so no collective
    /// teardown may run.
    abandoned: Arc<AtomicBool>,
}

impl GpuPe {
    /// Builds the PE on an initialised NVSHMEM whose context is `ctx`. Collective (it
    /// allocates the control block).
    pub(crate) fn new(
        nvshmem: &'static Nvshmem,
        ctx: Arc<Context>,
        pe: usize,
        npes: usize,
    ) -> Result<GpuPe> {
        let lib = nvshmem.lib();
        let numbered = nv::my_pe_n_pes(lib)?;
        if numbered != (pe, npes) {
            return Err(Error::Launcher(format!(
                "NVSHMEM numbered this process PE {} of {}, but it was started as PE {pe} of \
                 {npes}: the launcher's variables and NVSHMEM's bootstrap disagree",
                numbered.0, numbered.1
            )));
        }
        let limit = heap_limit(&|k| std::env::var_os(k), ctx.vmm_supported)?;
        let stream = Arc::new(Stream::new(&ctx)?);
        let control_bytes = 2 * bank_bytes(npes);
        // SAFETY: NVSHMEM is initialised; every PE runs this same start-up sequence with the
        // same `npes`, hence the same non-zero size.
        let control = unsafe { nv::malloc(lib, control_bytes) }.ok_or_else(|| Error::Nvshmem {
            call: "nvshmem_malloc",
            status: 0,
            hint: Some(format!(
                "rshmem's {control_bytes}-byte control block could not be allocated at start-up: \
                 the symmetric heap is too small or the GPU is out of memory"
            )),
        })?;
        let mut state = HeapState::default();
        state.accounting.allocated(control, control_bytes);
        Ok(GpuPe {
            shared: Arc::new(PeShared {
                nvshmem,
                stream,
                user_streams: Mutex::default(),
                pe,
                npes,
                serial: Mutex::new(state),
                pending: Mutex::default(),
                fault_reported: Arc::new(AtomicBool::new(false)),
                limited_mpg: nv::init_status(lib) == sys::NVSHMEM_STATUS_LIMITED_MPG,
            }),
            limit,
            control,
            abandoned: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The flag that, once set, makes dropping this PE skip NVSHMEM's collective teardown.
    /// Set once a kernel fault was reported to the PE's code.
    pub(crate) fn fault_flag(&self) -> Arc<AtomicBool> {
        self.shared.fault_reported.clone()
    }

    pub(crate) fn abandon_flag(&self) -> Arc<AtomicBool> {
        self.abandoned.clone()
    }

    /// Gathers every PE's `[requested, room]` (in PE order) through the control block.
    /// Collective.
    ///
    /// Where every peer's slot is directly reachable (`nvshmem_ptr`: one node, NVLink or a
    /// shared GPU) each PE writes its own slot, all meet in `nvshmem_barrier_all`, and each
    /// reads the others' slots through the peer mappings: that works in every NVSHMEM mode,
    /// including several PEs per GPU without MPS, where NVSHMEM refuses host collectives (and
    /// exits the process). Otherwise (several nodes) `nvshmem_uint64_fcollect` gathers them.
    fn exchange(&self, state: &mut HeapState, mine: [u64; 2]) -> Result<Vec<[u64; 2]>> {
        let sh = &*self.shared;
        let bank = (state.exchanges % 2) as usize;
        state.exchanges += 1;
        let src = self.control + (bank * bank_bytes(sh.npes)) as u64;
        let dest = src + std::mem::size_of_val(&mine) as u64;
        // SAFETY: `src` is this PE's 16-byte slot in the control block; `mine` outlives the
        // synchronisation below.
        unsafe { sh.stream.copy_to_device(src, bytemuck::bytes_of(&mine)) }
            .map_err(|e| sh.fault(e, StreamId::PE))?;
        // Peers read `src` after the barrier (or fcollect reads it from NVSHMEM's stream), so
        // the copy must be complete.
        sh.sync_stream(StreamId::PE)?;
        // SAFETY: `src` is symmetric and every PE index is in range.
        let peers: Option<Vec<u64>> = (0..sh.npes)
            .map(|pe| unsafe { nv::ptr(sh.lib(), src, pe) })
            .collect();
        let mut offers = vec![[0u64; 2]; sh.npes];
        match peers {
            Some(peers) => {
                // SAFETY: collective, every PE calls it here. The bank alternation keeps the
                // slots just written stable until every PE has read them: a PE writes this
                // bank again only after the next exchange's barrier, which every PE enters
                // after its reads here.
                unsafe { nv::barrier_all(sh.lib()) };
                for (offer, peer) in offers.iter_mut().zip(peers) {
                    // SAFETY: `peer` maps a peer's 16-byte slot, complete before the barrier.
                    unsafe { sh.stream.copy_to_host(bytemuck::bytes_of_mut(offer), peer) }
                        .map_err(|e| sh.fault(e, StreamId::PE))?;
                }
            }
            None => {
                // SAFETY: `src` (2 words) and `dest` (2 × npes words) lie in the symmetric
                // control block; the bank alternation keeps `dest` free of other readers and
                // writers (every PE has left exchange k before any PE enters exchange k + 2).
                unsafe { nv::fcollect_u64(sh.lib(), dest, src, 2) }?;
                // SAFETY: `dest` holds `npes` pairs; `offers` is not touched until the sync.
                unsafe {
                    sh.stream
                        .copy_to_host(bytemuck::cast_slice_mut(&mut offers), dest)
                }
                .map_err(|e| sh.fault(e, StreamId::PE))?;
            }
        }
        sh.sync_stream(StreamId::PE)?;
        Ok(offers)
    }

    /// `nvshmem_free`s the allocations dropped since the last collective heap call.
    fn flush_frees(&self, state: &mut HeapState) {
        for addr in std::mem::take(&mut state.pending_frees) {
            // SAFETY: `addr` came from `nvshmem_malloc` and was dropped exactly once (its
            // `SymBuffer` synchronised first); every PE flushes the same list at the same
            // collective.
            unsafe { nv::free(self.shared.lib(), addr) };
            state.accounting.freed(addr);
        }
    }

    fn limit_bytes(&self) -> usize {
        match self.limit {
            HeapLimit::Static { size } => size,
            HeapLimit::Growable { max } => max,
        }
    }
}

impl PeBackend for GpuPe {
    fn my_pe(&self) -> usize {
        self.shared.pe
    }

    fn n_pes(&self) -> usize {
        self.shared.npes
    }

    fn barrier_all(&self) -> Result<()> {
        let _serial = lock(&self.shared.serial);
        self.shared.ctx().bind()?;
        // SAFETY: NVSHMEM is initialised; every PE reaches its barriers in the same order.
        unsafe { nv::barrier_all(self.shared.lib()) };
        Ok(())
    }

    fn alloc(&self, bytes: usize, init: Option<&[u8]>) -> Result<u64> {
        let sh = &*self.shared;
        let mut state = lock(&sh.serial);
        sh.ctx().bind()?;
        self.flush_frees(&mut state);
        let device_free = match self.limit {
            HeapLimit::Growable { .. } => sh.ctx().free_memory()?,
            HeapLimit::Static { .. } => 0,
        };
        let room = state.accounting.room(self.limit, device_free);
        let offers = self.exchange(&mut state, [bytes as u64, room as u64])?;
        decide(sh.pe, &offers, self.limit)?;
        if bytes == 0 {
            // NVSHMEM returns NULL for 0 bytes without its barrier; an empty buffer needs
            // no memory and no address.
            return Ok(0);
        }
        // SAFETY: `decide` passed on data every PE shares, so every PE is here with the same
        // non-zero `bytes`, at the same point of its collective sequence.
        let addr = unsafe { nv::malloc(sh.lib(), bytes) }.ok_or(Error::HeapExhausted {
            requested: bytes,
            available: room,
            heap_size: self.limit_bytes(),
        })?;
        state.accounting.allocated(addr, bytes);
        match init {
            // SAFETY: `addr..addr + bytes` was just allocated on this PE's GPU and is unused;
            // `data` is `bytes` long (the trait's contract) and outlives the sync below.
            Some(data) => unsafe { sh.stream.copy_to_device(addr, data) },
            // SAFETY: as above.
            None => unsafe { sh.stream.zero(addr, bytes) },
        }
        .map_err(|e| sh.fault(e, StreamId::PE))?;
        // Queued behind the fill on the same stream: once it completes, every PE's copy holds
        // its contents, so no peer can read or write this PE's copy before it is filled.
        // SAFETY: NVSHMEM is initialised, the stream is on its context, and every PE queues
        // this barrier at the same point (right after the same allocation).
        unsafe { nv::barrier_all_on_stream(sh.lib(), sh.stream.raw()) };
        sh.sync_stream(StreamId::PE)?;
        Ok(addr)
    }

    /// Defers `nvshmem_free` to the next allocation: it is collective (it starts with a
    /// barrier), and a PE whose closure is failing must not block in it while the others wait
    /// elsewhere — deferred, the frees run only on PEs that go on allocating together.
    fn free(&self, addr: u64) {
        if addr != 0 {
            lock(&self.shared.serial).pending_frees.push(addr);
        }
    }

    fn copy_to_host(&self, addr: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let sh = &*self.shared;
        // SAFETY: `addr` and the length come from a live `SymBuffer` of this PE (the only
        // caller), so they name memory of this GPU; `dst` is untouched until the sync.
        unsafe { sh.stream.copy_to_host(dst, addr) }.map_err(|e| sh.fault(e, StreamId::PE))?;
        sh.sync_stream(StreamId::PE)
    }

    fn copy_from_host(&self, addr: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        let sh = &*self.shared;
        // SAFETY: as in `copy_to_host`; `src` outlives the sync.
        unsafe { sh.stream.copy_to_device(addr, src) }.map_err(|e| sh.fault(e, StreamId::PE))?;
        sh.sync_stream(StreamId::PE)
    }

    fn load(&self, image: &KernelImage) -> Result<Box<dyn ModuleBackend>> {
        let sh = &*self.shared;
        let gpu_sm = sh.ctx().sm;
        let (arch, code) = image.code_for(gpu_sm)?;
        if let Some(linked) = image.nvshmem_version {
            check_version(image.name, linked, sh.nvshmem.version(), sh.nvshmem.path())?;
        }
        let (what, code) = match code {
            Code::Cubin(cubin) => ("cubin", Image::Cubin(cubin)),
            Code::Ptx(ptx) => ("PTX", Image::Ptx(ptx)),
        };
        let module = Module::load(sh.ctx(), code).map_err(|(e, log)| Error::Module {
            module: image.name.to_string(),
            message: format!(
                "loading its sm_{arch} {what} on this sm_{gpu_sm} GPU failed: {}{}",
                e.message(),
                if log.is_empty() {
                    String::new()
                } else {
                    format!("\nJIT log:\n{log}")
                }
            ),
        })?;
        // Resolve every kernel now: under CUDA's lazy loading (the default since 12.2) a
        // kernel's code is loaded when its handle is first taken, and loading may synchronise
        // the context. Taken at its first launch instead, a kernel meant to run beside one
        // already running on another stream (a producer beside its consumer) would wait for
        // that one to finish first — or forever, if that one waits for it.
        let functions = image
            .kernels
            .iter()
            .map(|&name| Ok((name, module.function(name)?)))
            .collect::<std::result::Result<HashMap<_, _>, CudaError>>()
            .map_err(|e| Error::Module {
                module: image.name.to_string(),
                message: format!("resolving its kernels failed: {}", e.message()),
            })?;
        let nvshmem_registered = image.nvshmem_version.is_some();
        if nvshmem_registered {
            let _serial = lock(&sh.serial);
            // SAFETY: NVSHMEM is initialised on this context and the module is loaded there;
            // `GpuModule::drop` finalises it before unloading.
            unsafe { nv::cumodule_init(sh.lib(), module.raw()) }?;
        }
        Ok(Box::new(GpuModule {
            shared: self.shared.clone(),
            functions,
            nvshmem_registered,
            module,
        }))
    }

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

    fn destroy_stream(&self, id: StreamId) {
        let sh = &*self.shared;
        let Some(stream) = lock(&sh.user_streams).live.remove(&id) else {
            return;
        };
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

    fn stream_wait(&self, waiter: StreamId, on: StreamId) -> Result<()> {
        let sh = &*self.shared;
        let (waiter_stream, on_stream) = (sh.stream(waiter), sh.stream(on));
        let event = Event::new(sh.ctx(), false)?;
        event.record(&on_stream).map_err(|e| sh.fault(e, on))?;
        // The wait captures the event's state now; dropping the event afterwards is fine.
        waiter_stream.wait(&event).map_err(|e| sh.fault(e, waiter))
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

    fn team_split_strided(
        &self,
        parent: Team,
        [start, stride, size]: [usize; 3],
        verdict: Result<()>,
    ) -> Result<Team> {
        const CALL: &str = "team_split_strided";
        // Every PE that passed these arguments fails here alike, before any communication.
        verdict?;
        let sh = &*self.shared;
        sh.require_host_collectives(CALL)?;
        let (start, stride, size) = (
            c_int_of(CALL, "start", start)?,
            c_int_of(CALL, "stride", stride)?,
            c_int_of(CALL, "size", size)?,
        );
        sh.team_call(|lib| {
            // SAFETY: NVSHMEM is initialised and not in limited MPG mode (checked above);
            // `Shmem` passes only live teams this PE is a member of, and a triplet checked
            // against the parent; every member of the parent calls it at the same point (the
            // contract of `Shmem::team_split_strided`).
            let team = unsafe { nv::team_split_strided(lib, parent.raw(), start, stride, size) }?;
            Ok(Team::from_raw(team))
        })
    }

    fn team_split_2d(&self, parent: Team, xrange: usize) -> Result<(Team, Team)> {
        const CALL: &str = "team_split_2d";
        let sh = &*self.shared;
        sh.require_host_collectives(CALL)?;
        // NVSHMEM clamps xrange to the parent's size; so does the int conversion here.
        let xrange = c_int::try_from(xrange).unwrap_or(c_int::MAX);
        sh.team_call(|lib| {
            // SAFETY: as in `team_split_strided`; `Shmem` checked `xrange >= 1`.
            let (x, y) = unsafe { nv::team_split_2d(lib, parent.raw(), xrange) }?;
            Ok((Team::from_raw(x), Team::from_raw(y)))
        })
    }

    /// Skipped where the GPU is unusable (a kernel faulted): NVSHMEM's destroy synchronises
    /// the device and would end the process on the error, while this PE is failing anyway.
    fn team_destroy(&self, team: Team) {
        let _ = self.shared.team_call(|lib| {
            // SAFETY: `team` is a split team this PE held (its `TeamHandle` is being
            // dropped) and the stream's work that could use it has completed.
            unsafe { nv::team_destroy(lib, team.raw()) };
            Ok(())
        });
    }

    fn team_my_pe(&self, team: Team) -> Option<usize> {
        let sh = &*self.shared;
        let _serial = lock(&sh.serial);
        // SAFETY: `Shmem` passes only teams this PE holds.
        usize::try_from(unsafe { nv::team_my_pe(sh.lib(), team.raw()) }).ok()
    }

    fn team_n_pes(&self, team: Team) -> usize {
        let sh = &*self.shared;
        let _serial = lock(&sh.serial);
        // SAFETY: as in `team_my_pe`.
        usize::try_from(unsafe { nv::team_n_pes(sh.lib(), team.raw()) }).unwrap_or(0)
    }

    fn team_translate_pe(&self, src: Team, pe: usize, dest: Team) -> Option<usize> {
        let sh = &*self.shared;
        let pe = c_int::try_from(pe).ok()?;
        let _serial = lock(&sh.serial);
        // SAFETY: as in `team_my_pe`, for both teams; `Shmem` checked `pe` against `src`.
        usize::try_from(unsafe { nv::team_translate_pe(sh.lib(), src.raw(), pe, dest.raw()) }).ok()
    }

    fn rma_on_stream(
        &self,
        id: StreamId,
        put: bool,
        dest: u64,
        src: u64,
        bytes: usize,
        pe: usize,
    ) -> Result<()> {
        let call = if put {
            "nvshmemx_putmem_on_stream"
        } else {
            "nvshmemx_getmem_on_stream"
        };
        self.shared.on_stream(call, id, |lib, stream| {
            // SAFETY: `Stream` checked both ranges to lie in live symmetric buffers of this PE
            // (device memory of its GPU, freed only after a synchronisation) and `pe` to be a
            // PE of the job; the stream is on NVSHMEM's context.
            unsafe { nv::rma_on_stream(lib, put, dest, src, bytes, pe, stream) };
            Ok(())
        })
    }

    fn barrier_all_on_stream(&self, id: StreamId) -> Result<()> {
        self.shared
            .on_stream("nvshmemx_barrier_all_on_stream", id, |lib, stream| {
                // SAFETY: NVSHMEM is initialised, the stream is on its context, and every PE
                // queues its barriers in the same order (the contract of the caller).
                unsafe { nv::barrier_all_on_stream(lib, stream) };
                Ok(())
            })
    }

    fn barrier_on_stream(&self, id: StreamId, team: Team) -> Result<()> {
        let sh = &*self.shared;
        sh.require_host_collectives("barrier_on_stream")?;
        sh.on_stream("nvshmemx_barrier_on_stream", id, |lib, stream| {
            // SAFETY: as in `barrier_all_on_stream`, over a team this PE holds and is a
            // member of; not in limited MPG mode (checked above).
            unsafe { nv::barrier_on_stream(lib, team.raw(), stream) }
        })
    }

    fn collective_on_stream(
        &self,
        id: StreamId,
        team: Team,
        op: CollOp,
        elem: ElemKind,
        dest: u64,
        src: u64,
        n: usize,
    ) -> Result<()> {
        let sh = &*self.shared;
        let call = op.call();
        sh.require_host_collectives(call)?;
        let colls = sh
            .lib()
            .colls
            .iter()
            .find(|c| c.ty == elem.nvshmem_name())
            .ok_or_else(|| Error::NvshmemLoad {
                path: sh.nvshmem.path().to_path_buf(),
                message: format!("no collectives of {} were loaded", elem.nvshmem_name()),
            })?;
        let coll = match op {
            CollOp::Broadcast { root } => nv::TypedColl::Broadcast {
                root: c_int_of(call, "root", root)?,
            },
            CollOp::Fcollect => nv::TypedColl::Fcollect,
            CollOp::Alltoall => nv::TypedColl::Alltoall,
            CollOp::Reduce(op) => nv::TypedColl::Reduce {
                op: reduce_op_index(op),
            },
            CollOp::ReduceScatter(op) => nv::TypedColl::ReduceScatter {
                op: reduce_op_index(op),
            },
        };
        sh.on_stream(call, id, |_, stream| {
            // SAFETY: not in limited MPG mode (checked above); `Shmem` checked the team (held,
            // this PE a member), the slices (inside live symmetric buffers of `elem`
            // elements, lengths fitting the collective for `n` on this team, not
            // overlapping) and the root; every member queues it at the same point (the
            // caller's contract).
            unsafe { nv::collective_on_stream(colls, coll, team.raw(), dest, src, n, stream) }
        })
    }
}

impl Drop for GpuPe {
    fn drop(&mut self) {
        let sh = &*self.shared;
        // Finalising is collective and, on a CUDA error, NVSHMEM exits the process: run it only
        // when this PE succeeded and its GPU is healthy. Otherwise the other PEs may be in any
        // collective (or gone), and the launcher ends the job; keep NVSHMEM, the stream and the
        // context alive until the process exits.
        let healthy = !self.abandoned.load(Ordering::SeqCst)
            && !std::thread::panicking()
            && sh.sync().is_ok()
            && sh.ctx().bind().is_ok();
        if !healthy {
            std::mem::forget(self.shared.clone());
            return;
        }
        let _serial = lock(&sh.serial);
        // SAFETY: every module was dropped (modules borrow the `Shmem` owning this PE), which
        // finalised them; no symmetric memory is used after this; every PE drops its `Shmem`
        // at the same point, after its closure returned successfully.
        unsafe { nv::finalize(sh.lib()) };
    }
}

/// Refuses an image linked against another NVSHMEM than the host library loaded now.
///
/// rshmem asks for the exact version (NVSHMEM itself accepts an older device minor): the
/// module's `nvshmemi_device_state_d` is filled by the host library by layout, so the two
/// must agree byte for byte, which only the same release guarantees.
pub(crate) fn check_version(
    module: &str,
    linked: (u32, u32, u32),
    runtime: (u32, u32, u32),
    path: &std::path::Path,
) -> Result<()> {
    if linked == runtime {
        return Ok(());
    }
    let v = |(a, b, c): (u32, u32, u32)| format!("{a}.{b}.{c}");
    Err(Error::VersionMismatch {
        module: module.to_string(),
        linked: v(linked),
        runtime: v(runtime),
        path: path.to_path_buf(),
    })
}

/// Checks that a cooperative launch can have all its blocks resident at once, given how many
/// fit per SM (`per_sm`, from the occupancy calculator) and the SM count.
pub(crate) fn check_cooperative_fit(
    kernel: &'static str,
    config: &LaunchConfig,
    per_sm: u32,
    sm_count: u32,
) -> Result<()> {
    let max = u64::from(per_sm) * u64::from(sm_count);
    let blocks = config.grid_blocks();
    if blocks <= max {
        return Ok(());
    }
    let threads = config.block_threads();
    let smem = match config.shared_mem_bytes {
        0 => String::new(),
        b => format!(" with {b} bytes of dynamic shared memory"),
    };
    let message = if per_sm == 0 {
        format!(
            "not even one block of {threads} threads{smem} fits on an SM (registers or shared \
             memory); use fewer threads or less shared memory per block"
        )
    } else {
        format!(
            "a cooperative launch needs all {blocks} blocks resident at once, but only {per_sm} \
             block(s) of {threads} threads{smem} fit per SM × {sm_count} SMs = {max}; launch at \
             most {max} blocks (e.g. LaunchConfig::new({max}, {threads}).cooperative()), or use \
             fewer threads or less shared memory per block"
        )
    };
    Err(Error::Launch { kernel, message })
}

/// A module loaded on one PE.
pub(crate) struct GpuModule {
    shared: Arc<PeShared>,
    /// Every kernel of the image, resolved and loaded at `load`.
    functions: HashMap<&'static str, Function>,
    nvshmem_registered: bool,
    // Declared last: unloaded after everything above is gone.
    module: Module,
}

impl GpuModule {
    /// The kernel's handle (`Module::launch_on` launches only kernels of the image).
    fn function(&self, kernel: &'static str) -> Result<Function> {
        self.functions
            .get(kernel)
            .copied()
            .ok_or_else(|| Error::Launch {
                kernel,
                message: "not a kernel of this module's image".into(),
            })
    }
}

impl ModuleBackend for GpuModule {
    unsafe fn launch(
        &self,
        id: StreamId,
        kernel: &'static str,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
        _sim_thread: &(dyn Fn() + Sync),
    ) -> Result<()> {
        let sh = &*self.shared;
        let stream = sh.stream(id);
        sh.ctx().bind()?;
        let f = self.function(kernel)?;
        let refused = |e: CudaError| Error::Launch {
            kernel,
            message: format!("{} failed: {}", e.call, e.message()),
        };
        if config.shared_mem_bytes > DEFAULT_SHARED_MEM_LIMIT {
            f.allow_shared_mem(config.shared_mem_bytes)
                .map_err(refused)?;
        }
        let block_threads = u32::try_from(config.block_threads()).unwrap_or(u32::MAX);
        if config.cooperative {
            let per_sm = f
                .max_active_blocks_per_sm(block_threads, config.shared_mem_bytes)
                .map_err(refused)?;
            check_cooperative_fit(kernel, config, per_sm, sh.ctx().sm_count)?;
        }
        let dims = Dims {
            grid: config.grid,
            block: config.block,
            shared_mem_bytes: config.shared_mem_bytes,
        };
        // SAFETY: forwarded from this function's contract (`params` match the kernel).
        unsafe { f.launch(&stream, dims, config.cooperative, params) }.map_err(|e| {
            if e.is_kernel_fault() {
                sh.fault(e, id)
            } else {
                refused(e)
            }
        })?;
        lock(&sh.pending).insert(id, kernel);
        Ok(())
    }
}

impl Drop for GpuModule {
    fn drop(&mut self) {
        // Launched kernels may still run this module's code, on any stream; a failure among
        // them is reported by the PE's next synchronisation, not here.
        for (_, stream) in self.shared.all_streams() {
            let _ = stream.synchronize();
        }
        if self.nvshmem_registered {
            let _serial = lock(&self.shared.serial);
            // SAFETY: the module was registered in `load` and is still loaded.
            let _ = unsafe { nv::cumodule_finalize(self.shared.lib(), self.module.raw()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn version_must_match_exactly() {
        let path = Path::new("/opt/nvshmem/lib/libnvshmem_host.so.3");
        assert!(check_version("k", (3, 4, 5), (3, 4, 5), path).is_ok());
        let msg = check_version("my-kernels", (3, 4, 5), (3, 8, 0), path)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`my-kernels`")
                && msg.contains("NVSHMEM 3.4.5 device code")
                && msg.contains("is 3.8.0")
                && msg.contains("/opt/nvshmem/lib/libnvshmem_host.so.3")
                && msg.contains("NVSHMEM_HOME"),
            "{msg}"
        );
        assert!(check_version("k", (3, 4, 5), (3, 4, 6), path).is_err());
    }

    #[test]
    fn cooperative_launches_must_fit_the_gpu() {
        let cfg = LaunchConfig::new(264, 512).cooperative();
        assert!(check_cooperative_fit("k", &cfg, 2, 132).is_ok());
        let msg = check_cooperative_fit("k", &LaunchConfig::new(265, 512), 2, 132)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("all 265 blocks")
                && msg.contains("2 block(s) of 512 threads fit per SM × 132 SMs = 264")
                && msg.contains("LaunchConfig::new(264, 512)"),
            "{msg}"
        );
        let msg =
            check_cooperative_fit("k", &LaunchConfig::new(1, 1024).shared_mem(300_000), 0, 132)
                .unwrap_err()
                .to_string();
        assert!(
            msg.contains("not even one block") && msg.contains("300000 bytes"),
            "{msg}"
        );
    }

    #[test]
    fn reduce_ops_index_nvshmems_names() {
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Min,
            ReduceOp::Max,
            ReduceOp::And,
            ReduceOp::Or,
            ReduceOp::Xor,
        ];
        for op in ops {
            let name = sys::REDUCE_OPS[reduce_op_index(op)];
            assert_eq!(name, format!("{op:?}").to_lowercase());
        }
    }

    #[test]
    fn faults_name_the_waited_streams_kernel_first() {
        let pending = BTreeMap::from([
            (StreamId::PE, "fill"),
            (StreamId(2), "trap"),
            (StreamId(5), "copy"),
        ]);
        assert_eq!(suspects(&pending, StreamId(2)), ["trap", "fill", "copy"]);
        assert_eq!(suspects(&pending, StreamId::PE), ["fill", "trap", "copy"]);
        assert_eq!(suspects(&pending, StreamId(3)), ["fill", "trap", "copy"]);
        assert!(suspects(&BTreeMap::new(), StreamId::PE).is_empty());
    }

    #[test]
    fn control_block_banks_hold_a_pair_per_pe() {
        assert_eq!(bank_bytes(2), 6 * 8);
        assert_eq!(bank_bytes(8), 18 * 8);
    }
}
