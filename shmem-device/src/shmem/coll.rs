//! Device-side collectives over a [`Team`]: broadcast, fcollect (all-gather), alltoall,
//! reduce (all-reduce) and reducescatter, at thread, warp or block [`Scope`].
//!
//! Every member PE calls the same collective with the same counts; buffers are symmetric.
//! Each returns 0 on success (NVSHMEM's convention). Kernels that call collectives from more
//! than one block, or wait on other PEs, must be launched cooperatively.

use super::team::Team;
use super::Scope;
use crate::backend;

pub use crate::contract::ReduceOp;

/// Element types of collectives: integers of 8 to 64 bits, `f32`, `f64`.
pub trait CollScalar: Copy + sealed::Sealed + backend::Coll + 'static {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! coll_scalars {
    ($($t:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl CollScalar for $t {}
    )*};
}

coll_scalars!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// Copies `n` elements of `src` on team PE `root` into `dest` on every member (root included).
///
/// # Safety
///
/// Collective over `team` at scope `S`; `dest` and `src` symmetric with `n` elements.
#[inline(always)]
pub unsafe fn broadcast<S: Scope, T: CollScalar>(
    team: Team,
    dest: *mut T,
    src: *const T,
    n: usize,
    root: i32,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Coll>::broadcast(S::KIND, team.raw(), dest, src, n, root) }
}

/// All-gather: every member's `n` elements of `src` land in `dest` at `team_pe * n`.
///
/// # Safety
///
/// Collective; `src` symmetric with `n` elements, `dest` with `n * team.n_pes()`.
#[inline(always)]
pub unsafe fn fcollect<S: Scope, T: CollScalar>(
    team: Team,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Coll>::fcollect(S::KIND, team.raw(), dest, src, n) }
}

/// All-to-all: block `j` (of `n` elements) of member `i`'s `src` lands in block `i` of member
/// `j`'s `dest`.
///
/// # Safety
///
/// Collective; `src` and `dest` symmetric with `n * team.n_pes()` elements.
#[inline(always)]
pub unsafe fn alltoall<S: Scope, T: CollScalar>(
    team: Team,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Coll>::alltoall(S::KIND, team.raw(), dest, src, n) }
}

/// All-reduce: `dest[k] = op over members of src[k]` on every member, for `k < n`. Bitwise ops
/// on floats return -1 and do nothing.
///
/// # Safety
///
/// Collective; `src` and `dest` symmetric with `n` elements.
#[inline(always)]
pub unsafe fn reduce<S: Scope, T: CollScalar>(
    op: ReduceOp,
    team: Team,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Coll>::reduce(op, false, S::KIND, team.raw(), dest, src, n) }
}

/// Reduce-scatter: member `i` receives `dest[k] = op over members of src[i * n + k]`, `k < n`.
///
/// # Safety
///
/// Collective; `src` symmetric with `n * team.n_pes()` elements, `dest` with `n`.
#[inline(always)]
pub unsafe fn reducescatter<S: Scope, T: CollScalar>(
    op: ReduceOp,
    team: Team,
    dest: *mut T,
    src: *const T,
    n: usize,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { <T as backend::Coll>::reduce(op, true, S::KIND, team.raw(), dest, src, n) }
}
