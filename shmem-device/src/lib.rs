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
//! [`kernel`](macro@kernel):
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
//! # Layout
//!
//! Three layers, each importing only from those below it:
//!
//! | layer | modules | what |
//! |---|---|---|
//! | public API | [`thread`], [`warp`], [`atomic`], [`vector`], [`shmem`] (one module per family), [`debug`], [`queue`], [`view`], [`kernel`](mod@kernel) | what kernels call; documentation and policy; never `cfg` on the target |
//! | backends (private `backend`) | `backend/gpu/` (PTX, NVSHMEM externs), `backend/sim.rs` over [`sim`] | the one place that picks the target |
//! | contract (private `contract`) | `contract.rs` | the types both sides speak: scopes, orderings, op and comparison codes, `Dim3`, `Team` |
//!
//! The simulator ([`sim`], host builds only) imports nothing but the contract and its own
//! modules; rshmem-host drives its host side (the [`sim::World`] of PEs, their heaps,
//! launches).
//!
//! # Why the simulator is a module, not a crate
//!
//! Splitting it out was considered and left for later, for these reasons:
//!
//! * **No loop to break.** The simulator imports only `contract`, and only `backend` calls
//!   into it; a crate boundary would enforce what the layering already gives.
//! * **It would take three crates, not two.** The simulator speaks the contract's types and
//!   the device crate calls the simulator, so a `rshmem-sim` crate would need the contract in
//!   a third crate that both depend on (and that the nvptx build compiles with `build-std`).
//! * **Public API.** The simulator's device side (`rma::p`, `amo::fetch`, `wait::*`, ...) is
//!   crate-private today; as a crate it would become public, semver-bound API of its own,
//!   about 60 functions whose only caller is this crate. rshmem-host's view
//!   (`rshmem_device::sim::{World, SymHeap, LaunchSpec, ...}`) would stay as a re-export.
//! * **Build time.** The nvptx build never compiles the simulator (`cfg`), so the nested
//!   kernel builds would not get faster; a host build of kernels compiles the simulator
//!   once either way, and a separate crate would only save recompiling it when a public
//!   module changes (the simulator is about half of this crate's lines, seconds of build).
//!
//! The boundary is kept crate-ready: moving `sim/` and `contract.rs` into crates of their
//! own is a change of paths, not of design, when a second user of the simulator appears
//! (a simulator for another device API, or tools that drive it without kernels).
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
mod contract;
pub mod debug;
pub mod fp8;
pub mod global;
pub mod half;
pub mod hopper;
pub mod kernel;
pub mod math;
pub mod matrix;
pub mod mma;
pub mod queue;
pub mod shmem;
#[cfg(not(target_arch = "nvptx64"))]
pub mod sim;
pub mod thread;
pub mod vector;
pub mod view;
pub mod warp;

#[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
mod panic;

/// bf16/f16, the `half` crate's types (see [`half`](mod@half)).
pub use ::half::{bf16, f16};
/// The fault mailbox's layout, shared with the host (see the module's documentation).
pub use contract::fault;
pub use fp8::{E4m3, E5m2};
pub use kernel::{IntoKernelArg, IntoKernelArgs, Kernel, KernelArg, KernelArgs};

/// What most kernels import: `use rshmem_device::prelude::*;`.
pub mod prelude {
    pub use crate::half::{bf16, f16, Half};
    pub use crate::kernel;
    pub use crate::matrix::{Matrix, MatrixMut};
    pub use crate::queue::SymQueue;
    pub use crate::shmem::{self, Block, Cmp, Scope, SignalOp, Team, Thread, Warp};
    pub use crate::thread::{self, Dim3};
    pub use crate::view::SymSlice;
    pub use crate::{atomic, warp};
}
