//! Kernel images (what rshmem-builder embeds), loaded modules and launches.

use crate::error::{Error, Result};
use crate::runtime::{ModuleBackend, Shmem};
use crate::stream::Stream;
use rshmem_device::{Kernel, KernelArgs};
use std::ffi::c_void;

/// A kernel crate as built by rshmem-builder: PTX (and cubin where ptxas ran) per GPU
/// architecture, the kernel names, and the NVSHMEM version linked in. Made by
/// [`crate::include_kernels!`].
#[derive(Clone, Copy, Debug)]
pub struct KernelImage {
    /// The kernel crate's name.
    pub name: &'static str,
    /// `(major, minor, patch)` of the NVSHMEM device library linked in; `None` if the
    /// kernels call no NVSHMEM function.
    pub nvshmem_version: Option<(u32, u32, u32)>,
    /// The `#[kernel]` entry points in the PTX.
    pub kernels: &'static [&'static str],
    /// Code per architecture.
    pub targets: &'static [TargetImage],
}

/// The code for one GPU architecture.
#[derive(Clone, Copy, Debug)]
pub struct TargetImage {
    /// Compute capability as `major * 10 + minor` (90 for `sm_90`).
    pub sm: u32,
    /// The PTX text.
    pub ptx: &'static str,
    /// The cubin ptxas made from it, where ptxas was available at build time.
    pub cubin: Option<&'static [u8]>,
}

/// Which code of an image a device runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Code {
    Cubin(&'static [u8]),
    Ptx(&'static str),
}

impl TargetImage {
    /// Whether the PTX targets an architecture-specific variant (`.target sm_90a`): such code
    /// runs on exactly its compute capability, never on a later one. Read from the PTX, so
    /// images made before the builder knew `Arch::Sm90a` keep their meaning.
    pub fn arch_specific(&self) -> bool {
        self.ptx
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(".target"))
            .and_then(|rest| rest.split([' ', ',', '\t']).find(|w| !w.is_empty()))
            .is_some_and(|arch| arch.starts_with("sm_") && arch.ends_with('a'))
    }

    /// `sm_90` or `sm_90a`, for messages.
    fn name(&self) -> String {
        format!(
            "sm_{}{}",
            self.sm,
            if self.arch_specific() { "a" } else { "" }
        )
    }
}

impl KernelImage {
    /// Picks code for a device of compute capability `sm`. Candidates are the
    /// architecture-specific targets of exactly `sm` (`sm_90a` on an sm_90 GPU) and the
    /// portable targets not above `sm`; the best is architecture-specific first, then the
    /// highest, and its cubin is used where it was made for exactly `sm`, else its PTX (the
    /// driver JIT-compiles it).
    pub(crate) fn code_for(&self, sm: u32) -> Result<(u32, Code)> {
        self.targets
            .iter()
            .filter(|t| if t.arch_specific() { t.sm == sm } else { t.sm <= sm })
            .max_by_key(|t| (t.arch_specific(), t.sm, t.cubin.is_some()))
            .map(|t| match t.cubin {
                Some(cubin) if t.sm == sm => (t.sm, Code::Cubin(cubin)),
                _ => (t.sm, Code::Ptx(t.ptx)),
            })
            .ok_or_else(|| Error::Module {
                module: self.name.to_string(),
                message: format!(
                    "no code for this GPU (sm_{sm}): the image has {}; add Arch::Sm{sm} to the builder",
                    self.targets
                        .iter()
                        .map(TargetImage::name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }

    /// The NVSHMEM version as `major.minor.patch`, if linked.
    pub fn nvshmem_version_string(&self) -> Option<String> {
        self.nvshmem_version.map(|(a, b, c)| format!("{a}.{b}.{c}"))
    }

    pub(crate) fn check_has(&self, kernel: &str) -> Result<()> {
        if self.kernels.contains(&kernel) {
            Ok(())
        } else {
            Err(Error::Module {
                module: self.name.to_string(),
                message: format!(
                    "no kernel `{kernel}` in this image (it has: {})",
                    self.kernels.join(", ")
                ),
            })
        }
    }
}

/// Grid, block, dynamic shared memory and launch mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid `(x, y, z)`.
    pub grid: (u32, u32, u32),
    /// Threads per block `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
    /// Launch cooperatively (all blocks resident at once, checked against occupancy): needed
    /// by kernels that synchronise across blocks or PEs (device barriers, waits, collectives).
    pub cooperative: bool,
}

impl LaunchConfig {
    /// A 1-D launch of `grid` blocks of `block` threads.
    pub const fn new(grid: u32, block: u32) -> Self {
        Self {
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes: 0,
            cooperative: false,
        }
    }

    /// Enough 1-D blocks of `block` threads to cover `n` threads.
    pub const fn for_num_elems(n: u32, block: u32) -> Self {
        Self::new(n.div_ceil(block), block)
    }

    /// The same configuration, launched cooperatively.
    pub const fn cooperative(mut self) -> Self {
        self.cooperative = true;
        self
    }

    /// The same configuration with `bytes` of dynamic shared memory per block.
    pub const fn shared_mem(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Threads per block.
    pub const fn block_threads(&self) -> u64 {
        self.block.0 as u64 * self.block.1 as u64 * self.block.2 as u64
    }

    /// Blocks in the grid.
    pub const fn grid_blocks(&self) -> u64 {
        self.grid.0 as u64 * self.grid.1 as u64 * self.grid.2 as u64
    }
}

/// A kernel image loaded on one PE.
pub struct Module<'s> {
    shmem: &'s Shmem,
    image: KernelImage,
    inner: Box<dyn ModuleBackend>,
}

impl<'s> Module<'s> {
    pub(crate) fn new(
        shmem: &'s Shmem,
        image: &KernelImage,
        inner: Box<dyn ModuleBackend>,
    ) -> Self {
        Self {
            shmem,
            image: *image,
            inner,
        }
    }

    /// The image this module was loaded from.
    pub fn image(&self) -> &KernelImage {
        &self.image
    }

    /// Launches kernel `K` (a type made by `#[kernel]`) with `args` on the PE's stream
    /// ([`Shmem::stream`]); the compiler checks the argument types against the kernel's
    /// parameters. Returns once queued; [`Shmem::synchronize`] (or a buffer copy) waits and
    /// reports failures.
    ///
    /// # Safety
    ///
    /// The kernel dereferences what `args` point to: the pointers must be valid for what the
    /// kernel does with them (symmetric where it accesses peers), for as long as it runs, and
    /// a collective kernel must be launched on every PE.
    pub unsafe fn launch<K: Kernel>(&self, config: LaunchConfig, args: K::Args) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.launch_on::<K>(&self.shmem.stream(), config, args) }
    }

    /// As [`Module::launch`], on `stream` (a stream of this module's PE): after the work
    /// queued there before, possibly at the same time as work on the PE's other streams.
    ///
    /// # Safety
    ///
    /// As [`Module::launch`]; and whatever the kernel touches must not be written by work on
    /// another stream that may run at the same time (unless the kernel is written for it,
    /// with atomics), as in CUDA.
    pub unsafe fn launch_on<K: Kernel>(
        &self,
        stream: &Stream<'_>,
        config: LaunchConfig,
        args: K::Args,
    ) -> Result<()> {
        stream.same_pe("Module::launch_on", self.shmem)?;
        self.image.check_has(K::NAME)?;
        if config.grid_blocks() == 0 || config.block_threads() == 0 {
            return Err(Error::Launch {
                kernel: K::NAME,
                message: format!("empty grid or block ({config:?})"),
            });
        }
        let mut params = [std::ptr::null_mut::<c_void>(); 12];
        args.param_ptrs(&mut params);
        let args = AssertSync(args);
        let sim_thread = move || {
            let args = &args;
            // SAFETY: forwarded from this function's contract.
            unsafe { K::run_sim(args.0) }
        };
        // SAFETY: `params` point at `args`, whose types `K::Args` ties to the kernel's
        // parameters; the rest is this function's contract.
        unsafe {
            self.inner.launch(
                stream.id,
                K::NAME,
                &config,
                &mut params[..K::Args::COUNT],
                &sim_thread,
            )
        }
    }
}

/// Kernel arguments are raw pointers and plain values; the simulator hands them to its
/// threads exactly as a GPU hands them to its threads.
struct AssertSync<T>(T);
// SAFETY: see above; the pointed-to memory's safety is the launch's contract.
unsafe impl<T> Sync for AssertSync<T> {}
unsafe impl<T> Send for AssertSync<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    static IMG: KernelImage = KernelImage {
        name: "k",
        nvshmem_version: Some((3, 4, 5)),
        kernels: &["a", "b"],
        targets: &[
            TargetImage {
                sm: 80,
                ptx: "ptx80",
                cubin: Some(b"c80"),
            },
            TargetImage {
                sm: 90,
                ptx: "ptx90",
                cubin: None,
            },
        ],
    };

    #[test]
    fn picks_exact_cubin_then_best_ptx() {
        assert_eq!(IMG.code_for(80).unwrap(), (80, Code::Cubin(b"c80")));
        assert_eq!(IMG.code_for(90).unwrap(), (90, Code::Ptx("ptx90")));
        assert_eq!(IMG.code_for(100).unwrap(), (90, Code::Ptx("ptx90")));
        assert_eq!(IMG.code_for(86).unwrap(), (80, Code::Ptx("ptx80")));
        let err = IMG.code_for(75).unwrap_err().to_string();
        assert!(
            err.contains("sm_75") && err.contains("sm_80, sm_90"),
            "{err}"
        );
    }

    /// An image with portable sm_80 code and Hopper-specific sm_90a code, as testkit builds
    /// the Hopper kernels.
    static HOPPER: KernelImage = KernelImage {
        name: "h",
        nvshmem_version: None,
        kernels: &["a"],
        targets: &[
            TargetImage {
                sm: 90,
                ptx: "//\n.version 8.6\n.target sm_90a\n.address_size 64\n",
                cubin: Some(b"c90a"),
            },
            TargetImage {
                sm: 80,
                ptx: ".version 8.6\n.target sm_80\n",
                cubin: Some(b"c80"),
            },
        ],
    };

    #[test]
    fn prefers_sm90a_on_sm90_only() {
        assert!(HOPPER.targets[0].arch_specific() && !HOPPER.targets[1].arch_specific());
        assert!(!IMG.targets[1].arch_specific());
        assert_eq!(HOPPER.code_for(90).unwrap(), (90, Code::Cubin(b"c90a")));
        // sm_90a code never runs on a later GPU: those get the portable sm_80 PTX.
        assert_eq!(
            HOPPER.code_for(100).unwrap(),
            (80, Code::Ptx(".version 8.6\n.target sm_80\n"))
        );
        assert_eq!(
            HOPPER.code_for(89).unwrap(),
            (80, Code::Ptx(".version 8.6\n.target sm_80\n"))
        );
        assert_eq!(HOPPER.code_for(80).unwrap(), (80, Code::Cubin(b"c80")));
        let err = HOPPER.code_for(75).unwrap_err().to_string();
        assert!(err.contains("sm_90a, sm_80"), "{err}");
        // Alone, sm_90a code has nothing for other GPUs.
        let only = KernelImage {
            targets: &HOPPER.targets[..1],
            ..HOPPER
        };
        assert!(only.code_for(100).is_err() && only.code_for(90).is_ok());
    }

    #[test]
    fn names_missing_kernels() {
        assert!(IMG.check_has("a").is_ok());
        let err = IMG.check_has("zz").unwrap_err().to_string();
        assert!(err.contains("`zz`") && err.contains("a, b"), "{err}");
    }
}
