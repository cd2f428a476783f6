//! Loaded modules and launches: [`Module`], a kernel image loaded on one PE.

use crate::contract::{
    BoundArgs, Error, KernelCall, KernelImage, LaunchConfig, ModuleBackend, RawCall, RawKernelArgs,
    Result, SimEntry,
};
use crate::select::Backend;
use crate::shmem::Shmem;
use crate::stream::Stream;
use rshmem_device::{IntoKernelArgs, Kernel};

impl Shmem {
    /// Loads a kernel image on this PE (cubin for this GPU, else PTX; NVSHMEM version
    /// checked). On the simulator it checks the image and runs the host-compiled kernels.
    pub fn load(&self, image: &KernelImage) -> Result<Module<'_>> {
        self.refuse_during_capture(
            "Shmem::load",
            "loading a module is a host call a graph does not record: load modules before \
             Stream::capture",
        )?;
        Ok(Module::new(self, image, self.inner.load(image)?))
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
    /// `args` is a tuple of one value per parameter: the parameter's own type, or for a
    /// pointer (or `SymSlice`) parameter a symmetric buffer or range of its element type,
    /// which stands for its address ([`IntoKernelArg`](rshmem_device::IntoKernelArg)): `&buf`
    /// or `buf.range(..)?` for `*const T`, `&mut buf` or `buf.range_mut(..)?` for `*mut T`.
    ///
    /// # Safety
    ///
    /// The kernel dereferences what `args` point to: the pointers must be valid for what the
    /// kernel does with them (symmetric where it accesses peers), for as long as it runs, and
    /// a collective kernel must be launched on every PE. A buffer or range passed for a
    /// pointer is valid for its own elements (a kernel that stays inside them needs no more),
    /// and the buffer outlives the kernel (dropping it waits for the PE's work); what the
    /// kernel reads or writes past them is the caller's to check.
    pub unsafe fn launch<K: Kernel>(
        &self,
        config: LaunchConfig,
        args: impl IntoKernelArgs<K::Args>,
    ) -> Result<()> {
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
        args: impl IntoKernelArgs<K::Args>,
    ) -> Result<()> {
        let args = args.into_kernel_args();
        stream.same_pe("Module::launch_on", self.shmem)?;
        self.image.check_has(K::NAME)?;
        if config.grid_blocks() == 0 || config.block_threads() == 0 {
            return Err(Error::Launch {
                kernel: K::NAME,
                message: format!("empty grid or block ({config:?})"),
            });
        }
        // The hardware's own limit (1024) is each backend's check, with its own message.
        if K::MAX_THREADS < 1024 && config.block_threads() > u64::from(K::MAX_THREADS) {
            return Err(Error::Launch {
                kernel: K::NAME,
                message: format!(
                    "{} threads per block, above the kernel's launch bound of {} \
                     (#[kernel(launch_bounds({}))])",
                    config.block_threads(),
                    K::MAX_THREADS,
                    K::MAX_THREADS
                ),
            });
        }
        let args = BoundArgs::<K>::new(args);
        let call = KernelCall::new(stream.id, config, &args);
        // SAFETY: `call` ties the arguments to the kernel by type (`K::Args`); what they point
        // to is this function's contract.
        unsafe { self.inner.launch(&call) }?;
        self.shmem.note_queued(stream.id, None);
        Ok(())
    }

    /// Launches the kernel named `kernel` with arguments made at run time, on `stream`: for
    /// bindings of other languages, which check `args` against the kernel's
    /// [`signature`](KernelImage::signature) themselves. `sim` is the kernel's host code
    /// ([`SimEntry::of::<K>`](SimEntry::of) where the program was compiled with it, or from a
    /// [`SimLibrary`](crate::SimLibrary)), which the simulator needs and GPUs ignore.
    ///
    /// # Safety
    ///
    /// As [`Module::launch_on`], and `args` must be the kernel's parameters, in order, of
    /// their types (a GPU reads each at its parameter's size), and `sim` the same kernel's.
    pub unsafe fn launch_raw_on(
        &self,
        stream: &Stream<'_>,
        kernel: &str,
        config: LaunchConfig,
        args: &RawKernelArgs,
        sim: Option<SimEntry>,
    ) -> Result<()> {
        stream.same_pe("Module::launch_raw_on", self.shmem)?;
        self.image.check_has(kernel)?;
        let name = self
            .image
            .kernels
            .iter()
            .copied()
            .find(|k| *k == kernel)
            .expect("check_has found it");
        if config.grid_blocks() == 0 || config.block_threads() == 0 {
            return Err(Error::Launch {
                kernel: name,
                message: format!("empty grid or block ({config:?})"),
            });
        }
        if sim.is_none() && self.shmem.backend() == Backend::Sim {
            return Err(Error::Launch {
                kernel: name,
                message: format!(
                    "the simulator runs a kernel as host code, and this program has none for \
                     `{name}` of image `{}`: run it on a GPU, build the program with the kernel \
                     crate as a dependency, or build the image's simulator library \
                     (rshmem_builder::Builder::sim_library) and load it (SimLibrary)",
                    self.image.name
                ),
            });
        }
        let call = RawCall {
            args: *args,
            entry: sim,
        };
        let call = KernelCall::raw(name, stream.id, config, &call);
        // SAFETY: this function's contract: the arguments are the kernel's, and `sim` its code.
        unsafe { self.inner.launch(&call) }?;
        self.shmem.note_queued(stream.id, None);
        Ok(())
    }
}
