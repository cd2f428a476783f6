//! The one error type of the host API, which the backends return too. Each variant says what
//! was expected, what was found, and what fixes it.

use std::path::PathBuf;

/// Result alias for the host API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error type a PE's closure may return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Converts a PE closure's error into the runtime's, naming the PE.
pub(crate) fn pe_error(pe: usize, err: BoxError) -> Error {
    Error::PeFailed {
        pe,
        reason: err.to_string(),
    }
}

/// The commands that start MPS (writable pipe and log folders; stop it with
/// `echo quit | nvidia-cuda-mps-control`), for the errors that point to it.
pub(crate) const MPS_START: &str = "export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe \
    CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p $CUDA_MPS_PIPE_DIRECTORY \
    $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d";

/// Everything the host runtime can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `RSHMEM_BACKEND` holds something other than `gpu`, `sim` or `auto`.
    #[error("RSHMEM_BACKEND={0:?} is not a backend: use `gpu`, `sim` or `auto` (the default)")]
    BadBackend(String),

    /// `RSHMEM_BACKEND=gpu` was set, but no GPU can be used.
    #[error("RSHMEM_BACKEND=gpu, but no GPU is usable: {0}. Unset RSHMEM_BACKEND (or set it to `sim`) to run on the CPU simulator")]
    NoGpu(String),

    /// A CUDA driver call failed.
    #[error("CUDA: {call} failed: {message}")]
    Cuda {
        /// The driver call.
        call: &'static str,
        /// The driver's description of the error.
        message: String,
    },

    /// NVSHMEM's host library was not found.
    #[error("NVSHMEM's host library (libnvshmem_host.so.3) was not found; looked in: {}. Set NVSHMEM_HOME to an NVSHMEM 3.x install (or `pip install nvidia-nvshmem-cu13==3.4.5`)", fmt_paths(.searched))]
    NvshmemNotFound {
        /// Every place that was tried.
        searched: Vec<PathBuf>,
    },

    /// NVSHMEM's host library was found but could not be loaded or lacks a symbol.
    #[error("NVSHMEM host library {path}: {message}")]
    NvshmemLoad {
        /// The library file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// An NVSHMEM host call returned an error status.
    #[error("NVSHMEM: {call} returned {status}{}", .hint.as_deref().map(|h| format!(": {h}")).unwrap_or_default())]
    Nvshmem {
        /// The host call.
        call: &'static str,
        /// Its return status.
        status: i32,
        /// What usually causes it.
        hint: Option<String>,
    },

    /// The module's PTX was linked against a different NVSHMEM than the one loaded now.
    #[error("kernel module `{module}` was linked with NVSHMEM {linked} device code, but the NVSHMEM host library loaded at run time is {runtime} ({path}); they must match. Rebuild with NVSHMEM_HOME pointing at {runtime}, or load {linked} at run time via NVSHMEM_HOME")]
    VersionMismatch {
        /// The image's crate name.
        module: String,
        /// Version linked into the PTX.
        linked: String,
        /// Version of the host library.
        runtime: String,
        /// The host library's path.
        path: PathBuf,
    },

    /// The symmetric heap cannot hold the requested allocation.
    #[error("symmetric heap exhausted: requested {requested} bytes, {available} bytes left of a {heap_size}-byte heap. Set {var} (e.g. {var}=4G) to a larger heap")]
    HeapExhausted {
        /// The variable that sets this backend's heap size (`NVSHMEM_SYMMETRIC_SIZE` on GPUs;
        /// on the simulator `RSHMEM_SIM_HEAP`, or `NVSHMEM_SYMMETRIC_SIZE` where that set it).
        var: &'static str,
        /// Bytes asked for.
        requested: usize,
        /// Bytes still free (as far as rshmem accounts).
        available: usize,
        /// The heap's total size.
        heap_size: usize,
    },

    /// NVSHMEM's growable symmetric heap (CUDA VMM, the default on x86 GPUs) cannot take the
    /// allocation on some PE.
    #[error("symmetric heap cannot grow: requested {requested} bytes, but PE {pe} can add at most {available} bytes (bounded by its GPU's free memory and by NVSHMEM_MAX_MEMORY_PER_GPU={limit} bytes less what is allocated). Drop symmetric buffers that are no longer needed, use less memory per PE, or raise NVSHMEM_MAX_MEMORY_PER_GPU if it is the bound")]
    HeapCannotGrow {
        /// Bytes asked for.
        requested: usize,
        /// The PE with the least room.
        pe: usize,
        /// Bytes that PE can still add (as far as rshmem accounts).
        available: usize,
        /// NVSHMEM_MAX_MEMORY_PER_GPU in bytes.
        limit: usize,
    },

    /// An environment variable rshmem reads (or NVSHMEM would read) holds an invalid value.
    #[error("{name}={value:?} is not valid: expected {expected}")]
    InvalidEnv {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it should look like.
        expected: &'static str,
    },

    /// A PE was started for a GPU this node does not have (or does not make visible).
    #[error("PE {pe} drives GPU {local_rank} of its node, but only {visible} GPU(s) are visible to it (CUDA_VISIBLE_DEVICES={}). Start at most {visible} PEs per node (RSHMEM_NPES), make more GPUs visible, or share them: start MPS ({}), under which the PEs of a GPU run at once, each on its share of the SMs, or set RSHMEM_GPU_OVERSUBSCRIBE=1 to time-slice them (for testing: no host-side team splits or collectives there)", .cuda_visible_devices.as_deref().unwrap_or("<unset>"), MPS_START)]
    DeviceUnavailable {
        /// The PE.
        pe: usize,
        /// Its index among the PEs of its node.
        local_rank: usize,
        /// How many GPUs CUDA reports.
        visible: usize,
        /// The variable's value, if set.
        cuda_visible_devices: Option<String>,
    },

    /// A collective allocation was asked for with different sizes on different PEs.
    #[error("symmetric allocation sizes differ across PEs: this PE ({pe}) asked for {mine} bytes, but {}; every PE must allocate the same size in the same order", .others.iter().map(|(p, s)| format!("PE {p} asked for {s}")).collect::<Vec<_>>().join(", "))]
    AsymmetricAlloc {
        /// This PE.
        pe: usize,
        /// Its requested size in bytes.
        mine: usize,
        /// `(pe, bytes)` of the PEs that disagree.
        others: Vec<(usize, usize)>,
    },

    /// A host slice does not match a symmetric buffer's length.
    #[error(
        "length mismatch: the symmetric buffer holds {expected} elements, the host slice {found}"
    )]
    LengthMismatch {
        /// The buffer's length.
        expected: usize,
        /// The slice's length.
        found: usize,
    },

    /// The image has no kernel of that name, or no code for this GPU.
    #[error("kernel module `{module}`: {message}")]
    Module {
        /// The image's crate name.
        module: String,
        /// What is missing.
        message: String,
    },

    /// A launch configuration the backend cannot run.
    #[error("cannot launch `{kernel}`: {message}")]
    Launch {
        /// The kernel.
        kernel: &'static str,
        /// Why.
        message: String,
    },

    /// A kernel failed while running (a trap, a fault, a panic on the simulator).
    #[error("kernel `{kernel}` failed on PE {pe}: {message}")]
    KernelFailed {
        /// The kernel.
        kernel: String,
        /// The PE it ran on.
        pe: usize,
        /// The driver's or simulator's message.
        message: String,
    },

    /// The multi-process launcher failed.
    #[error("launcher: {0}")]
    Launcher(String),

    /// A variable that places this process in a job (set by rshmem's launcher, `srun`,
    /// `mpirun`, or by hand) is missing or malformed.
    #[error("{var} is {found}, but {expected}. {fix}")]
    LaunchEnv {
        /// The environment variable.
        var: String,
        /// What it holds (quoted), or `not set`.
        found: String,
        /// What it must hold.
        expected: String,
        /// How to fix it.
        fix: String,
    },

    /// A PE waited too long for PE 0 to publish NVSHMEM's unique ID.
    #[error("PE {pe} waited {:.1} s for NVSHMEM's unique ID from PE 0, but PE 0 never published it: PE 0 failed or hangs before it gets the ID (look at its `[PE 0]` output). Set RSHMEM_RENDEZVOUS_TIMEOUT=<seconds> to wait longer", .waited.as_secs_f64())]
    UidTimeout {
        /// The PE that waited.
        pe: usize,
        /// How long it waited.
        waited: std::time::Duration,
    },

    /// One or more PEs failed; the job was ended.
    #[error("PE {pe} failed: {reason}")]
    PeFailed {
        /// The first PE that failed.
        pe: usize,
        /// How it failed (exit status, signal, panic message, error).
        reason: String,
    },

    /// A PE's watchdog saw its work make no progress for the hang timeout
    /// (`RSHMEM_HANG_TIMEOUT`, `Job::hang_timeout`); the job was ended.
    #[error("PE {pe} hung: {report}")]
    PeHung {
        /// The PE that hung first.
        pe: usize,
        /// What was pending, on it and (as consequences) on the others.
        report: String,
    },

    /// The PEs did not make the same collective call (alloc, barrier_all), or a PE ended
    /// without making it, so it cannot complete on any PE.
    #[error("collective `{op}` cannot complete on PE {pe}: {message}")]
    Collective {
        /// The call this PE made.
        op: &'static str,
        /// This PE.
        pe: usize,
        /// What the other PEs did instead, and what to fix.
        message: String,
    },

    /// An environment variable holds a value that cannot be used.
    #[error("{var}={value:?} cannot be used: expected {expected}")]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What it should hold.
        expected: String,
    },

    /// An argument of a host call is out of range or inconsistent; the call did nothing
    /// (collective calls fail alike on every PE that passed the same arguments).
    #[error("{call}: {message}")]
    InvalidArgument {
        /// The call, e.g. `team_split_strided`.
        call: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },

    /// The call cannot run in the mode NVSHMEM was started in.
    #[error("{call} is not available {reason}")]
    Unsupported {
        /// The call.
        call: &'static str,
        /// Why, and how to run so that it is.
        reason: String,
    },

    /// A call that cannot run while a graph is being captured, or that cannot be captured
    /// into one; or a capture that cannot end in a graph. Nothing was queued or recorded, and
    /// the capture (if one runs) goes on.
    #[error("graph capture: {call}: {message}")]
    Capture {
        /// The call, e.g. `SymBuffer::to_vec`.
        call: &'static str,
        /// Why it cannot, and what to do instead.
        message: String,
    },

    /// An I/O error of the launcher or discovery.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

fn fmt_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nowhere".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
