//! NVSHMEM's device library: every SHMEM call of the public API, as a call of the NVSHMEM
//! function that implements it. The functions are declared where they are called (resolved
//! by rshmem-builder's link with NVSHMEM's bitcode, then inlined); their names are built
//! from NVSHMEM's type names (`int32`, `long`, `double`, ...) in the tables below, the one
//! place those names are written.

use super::super::{Amo, Coll, Rma, Wait};
use super::checked;
use crate::contract::{BitOp, ReduceOp, ScopeKind};
use core::mem::size_of;
use paste::paste;

/// `call!(nvshmem_fn(a: A, b: B) -> R)`: declares `nvshmem_fn` and calls it with the named
/// arguments. Must be used inside an `unsafe` context.
macro_rules! call {
    ($nv:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?) => {{
        extern "C" {
            fn $nv($($arg: $ty),*) $(-> $ret)?;
        }
        $nv($($arg),*)
    }};
}

/// Calls the thread, warp or block form of an NVSHMEM family, blocking or `_nbi`:
/// `nvshmem_<base>[_nbi]`, `nvshmemx_<base>[_nbi]_warp`, `nvshmemx_<base>[_nbi]_block`.
/// `$scope` is a [`ScopeKind`] and `$nbi` a `bool`, both constants after inlining, so the
/// match folds away.
macro_rules! scoped {
    ($scope:expr, nbi: $nbi:expr, $base:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?) => { paste! {
        match ($scope, $nbi) {
            (ScopeKind::Thread, false) => call!([<nvshmem_ $base>]($($arg: $ty),*) $(-> $ret)?),
            (ScopeKind::Thread, true) => call!([<nvshmem_ $base _nbi>]($($arg: $ty),*) $(-> $ret)?),
            (ScopeKind::Warp, false) => call!([<nvshmemx_ $base _warp>]($($arg: $ty),*) $(-> $ret)?),
            (ScopeKind::Warp, true) => call!([<nvshmemx_ $base _nbi_warp>]($($arg: $ty),*) $(-> $ret)?),
            (ScopeKind::Block, false) => call!([<nvshmemx_ $base _block>]($($arg: $ty),*) $(-> $ret)?),
            (ScopeKind::Block, true) => call!([<nvshmemx_ $base _nbi_block>]($($arg: $ty),*) $(-> $ret)?),
        }
    }};
    ($scope:expr, $base:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?) => { paste! {
        match $scope {
            ScopeKind::Thread => call!([<nvshmem_ $base>]($($arg: $ty),*) $(-> $ret)?),
            ScopeKind::Warp => call!([<nvshmemx_ $base _warp>]($($arg: $ty),*) $(-> $ret)?),
            ScopeKind::Block => call!([<nvshmemx_ $base _block>]($($arg: $ty),*) $(-> $ret)?),
        }
    }};
}

/// The checked mode's checks of one call (nothing without `--cfg rshmem_checked`):
/// `check!(op, pe: pe, sym: (addr, bytes), ...)`: `pe` in range, each `addr` and its `bytes`
/// in the symmetric heap.
macro_rules! check {
    ($op:expr $(, pe: $pe:expr)? $(, sym: ($addr:expr, $bytes:expr))*) => {{
        $( checked::pe($op, $pe); )?
        $( checked::symmetric($op, ($addr) as *const u8, $bytes); )*
    }};
}

/// `$plain` or `$nbi` by `nbi`, for the names of checked calls.
macro_rules! nbi_name {
    ($nbi:expr, $plain:literal) => {
        if $nbi {
            concat!($plain, "_nbi")
        } else {
            $plain
        }
    };
}

// ---- untyped calls ------------------------------------------------------------------------

/// # Safety
///
/// As `shmem::putmem` (`nbi`: `putmem_nbi`).
#[inline(always)]
pub(crate) unsafe fn putmem(
    scope: ScopeKind,
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    pe: i32,
) {
    check!(nbi_name!(nbi, "shmem::putmem"), pe: pe, sym: (dest, bytes));
    scoped!(scope, nbi: nbi, putmem(dest: *mut u8, source: *const u8, bytes: usize, pe: i32))
}

/// # Safety
///
/// As `shmem::getmem` (`nbi`: `getmem_nbi`).
#[inline(always)]
pub(crate) unsafe fn getmem(
    scope: ScopeKind,
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    pe: i32,
) {
    check!(nbi_name!(nbi, "shmem::getmem"), pe: pe, sym: (source, bytes));
    scoped!(scope, nbi: nbi, getmem(dest: *mut u8, source: *const u8, bytes: usize, pe: i32))
}

/// # Safety
///
/// As `shmem::ptr`.
#[inline(always)]
pub(crate) unsafe fn ptr(dest: *const u8, pe: i32) -> *mut u8 {
    check!("shmem::ptr", pe: pe, sym: (dest, 1));
    // SAFETY: forwarded.
    unsafe { heap_ptr(dest, pe) }
}

/// `nvshmem_ptr` unchecked: `dest`'s address on `pe`, null where `dest` is outside the
/// symmetric heap (NVSHMEM's device state bounds it) or `pe` cannot be reached by loads.
///
/// # Safety
///
/// `pe` in range.
#[inline(always)]
pub(crate) unsafe fn heap_ptr(dest: *const u8, pe: i32) -> *mut u8 {
    call!(nvshmem_ptr(dest: *const u8, pe: i32) -> *mut u8)
}

/// # Safety
///
/// As `shmem::signal_op`; `op` is a raw `NVSHMEM_SIGNAL_*` value.
#[inline(always)]
pub(crate) unsafe fn signal_op(sig: *mut u64, value: u64, op: i32, pe: i32) {
    check!("shmem::signal_op", pe: pe, sym: (sig, size_of::<u64>()));
    call!(nvshmemx_signal_op(sig: *mut u64, value: u64, op: i32, pe: i32))
}

/// # Safety
///
/// As `shmem::signal_fetch`.
#[inline(always)]
pub(crate) unsafe fn signal_fetch(sig: *const u64) -> u64 {
    check!("shmem::signal_fetch", sym: (sig, size_of::<u64>()));
    call!(nvshmem_signal_fetch(sig: *const u64) -> u64)
}

/// # Safety
///
/// As `shmem::signal_wait_until`; `cmp` is a raw `NVSHMEM_CMP_*` value.
#[inline(always)]
pub(crate) unsafe fn signal_wait_until(sig: *const u64, cmp: i32, value: u64) -> u64 {
    const OP: &str = "shmem::signal_wait_until";
    check!(OP, sym: (sig, size_of::<u64>()));
    if checked::WAITS {
        // Polled here rather than in NVSHMEM, so that the wait is bounded.
        let mut poll = super::Spin::new();
        loop {
            let now = call!(nvshmem_signal_fetch(sig: *const u64) -> u64);
            if crate::contract::Cmp::from_raw(cmp).is_some_and(|c| c.holds(now, value)) {
                return now;
            }
            poll.pause(OP);
        }
    }
    call!(nvshmem_signal_wait_until(sig: *const u64, cmp: i32, value: u64) -> u64)
}

/// # Safety
///
/// As `shmem::putmem_signal` (`nbi`: `putmem_signal_nbi`); `op` a raw `NVSHMEM_SIGNAL_*`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn putmem_signal(
    scope: ScopeKind,
    nbi: bool,
    dest: *mut u8,
    source: *const u8,
    bytes: usize,
    sig: *mut u64,
    value: u64,
    op: i32,
    pe: i32,
) {
    check!(nbi_name!(nbi, "shmem::putmem_signal"), pe: pe, sym: (dest, bytes), sym: (sig, size_of::<u64>()));
    scoped!(scope, nbi: nbi,
        putmem_signal(dest: *mut u8, source: *const u8, bytes: usize, sig: *mut u64, value: u64, op: i32, pe: i32))
}

#[inline(always)]
pub(crate) fn team_my_pe(team: i32) -> i32 {
    // SAFETY: reads NVSHMEM's team table; any team value is accepted.
    unsafe { call!(nvshmem_team_my_pe(team: i32) -> i32) }
}

#[inline(always)]
pub(crate) fn team_n_pes(team: i32) -> i32 {
    // SAFETY: as `team_my_pe`.
    unsafe { call!(nvshmem_team_n_pes(team: i32) -> i32) }
}

#[inline(always)]
pub(crate) fn team_translate_pe(src: i32, pe: i32, dst: i32) -> i32 {
    // SAFETY: as `team_my_pe`.
    unsafe { call!(nvshmem_team_translate_pe(src: i32, pe: i32, dst: i32) -> i32) }
}

/// `Team::barrier` (`quiet`) or `Team::sync`.
///
/// # Safety
///
/// As `Team::barrier`.
#[inline(always)]
pub(crate) unsafe fn team_barrier(scope: ScopeKind, team: i32, quiet: bool) -> i32 {
    if quiet {
        scoped!(scope, barrier(team: i32) -> i32)
    } else {
        scoped!(scope, team_sync(team: i32) -> i32)
    }
}

// ---- typed families: NVSHMEM's type names -------------------------------------------------

macro_rules! rma {
    ($($t:ty => $c:ident),* $(,)?) => {$( paste! {
        impl Rma for $t {
            #[inline(always)]
            unsafe fn p(dest: *mut Self, value: Self, pe: i32) {
                check!("shmem::p", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $c _p>](dest: *mut $t, value: $t, pe: i32))
            }
            #[inline(always)]
            unsafe fn g(source: *const Self, pe: i32) -> Self {
                check!("shmem::g", pe: pe, sym: (source, size_of::<$t>()));
                call!([<nvshmem_ $c _g>](source: *const $t, pe: i32) -> $t)
            }
            #[inline(always)]
            unsafe fn istrided(
                scope: ScopeKind,
                put: bool,
                dest: *mut Self,
                source: *const Self,
                dst: isize,
                sst: isize,
                n: usize,
                pe: i32,
            ) {
                // The first and the last element the stride reaches on the symmetric side.
                let (sym, stride) = if put { (dest.cast_const(), dst) } else { (source, sst) };
                let last = sym.wrapping_offset(stride * (n.max(1) as isize - 1));
                check!(if put { "shmem::iput" } else { "shmem::iget" }, pe: pe,
                    sym: (sym, size_of::<$t>()), sym: (last, size_of::<$t>()));
                if put {
                    scoped!(scope, [<$c _iput>](dest: *mut $t, source: *const $t, dst: isize, sst: isize, n: usize, pe: i32))
                } else {
                    scoped!(scope, [<$c _iget>](dest: *mut $t, source: *const $t, dst: isize, sst: isize, n: usize, pe: i32))
                }
            }
        }
    })*};
}

rma! {
    i8 => int8,
    u8 => uint8,
    i16 => int16,
    u16 => uint16,
    i32 => int32,
    u32 => uint32,
    i64 => int64,
    u64 => uint64,
    f32 => float,
    f64 => double,
}

/// bf16 and f16 move as 16-bit words: NVSHMEM has no typed RMA for them (same size, same
/// bits, so `nvshmem_uint16_*` moves them exactly).
macro_rules! rma_as_u16 {
    ($($t:ty),*) => {$(
        impl Rma for $t {
            #[inline(always)]
            unsafe fn p(dest: *mut Self, value: Self, pe: i32) {
                // SAFETY: forwarded; a `$t` is a `u16` in size, alignment and bits.
                unsafe { <u16 as Rma>::p(dest.cast(), value.to_bits(), pe) }
            }
            #[inline(always)]
            unsafe fn g(source: *const Self, pe: i32) -> Self {
                // SAFETY: as in `p`.
                <$t>::from_bits(unsafe { <u16 as Rma>::g(source.cast(), pe) })
            }
            #[inline(always)]
            unsafe fn istrided(
                scope: ScopeKind,
                put: bool,
                dest: *mut Self,
                source: *const Self,
                dst: isize,
                sst: isize,
                n: usize,
                pe: i32,
            ) {
                // SAFETY: as in `p`; strides count elements, which are the same size.
                unsafe {
                    <u16 as Rma>::istrided(scope, put, dest.cast(), source.cast(), dst, sst, n, pe)
                }
            }
        }
    )*};
}

rma_as_u16!(::half::bf16, ::half::f16);

/// `$t` uses NVSHMEM's `$c` names for fetch/set/swap, compare_swap and the bitwise ops, and
/// `$a` names for add/inc (NVSHMEM has no `int64` add, only `long`).
macro_rules! amo {
    ($($t:ty => $c:ident, $a:ident),* $(,)?) => {$( paste! {
        impl Amo for $t {
            #[inline(always)]
            unsafe fn fetch(source: *const Self, pe: i32) -> Self {
                check!("shmem::atomic_fetch", pe: pe, sym: (source, size_of::<$t>()));
                call!([<nvshmem_ $c _atomic_fetch>](source: *const $t, pe: i32) -> $t)
            }
            #[inline(always)]
            unsafe fn set(dest: *mut Self, value: Self, pe: i32) {
                check!("shmem::atomic_set", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $c _atomic_set>](dest: *mut $t, value: $t, pe: i32))
            }
            #[inline(always)]
            unsafe fn swap(dest: *mut Self, value: Self, pe: i32) -> Self {
                check!("shmem::atomic_swap", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $c _atomic_swap>](dest: *mut $t, value: $t, pe: i32) -> $t)
            }
            #[inline(always)]
            unsafe fn compare_swap(dest: *mut Self, cond: Self, value: Self, pe: i32) -> Self {
                check!("shmem::atomic_compare_swap", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $c _atomic_compare_swap>](dest: *mut $t, cond: $t, value: $t, pe: i32) -> $t)
            }
            #[inline(always)]
            unsafe fn fetch_add(dest: *mut Self, value: Self, pe: i32) -> Self {
                check!("shmem::atomic_fetch_add", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $a _atomic_fetch_add>](dest: *mut $t, value: $t, pe: i32) -> $t)
            }
            #[inline(always)]
            unsafe fn add(dest: *mut Self, value: Self, pe: i32) {
                check!("shmem::atomic_add", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $a _atomic_add>](dest: *mut $t, value: $t, pe: i32))
            }
            #[inline(always)]
            unsafe fn fetch_inc(dest: *mut Self, pe: i32) -> Self {
                check!("shmem::atomic_fetch_inc", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $a _atomic_fetch_inc>](dest: *mut $t, pe: i32) -> $t)
            }
            #[inline(always)]
            unsafe fn inc(dest: *mut Self, pe: i32) {
                check!("shmem::atomic_inc", pe: pe, sym: (dest, size_of::<$t>()));
                call!([<nvshmem_ $a _atomic_inc>](dest: *mut $t, pe: i32))
            }
            #[inline(always)]
            unsafe fn fetch_bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) -> Self {
                check!("shmem::atomic_fetch_and/or/xor", pe: pe, sym: (dest, size_of::<$t>()));
                match op {
                    BitOp::And => call!([<nvshmem_ $c _atomic_fetch_and>](dest: *mut $t, value: $t, pe: i32) -> $t),
                    BitOp::Or => call!([<nvshmem_ $c _atomic_fetch_or>](dest: *mut $t, value: $t, pe: i32) -> $t),
                    BitOp::Xor => call!([<nvshmem_ $c _atomic_fetch_xor>](dest: *mut $t, value: $t, pe: i32) -> $t),
                }
            }
            #[inline(always)]
            unsafe fn bitwise(op: BitOp, dest: *mut Self, value: Self, pe: i32) {
                check!("shmem::atomic_and/or/xor", pe: pe, sym: (dest, size_of::<$t>()));
                match op {
                    BitOp::And => call!([<nvshmem_ $c _atomic_and>](dest: *mut $t, value: $t, pe: i32)),
                    BitOp::Or => call!([<nvshmem_ $c _atomic_or>](dest: *mut $t, value: $t, pe: i32)),
                    BitOp::Xor => call!([<nvshmem_ $c _atomic_xor>](dest: *mut $t, value: $t, pe: i32)),
                }
            }
        }
    })*};
}

amo!(i32 => int32, int32, u32 => uint32, uint32, i64 => int64, long, u64 => uint64, uint64);

macro_rules! wait {
    ($($t:ty => $c:ident),* $(,)?) => {$( paste! {
        impl Wait for $t {
            #[inline(always)]
            unsafe fn wait_until(ivar: *const Self, cmp: i32, value: Self) {
                const OP: &str = "shmem::wait_until";
                check!(OP, sym: (ivar, size_of::<$t>()));
                if checked::WAITS {
                    // Polled here rather than in NVSHMEM, so that the wait is bounded.
                    let mut poll = super::Spin::new();
                    while call!([<nvshmem_ $c _test>](ivar: *const $t, cmp: i32, value: $t) -> i32) == 0 {
                        poll.pause(OP);
                    }
                    return;
                }
                call!([<nvshmem_ $c _wait_until>](ivar: *const $t, cmp: i32, value: $t))
            }
            #[inline(always)]
            unsafe fn test(ivar: *const Self, cmp: i32, value: Self) -> i32 {
                call!([<nvshmem_ $c _test>](ivar: *const $t, cmp: i32, value: $t) -> i32)
            }
            #[inline(always)]
            unsafe fn wait_until_all(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) {
                const OP: &str = "shmem::wait_until_all";
                check!(OP, sym: (ivars, n * size_of::<$t>()));
                if checked::WAITS {
                    let mut poll = super::Spin::new();
                    while call!([<nvshmem_ $c _test_all>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> i32) == 0 {
                        poll.pause(OP);
                    }
                    return;
                }
                call!([<nvshmem_ $c _wait_until_all>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t))
            }
            #[inline(always)]
            unsafe fn wait_until_any(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) -> usize {
                const OP: &str = "shmem::wait_until_any";
                check!(OP, sym: (ivars, n * size_of::<$t>()));
                if checked::WAITS {
                    let mut poll = super::Spin::new();
                    loop {
                        // `usize::MAX` (SIZE_MAX): none is ready, or every one is excluded.
                        let i = call!([<nvshmem_ $c _test_any>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> usize);
                        if i != usize::MAX || n == 0 {
                            return i;
                        }
                        poll.pause(OP);
                    }
                }
                call!([<nvshmem_ $c _wait_until_any>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> usize)
            }
            #[inline(always)]
            unsafe fn wait_until_some(ivars: *const Self, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: Self) -> usize {
                const OP: &str = "shmem::wait_until_some";
                check!(OP, sym: (ivars, n * size_of::<$t>()));
                if checked::WAITS {
                    let mut poll = super::Spin::new();
                    loop {
                        let k = call!([<nvshmem_ $c _test_some>](ivars: *const $t, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: $t) -> usize);
                        if k != 0 || n == 0 {
                            return k;
                        }
                        poll.pause(OP);
                    }
                }
                call!([<nvshmem_ $c _wait_until_some>](ivars: *const $t, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: $t) -> usize)
            }
            #[inline(always)]
            unsafe fn wait_until_all_vector(ivars: *const Self, n: usize, status: *const i32, cmp: i32, values: *const Self) {
                call!([<nvshmem_ $c _wait_until_all_vector>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, values: *const $t))
            }
            #[inline(always)]
            unsafe fn wait_until_any_vector(ivars: *const Self, n: usize, status: *const i32, cmp: i32, values: *const Self) -> usize {
                call!([<nvshmem_ $c _wait_until_any_vector>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, values: *const $t) -> usize)
            }
            #[inline(always)]
            unsafe fn wait_until_some_vector(ivars: *const Self, n: usize, indices: *mut usize, status: *const i32, cmp: i32, values: *const Self) -> usize {
                call!([<nvshmem_ $c _wait_until_some_vector>](ivars: *const $t, n: usize, indices: *mut usize, status: *const i32, cmp: i32, values: *const $t) -> usize)
            }
            #[inline(always)]
            unsafe fn test_all(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) -> i32 {
                call!([<nvshmem_ $c _test_all>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> i32)
            }
            #[inline(always)]
            unsafe fn test_any(ivars: *const Self, n: usize, status: *const i32, cmp: i32, value: Self) -> usize {
                call!([<nvshmem_ $c _test_any>](ivars: *const $t, n: usize, status: *const i32, cmp: i32, value: $t) -> usize)
            }
            #[inline(always)]
            unsafe fn test_some(ivars: *const Self, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: Self) -> usize {
                call!([<nvshmem_ $c _test_some>](ivars: *const $t, n: usize, indices: *mut usize, status: *const i32, cmp: i32, value: $t) -> usize)
            }
        }
    })*};
}

wait!(i32 => int32, u32 => uint32, i64 => int64, u64 => uint64);

/// One reduction arm: `$op` names NVSHMEM's op (`sum`, `and`, ...).
macro_rules! reduce_arm {
    ($t:ty, $c:ident, $op:ident, $scatter:expr, $scope:expr, $team:ident, $dest:ident, $src:ident, $n:ident) => { paste! {
        if $scatter {
            scoped!($scope, [<$c _ $op _reducescatter>]($team: i32, $dest: *mut $t, $src: *const $t, $n: usize) -> i32)
        } else {
            scoped!($scope, [<$c _ $op _reduce>]($team: i32, $dest: *mut $t, $src: *const $t, $n: usize) -> i32)
        }
    }};
}

/// The And, Or and Xor arms: NVSHMEM's `and`, `or`, `xor` reductions for integers; -1 for
/// floats (NVSHMEM has no bitwise reductions of floats; -1 is its error return).
macro_rules! bitwise_arms {
    (int, $t:ty, $c:ident, $op:ident, $scatter:expr, $scope:expr, $team:ident, $dest:ident, $src:ident, $n:ident) => {
        match $op {
            ReduceOp::And => reduce_arm!($t, $c, and, $scatter, $scope, $team, $dest, $src, $n),
            ReduceOp::Or => reduce_arm!($t, $c, or, $scatter, $scope, $team, $dest, $src, $n),
            _ => reduce_arm!($t, $c, xor, $scatter, $scope, $team, $dest, $src, $n),
        }
    };
    (float, $t:ty, $c:ident, $op:ident, $scatter:expr, $scope:expr, $team:ident, $dest:ident, $src:ident, $n:ident) => {
        -1
    };
}

/// `Coll` for `$t` (NVSHMEM name `$c`), an `int` or a `float` type.
macro_rules! coll {
    ($($t:ty => $c:ident, $kind:ident;)*) => {$( paste! {
        impl Coll for $t {
            #[inline(always)]
            unsafe fn broadcast(scope: ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize, root: i32) -> i32 {
                scoped!(scope, [<$c _broadcast>](team: i32, dest: *mut $t, src: *const $t, n: usize, root: i32) -> i32)
            }
            #[inline(always)]
            unsafe fn fcollect(scope: ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize) -> i32 {
                scoped!(scope, [<$c _fcollect>](team: i32, dest: *mut $t, src: *const $t, n: usize) -> i32)
            }
            #[inline(always)]
            unsafe fn alltoall(scope: ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize) -> i32 {
                scoped!(scope, [<$c _alltoall>](team: i32, dest: *mut $t, src: *const $t, n: usize) -> i32)
            }
            #[inline(always)]
            unsafe fn reduce(op: ReduceOp, scatter: bool, scope: ScopeKind, team: i32, dest: *mut Self, src: *const Self, n: usize) -> i32 {
                match op {
                    ReduceOp::Sum => reduce_arm!($t, $c, sum, scatter, scope, team, dest, src, n),
                    ReduceOp::Prod => reduce_arm!($t, $c, prod, scatter, scope, team, dest, src, n),
                    ReduceOp::Min => reduce_arm!($t, $c, min, scatter, scope, team, dest, src, n),
                    ReduceOp::Max => reduce_arm!($t, $c, max, scatter, scope, team, dest, src, n),
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                        bitwise_arms!($kind, $t, $c, op, scatter, scope, team, dest, src, n)
                    }
                }
            }
        }
    })*};
}

coll! {
    i8 => int8, int;
    u8 => uint8, int;
    i16 => int16, int;
    u16 => uint16, int;
    i32 => int32, int;
    u32 => uint32, int;
    i64 => int64, int;
    u64 => uint64, int;
    f32 => float, float;
    f64 => double, float;
}
