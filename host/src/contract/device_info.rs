//! [`DeviceInfo`]: what a PE's device is, as far as choosing a kernel and its grid needs.

/// The device a PE runs on, from [`Shmem::device_info`](crate::Shmem::device_info).
///
/// On GPUs: the driver's compute capability and multiprocessor count (under MPS, the PE's
/// share of them) and how the GPU is shared. On the simulator:
/// `sm: 90` (the simulator runs sm_90a kernels: TMA, mbarriers, `wgmma`) and
/// [`DeviceInfo::SIM_MULTIPROCESSORS`] multiprocessors, few on purpose: a grid sized "one
/// block per SM" stays small there, since every simulated GPU thread is a host thread.
///
/// ```no_run
/// # fn f(shmem: &rshmem_host::Shmem) {
/// let info = shmem.device_info();
/// let blocks = info.multiprocessors; // a persistent kernel: one block per SM
/// let hopper = info.sm >= 90;
/// # let _ = (blocks, hopper); }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceInfo {
    /// Compute capability as `major * 10 + minor`: 90 for an H100/H200, 80 for an A100.
    pub sm: u32,
    /// Streaming multiprocessors this PE's kernels can use (132 on an H100 SXM or H200; under
    /// MPS the PE's share, `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` of them).
    pub multiprocessors: u32,
    /// Whether other PEs share the GPU, and how.
    pub sharing: GpuSharing,
}

/// How a PE's GPU is shared with other PEs of the job (NVSHMEM's multi-process-per-GPU
/// modes; see `docs/mps.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuSharing {
    /// The PE has its GPU to itself (and every simulated PE its own simulated GPU).
    Exclusive,
    /// Several PEs share the GPU under MPS, in NVSHMEM's full multi-process mode: their
    /// kernels run at once, each on its share of the SMs; every call works.
    Mps,
    /// Several PEs share the GPU without MPS (`RSHMEM_GPU_OVERSUBSCRIBE=1`), in NVSHMEM's
    /// limited multi-process mode: their kernels time-slice, and host-side team splits and
    /// NVSHMEM's collectives are refused (`Error::Unsupported`).
    TimeSliced,
}

/// What a PE sharing its GPU under MPS adds to a kernel failure its own threads recorded
/// nothing about: NVIDIA's MPS (Volta and later) ends the work of every process on a GPU when
/// one of them faults, so the PE may only have seen another's fault. The launcher lists such
/// PEs as consequences of the one whose fault was recorded.
pub(crate) const MPS_SHARED_FAULT: &str =
    "under MPS a fatal fault of any process on this GPU ends every process's kernels on it";

impl DeviceInfo {
    /// The multiprocessors the simulator reports.
    pub const SIM_MULTIPROCESSORS: u32 = 2;
    /// What the simulator reports.
    pub const SIM: DeviceInfo = DeviceInfo {
        sm: 90,
        multiprocessors: Self::SIM_MULTIPROCESSORS,
        sharing: GpuSharing::Exclusive,
    };
}
