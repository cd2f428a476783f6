//! # rshmem-host
//!
//! The host side of rshmem: start the PEs, give them a symmetric heap, load kernel modules and
//! launch kernels — on GPUs (CUDA driver through cudarc and NVSHMEM's host library, both
//! loaded at run time) or on the CPU simulator, with the same program.
//!
//! ```no_run
//! use rshmem_host::{LaunchConfig, Shmem};
//! # mod kernels { pub use rshmem_device::Kernel; }
//! fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//!     rshmem_host::run(|shmem: &Shmem| {
//!         let buf = shmem.alloc_zeroed::<i32>(1024)?;
//!         println!("PE {} of {}: {} ints on the symmetric heap", shmem.my_pe(), shmem.n_pes(), buf.len());
//!         shmem.barrier_all()?;
//!         Ok::<(), rshmem_host::Error>(())
//!     })?;
//!     Ok(())
//! }
//! ```
//!
//! [`run`] is the entry point: started plainly it spawns one process per GPU (or runs the PEs
//! as threads on the simulator) and calls the closure once per PE with that PE's [`Shmem`].
//!
//! Teams ([`TeamHandle`], from [`Shmem::team_split_strided`] and [`Shmem::team_split_2d`])
//! scope kernels' barriers and collectives to subsets of the PEs; host-side puts, gets,
//! barriers and collectives run on a stream ([`Stream::put`], [`Stream::reduce`], ... over
//! [`SymRange`]s of symmetric buffers; `Shmem::*_on_stream` on the PE's own stream). Each PE
//! has its own stream ([`Shmem::stream`]) and may make more ([`Shmem::new_stream`]) to overlap
//! independent work ([`Module::launch_on`], [`Stream::wait_for`]). A stream's work can be
//! recorded once into a [`Graph`] ([`Stream::capture`]) and launched many times
//! ([`Graph::launch`]): CUDA graphs on GPUs, a replay on the simulator.
//!
//! # Layout
//!
//! Three layers, each importing only those below it:
//!
//! * **the contract** (`contract/`, and `size.rs`): the traits a backend implements for one PE
//!   (`PeBackend` and the per-concern traits it gathers, `ModuleBackend`), one launch as every
//!   backend reads it (`KernelCall`), and the types they speak in ([`Error`], [`KernelImage`],
//!   [`LaunchConfig`], [`ElemKind`], ...). It imports nothing of the crate.
//! * **the backends**, beside each other on the contract: `gpu/` (CUDA and NVSHMEM; the per-PE
//!   backend in `gpu/pe/`) and `sim/` (over `rshmem_device::sim`); [`launch`], the PE launcher
//!   the GPU backend uses. Each runs the PEs given a closure over a boxed per-PE backend, and
//!   never sees [`Shmem`].
//! * **the safe API**: [`run`]/[`Job`] (`job.rs`, which picks the [`Backend`] and wraps each
//!   PE's backend in its [`Shmem`]), [`SymBuffer`], [`Module`], [`Stream`], [`Graph`]
//!   (`graph.rs`, over the capture's bookkeeping in `capture.rs`), [`TeamHandle`],
//!   [`SymQueue`], [`SimLibrary`] (kernels the simulator loads at run time).
//!
//! Inside the GPU backend, as in cudarc: `gpu::nvshmem::sys` (raw symbols) →
//! `gpu::nvshmem::result` (checked calls returning [`Error`]) → `gpu::pe`.

#![warn(missing_docs)]

// The bottom layer: the backend contract, imported by everything below and importing none of it.
mod contract;
mod size;

// The backends, beside each other on the contract; and the PE launcher the GPU backend uses.
mod gpu;
pub mod launch;
mod sim;

// The safe API over the contract.
pub mod attach;
mod capture;
mod device_range;
pub mod graph;
mod job;
mod module;
mod queue;
mod select;
mod shmem;
mod sim_library;
pub mod stream;
mod stream_ops;
mod sym_buffer;
mod sym_matrix;
mod sym_range;
mod team;
mod tensor_map;

pub use attach::{GpuAttach, SimJob};
pub use contract::{
    BoxError, CollElem, DeviceInfo, ElemKind, Error, GpuSharing, KernelImage, LaunchConfig,
    RawKernelArgs, Result, SimEntry, TargetImage,
};
pub use contract::{Swizzle, TiledSpec, TmaType};
pub use device_range::{DeviceRange, DeviceRangeMut};
pub use graph::Graph;
pub use job::{run, Job};
pub use module::Module;
pub use queue::{
    DeviceQueue, Placement, QueueBuilder, QueueError, QueueSnapshot, SymQueue, MAX_SPINS_ENV,
};
pub use select::Backend;
pub use shmem::Shmem;
pub use sim_library::SimLibrary;
pub use stream::{Stream, StreamKey};
pub use sym_buffer::SymBuffer;
pub use sym_matrix::{SymMatrix, SymMatrixMut};
pub use sym_range::{SymRange, SymRangeMut};
pub use team::TeamHandle;
pub use tensor_map::TensorMap;

pub use bytemuck::Pod;
pub use rshmem_device::shmem::{ReduceOp, Team};
pub use rshmem_device::{IntoKernelArg, IntoKernelArgs, Kernel, KernelArg, KernelArgs};

/// Embeds the kernels built by rshmem-builder for the crate `$name` (the name given to
/// `Builder::new`), as a [`KernelImage`].
///
/// ```ignore
/// static KERNELS: rshmem::KernelImage = rshmem::include_kernels!("my-kernels");
/// ```
#[macro_export]
macro_rules! include_kernels {
    ($name:literal) => {{
        mod __rshmem_image {
            #[allow(unused_imports)]
            use $crate::TargetImage;
            include!(concat!(env!("OUT_DIR"), "/rshmem-image-", $name, ".rs"));
        }
        $crate::KernelImage {
            name: __rshmem_image::CRATE,
            nvshmem_version: __rshmem_image::NVSHMEM_VERSION,
            kernels: __rshmem_image::KERNELS,
            signatures: __rshmem_image::SIGNATURES,
            targets: __rshmem_image::TARGETS,
        }
    }};
}
