//! The backend contract, the bottom layer of the host crate: the traits a backend (the GPU's
//! in `gpu/`, the simulator's in `sim/`) implements for one PE, and the types both sides
//! speak in. It imports nothing from the rest of the crate; the backends import it and not
//! each other, and the safe API above (`Shmem`, `SymBuffer`, `Module`, `Stream`, ...) reaches
//! a backend only through it.
//!
//! * [`backend`]: [`PeBackend`] and the per-concern traits it gathers, [`ModuleBackend`],
//!   [`GraphExecBackend`], and [`PeMain`], how a backend runs each PE's closure;
//! * [`launch`]: one launch as every backend reads it ([`KernelCall`], and [`OwnedCall`], one a
//!   capture keeps), and [`LaunchConfig`];
//! * [`image`]: [`KernelImage`], what rshmem-builder embeds, and the code a GPU picks of it;
//! * [`device_info`]: [`DeviceInfo`], the facts of a PE's device that launch sizes need;
//! * [`coll`]: [`CollOp`] and [`ElemKind`], a host-side collective;
//! * [`stream_id`], [`team_split`]: how streams are named, how a 2-D team split is made;
//! * [`tensor_map`]: what a tensor map describes ([`TiledSpec`]) and the rules it is checked by;
//! * [`error`]: [`Error`], returned by the backends and the API alike.
//!
//! ```ignore
//! // A backend runs each PE's closure with its own `PeBackend`:
//! fn run(npes: usize, pe_main: PeMain<'_>) -> Result<()> {
//!     // ... for each PE: pe_main(Box::new(MyPe::new(pe)?)).map_err(|e| pe_error(pe, e))?
//! }
//! ```

pub(crate) mod backend;
pub(crate) mod coll;
pub(crate) mod device_info;
pub(crate) mod error;
pub(crate) mod image;
pub(crate) mod launch;
pub(crate) mod stream_id;
pub(crate) mod team_split;
pub(crate) mod tensor_map;

pub(crate) use backend::{
    GraphBackend, GraphExecBackend, HeapBackend, ModuleBackend, OnStreamBackend, PeBackend, PeMain,
    StreamBackend, TeamBackend,
};
pub(crate) use coll::CollOp;
pub use coll::{CollElem, ElemKind};
pub(crate) use device_info::MPS_SHARED_FAULT;
pub use device_info::{DeviceInfo, GpuSharing};
pub(crate) use error::{pe_error, MPS_START};
pub use error::{BoxError, Error, Result};
pub(crate) use image::Code;
pub use image::{KernelImage, TargetImage};
pub(crate) use launch::{BoundArgs, KernelCall, RawCall, MAX_PARAMS};
pub use launch::{LaunchConfig, RawKernelArgs, SimEntry};
pub(crate) use stream_id::StreamId;
#[cfg(test)]
pub(crate) use team_split::{split_2d_triplets, Axis};
pub(crate) use tensor_map::Checked;
pub use tensor_map::{Swizzle, TiledSpec, TmaType};
