//! The two implementations of the device API behind one internal interface, and the only
//! place that picks the target: `gpu` on `nvptx64` (PTX special registers, inline PTX and
//! NVSHMEM's device library), `sim` everywhere else (the CPU simulator in [`crate::sim`]).
//!
//! The layers, bottom up:
//!
//! 1. [`crate::contract`]: the types both sides speak (scopes, orderings, op codes, `Dim3`,
//!    `Team`); imports nothing of the crate.
//! 2. `backend`: this module. Each backend exposes the same free functions (`my_pe`,
//!    `putmem`, `signal_op`, ...) and implements the same typed families below ([`Rma`],
//!    [`Amo`], [`Wait`], [`Coll`], [`ScopedAtomic`]) for the element types NVSHMEM has. The
//!    GPU backend is where NVSHMEM's symbol names and the PTX templates live; the simulator
//!    backend forwards to `crate::sim`, which imports only the contract.
//! 3. The public modules (`thread`, `warp`, `atomic`, `shmem`, `debug`, `queue`, `view`):
//!    the API, its documentation and its policy (which types each family takes, float AMOs
//!    through their bits). They call `backend::*` and never `cfg` on the target. Two
//!    exceptions, each one `cfg` pair and documented where it is: `queue::wait` (how a
//!    stalled queue reports itself: `printf` and a trap on a GPU, a panic with a formatted
//!    message on the simulator) and `Kernel::run_sim`, the simulator's entry in the
//!    `#[kernel]` contract.
//!
//! Families with a namespace of their own are submodules with the same name on both sides:
//! `cvt` (bf16/f16/tf32 conversions), `math` (the special function unit's `ex2`, `rcp`), `mma`
//! (warp-level tensor cores, `ldmatrix`, `cp.async`) and `hopper` (wgmma, mbarrier, the bulk
//! tensor copies, sm_90a).
//!
//! A typed family's public trait (`shmem::RmaScalar`, ...) has the backend's trait as a
//! supertrait, so a type the public API admits but a backend does not implement is a compile
//! error on that target, not a link error; the public traits stay sealed by their own
//! `Sealed` supertrait (the simulator implements the families for every type its arithmetic
//! allows).

use crate::contract::{BitOp, MemScopeKind, Ordering, ReduceOp, RmwOp, ScopeKind};

#[cfg(target_arch = "nvptx64")]
mod gpu;
#[cfg(target_arch = "nvptx64")]
pub(crate) use gpu::*;

#[cfg(not(target_arch = "nvptx64"))]
mod sim;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use sim::*;

/// Typed single-element and strided remote access (`nvshmem_TYPE_p/g/iput/iget`).
///
/// Every method has the contract of the public function of the same name in `shmem::rma`.
pub trait Rma: Copy + 'static {
    /// `shmem::p`.
    unsafe fn p(dest: *mut Self, value: Self, pe: i32);
    /// `shmem::g`.
    unsafe fn g(source: *const Self, pe: i32) -> Self;
    /// `shmem::iput` (`put`) or `shmem::iget` at `scope`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn istrided(
        scope: ScopeKind,
        put: bool,
        dest: *mut Self,
        source: *const Self,
        dst: isize,
        sst: isize,
        n: usize,
        pe: i32,
    );
}

/// Remote atomics on 32- and 64-bit integers (`nvshmem_TYPE_atomic_*`). Float AMOs are
/// the public layer's: they go through the integer of the same size.
///
/// Every method has the contract of the public `shmem::atomic_*` function it is named after:
/// an aligned element of a symmetric allocation, `pe` in range.
pub trait Amo: Copy + 'static {
    /// `atomic_fetch`.
    unsafe fn fetch(source: *const Self, pe: i32) -> Self;
    /// `atomic_set`.
    unsafe fn set(dest: *mut Self, value: Self, pe: i32);
    /// `atomic_swap`.
    unsafe fn swap(dest: *mut Self, value: Self, pe: i32) -> Self;
    /// `atomic_compare_swap`.
    unsafe fn compare_swap(dest: *mut Self, cond: Self, value: Self, pe: i32) -> Self;
    /// `atomic_fetch_add`.
    unsafe fn fetch_add(dest: *mut Self, value: Self, pe: i32) -> Self;
    /// `atomic_add`.
    unsafe fn add(dest: *mut Self, value: Self, pe: i32);
    /// `atomic_fetch_inc`.
    unsafe fn fetch_inc(dest: *mut Self, pe: i32) -> Self;
    /// `atomic_inc`.
    unsafe fn inc(dest: *mut Self, pe: i32);
    /// `atomic_fetch_and/or/xor`.
    unsafe fn fetch_bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) -> Self;
    /// `atomic_and/or/xor`.
    unsafe fn bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32);
}

/// Point-to-point waits and tests (`nvshmem_TYPE_wait_until*`, `nvshmem_TYPE_test*`);
/// `cmp` is a raw `NVSHMEM_CMP_*` value.
///
/// Every method has the contract of the public `shmem::wait` function it is named after.
pub trait Wait: Copy + 'static {
    /// `wait_until`.
    unsafe fn wait_until(ivar: *const Self, cmp: i32, value: Self);
    /// `test`, as NVSHMEM's `int`.
    unsafe fn test(ivar: *const Self, cmp: i32, value: Self) -> i32;
    /// `wait_until_all`.
    unsafe fn wait_until_all(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    );
    /// `wait_until_any`.
    unsafe fn wait_until_any(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
    /// `wait_until_some`.
    unsafe fn wait_until_some(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
    /// `wait_until_all_vector`.
    unsafe fn wait_until_all_vector(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    );
    /// `wait_until_any_vector`.
    unsafe fn wait_until_any_vector(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    ) -> usize;
    /// `wait_until_some_vector`.
    unsafe fn wait_until_some_vector(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        values: *const Self,
    ) -> usize;
    /// `test_all`, as NVSHMEM's `int`.
    unsafe fn test_all(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> i32;
    /// `test_any`.
    unsafe fn test_any(
        ivars: *const Self,
        n: usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
    /// `test_some`.
    unsafe fn test_some(
        ivars: *const Self,
        n: usize,
        indices: *mut usize,
        status: *const i32,
        cmp: i32,
        value: Self,
    ) -> usize;
}

/// Device-side collectives over a raw team handle at `scope`; each returns NVSHMEM's status
/// (0 on success).
///
/// Every method has the contract of the public `shmem::coll` function it is named after.
/// `reduce` with a bitwise `op` on a float type returns -1 and does nothing (NVSHMEM has no
/// such reduction).
pub trait Coll: Copy + 'static {
    /// `broadcast`.
    unsafe fn broadcast(
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
        root: i32,
    ) -> i32;
    /// `fcollect`.
    unsafe fn fcollect(
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
    ) -> i32;
    /// `alltoall`.
    unsafe fn alltoall(
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
    ) -> i32;
    /// `reduce` (`scatter == false`) or `reducescatter`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn reduce(
        op: ReduceOp,
        scatter: bool,
        scope: ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
    ) -> i32;
}

/// Scoped atomics on 32- and 64-bit integers (`atom`, `ld`/`st` with a scope and ordering).
///
/// Every method has the contract of the public `atomic` function it is named after: `ptr`
/// valid, aligned and accessed concurrently only atomically.
pub trait ScopedAtomic: Copy + 'static {
    /// `fetch_add`, `swap`, `fetch_min`, ... by `op`.
    unsafe fn rmw(
        op: RmwOp,
        scope: MemScopeKind,
        order: Ordering,
        ptr: *mut Self,
        value: Self,
    ) -> Self;
    /// `compare_swap`.
    unsafe fn cas(
        scope: MemScopeKind,
        order: Ordering,
        ptr: *mut Self,
        current: Self,
        new: Self,
    ) -> Self;
    /// `load`.
    unsafe fn load(scope: MemScopeKind, order: Ordering, ptr: *const Self) -> Self;
    /// `store`.
    unsafe fn store(scope: MemScopeKind, order: Ordering, ptr: *mut Self, value: Self);
}
