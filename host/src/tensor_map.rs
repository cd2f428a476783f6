//! Tensor maps for the bulk tensor copies of `rshmem_device::hopper::tma`: a [`TiledSpec`]
//! (element type, a 2-D or 3-D tensor in global memory, the box a copy moves, the swizzle of
//! the box in shared memory) encoded for the backend that will run the kernel.
//!
//! On GPUs the map is `cuTensorMapEncodeTiled`'s (interleave none, L2 promotion 128 B,
//! out-of-bounds elements read as zero); on the simulator the same parameters in the layout
//! the simulator reads. Both check the parameters by the driver's documented rules first, so
//! a map the GPU would refuse is refused on the simulator too, with the same message.
//!
//! The map reaches the kernel through global memory (see `rshmem_device::hopper::tma` for
//! why): put it in a symmetric buffer and pass [`TensorMap::kernel_ptr`]:
//!
//! ```ignore
//! let a = shmem.alloc_from(&a_host)?; // 64 x 64 bf16, row-major
//! let spec = TiledSpec {
//!     ty: TmaType::Bf16,
//!     global: a.as_ptr().cast(),
//!     dims: &[64, 64],
//!     strides: &[64 * 2],
//!     box_dims: &[64, 64],
//!     swizzle: Swizzle::B128,
//! };
//! let maps = shmem.alloc_from(&[TensorMap::tiled(&shmem, &spec)?])?;
//! module.launch::<k>(cfg, (TensorMap::kernel_ptr(&maps), ...))?;
//! ```

use crate::contract::{Result, TiledSpec};
use crate::{Shmem, SymBuffer};

/// An encoded tensor map, ready to be copied into global memory (`Shmem::alloc_from`).
/// The same bytes the kernel reads as `rshmem_device::hopper::TensorMap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct TensorMap(pub rshmem_device::hopper::TensorMap);

// SAFETY: 16 u64 words, 128 bytes at alignment 128: no padding, every bit pattern valid.
unsafe impl bytemuck::Zeroable for TensorMap {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for TensorMap {}

impl TensorMap {
    /// Encodes `spec` for `shmem`'s backend.
    pub fn tiled(shmem: &Shmem, spec: &TiledSpec<'_>) -> Result<TensorMap> {
        let checked = spec.check()?;
        shmem.inner.encode_tensor_map(spec, &checked).map(TensorMap)
    }

    /// The pointer a kernel takes (`*const rshmem_device::hopper::TensorMap`) for the first
    /// map in `maps`; add `i` for the `i`-th.
    pub fn kernel_ptr(maps: &SymBuffer<'_, TensorMap>) -> *const rshmem_device::hopper::TensorMap {
        maps.as_ptr().cast()
    }
}
