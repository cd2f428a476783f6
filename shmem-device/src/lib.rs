//! # rshmem-device
//!
//! Everything an rshmem kernel calls: GPU basics (indices, block synchronisation) and
//! SHMEM operations (put/get, ordering, barriers) on the symmetric heap.
//!
//! The same source compiles for two backends:
//!
//! * `nvptx64-nvidia-cuda`: every call lowers to PTX or to NVSHMEM's device library, which
//!   rshmem-builder links into the module and the link-time optimiser inlines.
//! * the host (any other target): the CPU simulator in [`sim`] executes the kernel, one host
//!   thread per GPU thread and one group of threads per PE.
//!
//! A kernel crate is `#![no_std]`, depends on this crate, and marks entry points with
//! [`kernel`]:
//!
//! ```ignore
//! #![no_std]
//! #![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
//! use rshmem_device::prelude::*;
//!
//! /// Every PE writes its id into its right neighbour's `dst`.
//! #[kernel]
//! pub unsafe fn ring(dst: *mut i32) {
//!     if thread::index_1d() == 0 {
//!         let (me, n) = (shmem::my_pe(), shmem::n_pes());
//!         shmem::p(dst, me, (me + 1) % n);
//!         shmem::barrier_all();
//!     }
//! }
//! ```
//!
//! Module layout: [`thread`] (indices, `sync_threads`), [`shmem`] (SHMEM API, one module per
//! family), [`queue`] (the symmetric MPMC queue), [`kernel`] (the traits `#[kernel]`
//! implements), and a private `backend` that holds the two implementations behind one internal
//! interface.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, asm_experimental_arch, abi_ptx)
)]
#![warn(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub use rshmem_macros::kernel;

pub mod atomic;
mod backend;
pub mod debug;
pub mod half;
pub mod hopper;
pub mod kernel;
pub mod mma;
pub mod queue;
pub mod shmem;
#[cfg(not(target_arch = "nvptx64"))]
pub mod sim;
pub mod thread;
pub mod view;
pub mod warp;

#[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
mod panic;

/// bf16/f16, the `half` crate's types (see [`half`](mod@half)).
pub use ::half::{bf16, f16};
pub use kernel::{Kernel, KernelArg, KernelArgs};

/// What most kernels import: `use rshmem_device::prelude::*;`.
pub mod prelude {
    pub use crate::half::{bf16, f16, Half};
    pub use crate::kernel;
    pub use crate::queue::SymQueue;
    pub use crate::shmem::{self, Block, Cmp, Scope, SignalOp, Team, Thread, Warp};
    pub use crate::thread::{self, Dim3};
    pub use crate::view::SymSlice;
    pub use crate::{atomic, warp};
}
