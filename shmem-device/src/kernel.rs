//! The contract between `#[kernel]`, the host launcher and the simulator.
//!
//! `#[kernel] pub unsafe fn ring(dst: *mut i32, n: u32)` emits, next to the function:
//!
//! * on nvptx, the `extern "ptx-kernel"` entry named `ring`;
//! * on the host, a type `ring` (braced, so it does not clash with the function) that
//!   implements [`Kernel`] with `Args = (*mut i32, u32)`.
//!
//! The host launches with `module.launch::<kernels::ring>(config, (ptr, n))`: a wrong
//! argument type or count is a compile error, on both backends. Each element of the tuple is
//! the parameter's own type or converts into it ([`IntoKernelArg`]): the host crate lets a
//! symmetric buffer stand for a pointer parameter (`(&mut buf, n)`).

use core::ffi::c_void;

/// The most parameters a kernel may take. `#[kernel]` rejects a longer signature, the
/// [`KernelArgs`] tuples go up to this many elements, and the GPU launcher's parameter array
/// has this many slots. Defined once, in rshmem-macros (`max_kernel_args!()`).
///
/// ```
/// assert_eq!(rshmem_device::kernel::MAX_KERNEL_ARGS, 12);
/// ```
pub const MAX_KERNEL_ARGS: usize = rshmem_macros::max_kernel_args!();

/// A kernel entry point, implemented by `#[kernel]` on the host.
pub trait Kernel: 'static {
    /// The symbol name in the PTX module.
    const NAME: &'static str;
    /// The most threads per block it may be launched with: 1024, or what
    /// `#[kernel(launch_bounds(N))]` declared (the GPU code's registers are allocated for it).
    const MAX_THREADS: u32 = 1024;
    /// The argument tuple, in declaration order.
    type Args: KernelArgs;
    /// The parameter list as written (`"x: *mut f32, n: u32, k: f32"`, paths and spaces
    /// normalised), for launches whose arguments are checked at run time (the Python
    /// bindings); `""` where unknown. The builder records the same text in the kernel image.
    const SIGNATURE: &'static str = "";

    /// Runs the kernel body once, as the current simulated thread. Only the simulator
    /// calls this, after it has set up the thread's coordinates and PE.
    ///
    /// # Safety
    ///
    /// The caller must uphold the kernel's own contract (valid pointers, sizes) and must
    /// call it from a simulator thread.
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe fn run_sim(args: Self::Args);
}

/// A type that may be passed to a kernel by value: plain data whose bytes mean the same on
/// the host and the device.
///
/// # Safety
///
/// Implementors must have the same size, alignment and meaning in host and device code and
/// no padding the device could read as data (integers, floats, raw pointers, `#[repr(C)]`
/// aggregates of those).
pub unsafe trait KernelArg: Copy + 'static {}

macro_rules! impl_kernel_arg {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: a primitive: the same size, alignment and bits on the host and nvptx64
        // (both 64-bit little-endian), no padding.
        unsafe impl KernelArg for $t {}
    )*};
}
impl_kernel_arg!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, usize, isize, bool);
// SAFETY: an address, 8 bytes on both sides; what it points at is the kernel's contract.
unsafe impl<T: 'static> KernelArg for *mut T {}
// SAFETY: as `*mut T`.
unsafe impl<T: 'static> KernelArg for *const T {}

/// A value the host may pass for a kernel parameter of type `P`: `P` itself (every
/// [`KernelArg`]), or a type that names what `P` points at — the host crate implements it for
/// its symmetric buffers and ranges, e.g. `&SymBuffer<T>` for `*const T` and `&mut
/// SymBuffer<T>` for `*mut T`, so a launch needs no `as_ptr()`.
///
/// The conversion makes the value only: what the kernel does with it is still the launch's
/// `unsafe` contract.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter of type `{P}`",
    label = "not a `{P}`",
    note = "a kernel parameter takes its own type; a pointer or `SymSlice` parameter also takes \
            a symmetric buffer or range of the same element type: `&buf` or `buf.range(..)?` \
            for `*const T`, `&mut buf` or `buf.range_mut(..)?` for `*mut T` too"
)]
pub trait IntoKernelArg<P: KernelArg> {
    /// The parameter's value.
    fn into_kernel_arg(self) -> P;
}

impl<P: KernelArg> IntoKernelArg<P> for P {
    #[inline(always)]
    fn into_kernel_arg(self) -> P {
        self
    }
}

/// An argument list for a kernel whose parameters are `A` (a [`KernelArgs`] tuple): a tuple
/// of as many values, each an [`IntoKernelArg`] of its parameter. What `Module::launch`
/// takes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an argument list for a kernel whose parameters are `{A}`",
    note = "pass a tuple with one value per kernel parameter, in order (`(x,)` for one)"
)]
pub trait IntoKernelArgs<A> {
    /// The parameters' values.
    fn into_kernel_args(self) -> A;
}

/// A tuple of [`KernelArg`]s, as a kernel's parameter list. Every one is also its own
/// argument list ([`IntoKernelArgs`]), so code generic over a kernel passes `K::Args` on.
///
/// # Safety
///
/// `COUNT` must equal the number of parameters, and [`KernelArgs::param_ptrs`] must write
/// one pointer to each field, in order: the GPU launch hands them to `cuLaunchKernel`.
pub unsafe trait KernelArgs: Copy + 'static + IntoKernelArgs<Self> {
    /// Number of kernel parameters.
    const COUNT: usize;
    /// Writes a pointer to each parameter into `out[..COUNT]`.
    fn param_ptrs(&self, out: &mut [*mut c_void]);
    /// The parameters read back from one pointer each (what [`KernelArgs::param_ptrs`]
    /// writes, or a launch made at run time from raw values).
    ///
    /// # Safety
    ///
    /// `ptrs` holds `COUNT` pointers, each to a readable value of its parameter's type
    /// (alignment not needed).
    unsafe fn from_param_ptrs(ptrs: &[*const c_void]) -> Self;
}

/// Runs kernel `K`'s body once, as the current simulated thread, with its arguments read
/// from `params` (one pointer per parameter): the entry of a launch whose arguments were
/// made at run time.
///
/// # Safety
///
/// As [`Kernel::run_sim`] and [`KernelArgs::from_param_ptrs`].
#[cfg(not(target_arch = "nvptx64"))]
pub unsafe fn run_sim_params<K: Kernel>(params: &[*const c_void]) {
    // SAFETY: forwarded from this function's contract.
    unsafe { K::run_sim(K::Args::from_param_ptrs(params)) }
}

macro_rules! impl_kernel_args {
    ($n:expr; $($t:ident <- $u:ident . $i:tt),*) => {
        // SAFETY: `COUNT` is the tuple's arity (the invocation's `$n`), and `param_ptrs`
        // writes a pointer to each field, in order.
        unsafe impl<$($t: KernelArg),*> KernelArgs for ($($t,)*) {
            const COUNT: usize = $n;
            #[allow(unused_variables)]
            fn param_ptrs(&self, out: &mut [*mut c_void]) {
                $(out[$i] = &self.$i as *const $t as *mut c_void;)*
            }
            #[allow(unused_variables, clippy::unused_unit)]
            unsafe fn from_param_ptrs(ptrs: &[*const c_void]) -> Self {
                // SAFETY: the caller's contract: `ptrs[i]` points at a value of field i's type.
                ($(unsafe { core::ptr::read_unaligned(ptrs[$i].cast::<$t>()) },)*)
            }
        }

        impl<$($t: KernelArg, $u: IntoKernelArg<$t>),*> IntoKernelArgs<($($t,)*)> for ($($u,)*) {
            #[inline(always)]
            #[allow(clippy::unused_unit)]
            fn into_kernel_args(self) -> ($($t,)*) {
                ($(self.$i.into_kernel_arg(),)*)
            }
        }
    };
}
impl_kernel_args!(0;);
impl_kernel_args!(1; A <- UA.0);
impl_kernel_args!(2; A <- UA.0, B <- UB.1);
impl_kernel_args!(3; A <- UA.0, B <- UB.1, C <- UC.2);
impl_kernel_args!(4; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3);
impl_kernel_args!(5; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4);
impl_kernel_args!(6; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4, F <- UF.5);
impl_kernel_args!(7; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4, F <- UF.5, G <- UG.6);
impl_kernel_args!(8; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4, F <- UF.5, G <- UG.6,
    H <- UH.7);
impl_kernel_args!(9; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4, F <- UF.5, G <- UG.6,
    H <- UH.7, I <- UI.8);
impl_kernel_args!(10; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4, F <- UF.5,
    G <- UG.6, H <- UH.7, I <- UI.8, J <- UJ.9);
impl_kernel_args!(11; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4, F <- UF.5,
    G <- UG.6, H <- UH.7, I <- UI.8, J <- UJ.9, K <- UK.10);
impl_kernel_args!(12; A <- UA.0, B <- UB.1, C <- UC.2, D <- UD.3, E <- UE.4, F <- UF.5,
    G <- UG.6, H <- UH.7, I <- UI.8, J <- UJ.9, K <- UK.10, L <- UL.11);

// The tuples above reach `MAX_KERNEL_ARGS` (a longer tuple is not implemented, and
// `#[kernel]` rejects the signature before its type could be asked for).
const _: () = assert!(
    <(u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8, u8) as KernelArgs>::COUNT == MAX_KERNEL_ARGS,
    "impl_kernel_args! must cover every tuple up to MAX_KERNEL_ARGS elements"
);
