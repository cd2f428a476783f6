//! The two implementations of the device API behind one internal interface. Each backend
//! exposes the same free functions; the public modules call `backend::*` and never
//! `cfg` on the target themselves (the typed `RmaScalar` table is the one exception, since it
//! pairs each type with its NVSHMEM symbol). Families with a namespace of their own (`cvt`:
//! bf16/f16/tf32 conversions; `mma`: warp-level tensor cores, `ldmatrix`, `cp.async`) are
//! submodules with the same names on both sides.

#[cfg(target_arch = "nvptx64")]
mod gpu;
#[cfg(target_arch = "nvptx64")]
pub(crate) use gpu::*;

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use crate::sim::device::*;

#[cfg(target_arch = "nvptx64")]
pub(crate) mod gpu_cvt;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use crate::sim::cvt;
#[cfg(target_arch = "nvptx64")]
pub(crate) use gpu_cvt as cvt;

#[cfg(target_arch = "nvptx64")]
pub(crate) mod gpu_mma;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use crate::sim::mma;
#[cfg(target_arch = "nvptx64")]
pub(crate) use gpu_mma as mma;

// The Hopper primitives (`crate::hopper`), a family of their own on each side.
#[cfg(target_arch = "nvptx64")]
#[path = "hopper_gpu.rs"]
pub(crate) mod hopper;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use crate::sim::hopper;
