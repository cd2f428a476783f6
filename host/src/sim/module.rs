//! A module "loaded" on a simulated PE ([`SimModule`]): launches checked against what a GPU
//! accepts, then run on the job's simulated threads, or, on a stream that records a graph,
//! kept with their arguments to run at each launch of the graph.

use std::sync::Arc;

use rshmem_device::sim::{LaunchSpec, World};
use rshmem_device::thread::Dim3;

use super::graph::Capture;
use crate::contract::{Error, KernelCall, LaunchConfig, ModuleBackend, Result};

/// The most threads a GPU runs in one block, and per dimension.
const MAX_BLOCK_THREADS: u64 = 1024;
const MAX_BLOCK_DIM: (u32, u32, u32) = (1024, 1024, 64);
/// The largest grid a GPU accepts, per dimension.
const MAX_GRID_DIM: (u32, u32, u32) = (i32::MAX as u32, 65535, 65535);
/// The most dynamic shared memory a block can opt into on sm_90 (227 KiB).
const MAX_SHARED_MEM: u32 = 227 * 1024;

/// A kernel image "loaded" on a simulated PE: the kernels are host functions already.
pub(crate) struct SimModule {
    launcher: Launcher,
    /// The PE's graph capture.
    capture: Arc<Capture>,
}

/// What runs a launch: the job, the PE, the simulator's thread limit.
#[derive(Clone)]
struct Launcher {
    job: Arc<World>,
    pe: usize,
    max_threads: u32,
}

impl SimModule {
    pub(crate) fn new(job: Arc<World>, pe: usize, max_threads: u32, capture: Arc<Capture>) -> Self {
        Self {
            launcher: Launcher {
                job,
                pe,
                max_threads,
            },
            capture,
        }
    }
}

fn dim3((x, y, z): (u32, u32, u32)) -> Dim3 {
    Dim3 { x, y, z }
}

/// Checks `config` against what a GPU accepts and what the simulator can run.
pub(crate) fn check_config(
    kernel: &'static str,
    config: &LaunchConfig,
    max_threads: u32,
) -> Result<LaunchSpec> {
    let fail = |message: String| Err(Error::Launch { kernel, message });
    let (g, b) = (config.grid, config.block);
    if [g.0, g.1, g.2, b.0, b.1, b.2].contains(&0) {
        return fail(format!(
            "grid {g:?} and block {b:?} must have no zero extent"
        ));
    }
    let block_threads = b.0 as u64 * b.1 as u64 * b.2 as u64;
    if block_threads > MAX_BLOCK_THREADS
        || b.0 > MAX_BLOCK_DIM.0
        || b.1 > MAX_BLOCK_DIM.1
        || b.2 > MAX_BLOCK_DIM.2
    {
        return fail(format!(
            "block {b:?} ({block_threads} threads) is larger than a GPU allows: at most \
             {MAX_BLOCK_THREADS} threads, and {MAX_BLOCK_DIM:?} per dimension; use more blocks"
        ));
    }
    if g.0 > MAX_GRID_DIM.0 || g.1 > MAX_GRID_DIM.1 || g.2 > MAX_GRID_DIM.2 {
        return fail(format!(
            "grid {g:?} is larger than a GPU allows: at most {MAX_GRID_DIM:?} blocks per dimension"
        ));
    }
    if config.shared_mem_bytes > MAX_SHARED_MEM {
        return fail(format!(
            "{} bytes of dynamic shared memory per block: GPUs allow at most {MAX_SHARED_MEM}",
            config.shared_mem_bytes
        ));
    }
    let threads = g.0 as u128 * g.1 as u128 * g.2 as u128 * block_threads as u128;
    if threads > max_threads as u128 {
        return fail(format!(
            "{threads} threads (grid {g:?} of blocks {b:?}): the CPU simulator runs every thread \
             of a launch at once as a host thread, and allows at most {max_threads} per launch; \
             launch a smaller grid on the simulator, or raise RSHMEM_SIM_MAX_THREADS"
        ));
    }
    Ok(LaunchSpec {
        kernel,
        grid: dim3(g),
        block: dim3(b),
        shared_mem_bytes: config.shared_mem_bytes as usize,
    })
}

impl ModuleBackend for SimModule {
    unsafe fn launch(&self, call: &KernelCall<'_>) -> Result<()> {
        // A launch a GPU refuses is refused when it is recorded, as on a GPU.
        check_config(call.kernel, &call.config, self.launcher.max_threads)?;
        if self.capture.records(call.stream) {
            let (launcher, owned, stream) = (self.launcher.clone(), call.to_owned(), call.stream);
            let replay = move || {
                // SAFETY: the contract of `Graph::launch`: the recorded arguments are valid
                // for the kernel at each launch of the graph.
                unsafe { launcher.run(&owned.call(stream)) }
            };
            if self.capture.record(call.stream, replay).is_ok() {
                return Ok(());
            }
        }
        // SAFETY: this function's contract.
        unsafe { self.launcher.run(call) }
    }
}

impl Launcher {
    /// Runs `call` on the job's simulated threads, to completion.
    ///
    /// # Safety
    ///
    /// The arguments are valid for the kernel (the contract of `ModuleBackend::launch`).
    unsafe fn run(&self, call: &KernelCall<'_>) -> Result<()> {
        let kernel = call.kernel;
        // Cooperative or not, every block runs at once here, which is what cooperative asks.
        let spec = check_config(kernel, &call.config, self.max_threads)?;
        let thread = || {
            // SAFETY: `World::launch` runs this on simulator threads it set up for the launch;
            // the arguments' validity is this function's contract.
            unsafe { call.run_sim_thread() }
        };
        self.job
            .launch(self.pe, &spec, &thread)
            .map_err(|failure| Error::KernelFailed {
                kernel: kernel.to_string(),
                pe: self.pe,
                message: failure.to_string(),
            })
    }
}
