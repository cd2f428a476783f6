//! [`Sm90Maps`]: the two tensor maps [`crate::sm90::gemm`] reads, as one kernel argument.
//!
//! The host encodes them and keeps them in global memory (`rshmem::ops::Sm90Launch`, which
//! also gives the launch configuration); a kernel takes an `Sm90Maps` and hands its fields to
//! the mainloop:
//!
//! ```ignore
//! #[kernel(launch_bounds(384, 1))]
//! pub unsafe fn my_gemm(maps: Sm90Maps, problem: Problem, c: MatrixMut<bf16>) {
//!     let epilogue = StoreC { c };
//!     // SAFETY: launched with Sm90Launch's config and maps (B N x K).
//!     unsafe { sm90::gemm::<bf16, _, _, false>(maps.a, maps.b, problem, GroupM, epilogue) }
//! }
//! ```

use rshmem_device::hopper::TensorMap;
use rshmem_device::KernelArg;

/// A's and B's tensor maps, in global memory, as [`crate::sm90::gemm`] takes them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sm90Maps {
    /// A's map ([`crate::sm90::A_BOX`]).
    pub a: *const TensorMap,
    /// B's map ([`crate::sm90::B_BOX_NK`] or [`crate::sm90::B_BOX_KN`], by B's layout).
    pub b: *const TensorMap,
}

// SAFETY: `#[repr(C)]` of two pointers (no padding): addresses, the same on the host and the
// device; what they point to is the kernel's contract.
unsafe impl KernelArg for Sm90Maps {}
