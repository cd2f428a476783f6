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

/// Declares the six scope × blocking forms of one byte-wise RMA family and a dispatcher.
macro_rules! rma_family {
    ($dispatch:ident: $t:ident $tn:ident $w:ident $wn:ident $b:ident $bn:ident) => {
        extern "C" {
            fn $t(dest: *mut u8, source: *const u8, bytes: usize, pe: i32);
            fn $tn(dest: *mut u8, source: *const u8, bytes: usize, pe: i32);
            fn $w(dest: *mut u8, source: *const u8, bytes: usize, pe: i32);
            fn $wn(dest: *mut u8, source: *const u8, bytes: usize, pe: i32);
            fn $b(dest: *mut u8, source: *const u8, bytes: usize, pe: i32);
            fn $bn(dest: *mut u8, source: *const u8, bytes: usize, pe: i32);
        }
        #[inline(always)]
        pub(crate) unsafe fn $dispatch(
            scope: ScopeKind,
            nbi: bool,
            dest: *mut u8,
            source: *const u8,
            bytes: usize,
            pe: i32,
        ) {
            match (scope, nbi) {
                (ScopeKind::Thread, false) => $t(dest, source, bytes, pe),
                (ScopeKind::Thread, true) => $tn(dest, source, bytes, pe),
                (ScopeKind::Warp, false) => $w(dest, source, bytes, pe),
                (ScopeKind::Warp, true) => $wn(dest, source, bytes, pe),
                (ScopeKind::Block, false) => $b(dest, source, bytes, pe),
                (ScopeKind::Block, true) => $bn(dest, source, bytes, pe),
            }
        }
    };
}

rma_family!(putmem: nvshmem_putmem nvshmem_putmem_nbi nvshmemx_putmem_warp
    nvshmemx_putmem_nbi_warp nvshmemx_putmem_block nvshmemx_putmem_nbi_block);
rma_family!(getmem: nvshmem_getmem nvshmem_getmem_nbi nvshmemx_getmem_warp
    nvshmemx_getmem_nbi_warp nvshmemx_getmem_block nvshmemx_getmem_nbi_block);

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
