//! Kernel modules on a GPU PE: loading an image (the code for this GPU, the NVSHMEM version
//! checked, every kernel resolved up front) and launching its kernels ([`GpuModule`]). The
//! loaded code is shared: a graph that recorded a launch of its kernels keeps it loaded after
//! the `Module` is dropped.

use super::super::cuda::{CudaError, Dims, Function, Image, Module};
use super::super::nvshmem::result as nv;
use super::state::{lock, PeShared};
use crate::contract::{
    Code, Error, KernelCall, KernelImage, LaunchConfig, ModuleBackend, Result, MAX_PARAMS,
};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// Dynamic shared memory a kernel may use without opting in (`cuFuncSetAttribute`).
const DEFAULT_SHARED_MEM_LIMIT: u32 = 48 << 10;

/// Loads `image` on the PE's GPU: the code for this GPU, its NVSHMEM version checked, every
/// kernel resolved now, and NVSHMEM's device state registered where the image links NVSHMEM.
pub(super) fn load(shared: &Arc<PeShared>, image: &KernelImage) -> Result<Box<dyn ModuleBackend>> {
    let sh = &**shared;
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
    // Tell the image where this PE's fault record is (and the checked waits' bound).
    sh.mailbox.install(&module).map_err(|why| Error::Module {
        module: image.name.to_string(),
        message: format!("setting up its fault mailbox failed: {why}"),
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
        loaded: Arc::new(Loaded {
            shared: shared.clone(),
            functions,
            nvshmem_registered,
            module,
        }),
    }))
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
    /// Shared with the graphs that recorded launches of its kernels.
    loaded: Arc<Loaded>,
}

/// A module's code on the GPU: unloaded when the `Module` and every graph that launches its
/// kernels are gone.
struct Loaded {
    shared: Arc<PeShared>,
    /// Every kernel of the image, resolved and loaded at `load`.
    functions: HashMap<&'static str, Function>,
    nvshmem_registered: bool,
    // Declared last: unloaded after everything above is gone.
    module: Module,
}

impl Loaded {
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
    unsafe fn launch(&self, call: &KernelCall<'_>) -> Result<()> {
        let (id, kernel, config) = (call.stream, call.kernel, &call.config);
        let sh = &*self.loaded.shared;
        let stream = sh.stream(id);
        sh.ctx().bind()?;
        let f = self.loaded.function(kernel)?;
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
        let mut params = [std::ptr::null_mut::<c_void>(); MAX_PARAMS];
        let params = call.params(&mut params);
        // SAFETY: `params` point at the call's arguments, which `KernelCall` ties to the
        // kernel's parameters by type; the rest is this function's contract.
        unsafe { f.launch(&stream, dims, config.cooperative, params) }.map_err(|e| {
            if e.is_kernel_fault() {
                sh.fault(e, id)
            } else {
                refused(e)
            }
        })?;
        sh.queued(id, kernel, || {
            Some(self.loaded.clone() as Arc<dyn std::any::Any + Send + Sync>)
        });
        Ok(())
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // Launched kernels may still run this module's code, on any stream; a failure among
        // them is reported by the PE's next synchronisation, not here.
        self.shared.wait_all_quietly();
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
}
