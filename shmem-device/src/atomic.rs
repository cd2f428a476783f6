//! Scoped atomics and fences on memory this GPU (or, at `Sys` scope, a peer over NVLink) can
//! address: global or shared memory, or a peer mapping from `shmem::ptr`. The scope says who
//! must observe the operation: the block ([`Cta`]), this GPU ([`Gpu`]) or every GPU and the
//! host ([`Sys`] — what peers over NVLink need). Orderings are C++'s.
//!
//! ```ignore
//! use rshmem_device::atomic::{self, Ordering, Sys};
//! let old = unsafe { atomic::fetch_add::<Sys, u32>(counter, 1, Ordering::AcqRel) };
//! ```

use crate::backend;

/// Who must observe an atomic or a fence.
pub trait MemScope: sealed::Sealed + Copy + 'static {
    /// The scope as a value.
    const KIND: ScopeKind;
}

/// The runtime form of a [`MemScope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// The thread block.
    Cta,
    /// This GPU.
    Gpu,
    /// The whole system: other GPUs (NVLink peers) and the host.
    Sys,
}

/// Block scope.
#[derive(Clone, Copy, Debug)]
pub struct Cta;
/// GPU scope.
#[derive(Clone, Copy, Debug)]
pub struct Gpu;
/// System scope (needed across GPUs).
#[derive(Clone, Copy, Debug)]
pub struct Sys;

impl MemScope for Cta {
    const KIND: ScopeKind = ScopeKind::Cta;
}
impl MemScope for Gpu {
    const KIND: ScopeKind = ScopeKind::Gpu;
}
impl MemScope for Sys {
    const KIND: ScopeKind = ScopeKind::Sys;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Cta {}
    impl Sealed for super::Gpu {}
    impl Sealed for super::Sys {}
}

/// Memory ordering of an atomic (C++'s, without `consume`). Loads take `Relaxed`, `Acquire`
/// or `SeqCst`; stores `Relaxed`, `Release` or `SeqCst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// No ordering beyond atomicity.
    Relaxed,
    /// Later accesses stay after it.
    Acquire,
    /// Earlier accesses stay before it.
    Release,
    /// Both.
    AcqRel,
    /// Both, and one total order of all `SeqCst` operations (a `fence.sc` first).
    SeqCst,
}

/// A read-modify-write operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOp {
    /// Wrapping add.
    Add,
    /// Exchange.
    Exch,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
}

/// 32- and 64-bit integers, the types with every scoped atomic.
pub trait AtomicInt: Copy + int_sealed::Sealed + 'static {
    #[doc(hidden)]
    unsafe fn __rmw(
        op: RmwOp,
        scope: ScopeKind,
        order: Ordering,
        ptr: *mut Self,
        value: Self,
    ) -> Self;
    #[doc(hidden)]
    unsafe fn __cas(
        scope: ScopeKind,
        order: Ordering,
        ptr: *mut Self,
        current: Self,
        new: Self,
    ) -> Self;
    #[doc(hidden)]
    unsafe fn __load(scope: ScopeKind, order: Ordering, ptr: *const Self) -> Self;
    #[doc(hidden)]
    unsafe fn __store(scope: ScopeKind, order: Ordering, ptr: *mut Self, value: Self);
}

mod int_sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
}

/// Expands `$m!(sem, scope, args...)` for the (scope, ordering) pair, with the PTX
/// semantics `[relaxed, acquire, release, acq_rel, seq_cst]` given for the five orderings
/// (loads cannot release, stores cannot acquire: those map to the nearest stronger form).
/// `SeqCst` is a `fence.sc` at the scope first, then the `seq_cst` entry, as CUDA's
/// `atomic_ref` does. The template of `asm!` must be a literal, so every pair is spelled out;
/// the match folds away after inlining.
#[cfg(target_arch = "nvptx64")]
macro_rules! by_order {
    ($scope:expr, $order:expr, [$r:literal, $a:literal, $rel:literal, $ar:literal, $sc:literal], $m:ident!($($args:tt)*)) => {
        match ($scope, $order) {
            (ScopeKind::Cta, Ordering::Relaxed) => $m!($r, "cta", $($args)*),
            (ScopeKind::Cta, Ordering::Acquire) => $m!($a, "cta", $($args)*),
            (ScopeKind::Cta, Ordering::Release) => $m!($rel, "cta", $($args)*),
            (ScopeKind::Cta, Ordering::AcqRel) => $m!($ar, "cta", $($args)*),
            (ScopeKind::Cta, Ordering::SeqCst) => { fence::<Cta>(Ordering::SeqCst); $m!($sc, "cta", $($args)*) }
            (ScopeKind::Gpu, Ordering::Relaxed) => $m!($r, "gpu", $($args)*),
            (ScopeKind::Gpu, Ordering::Acquire) => $m!($a, "gpu", $($args)*),
            (ScopeKind::Gpu, Ordering::Release) => $m!($rel, "gpu", $($args)*),
            (ScopeKind::Gpu, Ordering::AcqRel) => $m!($ar, "gpu", $($args)*),
            (ScopeKind::Gpu, Ordering::SeqCst) => { fence::<Gpu>(Ordering::SeqCst); $m!($sc, "gpu", $($args)*) }
            (ScopeKind::Sys, Ordering::Relaxed) => $m!($r, "sys", $($args)*),
            (ScopeKind::Sys, Ordering::Acquire) => $m!($a, "sys", $($args)*),
            (ScopeKind::Sys, Ordering::Release) => $m!($rel, "sys", $($args)*),
            (ScopeKind::Sys, Ordering::AcqRel) => $m!($ar, "sys", $($args)*),
            (ScopeKind::Sys, Ordering::SeqCst) => { fence::<Sys>(Ordering::SeqCst); $m!($sc, "sys", $($args)*) }
        }
    };
}

/// `atom.<sem>.<scope>.<op>.<type> out, [ptr], v;`
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_atom {
    ($sem:literal, $sc:literal, $op:literal, $ty:literal, $reg:ident, $out:ident, $ptr:expr, $v:expr) => {
        core::arch::asm!(
            concat!("atom.", $sem, ".", $sc, ".", $op, ".", $ty, " {out}, [{ptr}], {v};"),
            out = out($reg) $out, ptr = in(reg64) $ptr, v = in($reg) $v,
            options(nostack)
        )
    };
}

/// `atom.<sem>.<scope>.cas.<type> out, [ptr], cur, new;`
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_cas {
    ($sem:literal, $sc:literal, $ty:literal, $reg:ident, $out:ident, $ptr:expr, $c:expr, $n:expr) => {
        core::arch::asm!(
            concat!("atom.", $sem, ".", $sc, ".cas.", $ty, " {out}, [{ptr}], {c}, {n};"),
            out = out($reg) $out, ptr = in(reg64) $ptr, c = in($reg) $c, n = in($reg) $n,
            options(nostack)
        )
    };
}

/// `ld.<sem>.<scope>.<type> out, [ptr];`
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_ld {
    ($sem:literal, $sc:literal, $ty:literal, $reg:ident, $out:ident, $ptr:expr) => {
        core::arch::asm!(
            concat!("ld.", $sem, ".", $sc, ".", $ty, " {out}, [{ptr}];"),
            out = out($reg) $out, ptr = in(reg64) $ptr,
            options(nostack, readonly)
        )
    };
}

/// `st.<sem>.<scope>.<type> [ptr], v;`
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_st {
    ($sem:literal, $sc:literal, $ty:literal, $reg:ident, $ptr:expr, $v:expr) => {
        core::arch::asm!(
            concat!("st.", $sem, ".", $sc, ".", $ty, " [{ptr}], {v};"),
            ptr = in(reg64) $ptr, v = in($reg) $v,
            options(nostack)
        )
    };
}

/// `$t`'s PTX type names: bitwise (`b32`), add (`u32`/`s32`; PTX has no `add.s64`, and
/// wrapping add is the same on `u64`), min/max (`u32`/`s32`...), and its register class.
macro_rules! atomic_ints {
    ($($t:ty => bits: $b:literal, add: $a:literal, minmax: $m:literal, reg: $reg:ident;)*) => {$(
        impl AtomicInt for $t {
            #[inline(always)]
            unsafe fn __rmw(op: RmwOp, scope: ScopeKind, order: Ordering, ptr: *mut Self, value: Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let out: $t;
                    match op {
                        RmwOp::Add => by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_atom!("add", $a, $reg, out, ptr, value)),
                        RmwOp::Exch => by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_atom!("exch", $b, $reg, out, ptr, value)),
                        RmwOp::Min => by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_atom!("min", $m, $reg, out, ptr, value)),
                        RmwOp::Max => by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_atom!("max", $m, $reg, out, ptr, value)),
                        RmwOp::And => by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_atom!("and", $b, $reg, out, ptr, value)),
                        RmwOp::Or => by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_atom!("or", $b, $reg, out, ptr, value)),
                        RmwOp::Xor => by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_atom!("xor", $b, $reg, out, ptr, value)),
                    }
                    out
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let _ = (scope, order);
                    crate::sim::atomic::rmw(op, ptr, value)
                }
            }
            #[inline(always)]
            unsafe fn __cas(scope: ScopeKind, order: Ordering, ptr: *mut Self, current: Self, new: Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let out: $t;
                    by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_cas!($b, $reg, out, ptr, current, new));
                    out
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let _ = (scope, order);
                    crate::sim::atomic::cas(ptr, current, new)
                }
            }
            #[inline(always)]
            unsafe fn __load(scope: ScopeKind, order: Ordering, ptr: *const Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let out: $t;
                    by_order!(scope, order, ["relaxed", "acquire", "acquire", "acquire", "acquire"], ptx_ld!($b, $reg, out, ptr));
                    out
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let _ = (scope, order);
                    crate::sim::atomic::load(ptr)
                }
            }
            #[inline(always)]
            unsafe fn __store(scope: ScopeKind, order: Ordering, ptr: *mut Self, value: Self) {
                #[cfg(target_arch = "nvptx64")]
                {
                    by_order!(scope, order, ["relaxed", "release", "release", "release", "release"], ptx_st!($b, $reg, ptr, value))
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let _ = (scope, order);
                    crate::sim::atomic::store(ptr, value)
                }
            }
        }
    )*};
}
atomic_ints! {
    u32 => bits: "b32", add: "u32", minmax: "u32", reg: reg32;
    i32 => bits: "b32", add: "s32", minmax: "s32", reg: reg32;
    u64 => bits: "b64", add: "u64", minmax: "u64", reg: reg64;
    i64 => bits: "b64", add: "u64", minmax: "s64", reg: reg64;
}

/// Declares the public RMW functions.
macro_rules! rmw_fns {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// `ptr` must be valid, aligned and accessed concurrently only atomically.
        #[inline(always)]
        pub unsafe fn $name<S: MemScope, T: AtomicInt>(ptr: *mut T, value: T, order: Ordering) -> T {
            T::__rmw(RmwOp::$op, S::KIND, order, ptr, value)
        }
    )*};
}

rmw_fns! {
    /// `*ptr += value` (wrapping); returns the old value.
    fetch_add => Add;
    /// `*ptr = value`; returns the old value.
    swap => Exch;
    /// `*ptr = min(*ptr, value)`; returns the old value.
    fetch_min => Min;
    /// `*ptr = max(*ptr, value)`; returns the old value.
    fetch_max => Max;
    /// `*ptr &= value`; returns the old value.
    fetch_and => And;
    /// `*ptr |= value`; returns the old value.
    fetch_or => Or;
    /// `*ptr ^= value`; returns the old value.
    fetch_xor => Xor;
}

/// Writes `new` if `*ptr == current`; returns the old value either way.
///
/// # Safety
///
/// As [`fetch_add`].
#[inline(always)]
pub unsafe fn compare_swap<S: MemScope, T: AtomicInt>(
    ptr: *mut T,
    current: T,
    new: T,
    order: Ordering,
) -> T {
    T::__cas(S::KIND, order, ptr, current, new)
}

/// Atomic load (`ld.relaxed`/`ld.acquire`, after a `fence.sc` for `SeqCst`).
///
/// # Safety
///
/// As [`fetch_add`].
#[inline(always)]
pub unsafe fn load<S: MemScope, T: AtomicInt>(ptr: *const T, order: Ordering) -> T {
    T::__load(S::KIND, order, ptr)
}

/// Atomic store (`st.relaxed`/`st.release`, after a `fence.sc` for `SeqCst`).
///
/// # Safety
///
/// As [`fetch_add`].
#[inline(always)]
pub unsafe fn store<S: MemScope, T: AtomicInt>(ptr: *mut T, value: T, order: Ordering) {
    T::__store(S::KIND, order, ptr, value)
}

/// A memory fence at scope `S`: `fence.acq_rel` (or `fence.sc` for `SeqCst`).
#[inline(always)]
pub fn fence<S: MemScope>(order: Ordering) {
    backend::atomic_fence(S::KIND, order)
}
