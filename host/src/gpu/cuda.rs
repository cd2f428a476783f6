//! The CUDA driver, through cudarc's `driver::result` (checked calls) and `driver::sys` (raw
//! symbols; libcuda is loaded at run time), wrapped in the few RAII types a PE needs:
//! [`Context`] (the device's primary context), [`Stream`] (with its graph capture),
//! [`Event`], [`Module`], [`GraphExec`].
//!
//! Every handle type holds an `Arc<Context>` and binds it to the calling thread before use
//! (and in `Drop`), like cudarc's safe layer, so the handles can be used from any thread.
//! Failures are [`CudaError`]s (the call and the driver's code); the PE layer turns them into
//! [`crate::contract::Error`], attributing asynchronous faults to the kernel that caused them.

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::Arc;

/// The oldest driver API rshmem runs on: CUDA 13.0 (driver 580), which cudarc's `cuda-13000`
/// bindings (e.g. `cuEventElapsedTime_v2`) and NVSHMEM for CUDA 13 need.
pub(crate) const MIN_DRIVER_VERSION: c_int = 13000;

/// A failed driver call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CudaError {
    /// The driver function.
    pub call: &'static str,
    /// Its result code.
    pub error: DriverError,
}

impl CudaError {
    /// `CUDA_ERROR_NAME (description)`, as the driver words it.
    pub(crate) fn message(&self) -> String {
        describe(&self.error)
    }

    /// Whether the code is a fault of running device code (sticky: the context is unusable
    /// afterwards, and every later call reports it too).
    pub(crate) fn is_kernel_fault(&self) -> bool {
        use sys::CUresult::*;
        matches!(
            self.error.0,
            CUDA_ERROR_ILLEGAL_ADDRESS
                | CUDA_ERROR_LAUNCH_TIMEOUT
                | CUDA_ERROR_ASSERT
                | CUDA_ERROR_HARDWARE_STACK_ERROR
                | CUDA_ERROR_ILLEGAL_INSTRUCTION
                | CUDA_ERROR_MISALIGNED_ADDRESS
                | CUDA_ERROR_INVALID_ADDRESS_SPACE
                | CUDA_ERROR_INVALID_PC
                | CUDA_ERROR_LAUNCH_FAILED
        )
    }
}

impl From<CudaError> for crate::contract::Error {
    fn from(e: CudaError) -> Self {
        crate::contract::Error::Cuda {
            call: e.call,
            message: e.message(),
        }
    }
}

/// Result of a driver call.
pub(crate) type CudaResult<T> = std::result::Result<T, CudaError>;

/// Names the call a cudarc result came from.
trait Call<T> {
    fn call(self, call: &'static str) -> CudaResult<T>;
}

impl<T> Call<T> for std::result::Result<T, DriverError> {
    fn call(self, call: &'static str) -> CudaResult<T> {
        self.map_err(|error| CudaError { call, error })
    }
}

/// `CUDA_ERROR_NAME (description)`.
fn describe(e: &DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned());
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned());
    match (name, text) {
        (Ok(name), Ok(text)) => format!("{name} ({text})"),
        _ => format!("{:?}", e.0),
    }
}

/// Loads libcuda, initialises the driver and counts the devices; the reason in words if no
/// GPU can be used. Never panics: cudarc panics on a missing libcuda only when a symbol is
/// first used, so its presence is tested first.
pub(crate) fn init_driver() -> std::result::Result<usize, String> {
    // SAFETY: only tries to dlopen libcuda under its usual names.
    if !unsafe { sys::is_culib_present() } {
        return Err(
            "the CUDA driver library (libcuda.so) was not found: no NVIDIA driver is installed \
             or it is not on the dynamic loader's path"
                .into(),
        );
    }
    result::init().map_err(|e| format!("cuInit failed: {}", describe(&e)))?;
    let mut version: c_int = 0;
    // SAFETY: one valid out-pointer.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| format!("cuDriverGetVersion failed: {}", describe(&e)))?;
    if version < MIN_DRIVER_VERSION {
        return Err(format!(
            "the CUDA driver supports CUDA {}.{}, rshmem needs 13.0 or newer (driver 580+)",
            version / 1000,
            version % 1000 / 10
        ));
    }
    let count = result::device::get_count()
        .map_err(|e| format!("cuDeviceGetCount failed: {}", describe(&e)))?;
    if count <= 0 {
        return Err(format!(
            "no CUDA device is visible (CUDA_VISIBLE_DEVICES={})",
            std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "<unset>".into())
        ));
    }
    Ok(count as usize)
}

/// A device's primary context (the one the CUDA runtime inside NVSHMEM also uses), retained
/// for the lifetime of this value, with the device facts rshmem needs.
#[derive(Debug)]
pub(crate) struct Context {
    device: sys::CUdevice,
    /// The device's ordinal (what pointer attributes name).
    pub ordinal: usize,
    raw: sys::CUcontext,
    /// Compute capability as `major * 10 + minor`.
    pub sm: u32,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// VMM and GPUDirect RDMA with VMM: what NVSHMEM needs for its growable heap.
    pub vmm_supported: bool,
}

// SAFETY: a CUcontext is a driver handle usable from any thread once made current there;
// every use goes through `bind`.
unsafe impl Send for Context {}
// SAFETY: as above; the driver synchronises concurrent calls on one context.
unsafe impl Sync for Context {}

impl Context {
    /// Retains device `ordinal`'s primary context and makes it current on this thread.
    /// [`init_driver`] must have succeeded.
    pub(crate) fn primary(ordinal: usize) -> CudaResult<Arc<Context>> {
        let device = result::device::get(ordinal as c_int).call("cuDeviceGet")?;
        // SAFETY: `device` comes from cuDeviceGet.
        let raw =
            unsafe { result::primary_ctx::retain(device) }.call("cuDevicePrimaryCtxRetain")?;
        // Owned from here on, so an early return below releases the retain.
        let mut ctx = Context {
            device,
            ordinal,
            raw,
            sm: 0,
            sm_count: 0,
            vmm_supported: false,
        };
        let attr = |a| {
            // SAFETY: `device` comes from cuDeviceGet.
            unsafe { result::device::get_attribute(device, a) }.call("cuDeviceGetAttribute")
        };
        use sys::CUdevice_attribute::*;
        ctx.sm = (attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
            + attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?) as u32;
        ctx.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        ctx.vmm_supported = attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED)? != 0
            && attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)? != 0;
        ctx.bind()?;
        if let Some(share) = ctx.sm_share() {
            ctx.sm_count = ctx.sm_count.min(share);
        }
        Ok(Arc::new(ctx))
    }

    /// The SMs this (current) context may use, where the driver limits it: an MPS client's
    /// share (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`), which the device attribute does not show.
    fn sm_share(&self) -> Option<u32> {
        // SAFETY: zeroes are a valid value of the plain-data struct.
        let mut affinity: sys::CUexecAffinityParam = unsafe { std::mem::zeroed() };
        // SAFETY: one valid out-pointer; this context is current (`bind` above).
        unsafe {
            sys::cuCtxGetExecAffinity(
                &mut affinity,
                sys::CUexecAffinityType::CU_EXEC_AFFINITY_TYPE_SM_COUNT,
            )
        }
        .result()
        .ok()?;
        // SAFETY: the union's one member, written by the call for this type.
        let count = unsafe { affinity.param.smCount.val };
        (count > 0).then_some(count)
    }

    /// Makes this context current on the calling thread (a no-op if it already is).
    pub(crate) fn bind(&self) -> CudaResult<()> {
        if result::ctx::get_current().call("cuCtxGetCurrent")? != Some(self.raw) {
            // SAFETY: `raw` is a retained primary context, alive until `self` drops.
            unsafe { result::ctx::set_current(self.raw) }.call("cuCtxSetCurrent")?;
        }
        Ok(())
    }

    /// Where the byte at `addr` is, as the driver knows it: its memory type (a
    /// `CUmemorytype` value; 0 for memory the driver does not know, plain host memory) and
    /// the ordinal of the device that holds it. One driver call.
    pub(crate) fn locate(&self, addr: u64) -> CudaResult<(c_uint, c_int)> {
        use sys::CUpointer_attribute::*;
        self.bind()?;
        let (mut ty, mut ordinal): (c_uint, c_int) = (0, -1);
        let mut attrs = [
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        ];
        let mut data = [
            (&mut ty as *mut c_uint).cast::<c_void>(),
            (&mut ordinal as *mut c_int).cast::<c_void>(),
        ];
        // SAFETY: two attributes, each with an out-pointer of its type (a 32-bit
        // `CUmemorytype`, read as its integer value since the driver writes 0 for memory it
        // does not know; an int); the driver writes defaults rather than failing for such
        // memory.
        unsafe { sys::cuPointerGetAttributes(2, attrs.as_mut_ptr(), data.as_mut_ptr(), addr) }
            .result()
            .call("cuPointerGetAttributes")?;
        Ok((ty, ordinal))
    }

    /// Allocates, clears and frees a small buffer, then synchronises: work that reaches the
    /// device, so that a context an MPS server handed out while still recovering from an
    /// ended client fails here (and is retried) rather than inside NVSHMEM's init.
    pub(crate) fn probe(&self) -> CudaResult<()> {
        const BYTES: usize = 256;
        self.bind()?;
        // SAFETY: a fresh allocation of `BYTES`, cleared within its size and freed once,
        // after the synchronisation that ends the clear.
        unsafe {
            let buf = result::malloc_sync(BYTES).call("cuMemAlloc")?;
            let cleared = result::memset_d8_sync(buf, 0, BYTES)
                .call("cuMemsetD8")
                .and_then(|()| result::ctx::synchronize().call("cuCtxSynchronize"));
            let freed = result::free_sync(buf).call("cuMemFree");
            cleared.and(freed)
        }
    }

    /// Free device memory in bytes.
    pub(crate) fn free_memory(&self) -> CudaResult<usize> {
        self.bind()?;
        result::mem_get_info()
            .call("cuMemGetInfo")
            .map(|(free, _)| free)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `primary`; nothing made from this context outlives
        // it, since every handle holds an `Arc<Context>`.
        let _ = unsafe { result::primary_ctx::release(self.device) };
    }
}

/// A non-blocking stream (no implicit synchronisation with the legacy default stream).
#[derive(Debug)]
pub(crate) struct Stream {
    ctx: Arc<Context>,
    raw: sys::CUstream,
    /// Made here (destroyed on drop), or borrowed from the program (`borrowed`).
    owned: bool,
}

// SAFETY: a CUstream is a driver handle usable from any thread with its context bound.
unsafe impl Send for Stream {}
// SAFETY: as above; the driver orders concurrent submissions to one stream.
unsafe impl Sync for Stream {}

impl Stream {
    /// Creates a stream on `ctx`.
    pub(crate) fn new(ctx: &Arc<Context>) -> CudaResult<Stream> {
        ctx.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)
            .call("cuStreamCreate")?;
        Ok(Stream {
            ctx: ctx.clone(),
            raw,
            owned: true,
        })
    }

    /// A stream the program made (torch's), used and never destroyed here.
    ///
    /// # Safety
    ///
    /// `raw` is a live `CUstream` of `ctx`, alive as long as the returned value.
    pub(crate) unsafe fn borrowed(ctx: &Arc<Context>, raw: u64) -> Stream {
        Stream {
            ctx: ctx.clone(),
            raw: raw as sys::CUstream,
            owned: false,
        }
    }

    /// The raw handle, for NVSHMEM's `*_on_stream` calls and launches.
    pub(crate) fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// The context the stream belongs to.
    pub(crate) fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Waits for everything queued on the stream.
    pub(crate) fn synchronize(&self) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: `raw` is a live stream of the bound context.
        unsafe { result::stream::synchronize(self.raw) }.call("cuStreamSynchronize")
    }

    /// Makes the work queued on this stream from now on wait for `event`'s record point.
    pub(crate) fn wait(&self, event: &Event) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: both handles are live and belong to the bound context.
        unsafe {
            result::stream::wait_event(
                self.raw,
                event.raw,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .call("cuStreamWaitEvent")
    }

    /// Queues a copy of `src` to device address `dst`.
    ///
    /// # Safety
    ///
    /// `dst..dst + src.len()` must be device memory of this context, and `src` must stay
    /// valid until the stream is synchronised.
    pub(crate) unsafe fn copy_to_device(&self, dst: u64, src: &[u8]) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: forwarded to the caller.
        unsafe { result::memcpy_htod_async(dst, src, self.raw) }.call("cuMemcpyHtoDAsync")
    }

    /// Queues a copy of device address `src` into `dst`.
    ///
    /// # Safety
    ///
    /// `src..src + dst.len()` must be device memory of this context, and `dst` must stay
    /// valid and untouched until the stream is synchronised.
    pub(crate) unsafe fn copy_to_host(&self, dst: &mut [u8], src: u64) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: forwarded to the caller.
        unsafe { result::memcpy_dtoh_async(dst, src, self.raw) }.call("cuMemcpyDtoHAsync")
    }

    /// Starts recording the work queued on this stream into a graph (`cuStreamBeginCapture`,
    /// relaxed mode: no host call is refused on account of the capture, so the caller refuses
    /// what cannot be recorded).
    pub(crate) fn begin_capture(&self) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: `raw` is a live stream of the bound context.
        unsafe {
            result::stream::begin_capture(
                self.raw,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        }
        .call("cuStreamBeginCapture")
    }

    /// Ends the capture begun on this stream and returns the recorded graph. The capture is
    /// over whatever the result (every stream that forked from it records no more).
    pub(crate) fn end_capture(&self) -> CudaResult<Graph> {
        self.ctx.bind()?;
        // SAFETY: `raw` is a live stream of the bound context.
        let raw = unsafe { result::stream::end_capture(self.raw) }.call("cuStreamEndCapture")?;
        if raw.is_null() {
            // An invalidated capture ends with no graph (the driver reports why on the call
            // that invalidated it, and may return success here).
            return Err(CudaError {
                call: "cuStreamEndCapture",
                error: DriverError(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
            });
        }
        Ok(Graph {
            ctx: self.ctx.clone(),
            raw,
        })
    }

    /// Whether everything queued on the stream has completed (`cuStreamQuery`): `Ok(false)`
    /// while work is outstanding; a fault of its work (or any sticky one) is an error. Never
    /// on a stream that records a graph: CUDA would invalidate the capture.
    pub(crate) fn is_idle(&self) -> CudaResult<bool> {
        self.ctx.bind()?;
        // SAFETY: `raw` is a live stream of the bound context; the query only reads its state.
        match unsafe { sys::cuStreamQuery(self.raw) } {
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            status => status.result().map(|()| true).call("cuStreamQuery"),
        }
    }

    /// Whether the stream records a graph now (`cuStreamIsCapturing`; allowed during a
    /// capture).
    pub(crate) fn is_capturing(&self) -> CudaResult<bool> {
        self.ctx.bind()?;
        // SAFETY: `raw` is a live stream of the bound context.
        let status =
            unsafe { result::stream::is_capturing(self.raw) }.call("cuStreamIsCapturing")?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Queues zero-filling `bytes` bytes at device address `dst`.
    ///
    /// # Safety
    ///
    /// `dst..dst + bytes` must be device memory of this context not in use by other work.
    pub(crate) unsafe fn zero(&self, dst: u64, bytes: usize) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: forwarded to the caller.
        unsafe { result::memset_d8_async(dst, 0, bytes, self.raw) }.call("cuMemsetD8Async")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Destroying a stream with work queued lets that work finish first; the context
        // outlives the stream through the Arc.
        if self.owned && self.ctx.bind().is_ok() {
            // SAFETY: `raw` is live and never used again.
            let _ = unsafe { result::stream::destroy(self.raw) };
        }
    }
}

/// A timing event.
#[derive(Debug)]
pub(crate) struct Event {
    ctx: Arc<Context>,
    raw: sys::CUevent,
}

// SAFETY: a CUevent is a driver handle usable from any thread with its context bound; every
// use binds it.
unsafe impl Send for Event {}
// SAFETY: as above; the driver synchronises concurrent uses of one event.
unsafe impl Sync for Event {}

impl Event {
    /// Creates an event; one that records time (`timing`) can be timed against another, one
    /// that does not is cheaper and only orders streams.
    pub(crate) fn new(ctx: &Arc<Context>, timing: bool) -> CudaResult<Event> {
        ctx.bind()?;
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let raw = result::event::create(flags).call("cuEventCreate")?;
        Ok(Event {
            ctx: ctx.clone(),
            raw,
        })
    }

    /// Records the event at the current end of `stream`.
    pub(crate) fn record(&self, stream: &Stream) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: both handles are live and belong to the bound context.
        unsafe { result::event::record(self.raw, stream.raw) }.call("cuEventRecord")
    }

    /// Waits until the work before the event's record point is done.
    pub(crate) fn synchronize(&self) -> CudaResult<()> {
        self.ctx.bind()?;
        // SAFETY: `raw` is live.
        unsafe { result::event::synchronize(self.raw) }.call("cuEventSynchronize")
    }

    /// Milliseconds between `start` and this event (both recorded and complete).
    pub(crate) fn elapsed_ms_since(&self, start: &Event) -> CudaResult<f32> {
        self.ctx.bind()?;
        // SAFETY: both events are live and were created with timing enabled.
        unsafe { result::event::elapsed(start.raw, self.raw) }.call("cuEventElapsedTime")
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: `raw` is live and never used again.
            let _ = unsafe { result::event::destroy(self.raw) };
        }
    }
}

/// A graph recorded by a stream capture ([`Stream::end_capture`]), destroyed on drop.
#[derive(Debug)]
pub(crate) struct Graph {
    ctx: Arc<Context>,
    raw: sys::CUgraph,
}

impl Drop for Graph {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: `raw` is a graph of this context, never used again (an executable graph
            // instantiated from it does not need it).
            let _ = unsafe { result::graph::destroy(self.raw) };
        }
    }
}

/// An executable graph (`cuGraphInstantiate`), with the graph it was made from; both
/// destroyed on drop.
#[derive(Debug)]
pub(crate) struct GraphExec {
    raw: sys::CUgraphExec,
    // Dropped after `raw` is destroyed (declared after, and `Drop` destroys `raw` first).
    graph: Graph,
}

// SAFETY: CUgraphExec and CUgraph are driver handles usable from any thread with their context
// bound; every use binds it.
unsafe impl Send for GraphExec {}
// SAFETY: as above; the driver orders concurrent launches of one executable graph.
unsafe impl Sync for GraphExec {}
// SAFETY: as for `GraphExec`.
unsafe impl Send for Graph {}
// SAFETY: as for `GraphExec`.
unsafe impl Sync for Graph {}

impl GraphExec {
    /// Instantiates `graph` for launching.
    pub(crate) fn instantiate(graph: Graph) -> CudaResult<GraphExec> {
        graph.ctx.bind()?;
        // SAFETY: `graph.raw` is a live graph of the bound context.
        let raw =
            unsafe { result::graph::instantiate(graph.raw, sys::CUgraphInstantiate_flags(0)) }
                .call("cuGraphInstantiate")?;
        Ok(GraphExec { raw, graph })
    }

    /// Queues the graph's work on `stream` (`cuGraphLaunch`).
    ///
    /// # Safety
    ///
    /// What the graph's kernels and copies use must be valid until they complete (the
    /// arguments they were recorded with).
    pub(crate) unsafe fn launch(&self, stream: &Stream) -> CudaResult<()> {
        stream.ctx.bind()?;
        // SAFETY: both handles are live and belong to the bound context; the rest is the
        // caller's contract.
        unsafe { result::graph::launch(self.raw, stream.raw) }.call("cuGraphLaunch")
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if self.graph.ctx.bind().is_ok() {
            // SAFETY: `raw` is live and never used again; the owner waited for its launches.
            let _ = unsafe { result::graph::exec_destroy(self.raw) };
        }
    }
}

/// A `T` in pinned host memory that the device can address too (`cuMemHostAlloc` with
/// `DEVICEMAP`), zeroed, freed on drop. The host reads it with volatile loads: the device
/// writes it behind the compiler's back.
pub(crate) struct HostMapped<T: Copy> {
    ctx: Arc<Context>,
    host: *mut T,
    device: u64,
}

// SAFETY: the memory is plain pinned host memory, read by value with volatile loads.
unsafe impl<T: Copy + Send> Send for HostMapped<T> {}
// SAFETY: as above; `&self` only reads.
unsafe impl<T: Copy + Send> Sync for HostMapped<T> {}

impl<T: Copy> HostMapped<T> {
    /// Allocates a zeroed `T` in `ctx`, set to `init`.
    pub(crate) fn new(ctx: &Arc<Context>, init: T) -> CudaResult<HostMapped<T>> {
        ctx.bind()?;
        let mut host = std::ptr::null_mut::<c_void>();
        // SAFETY: one valid out-pointer; the size is that of `T`.
        unsafe {
            sys::cuMemHostAlloc(
                &mut host,
                std::mem::size_of::<T>(),
                sys::CU_MEMHOSTALLOC_DEVICEMAP,
            )
        }
        .result()
        .call("cuMemHostAlloc")?;
        // Owned from here: freed on an error below.
        let mapped = HostMapped {
            ctx: ctx.clone(),
            host: host.cast::<T>(),
            device: 0,
        };
        // SAFETY: `host` is a fresh allocation of a `T`, suitably aligned (page-aligned).
        unsafe { mapped.host.write_volatile(init) };
        let mut mapped = mapped;
        // SAFETY: `host` was allocated with DEVICEMAP in the bound context.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut mapped.device, host, 0) }
            .result()
            .call("cuMemHostGetDevicePointer")?;
        Ok(mapped)
    }

    /// Its address on the device.
    pub(crate) fn device_ptr(&self) -> u64 {
        self.device
    }

    /// Its value now (a volatile read).
    pub(crate) fn read(&self) -> T {
        // SAFETY: `host` is a live, initialised `T` (the device writes only plain bytes).
        unsafe { self.host.read_volatile() }
    }
}

impl<T: Copy> Drop for HostMapped<T> {
    fn drop(&mut self) {
        // Freeing needs no live context state beyond the binding; after a fault the call may
        // fail, and the memory then goes with the process.
        if self.ctx.bind().is_ok() {
            // SAFETY: `host` came from `cuMemHostAlloc` and is never used again.
            let _ = unsafe { sys::cuMemFreeHost(self.host.cast()) };
        }
    }
}

/// Size of the buffer for the JIT compiler's error log.
const JIT_LOG_BYTES: usize = 16 << 10;

/// A loaded module (cubin or PTX), unloaded on drop.
#[derive(Debug)]
pub(crate) struct Module {
    ctx: Arc<Context>,
    raw: sys::CUmodule,
}

// SAFETY: a CUmodule is a driver handle usable from any thread with its context bound.
unsafe impl Send for Module {}
// SAFETY: as above; looking up functions concurrently is thread-safe in the driver.
unsafe impl Sync for Module {}

/// What to load.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Image<'a> {
    /// A cubin (ELF) for this device's architecture.
    Cubin(&'a [u8]),
    /// PTX text, compiled by the driver's JIT.
    Ptx(&'a str),
}

impl Module {
    /// Loads `image` into `ctx` (`cuModuleLoadDataEx`, collecting the JIT's error log).
    /// On failure returns the driver error and the log.
    pub(crate) fn load(
        ctx: &Arc<Context>,
        image: Image<'_>,
    ) -> Result<Module, (CudaError, String)> {
        ctx.bind().map_err(|e| (e, String::new()))?;
        // The driver reads PTX as a NUL-terminated string and a cubin as an ELF image it
        // parses in place; both get a copy in zeroed (so NUL-terminated), 8-byte-aligned
        // storage, since embedded bytes carry no alignment guarantee.
        let bytes = match image {
            Image::Cubin(cubin) => cubin,
            Image::Ptx(ptx) => ptx.as_bytes(),
        };
        let mut aligned = vec![0u64; (bytes.len() + 1).div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..bytes.len()].copy_from_slice(bytes);

        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The size option's value is passed in the pointer slot itself, per the driver API.
        let mut values = [
            log.as_mut_ptr().cast::<c_void>(),
            JIT_LOG_BYTES as *mut c_void,
        ];
        let mut raw = std::ptr::null_mut();
        // SAFETY: `aligned` holds the NUL-terminated PTX or the whole cubin; the two options
        // point at a live buffer of the stated size; all outlive the call.
        let status = unsafe {
            sys::cuModuleLoadDataEx(
                &mut raw,
                aligned.as_ptr().cast(),
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        status.result().map_err(|error| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]).trim().to_string();
            (
                CudaError {
                    call: "cuModuleLoadDataEx",
                    error,
                },
                text,
            )
        })?;
        Ok(Module {
            ctx: ctx.clone(),
            raw,
        })
    }

    /// The device address and size of the module's global `name` (`cuModuleGetGlobal`);
    /// `None` where the module has no such global.
    pub(crate) fn global(&self, name: &std::ffi::CStr) -> CudaResult<Option<(u64, usize)>> {
        self.ctx.bind()?;
        let (mut dptr, mut bytes) = (0, 0usize);
        // SAFETY: two valid out-pointers, a live module and a NUL-terminated name.
        let found =
            unsafe { sys::cuModuleGetGlobal_v2(&mut dptr, &mut bytes, self.raw, name.as_ptr()) };
        match found {
            sys::CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            other => {
                other.result().call("cuModuleGetGlobal")?;
                Ok(Some((dptr, bytes)))
            }
        }
    }

    /// The context the module is loaded in.
    pub(crate) fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The raw handle, for `nvshmemx_cumodule_init`.
    pub(crate) fn raw(&self) -> sys::CUmodule {
        self.raw
    }

    /// Looks up kernel `name` and loads its code.
    pub(crate) fn function(&self, name: &str) -> CudaResult<Function> {
        self.ctx.bind()?;
        let name = std::ffi::CString::new(name).map_err(|_| CudaError {
            call: "cuModuleGetFunction",
            error: DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE),
        })?;
        // SAFETY: `raw` is a loaded module of the bound context.
        let raw =
            unsafe { result::module::get_function(self.raw, name) }.call("cuModuleGetFunction")?;
        // Under lazy loading the handle may come before the code; load it now, not at a launch
        // (rshmem needs a 13.0+ driver, which has `cuFuncLoad`).
        // SAFETY: `raw` is a function of this loaded module.
        unsafe { sys::cuFuncLoad(raw) }
            .result()
            .call("cuFuncLoad")?;
        Ok(Function { raw })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: `raw` is loaded and never used again; functions taken from it live in
            // the owner of this module and drop with it.
            let _ = unsafe { result::module::unload(self.raw) };
        }
    }
}

/// A kernel of a [`Module`]; valid while the module is loaded (its owner keeps both).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Function {
    raw: sys::CUfunction,
}

// SAFETY: a CUfunction is a driver handle usable from any thread with its context bound.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

/// Grid, block, dynamic shared memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_mem_bytes: u32,
}

impl Function {
    /// How many blocks of `block_threads` threads using `shared_mem_bytes` of dynamic shared
    /// memory fit on one SM at once.
    pub(crate) fn max_active_blocks_per_sm(
        &self,
        block_threads: u32,
        shared_mem_bytes: u32,
    ) -> CudaResult<u32> {
        // SAFETY: `raw` belongs to a loaded module (the caller binds its context).
        unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                self.raw,
                block_threads as c_int,
                shared_mem_bytes as usize,
            )
        }
        .call("cuOccupancyMaxActiveBlocksPerMultiprocessor")
        .map(|n| n.max(0) as u32)
    }

    /// Allows `bytes` of dynamic shared memory per block (needed above 48 KiB).
    pub(crate) fn allow_shared_mem(&self, bytes: u32) -> CudaResult<()> {
        // SAFETY: `raw` belongs to a loaded module (the caller binds its context).
        unsafe {
            result::function::set_function_attribute(
                self.raw,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as c_int,
            )
        }
        .call("cuFuncSetAttribute")
    }

    /// Queues the kernel on `stream`, cooperatively (`cuLaunchCooperativeKernel`) or not
    /// (`cuLaunchKernel`).
    ///
    /// # Safety
    ///
    /// `params` must hold one pointer to each kernel argument, of the kernel's parameter
    /// types, and what the kernel does with them must be valid until it completes.
    pub(crate) unsafe fn launch(
        &self,
        stream: &Stream,
        dims: Dims,
        cooperative: bool,
        params: &mut [*mut c_void],
    ) -> CudaResult<()> {
        stream.ctx.bind()?;
        let Dims {
            grid,
            block,
            shared_mem_bytes,
        } = dims;
        if cooperative {
            // SAFETY: forwarded to the caller; `raw` and the stream are live.
            unsafe {
                result::launch_cooperative_kernel(
                    self.raw,
                    grid,
                    block,
                    shared_mem_bytes,
                    stream.raw,
                    params,
                )
            }
            .call("cuLaunchCooperativeKernel")
        } else {
            // SAFETY: forwarded to the caller; `raw` and the stream are live.
            unsafe {
                result::launch_kernel(self.raw, grid, block, shared_mem_bytes, stream.raw, params)
            }
            .call("cuLaunchKernel")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_is_reported_not_panicked() {
        // On a machine without libcuda (CI) this is the reason users see; with a driver it
        // must find at least one device or say why not.
        // SAFETY: only tries to dlopen libcuda.
        if unsafe { sys::is_culib_present() } {
            if let Err(why) = init_driver() {
                assert!(why.contains("CUDA"), "{why}");
            }
        } else {
            let why = init_driver().unwrap_err();
            assert!(why.contains("libcuda") && why.contains("driver"), "{why}");
        }
    }

    #[test]
    fn sticky_faults_are_recognised() {
        let fault = |code| CudaError {
            call: "cuStreamSynchronize",
            error: DriverError(code),
        };
        assert!(fault(sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS).is_kernel_fault());
        assert!(fault(sys::CUresult::CUDA_ERROR_LAUNCH_FAILED).is_kernel_fault());
        assert!(!fault(sys::CUresult::CUDA_ERROR_INVALID_VALUE).is_kernel_fault());
    }
}
