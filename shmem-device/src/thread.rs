//! Thread, block and grid coordinates, and block-wide synchronisation, shaped like
//! Rust-CUDA's `cuda_std::thread`.

use crate::backend;

/// A 3-component launch coordinate or extent (`threadIdx`, `blockDim`, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x component.
    pub x: u32,
    /// y component.
    pub y: u32,
    /// z component.
    pub z: u32,
}

impl Dim3 {
    /// Number of elements in the extent, `x * y * z`.
    #[inline(always)]
    pub const fn size(self) -> u32 {
        self.x * self.y * self.z
    }
}

/// This thread's index within its block (`threadIdx`).
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    backend::thread_idx()
}

/// This block's index within the grid (`blockIdx`).
#[inline(always)]
pub fn block_idx() -> Dim3 {
    backend::block_idx()
}

/// The extent of a block (`blockDim`).
#[inline(always)]
pub fn block_dim() -> Dim3 {
    backend::block_dim()
}

/// The extent of the grid in blocks (`gridDim`).
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    backend::grid_dim()
}

/// `threadIdx.x`.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    thread_idx().x
}

/// `blockIdx.x`.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    block_idx().x
}

/// `blockDim.x`.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    block_dim().x
}

/// `gridDim.x`.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    grid_dim().x
}

/// The flat index of this thread in a 1-D launch: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn index_1d() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// The flat thread index within the block, over all three dimensions.
#[inline(always)]
pub fn thread_rank_in_block() -> u32 {
    let (t, d) = (thread_idx(), block_dim());
    (t.z * d.y + t.y) * d.x + t.x
}

/// Total number of threads in a 1-D grid: `gridDim.x * blockDim.x`.
#[inline(always)]
pub fn grid_size_1d() -> u32 {
    grid_dim_x() * block_dim_x()
}

/// Block-wide barrier (`__syncthreads()`): every thread of the block must reach it.
///
/// On the simulator, a thread that leaves the kernel while others wait here is reported as
/// an error naming the kernel, PE, block and thread.
#[inline(always)]
pub fn sync_threads() {
    backend::sync_threads()
}
