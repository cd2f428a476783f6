//! One kernel launch as every backend receives it: a [`KernelCall`], which the GPU backend
//! reads as a parameter buffer for `cuLaunchKernel` and the simulator as the body each
//! simulated thread runs; [`OwnedCall`], the same launch kept (arguments copied) by a graph
//! capture to run again later; and its grid, block and mode ([`LaunchConfig`]).

use super::error::{Error, Result};
use super::stream_id::StreamId;
use rshmem_device::{Kernel, KernelArg, KernelArgs};
use std::ffi::c_void;

/// The most parameters a kernel takes (the one definition is `#[kernel]`'s; rshmem-device
/// implements `KernelArgs` for tuples up to it).
pub(crate) const MAX_PARAMS: usize = rshmem_device::kernel::MAX_KERNEL_ARGS;

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

/// A kernel's arguments, bound to the kernel: what a [`KernelCall`] carries.
pub(crate) struct BoundArgs<K: Kernel>(K::Args);

impl<K: Kernel> BoundArgs<K> {
    pub(crate) fn new(args: K::Args) -> Self {
        Self(args)
    }
}

// SAFETY: kernel arguments are raw pointers and plain values; the simulator hands them to its
// threads exactly as a GPU hands them to its threads, and what they point to is the launch's
// contract (`Module::launch`), not this type's.
unsafe impl<K: Kernel> Sync for BoundArgs<K> {}
// SAFETY: as for `Sync`: plain values and addresses, copied; the simulator's graph replay may
// run them from another host thread of the same PE, as a GPU runs them whenever launched.
unsafe impl<K: Kernel> Send for BoundArgs<K> {}

/// What a backend reads of a call's arguments, whatever the kernel.
trait CallArgs: Sync {
    /// Writes a pointer to each argument into `out` and returns how many there are.
    fn param_ptrs(&self, out: &mut [*mut c_void; MAX_PARAMS]) -> usize;

    /// Runs the kernel's body once, as the current simulated thread.
    ///
    /// # Safety
    ///
    /// As [`KernelCall::run_sim_thread`].
    unsafe fn run_sim(&self);

    /// A copy of the arguments, kept beyond the call.
    fn boxed(&self) -> Box<dyn CallArgs + Send>;
}

impl<K: Kernel> CallArgs for BoundArgs<K> {
    fn param_ptrs(&self, out: &mut [*mut c_void; MAX_PARAMS]) -> usize {
        self.0.param_ptrs(out);
        K::Args::COUNT
    }

    unsafe fn run_sim(&self) {
        // SAFETY: forwarded from this function's contract.
        unsafe { K::run_sim(self.0) }
    }

    fn boxed(&self) -> Box<dyn CallArgs + Send> {
        Box::new(BoundArgs::<K>(self.0))
    }
}

/// A kernel's host code for launches whose arguments are made at run time, which reads the
/// kernel's arguments from one pointer per parameter and runs its body as the current
/// simulated thread. Only the simulator calls it.
#[derive(Clone, Copy)]
pub enum SimEntry {
    /// Compiled into this program: `rshmem_device::kernel::run_sim_params::<K>`
    /// ([`SimEntry::of`]).
    Linked(unsafe fn(&[*const c_void])),
    /// From a simulator library loaded at run time ([`SimLibrary`](crate::SimLibrary)).
    Loaded(&'static rshmem_device::sim::SimExport),
}

impl SimEntry {
    /// The host code of kernel `K`, compiled into this program.
    pub fn of<K: rshmem_device::Kernel>() -> Self {
        Self::Linked(rshmem_device::kernel::run_sim_params::<K>)
    }

    /// Runs the kernel's body as the current simulated thread.
    ///
    /// # Safety
    ///
    /// As `rshmem_device::kernel::run_sim_params`: `params` are the kernel's arguments.
    pub(crate) unsafe fn run(self, params: &[*const c_void]) {
        match self {
            // SAFETY: forwarded from this function's contract.
            Self::Linked(run) => unsafe { run(params) },
            // SAFETY: forwarded; the library's fingerprint was checked when it was loaded.
            Self::Loaded(export) => unsafe { export.run(params) },
        }
    }
}

impl std::fmt::Debug for SimEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Linked(_) => f.write_str("SimEntry::Linked"),
            // SAFETY: a loaded library stays loaded.
            Self::Loaded(e) => write!(f, "SimEntry::Loaded({:?})", unsafe { e.name.get() }),
        }
    }
}

/// A kernel's arguments as values made at run time (by another language's bindings), for
/// [`Module::launch_raw_on`](crate::Module::launch_raw_on): each a [`KernelArg`] of at most 8
/// bytes (integers, floats, `bool`, pointers), in parameter order. Which kernel they fit is the
/// caller's to check (the image's [`signature`](crate::KernelImage::signature) says).
#[derive(Clone, Copy, Debug, Default)]
pub struct RawKernelArgs {
    /// Each value's bytes at the start of its slot (little-endian, as on the device).
    slots: [u64; MAX_PARAMS],
    count: usize,
}

impl RawKernelArgs {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `value` as the next parameter's; an error past the most parameters a kernel
    /// takes, or for a value wider than 8 bytes.
    pub fn push<T: KernelArg>(&mut self, value: T) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if self.count == MAX_PARAMS || size > 8 {
            return Err(Error::InvalidArgument {
                call: "RawKernelArgs::push",
                message: format!(
                    "argument {} of {size} bytes: at most {MAX_PARAMS} arguments of at most 8 \
                     bytes each",
                    self.count
                ),
            });
        }
        let slot = &mut self.slots[self.count];
        // SAFETY: `T` is plain data of at most 8 bytes, written at the start of an 8-byte slot.
        unsafe { std::ptr::write_unaligned((slot as *mut u64).cast::<T>(), value) };
        self.count += 1;
        Ok(())
    }

    /// The number of arguments.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// A run-time launch's arguments with its kernel's host code (where the program has it).
#[derive(Clone, Copy)]
pub(crate) struct RawCall {
    pub args: RawKernelArgs,
    pub entry: Option<SimEntry>,
}

impl CallArgs for RawCall {
    fn param_ptrs(&self, out: &mut [*mut c_void; MAX_PARAMS]) -> usize {
        for (ptr, slot) in out.iter_mut().zip(&self.args.slots[..self.args.count]) {
            *ptr = (slot as *const u64).cast_mut().cast();
        }
        self.args.count
    }

    unsafe fn run_sim(&self) {
        let entry = self
            .entry
            .expect("rshmem: a run-time launch without host code reached the simulator");
        let mut ptrs = [std::ptr::null(); MAX_PARAMS];
        for (ptr, slot) in ptrs.iter_mut().zip(&self.args.slots[..self.args.count]) {
            *ptr = (slot as *const u64).cast();
        }
        // SAFETY: forwarded from this function's contract; `entry` is the kernel's host code,
        // and each pointer is to its argument's bytes.
        unsafe { entry.run(&ptrs[..self.args.count]) }
    }

    fn boxed(&self) -> Box<dyn CallArgs + Send> {
        Box::new(*self)
    }
}

/// One launch: which kernel, on which stream, how, and with which arguments. Made once by
/// `Module::launch_on`; each backend reads the part it needs ([`KernelCall::params`] on
/// GPUs, [`KernelCall::run_sim_thread`] on the simulator).
pub(crate) struct KernelCall<'a> {
    /// The kernel's symbol name, checked to be in the module's image.
    pub kernel: &'static str,
    /// Where it is queued.
    pub stream: StreamId,
    /// Its grid, block, shared memory and mode, checked non-empty.
    pub config: LaunchConfig,
    args: &'a dyn CallArgs,
}

impl<'a> KernelCall<'a> {
    /// The call of kernel `K` with `args` on `stream`.
    pub(crate) fn new<K: Kernel>(
        stream: StreamId,
        config: LaunchConfig,
        args: &'a BoundArgs<K>,
    ) -> Self {
        Self {
            kernel: K::NAME,
            stream,
            config,
            args,
        }
    }

    /// The arguments as `cuLaunchKernel`'s `kernelParams`: a pointer to each, in parameter
    /// order, written into `buf`. They point into the arguments this call borrows.
    pub(crate) fn params<'b>(
        &self,
        buf: &'b mut [*mut c_void; MAX_PARAMS],
    ) -> &'b mut [*mut c_void] {
        let count = self.args.param_ptrs(buf);
        &mut buf[..count]
    }

    /// A launch of `kernel` with arguments made at run time.
    pub(crate) fn raw(
        kernel: &'static str,
        stream: StreamId,
        config: LaunchConfig,
        args: &'a RawCall,
    ) -> Self {
        Self {
            kernel,
            stream,
            config,
            args,
        }
    }

    /// Runs the kernel's body once, as the calling simulated thread.
    ///
    /// # Safety
    ///
    /// The caller is a simulator thread set up for this launch (its coordinates and PE), and
    /// the kernel's own contract holds for the arguments (the contract of `Module::launch`).
    pub(crate) unsafe fn run_sim_thread(&self) {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.args.run_sim() }
    }

    /// The same launch with its arguments copied (their values now), for a backend that
    /// records it during a graph capture and runs it at each launch of the graph.
    pub(crate) fn to_owned(&self) -> OwnedCall {
        OwnedCall {
            kernel: self.kernel,
            config: self.config,
            args: self.args.boxed(),
        }
    }
}

/// A [`KernelCall`] whose arguments it owns: what a capture records of a launch.
pub(crate) struct OwnedCall {
    /// The kernel's symbol name.
    pub kernel: &'static str,
    /// Its grid, block, shared memory and mode.
    pub config: LaunchConfig,
    args: Box<dyn CallArgs + Send>,
}

impl OwnedCall {
    /// The launch again, on `stream`, with the arguments recorded.
    pub(crate) fn call(&self, stream: StreamId) -> KernelCall<'_> {
        KernelCall {
            kernel: self.kernel,
            stream,
            config: self.config,
            args: &*self.args,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What `Probe::run_sim` was called with.
    static RAN: Mutex<Vec<(u32, u64)>> = Mutex::new(Vec::new());

    struct Probe;

    impl Kernel for Probe {
        const NAME: &'static str = "probe";
        type Args = (u32, u64);

        unsafe fn run_sim((a, b): (u32, u64)) {
            RAN.lock().unwrap().push((a, b));
        }
    }

    #[test]
    fn a_call_gives_each_backend_its_part_of_the_same_arguments() {
        let args = BoundArgs::<Probe>::new((7, 1 << 40));
        let call = KernelCall::new(StreamId(3), LaunchConfig::new(2, 32), &args);
        assert_eq!((call.kernel, call.stream), ("probe", StreamId(3)));
        assert_eq!(call.config, LaunchConfig::new(2, 32));

        // The GPU's part: one pointer per parameter, to the values themselves.
        let mut buf = [std::ptr::null_mut(); MAX_PARAMS];
        let params = call.params(&mut buf);
        assert_eq!(params.len(), 2);
        // SAFETY: the pointers point into `args`, alive here, at a u32 and a u64.
        let read = unsafe { (*(params[0] as *const u32), *(params[1] as *const u64)) };
        assert_eq!(read, (7, 1 << 40));

        // The simulator's part: the body, with the same values.
        // SAFETY: `Probe`'s body only records its arguments.
        unsafe { call.run_sim_thread() };
        assert_eq!(RAN.lock().unwrap().as_slice(), &[(7, 1 << 40)]);

        // A recorded copy outlives the arguments it was made from, with their values then.
        let owned = {
            let args = BoundArgs::<Probe>::new((9, 5));
            KernelCall::new(StreamId(1), LaunchConfig::new(1, 1), &args).to_owned()
        };
        let again = owned.call(StreamId(4));
        assert_eq!((again.kernel, again.stream), ("probe", StreamId(4)));
        // SAFETY: as above.
        unsafe { again.run_sim_thread() };
        assert_eq!(RAN.lock().unwrap().last(), Some(&(9, 5)));
    }
}
