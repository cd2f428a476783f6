//! nvptx64: PTX special registers and NVSHMEM's device library (linked as bitcode by
//! rshmem-builder, then inlined).

use crate::shmem::ScopeKind;
use crate::thread::Dim3;
use core::arch::nvptx;

/// NVSHMEM device entry points. Signatures follow NVSHMEM 3.x's `nvshmem.h`/`nvshmemx.h`
/// (C ABI, `int` PE numbers, `size_t` byte counts).
mod ffi {
    extern "C" {
        pub fn nvshmem_my_pe() -> i32;
        pub fn nvshmem_n_pes() -> i32;
        pub fn nvshmem_fence();
        pub fn nvshmem_quiet();
        pub fn nvshmem_barrier_all();
        pub fn nvshmemx_barrier_all_warp();
        pub fn nvshmemx_barrier_all_block();
        pub fn nvshmem_sync_all();
        pub fn nvshmemx_sync_all_warp();
        pub fn nvshmemx_sync_all_block();
    }
}

#[inline(always)]
pub(crate) fn thread_idx() -> Dim3 {
    // SAFETY: reading special registers has no preconditions.
    unsafe {
        Dim3 {
            x: nvptx::_thread_idx_x() as u32,
            y: nvptx::_thread_idx_y() as u32,
            z: nvptx::_thread_idx_z() as u32,
        }
    }
}

#[inline(always)]
pub(crate) fn block_idx() -> Dim3 {
    // SAFETY: as above.
    unsafe {
        Dim3 {
            x: nvptx::_block_idx_x() as u32,
            y: nvptx::_block_idx_y() as u32,
            z: nvptx::_block_idx_z() as u32,
        }
    }
}

#[inline(always)]
pub(crate) fn block_dim() -> Dim3 {
    // SAFETY: as above.
    unsafe {
        Dim3 {
            x: nvptx::_block_dim_x() as u32,
            y: nvptx::_block_dim_y() as u32,
            z: nvptx::_block_dim_z() as u32,
        }
    }
}

#[inline(always)]
pub(crate) fn grid_dim() -> Dim3 {
    // SAFETY: as above.
    unsafe {
        Dim3 {
            x: nvptx::_grid_dim_x() as u32,
            y: nvptx::_grid_dim_y() as u32,
            z: nvptx::_grid_dim_z() as u32,
        }
    }
}

#[inline(always)]
pub(crate) fn sync_threads() {
    // SAFETY: `bar.sync 0`; the caller's contract (all threads arrive) is documented on
    // `thread::sync_threads`.
    unsafe { nvptx::_syncthreads() }
}

#[inline(always)]
pub(crate) fn my_pe() -> i32 {
    // SAFETY: reads NVSHMEM's device state, set up by `nvshmemx_cumodule_init`.
    unsafe { ffi::nvshmem_my_pe() }
}

#[inline(always)]
pub(crate) fn n_pes() -> i32 {
    // SAFETY: as above.
    unsafe { ffi::nvshmem_n_pes() }
}

#[inline(always)]
pub(crate) fn fence() {
    // SAFETY: no preconditions.
    unsafe { ffi::nvshmem_fence() }
}

#[inline(always)]
pub(crate) fn quiet() {
    // SAFETY: no preconditions.
    unsafe { ffi::nvshmem_quiet() }
}

#[inline(always)]
pub(crate) fn barrier_all(scope: ScopeKind) {
    // SAFETY: collective; the scope contract is the caller's (see `shmem::barrier_all`).
    unsafe {
        match scope {
            ScopeKind::Thread => ffi::nvshmem_barrier_all(),
            ScopeKind::Warp => ffi::nvshmemx_barrier_all_warp(),
            ScopeKind::Block => ffi::nvshmemx_barrier_all_block(),
        }
    }
}

#[inline(always)]
pub(crate) fn sync_all(scope: ScopeKind) {
    // SAFETY: as `barrier_all`.
    unsafe {
        match scope {
            ScopeKind::Thread => ffi::nvshmem_sync_all(),
            ScopeKind::Warp => ffi::nvshmemx_sync_all_warp(),
            ScopeKind::Block => ffi::nvshmemx_sync_all_block(),
        }
    }
}
