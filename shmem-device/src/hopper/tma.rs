//! The bulk tensor copy engine (TMA): tiles ("boxes") of a 2-D or 3-D tensor in global memory
//! copied to shared memory, completing on an [`MBarrier`], and back, in bulk groups.
//!
//! # How the tensor map reaches the kernel
//!
//! A [`TensorMap`] (128 bytes, 128-byte aligned) is made on the host (`rshmem::TensorMap`),
//! copied into **global memory** (a symmetric buffer: `shmem.alloc_from(&[map])`) before the
//! launch, and passed as `*const TensorMap`. CUDA C++ passes it by value as a
//! `const __grid_constant__` parameter, which rustc cannot express: a Rust by-value parameter
//! whose address is taken is copied into local memory, where TMA cannot read it. The PTX ISA
//! allows the tensor-map operand in `.param`, `.const` or `.global` space; in global memory the
//! map is read through the *tensormap proxy*, so a kernel calls [`fence_tensormap_acquire`]
//! once per map (by the thread that issues the copies) before the first copy: the host's
//! write of the map went through the generic proxy. That fence costs one instruction per map
//! per kernel; it is also what makes maps the device itself rewrote usable.

use super::mbarrier::MBarrier;
use crate::backend::hopper as backend;
pub use crate::contract::hopper::{TensorMap, TmaType};

// SAFETY: plain bytes, same layout on host and device.
unsafe impl crate::KernelArg for TensorMap {}

/// `fence.proxy.tensormap::generic.acquire.gpu [map], 128`: makes the map's bytes, written by
/// the host (or by generic stores) before the launch, visible to the tensormap proxy that the
/// copies read it through. Call it once per map before the first copy using it.
///
/// # Safety
///
/// `map` points to a [`TensorMap`] in global memory, 64-byte aligned, that nothing writes while
/// copies use it.
#[inline(always)]
pub unsafe fn fence_tensormap_acquire(map: *const TensorMap) {
    // SAFETY: forwarded contract.
    unsafe { backend::fence_tensormap_acquire(map) }
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: copies
/// the box at element coordinates (`x` innermost, `y`) of `map`'s tensor into `dst`, and
/// retires the box's bytes (out-of-bounds elements filled with zero, their bytes included)
/// from `bar`'s transaction count when done. Coordinates may be negative or past the edge.
///
/// # Safety
///
/// One thread issues it. `map` as for [`fence_tensormap_acquire`] (fenced), describing a
/// 2-D tensor that is resident and not written until the copy completes; `dst` in this
/// block's shared memory, 128-byte aligned (aligned to the map's swizzle repeat, see
/// [`super::Swizzle::alignment`], for the pattern to start at row 0) with room for the box;
/// `bar` an initialised barrier of this block whose current phase expects these bytes
/// (`expect_tx`). Nothing may read `dst` before the phase completes, nor write it while the
/// copy is in flight.
#[inline(always)]
pub unsafe fn load_2d(map: *const TensorMap, dst: *mut u8, bar: &MBarrier, x: i32, y: i32) {
    // SAFETY: forwarded contract.
    unsafe { backend::tma_load(map, dst, bar as *const MBarrier as *mut u64, [x, y, 0], 2) }
}

/// The 3-D form of [`load_2d`] (`z` outermost).
///
/// # Safety
///
/// As [`load_2d`], for a 3-D map.
#[inline(always)]
pub unsafe fn load_3d(map: *const TensorMap, dst: *mut u8, bar: &MBarrier, x: i32, y: i32, z: i32) {
    // SAFETY: forwarded contract.
    unsafe { backend::tma_load(map, dst, bar as *const MBarrier as *mut u64, [x, y, z], 3) }
}

/// `cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group`: copies the box in `src` to
/// coordinates (`x`, `y`) of `map`'s tensor; elements outside the tensor are not written.
/// The copy joins this thread's current bulk group ([`commit_group`], [`wait_group`]).
///
/// # Safety
///
/// One thread issues it. `map` as for [`load_2d`], its tensor writable and not accessed
/// otherwise until the copy completes; `src` in this block's shared memory, 128-byte aligned,
/// holding the box, written by the generic proxy before a [`super::fence_proxy_async_shared`]
/// (and, if other threads wrote it, a `sync_threads` after their fences), and not written
/// until [`wait_group_read`] covers the copy.
#[inline(always)]
pub unsafe fn store_2d(map: *const TensorMap, src: *const u8, x: i32, y: i32) {
    // SAFETY: forwarded contract.
    unsafe { backend::tma_store(map, src, [x, y, 0], 2) }
}

/// The 3-D form of [`store_2d`].
///
/// # Safety
///
/// As [`store_2d`], for a 3-D map.
#[inline(always)]
pub unsafe fn store_3d(map: *const TensorMap, src: *const u8, x: i32, y: i32, z: i32) {
    // SAFETY: forwarded contract.
    unsafe { backend::tma_store(map, src, [x, y, z], 3) }
}

/// `cp.async.bulk.commit_group`: closes this thread's current bulk group of stores.
#[inline(always)]
pub fn commit_group() {
    backend::bulk_commit_group()
}

/// `cp.async.bulk.wait_group N`: waits until at most `N` of this thread's committed bulk
/// groups are pending: the older ones have completed, their writes to global memory done.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    backend::bulk_wait_group::<N, false>()
}

/// `cp.async.bulk.wait_group.read N`: waits until at most `N` groups still *read* their
/// shared-memory sources, so those buffers may be rewritten (their global writes may still be
/// in flight on a GPU; the simulator completes them here).
#[inline(always)]
pub fn wait_group_read<const N: u32>() {
    backend::bulk_wait_group::<N, true>()
}
