//! The simulator's side of the backend interface for threads, warps, ordering and byte-wise
//! RMA (`crate::backend::sim` adds the typed families and forwards the rest): each function
//! reads the calling simulated thread's context.

use core::sync::atomic::{fence as host_fence, Ordering::SeqCst};

use super::barrier::Call;
use super::context::{with, ThreadCtx};
use super::rma;
use super::scope::{in_scope, pe_sync};
use crate::contract::{Dim3, MemScopeKind, Ordering, ScopeKind, Team};

/// `a · b + c` rounded once, as the GPU's `fma.rn.f32`.
pub(crate) fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

pub(crate) fn thread_idx() -> Dim3 {
    with("thread::thread_idx", |c| c.thread_idx)
}

pub(crate) fn block_idx() -> Dim3 {
    with("thread::block_idx", |c| c.block.idx)
}

pub(crate) fn block_dim() -> Dim3 {
    with("thread::block_dim", |c| c.launch.spec.block)
}

pub(crate) fn grid_dim() -> Dim3 {
    with("thread::grid_dim", |c| c.launch.spec.grid)
}

pub(crate) fn sync_threads() {
    with("thread::sync_threads", |c| {
        c.sync(&c.block.threads, "thread::sync_threads()")
    })
}

/// This block's dynamic shared memory (`config.shared_mem_bytes` bytes, zeroed at launch,
/// 16-byte aligned) and its size.
pub(crate) fn dynamic_shared_mem() -> (*mut u8, usize) {
    with("thread::dynamic_shared_mem", |c| c.block.shared.get())
}

pub(crate) use super::warp::{active_mask, ballot, lane_id, match_any, shuffle32, sync_warp};

pub(crate) fn atomic_fence(_scope: MemScopeKind, order: Ordering) {
    // Host atomics are sequentially consistent at every scope the simulator has.
    if order != Ordering::Relaxed {
        host_fence(SeqCst)
    }
}

pub(crate) fn nanosleep(ns: u32) {
    std::thread::sleep(std::time::Duration::from_nanos(ns.min(1_000_000) as u64))
}

/// Nanoseconds since the first call in this process (the simulator has no cycle counter).
pub(crate) fn clock64() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

pub(crate) fn globaltimer_ns() -> u64 {
    clock64()
}

/// The simulator has no SMs.
pub(crate) fn sm_id() -> u32 {
    0
}

pub(crate) fn trap() -> ! {
    with("thread::trap", |c| {
        c.fail(match super::printf::last_line() {
            // `device_assert!` printed its condition, place and message just before.
            Some(line) if line.starts_with("assertion failed") => {
                std::format!("kernel trapped (`thread::trap()`): {line}")
            }
            _ => "kernel trapped (`thread::trap()`)".into(),
        })
    })
}

pub(crate) fn my_pe() -> i32 {
    with("shmem::my_pe", |c| c.pe() as i32)
}

pub(crate) fn n_pes() -> i32 {
    with("shmem::n_pes", |c| c.world().n_pes() as i32)
}

// Every simulated operation completes before it returns and is bracketed by SeqCst fences,
// so ordering and completion need nothing more than a fence of their own.

pub(crate) fn fence() {
    host_fence(SeqCst)
}

pub(crate) fn quiet() {
    host_fence(SeqCst)
}

/// `"$base::<Thread>"` etc., as a `&'static str`, for messages.
macro_rules! scoped {
    ($scope:expr, $base:literal) => {
        match $scope {
            ScopeKind::Thread => concat!($base, "::<Thread>"),
            ScopeKind::Warp => concat!($base, "::<Warp>"),
            ScopeKind::Block => concat!($base, "::<Block>"),
        }
    };
}

pub(crate) fn barrier_all(scope: ScopeKind) {
    pe_sync(
        scope,
        Team::WORLD.raw(),
        "shmem::barrier_all",
        scoped!(scope, "shmem::barrier_all"),
    )
}

pub(crate) fn sync_all(scope: ScopeKind) {
    pe_sync(
        scope,
        Team::WORLD.raw(),
        "shmem::sync_all",
        scoped!(scope, "shmem::sync_all"),
    )
}

const RMA_ARGS: &[(&str, bool)] = &[
    ("dest", true),
    ("source", true),
    ("bytes", false),
    ("pe", false),
];

/// `rma::put_bytes` or `rma::get_bytes`.
type ByteCopy = unsafe fn(&ThreadCtx<'_>, &str, *mut u8, *const u8, usize, i32);

/// One put or get family member: `copy` run once for the calling group of `scope`.
///
/// # Safety
///
/// `copy`'s contract for the local side (the symmetric side is checked).
unsafe fn byte_rma(
    scope: ScopeKind,
    op: &'static str,
    copy: ByteCopy,
    d: *mut u8,
    src: *const u8,
    n: usize,
    pe: i32,
) {
    with(op, |c| {
        let call = Call {
            op,
            names: RMA_ARGS,
            args: [d as usize, src as usize, n, pe as isize as usize],
        };
        // SAFETY: forwarded from this function's contract.
        in_scope(c, scope, call, || unsafe { copy(c, op, d, src, n, pe) })
    })
}

/// # Safety
///
/// The contract of `shmem::putmem`: `src` valid for reading `n` bytes (the symmetric side is
/// checked).
pub(crate) unsafe fn putmem(
    scope: ScopeKind,
    nbi: bool,
    d: *mut u8,
    src: *const u8,
    n: usize,
    pe: i32,
) {
    let op = if nbi {
        scoped!(scope, "shmem::putmem_nbi")
    } else {
        scoped!(scope, "shmem::putmem")
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { byte_rma(scope, op, rma::put_bytes, d, src, n, pe) }
}

/// # Safety
///
/// The contract of `shmem::getmem`: `d` valid for writing `n` bytes (the symmetric side is
/// checked).
pub(crate) unsafe fn getmem(
    scope: ScopeKind,
    nbi: bool,
    d: *mut u8,
    src: *const u8,
    n: usize,
    pe: i32,
) {
    let op = if nbi {
        scoped!(scope, "shmem::getmem_nbi")
    } else {
        scoped!(scope, "shmem::getmem")
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { byte_rma(scope, op, rma::get_bytes, d, src, n, pe) }
}
