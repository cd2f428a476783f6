//! The two implementations of the device API behind one internal interface. Each backend
//! exposes the same free functions; the public modules call `backend::*` and never
//! `cfg` on the target themselves (the typed `RmaScalar` table is the one exception, since it
//! pairs each type with its NVSHMEM symbol).

#[cfg(target_arch = "nvptx64")]
mod gpu;
#[cfg(target_arch = "nvptx64")]
pub(crate) use gpu::*;

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use crate::sim::device::*;

// The Hopper primitives (`crate::hopper`), a family of their own on each side.
#[cfg(target_arch = "nvptx64")]
#[path = "hopper_gpu.rs"]
pub(crate) mod hopper;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use crate::sim::hopper;
