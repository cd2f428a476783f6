//! Device-side collectives over a [`Team`]: broadcast, fcollect (all-gather), alltoall,
//! reduce (all-reduce) and reducescatter, at thread, warp or block [`Scope`].
//!
//! Every member PE calls the same collective with the same counts; buffers are symmetric.
//! Each returns 0 on success (NVSHMEM's convention). Kernels that call collectives from more
//! than one block, or wait on other PEs, must be launched cooperatively.

use super::call::scoped_call;
use super::team::Team;
use super::Scope;
use paste::paste;

/// Element types of collectives: integers of 8 to 64 bits, `f32`, `f64`.
pub trait CollScalar: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    unsafe fn __data(
        kind: DataColl,
        scope: super::ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
        root: i32,
    ) -> i32;
    #[doc(hidden)]
    unsafe fn __reduce(
        op: ReduceOp,
        scatter: bool,
        scope: super::ScopeKind,
        team: i32,
        dest: *mut Self,
        src: *const Self,
        n: usize,
    ) -> i32;
}

/// Collectives that move data without combining it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataColl {
    Broadcast,
    Fcollect,
    Alltoall,
}

/// How a reduction combines elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum (wrapping for integers).
    Sum,
    /// Product (wrapping for integers).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers only).
    And,
    /// Bitwise or (integers only).
    Or,
    /// Bitwise xor (integers only).
    Xor,
}

mod sealed {
    pub trait Sealed {}
}

/// The data-movement arms, shared by integer and float element types.
macro_rules! data_colls {
    ($t:ty, $c:ident, $kind:expr, $scope:expr, $team:ident, $dest:ident, $src:ident, $n:ident, $root:ident) => { paste! {
        match $kind {
            DataColl::Broadcast => scoped_call!($scope, [<$c _broadcast>]($team: i32, $dest: *mut $t, $src: *const $t, $n: usize, $root: i32) -> i32,
                sim: crate::sim::coll::broadcast($scope, $team, $dest, $src, $n, $root)),
            DataColl::Fcollect => scoped_call!($scope, [<$c _fcollect>]($team: i32, $dest: *mut $t, $src: *const $t, $n: usize) -> i32,
                sim: crate::sim::coll::fcollect($scope, $team, $dest, $src, $n)),
            DataColl::Alltoall => scoped_call!($scope, [<$c _alltoall>]($team: i32, $dest: *mut $t, $src: *const $t, $n: usize) -> i32,
                sim: crate::sim::coll::alltoall($scope, $team, $dest, $src, $n)),
        }
    }};
}

/// One reduction arm: `$op` names NVSHMEM's op (`sum`, `and`, ...).
macro_rules! reduce_arm {
    ($t:ty, $c:ident, $op:ident, $scatter:expr, $scope:expr, $team:ident, $dest:ident, $src:ident, $n:ident, $rop:expr) => { paste! {
        if $scatter {
            scoped_call!($scope, [<$c _ $op _reducescatter>]($team: i32, $dest: *mut $t, $src: *const $t, $n: usize) -> i32,
                sim: crate::sim::coll::reduce($scope, $team, $dest, $src, $n, $rop, true))
        } else {
            scoped_call!($scope, [<$c _ $op _reduce>]($team: i32, $dest: *mut $t, $src: *const $t, $n: usize) -> i32,
                sim: crate::sim::coll::reduce($scope, $team, $dest, $src, $n, $rop, false))
        }
    }};
}

macro_rules! coll_scalar {
    (int: $($t:ty => $c:ident),*; float: $($ft:ty => $fc:ident),*) => {
        $( impl sealed::Sealed for $t {}
        impl CollScalar for $t {
            #[inline(always)]
            unsafe fn __data(kind: DataColl, scope: super::ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize, root: i32) -> i32 {
                data_colls!($t, $c, kind, scope, team, dest, src, n, root)
            }
            #[inline(always)]
            unsafe fn __reduce(op: ReduceOp, scatter: bool, scope: super::ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize) -> i32 {
                match op {
                    ReduceOp::Sum => reduce_arm!($t, $c, sum, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Prod => reduce_arm!($t, $c, prod, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Min => reduce_arm!($t, $c, min, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Max => reduce_arm!($t, $c, max, scatter, scope, team, dest, src, n, op),
                    ReduceOp::And => reduce_arm!($t, $c, and, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Or => reduce_arm!($t, $c, or, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Xor => reduce_arm!($t, $c, xor, scatter, scope, team, dest, src, n, op),
                }
            }
        } )*
        $( impl sealed::Sealed for $ft {}
        impl CollScalar for $ft {
            #[inline(always)]
            unsafe fn __data(kind: DataColl, scope: super::ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize, root: i32) -> i32 {
                data_colls!($ft, $fc, kind, scope, team, dest, src, n, root)
            }
            #[inline(always)]
            unsafe fn __reduce(op: ReduceOp, scatter: bool, scope: super::ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize) -> i32 {
                match op {
                    ReduceOp::Sum => reduce_arm!($ft, $fc, sum, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Prod => reduce_arm!($ft, $fc, prod, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Min => reduce_arm!($ft, $fc, min, scatter, scope, team, dest, src, n, op),
                    ReduceOp::Max => reduce_arm!($ft, $fc, max, scatter, scope, team, dest, src, n, op),
                    // NVSHMEM has no bitwise reductions of floats; -1 is its error return.
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => -1,
                }
            }
        } )*
    };
}

coll_scalar!(
    int: i8 => int8, u8 => uint8, i16 => int16, u16 => uint16, i32 => int32, u32 => uint32, i64 => int64, u64 => uint64;
    float: f32 => float, f64 => double
);

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
    T::__data(DataColl::Broadcast, S::KIND, team.raw(), dest, src, n, root)
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
    T::__data(DataColl::Fcollect, S::KIND, team.raw(), dest, src, n, 0)
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
    T::__data(DataColl::Alltoall, S::KIND, team.raw(), dest, src, n, 0)
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
    T::__reduce(op, false, S::KIND, team.raw(), dest, src, n)
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
    T::__reduce(op, true, S::KIND, team.raw(), dest, src, n)
}
