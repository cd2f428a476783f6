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
//! independent work ([`Module::launch_on`], [`Stream::wait_for`]).
//!
//! Layers, as in cudarc: `gpu::nvshmem::sys` (raw symbols) → `gpu::nvshmem::result` (checked
//! calls returning [`Error`]) → the safe types here ([`Shmem`], [`SymBuffer`], [`Module`],
//! [`SymQueue`]).

#![warn(missing_docs)]

mod backend;
mod error;
mod gpu;
mod heap;
pub mod launch;
mod module;
mod queue;
mod runtime;
mod sim;
pub mod stream;
mod stream_ops;
mod team;
mod tensor_map;

pub use backend::Backend;
pub use error::{Error, Result};
pub use heap::SymBuffer;
pub use module::{KernelImage, LaunchConfig, Module, TargetImage};
pub use queue::{
    DeviceQueue, Placement, QueueBuilder, QueueError, QueueSnapshot, SymQueue, MAX_SPINS_ENV,
};
pub use runtime::{run, BoxError, Job, Shmem};
pub use stream::Stream;
pub use stream_ops::{CollElem, ElemKind, SymRange};
pub use team::TeamHandle;
pub use tensor_map::{Swizzle, TensorMap, TiledSpec, TmaType};

pub use bytemuck::Pod;
pub use rshmem_device::shmem::{ReduceOp, Team};
pub use rshmem_device::{Kernel, KernelArg, KernelArgs};

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
            targets: __rshmem_image::TARGETS,
        }
    }};
}
