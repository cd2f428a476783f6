//! nvptx64: PTX special registers, inline PTX and NVSHMEM's device library (linked as
//! bitcode by rshmem-builder, then inlined). This file holds the thread, warp, ordering and
//! `printf` primitives; [`shmem`] the NVSHMEM calls and [`atomic`] the scoped atomics.

mod atomic;
pub(crate) mod cvt;
mod fault;
pub(crate) mod hopper;
pub(crate) mod math;
pub(crate) mod mma;
mod shmem;

pub(crate) use atomic::{
    load_relaxed_x4, load_x4, store_global_u16, store_global_u32, store_global_u64,
    store_relaxed_x4, store_x4, store_x4_streaming,
};
pub(crate) use fault::{assert_failed, checked, panicked};
pub(crate) use shmem::*;

use crate::contract::{Dim3, MemScopeKind, Ordering, PrintfValue, ScopeKind, Shuffle};
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

/// `fma.rn.f32`: one FFMA, `a · b + c` rounded once.
#[inline(always)]
pub(crate) fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let d: f32;
    // SAFETY: register arithmetic.
    unsafe {
        core::arch::asm!("fma.rn.f32 {d}, {a}, {b}, {c};", d = out(reg32) d, a = in(reg32) a,
            b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
    };
    d
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

// Dynamic shared memory: one module-level declaration every kernel can address. NVSHMEM's own
// static shared buffers come first in the window; this array starts after them, as CUDA's
// `extern __shared__` does.
core::arch::global_asm!(".extern .shared .align 16 .b8 rshmem_dynamic_shared[];");

#[inline(always)]
pub(crate) fn dynamic_shared_mem() -> (*mut u8, usize) {
    let (base, bytes): (u64, u32);
    // SAFETY: takes the address of the declared array and reads a special register.
    unsafe {
        core::arch::asm!(
            "mov.u64 {b}, rshmem_dynamic_shared;",
            "cvta.shared.u64 {b}, {b};",
            "mov.u32 {n}, %dynamic_smem_size;",
            b = out(reg64) base,
            n = out(reg32) bytes,
            options(nomem, nostack, pure)
        )
    };
    (base as *mut u8, bytes as usize)
}

#[inline(always)]
pub(crate) fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reads a special register.
    unsafe {
        core::arch::asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(nomem, nostack, pure))
    };
    lane
}

#[inline(always)]
pub(crate) fn active_mask() -> u32 {
    let mask: u32;
    // SAFETY: no preconditions.
    unsafe {
        core::arch::asm!("activemask.b32 {m};", m = out(reg32) mask, options(nomem, nostack))
    };
    mask
}

#[inline(always)]
pub(crate) fn sync_warp(mask: u32) {
    // SAFETY: the caller's lanes of `mask` all call it (documented on `warp::sync_warp`).
    unsafe { core::arch::asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack)) };
}

#[inline(always)]
pub(crate) fn shuffle32(mask: u32, mode: Shuffle, value: u32, arg: u32) -> u32 {
    let out: u32;
    // SAFETY: every lane of `mask` calls it together (documented on `warp::shuffle`). The
    // clamp operand is 0x1f (whole warp) for idx/down/bfly and 0 for up, as CUDA's intrinsics.
    unsafe {
        match mode {
            Shuffle::Idx => {
                core::arch::asm!("shfl.sync.idx.b32 {o}, {v}, {a}, 0x1f, {m};", o = out(reg32) out, v = in(reg32) value, a = in(reg32) arg, m = in(reg32) mask, options(nostack))
            }
            Shuffle::Up => {
                core::arch::asm!("shfl.sync.up.b32 {o}, {v}, {a}, 0x0, {m};", o = out(reg32) out, v = in(reg32) value, a = in(reg32) arg, m = in(reg32) mask, options(nostack))
            }
            Shuffle::Down => {
                core::arch::asm!("shfl.sync.down.b32 {o}, {v}, {a}, 0x1f, {m};", o = out(reg32) out, v = in(reg32) value, a = in(reg32) arg, m = in(reg32) mask, options(nostack))
            }
            Shuffle::Xor => {
                core::arch::asm!("shfl.sync.bfly.b32 {o}, {v}, {a}, 0x1f, {m};", o = out(reg32) out, v = in(reg32) value, a = in(reg32) arg, m = in(reg32) mask, options(nostack))
            }
        }
    }
    out
}

#[inline(always)]
pub(crate) fn ballot(mask: u32, pred: bool) -> u32 {
    let out: u32;
    // SAFETY: every lane of `mask` calls it together.
    unsafe {
        core::arch::asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {x}, 0; vote.sync.ballot.b32 {o}, p, {m}; }}",
            o = out(reg32) out,
            x = in(reg32) pred as u32,
            m = in(reg32) mask,
            options(nostack)
        )
    };
    out
}

#[inline(always)]
pub(crate) fn match_any(mask: u32, value: u32) -> u32 {
    let out: u32;
    // SAFETY: every lane of `mask` calls it together.
    unsafe {
        core::arch::asm!(
            "match.any.sync.b32 {o}, {v}, {m};",
            o = out(reg32) out,
            v = in(reg32) value,
            m = in(reg32) mask,
            options(nostack)
        )
    };
    out
}

#[inline(always)]
pub(crate) fn atomic_fence(scope: MemScopeKind, order: Ordering) {
    // SAFETY: fences have no preconditions.
    unsafe {
        match (order, scope) {
            (Ordering::Relaxed, _) => {}
            (Ordering::SeqCst, MemScopeKind::Cta) => {
                core::arch::asm!("fence.sc.cta;", options(nostack))
            }
            (Ordering::SeqCst, MemScopeKind::Gpu) => {
                core::arch::asm!("fence.sc.gpu;", options(nostack))
            }
            (Ordering::SeqCst, MemScopeKind::Sys) => {
                core::arch::asm!("fence.sc.sys;", options(nostack))
            }
            (_, MemScopeKind::Cta) => core::arch::asm!("fence.acq_rel.cta;", options(nostack)),
            (_, MemScopeKind::Gpu) => core::arch::asm!("fence.acq_rel.gpu;", options(nostack)),
            (_, MemScopeKind::Sys) => core::arch::asm!("fence.acq_rel.sys;", options(nostack)),
        }
    }
}

#[inline(always)]
pub(crate) fn nanosleep(ns: u32) {
    // SAFETY: no preconditions (sm_70+).
    unsafe { core::arch::asm!("nanosleep.u32 {t};", t = in(reg32) ns, options(nomem, nostack)) };
}

/// After a failed poll (`thread::Poll`): the first 4096 polls go at full speed (a flag-in-data
/// wait is latency-bound), later ones sleep 128 ns each, so that a long wait leaves the SM
/// and the memory system to the threads it waits for. In the checked mode, every 64th poll
/// ends a wait that has outlasted the host's bound (`checked::wait`).
#[inline(always)]
pub(crate) fn poll_pause(what: &'static str, polls: u32, start_ns: u64) {
    if checked::WAITS && polls % 64 == 63 {
        checked::wait(what, start_ns);
    }
    if polls >= 4096 {
        nanosleep(128);
    }
}

/// A polling loop of the backend's own (the checked mode's waits), paced and bounded as
/// `thread::Poll`'s, which the backend cannot import.
pub(crate) struct Spin {
    polls: u32,
    start_ns: u64,
}

impl Spin {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Spin {
            polls: 0,
            start_ns: globaltimer_ns(),
        }
    }

    #[inline(always)]
    pub(crate) fn pause(&mut self, what: &'static str) {
        poll_pause(what, self.polls, self.start_ns);
        self.polls = self.polls.saturating_add(1);
    }
}

#[inline(always)]
pub(crate) fn clock64() -> u64 {
    let t: u64;
    // SAFETY: reads a special register.
    unsafe {
        core::arch::asm!("mov.u64 {t}, %clock64;", t = out(reg64) t, options(nomem, nostack))
    };
    t
}

#[inline(always)]
pub(crate) fn sm_id() -> u32 {
    let id: u32;
    // SAFETY: reads a special register.
    unsafe { core::arch::asm!("mov.u32 {i}, %smid;", i = out(reg32) id, options(nomem, nostack)) };
    id
}

#[inline(always)]
pub(crate) fn globaltimer_ns() -> u64 {
    let t: u64;
    // SAFETY: reads a special register.
    unsafe {
        core::arch::asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nomem, nostack))
    };
    t
}

#[inline(always)]
pub(crate) fn trap() -> ! {
    // SAFETY: aborts the kernel.
    unsafe { core::arch::nvptx::trap() }
}

/// The simulator's copy of `printf!`'s arguments; a GPU needs only the packed bytes.
#[derive(Clone, Copy)]
pub(crate) struct PrintfValues;

impl PrintfValues {
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        PrintfValues
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, _: PrintfValue) {}
}

/// CUDA's device `printf` (resolved by the driver) over the packed argument buffer.
#[inline(always)]
pub(crate) fn printf(format: &'static str, args: &[u8], _: &PrintfValues) {
    extern "C" {
        fn vprintf(format: *const u8, args: *const u8) -> i32;
    }
    // SAFETY: `format` ends in NUL (`printf!` appends it); `args` is laid out as vprintf reads
    // it (each argument at its natural alignment) and outlives the call.
    unsafe { vprintf(format.as_ptr(), args.as_ptr()) };
}
