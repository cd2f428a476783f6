//! Collectives over a team: fcollect (row 13), broadcast (row 14), alltoall (row 15), and
//! reduce / reducescatter with every operation (row 16), for every element type.
//!
//! One kernel, [`collective`](fn@collective), runs collective `coll` ([`BROADCAST`] ... [`REDUCESCATTER`]` +
//! op`) at thread scope (thread 0), then warp scope (warp 0), then block scope (the block),
//! each into its own third of the destination, and records the three return codes.
//!
//! # Size on the GPU
//!
//! NVSHMEM's device collectives are templates inlined at each instantiation. Measured with
//! NVSHMEM 3.4.5 for sm_90, one `int32` instantiation costs this much PTX (KB):
//!
//! | scope  | broadcast | fcollect | alltoall | reduce | reducescatter |
//! |--------|-----------|----------|----------|--------|---------------|
//! | thread | 490       | 100      | 80       | 250    | 63            |
//! | warp   | 495       | 270      | 80       | 275    | 67            |
//! | block  | 490       | 270      | 90       | 800    | 65            |
//!
//! Every combination of element type, operation and scope (510) made a 120 MB module that
//! took llc and ptxas most of an hour; even 7 MB costs ptxas two CPU minutes per
//! architecture, and the image is embedded in every program that uses the shipped kernels.
//! So the GPU build carries only the instantiations [`on_gpu`] lists — every collective once
//! at thread scope, and the cheapest at every scope — and returns [`NOT_BUILT`] for the
//! others there. The simulator runs them all. Each instantiation is a function of its own (`#[inline(never)]`), which
//! ptxas compiles much faster than one huge kernel.

use super::{for_each_scope, pe_caller, ty, with_any_type, Elem, BLOCK, THREAD, WARP};
use rshmem_device::prelude::*;
use rshmem_device::shmem::{CollScalar, ReduceOp, ScopeKind};

/// The reduction operations, in the order of the `REDUCE + op` and `REDUCESCATTER + op` codes.
pub const OPS: [ReduceOp; 7] = [
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::And,
    ReduceOp::Or,
    ReduceOp::Xor,
];

/// `coll`: `broadcast(dst, src, len, root)`; `dst` holds `len` elements per scope.
pub const BROADCAST: u32 = 0;
/// `coll`: `fcollect(dst, src, len)`; `dst` holds `n_pes * len` per scope.
pub const FCOLLECT: u32 = 1;
/// `coll`: `alltoall(dst, src, len)`; `src` and `dst` hold `n_pes * len` per scope.
pub const ALLTOALL: u32 = 2;
/// `coll`: `REDUCE + i` is `reduce(OPS[i], dst, src, len)`; `dst` holds `len` per scope.
pub const REDUCE: u32 = 3;
/// `coll`: `REDUCESCATTER + i` is `reducescatter(OPS[i], dst, src, len)`; `src` holds
/// `n_pes * len`, `dst` `len` per scope.
pub const REDUCESCATTER: u32 = 10;
/// The number of `coll` codes.
pub const COLLECTIVES: u32 = 17;

/// The return code of a collective this build does not carry (see [`on_gpu`]).
pub const NOT_BUILT: i32 = -2;

/// Whether the GPU build carries collective `coll` for element type `elem` (a [`ty`] code) at
/// `scope`: `i32` `broadcast`, `fcollect`, `alltoall`, `reduce(Sum)` and `reducescatter(Sum)`
/// at thread scope, and `reducescatter(Sum)` — the cheapest — at warp and block scope too.
/// About 1.1 MB of PTX; see the module docs for the cost of each, and widen this to test
/// more on GPUs.
pub const fn on_gpu(coll: u32, elem: u32, scope: u32) -> bool {
    elem == ty::I32
        && (coll == REDUCESCATTER || (scope == THREAD && (coll <= ALLTOALL || coll == REDUCE)))
}

/// The `scope` code of `S`.
const fn scope_code<S: Scope>() -> u32 {
    match S::KIND {
        ScopeKind::Thread => THREAD,
        ScopeKind::Warp => WARP,
        ScopeKind::Block => BLOCK,
    }
}

/// Rows 13 to 16: collective `coll` over `team` for element type `ty`, at each scope `k`
/// (0, 1, 2) into `dst + k * out` (`out` the destination's length, see the `coll` codes),
/// with return code `rc[k]` (0, -1 for a bitwise reduction of floats, [`NOT_BUILT`]).
/// `root` matters to broadcast only. One block of two warps or more, cooperative; every
/// member launches it.
///
/// # Safety
///
/// As `collective_as`, with `ty` naming `T`; every member of `team` launches it.
#[kernel]
pub unsafe fn collective(
    coll: u32,
    ty: u32,
    team: Team,
    root: i32,
    src: *const u8,
    dst: *mut u8,
    rc: *mut i32,
    len: usize,
) {
    with_any_type!(ty, T => collective_as::<T>(
        coll, team, root, src.cast(), dst.cast(), rc, len))
}

/// [`collective`](fn@collective) for one element type.
///
/// # Safety
///
/// As the kernel: symmetric `src` and `dst` of the sizes the `coll` codes give (`dst` three
/// times over), `rc` 3 `i32`s.
unsafe fn collective_as<T: CollScalar + Elem>(
    coll: u32,
    team: Team,
    root: i32,
    src: *const T,
    dst: *mut T,
    rc: *mut i32,
    len: usize,
) {
    let out = match coll {
        FCOLLECT | ALLTOALL => team.n_pes() as usize * len,
        _ => len,
    };
    for_each_scope!(k, S => if pe_caller(k) {
        let code = one::<S, T>(coll, team, root, src, dst.add(k as usize * out), len);
        if thread::thread_idx_x() == 0 {
            *rc.add(k as usize) = code;
        }
    });
}

/// Collective `coll` at scope `S`, or [`NOT_BUILT`] where this build leaves it out (decided
/// at compile time, so the instantiation is not in the module).
///
/// # Safety
///
/// As `collective_as`, for one scope's destination.
#[inline(always)]
unsafe fn one<S: Scope, T: CollScalar + Elem>(
    coll: u32,
    team: Team,
    root: i32,
    src: *const T,
    dst: *mut T,
    len: usize,
) -> i32 {
    macro_rules! arm {
        ($code:expr => $call:expr) => {
            if const { cfg!(not(target_arch = "nvptx64")) || on_gpu($code, T::CODE, scope_code::<S>()) } {
                $call
            } else {
                NOT_BUILT
            }
        };
    }
    macro_rules! dispatch {
        ($($i:literal),*) => {
            match coll {
                BROADCAST => arm!(BROADCAST => broadcast_at::<S, T>(team, dst, src, len, root)),
                FCOLLECT => arm!(FCOLLECT => fcollect_at::<S, T>(team, dst, src, len)),
                ALLTOALL => arm!(ALLTOALL => alltoall_at::<S, T>(team, dst, src, len)),
                $(c if c == REDUCE + $i => arm!(REDUCE + $i =>
                    reduce_at::<S, T, $i, false>(team, dst, src, len)),)*
                $(c if c == REDUCESCATTER + $i => arm!(REDUCESCATTER + $i =>
                    reduce_at::<S, T, $i, true>(team, dst, src, len)),)*
                _ => panic!("conformance::coll: unknown collective code"),
            }
        };
    }
    dispatch!(0, 1, 2, 3, 4, 5, 6)
}

// One function per instantiation, kept out of line: NVSHMEM inlines hundreds of KB of code
// into each, and ptxas compiles many large functions much faster than one huge kernel.

/// `broadcast` at scope `S`.
///
/// # Safety
///
/// As [`shmem::broadcast`].
#[inline(never)]
unsafe fn broadcast_at<S: Scope, T: CollScalar>(
    team: Team,
    dst: *mut T,
    src: *const T,
    len: usize,
    root: i32,
) -> i32 {
    shmem::broadcast::<S, T>(team, dst, src, len, root)
}

/// `fcollect` at scope `S`.
///
/// # Safety
///
/// As [`shmem::fcollect`].
#[inline(never)]
unsafe fn fcollect_at<S: Scope, T: CollScalar>(
    team: Team,
    dst: *mut T,
    src: *const T,
    len: usize,
) -> i32 {
    shmem::fcollect::<S, T>(team, dst, src, len)
}

/// `alltoall` at scope `S`.
///
/// # Safety
///
/// As [`shmem::alltoall`].
#[inline(never)]
unsafe fn alltoall_at<S: Scope, T: CollScalar>(
    team: Team,
    dst: *mut T,
    src: *const T,
    len: usize,
) -> i32 {
    shmem::alltoall::<S, T>(team, dst, src, len)
}

/// `reduce` (or `reducescatter` if `SCATTER`) with `OPS[OP]` at scope `S`; the operation is
/// a constant, so only its instantiation is built.
///
/// # Safety
///
/// As [`shmem::reduce`] or [`shmem::reducescatter`].
#[inline(never)]
unsafe fn reduce_at<S: Scope, T: CollScalar, const OP: usize, const SCATTER: bool>(
    team: Team,
    dst: *mut T,
    src: *const T,
    len: usize,
) -> i32 {
    if SCATTER {
        shmem::reducescatter::<S, T>(OPS[OP], team, dst, src, len)
    } else {
        shmem::reduce::<S, T>(OPS[OP], team, dst, src, len)
    }
}
