//! Scoped atomics in inline PTX: `atom`, `ld` and `st` with the scope and ordering the
//! caller names (`atomic::fetch_add::<Sys, u32>(p, 1, Ordering::AcqRel)` is one
//! `atom.acq_rel.sys.add.u32`).

use super::super::ScopedAtomic;
use crate::contract::{MemScopeKind, Ordering, RmwOp};

/// Expands `$m!(sem, scope, args...)` for the (scope, ordering) pair, with the PTX
/// semantics `[relaxed, acquire, release, acq_rel, seq_cst]` given for the five orderings
/// (loads cannot release, stores cannot acquire: those map to the nearest stronger form).
/// `SeqCst` is a `fence.sc` at the scope first, then the `seq_cst` entry, as CUDA's
/// `atomic_ref` does. The template of `asm!` must be a literal, so every pair is spelled out;
/// the match folds away after inlining.
macro_rules! by_order {
    ($scope:expr, $order:expr, [$r:literal, $a:literal, $rel:literal, $ar:literal, $sc:literal], $m:ident!($($args:tt)*)) => {
        match ($scope, $order) {
            (MemScopeKind::Cta, Ordering::Relaxed) => $m!($r, "cta", $($args)*),
            (MemScopeKind::Cta, Ordering::Acquire) => $m!($a, "cta", $($args)*),
            (MemScopeKind::Cta, Ordering::Release) => $m!($rel, "cta", $($args)*),
            (MemScopeKind::Cta, Ordering::AcqRel) => $m!($ar, "cta", $($args)*),
            (MemScopeKind::Cta, Ordering::SeqCst) => { super::atomic_fence(MemScopeKind::Cta, Ordering::SeqCst); $m!($sc, "cta", $($args)*) }
            (MemScopeKind::Gpu, Ordering::Relaxed) => $m!($r, "gpu", $($args)*),
            (MemScopeKind::Gpu, Ordering::Acquire) => $m!($a, "gpu", $($args)*),
            (MemScopeKind::Gpu, Ordering::Release) => $m!($rel, "gpu", $($args)*),
            (MemScopeKind::Gpu, Ordering::AcqRel) => $m!($ar, "gpu", $($args)*),
            (MemScopeKind::Gpu, Ordering::SeqCst) => { super::atomic_fence(MemScopeKind::Gpu, Ordering::SeqCst); $m!($sc, "gpu", $($args)*) }
            (MemScopeKind::Sys, Ordering::Relaxed) => $m!($r, "sys", $($args)*),
            (MemScopeKind::Sys, Ordering::Acquire) => $m!($a, "sys", $($args)*),
            (MemScopeKind::Sys, Ordering::Release) => $m!($rel, "sys", $($args)*),
            (MemScopeKind::Sys, Ordering::AcqRel) => $m!($ar, "sys", $($args)*),
            (MemScopeKind::Sys, Ordering::SeqCst) => { super::atomic_fence(MemScopeKind::Sys, Ordering::SeqCst); $m!($sc, "sys", $($args)*) }
        }
    };
}

/// `atom.<sem>.<scope>.<op>.<type> out, [ptr], v;`
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
        impl ScopedAtomic for $t {
            #[inline(always)]
            unsafe fn rmw(op: RmwOp, scope: MemScopeKind, order: Ordering, ptr: *mut Self, value: Self) -> Self {
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
            #[inline(always)]
            unsafe fn cas(scope: MemScopeKind, order: Ordering, ptr: *mut Self, current: Self, new: Self) -> Self {
                let out: $t;
                by_order!(scope, order, ["relaxed", "acquire", "release", "acq_rel", "acq_rel"], ptx_cas!($b, $reg, out, ptr, current, new));
                out
            }
            #[inline(always)]
            unsafe fn load(scope: MemScopeKind, order: Ordering, ptr: *const Self) -> Self {
                let out: $t;
                by_order!(scope, order, ["relaxed", "acquire", "acquire", "acquire", "acquire"], ptx_ld!($b, $reg, out, ptr));
                out
            }
            #[inline(always)]
            unsafe fn store(scope: MemScopeKind, order: Ordering, ptr: *mut Self, value: Self) {
                by_order!(scope, order, ["relaxed", "release", "release", "release", "release"], ptx_st!($b, $reg, ptr, value))
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

/// `ld.relaxed.<scope>.v4.b32`.
///
/// # Safety
///
/// As `atomic::load_relaxed_x4`.
#[inline(always)]
pub(crate) unsafe fn load_relaxed_x4(scope: MemScopeKind, ptr: *const [u32; 4]) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    macro_rules! ld4 {
        ($sc:literal) => {
            core::arch::asm!(
                concat!("ld.relaxed.", $sc, ".v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];"),
                a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                p = in(reg64) ptr,
                options(nostack, readonly)
            )
        };
    }
    // SAFETY: the caller's contract (16 valid, aligned bytes; concurrent accesses atomic).
    unsafe {
        match scope {
            MemScopeKind::Cta => ld4!("cta"),
            MemScopeKind::Gpu => ld4!("gpu"),
            MemScopeKind::Sys => ld4!("sys"),
        }
    }
    [a, b, c, d]
}

/// `st.relaxed.<scope>.v4.b32`.
///
/// # Safety
///
/// As `atomic::store_relaxed_x4`.
#[inline(always)]
pub(crate) unsafe fn store_relaxed_x4(scope: MemScopeKind, ptr: *mut [u32; 4], v: [u32; 4]) {
    macro_rules! st4 {
        ($sc:literal) => {
            core::arch::asm!(
                concat!("st.relaxed.", $sc, ".v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};"),
                p = in(reg64) ptr,
                a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
                options(nostack)
            )
        };
    }
    // SAFETY: the caller's contract.
    unsafe {
        match scope {
            MemScopeKind::Cta => st4!("cta"),
            MemScopeKind::Gpu => st4!("gpu"),
            MemScopeKind::Sys => st4!("sys"),
        }
    }
}

/// `ld.v4.b32` (weak).
///
/// # Safety
///
/// As `vector::load`.
#[inline(always)]
pub(crate) unsafe fn load_x4(ptr: *const [u32; 4]) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller's contract (16 valid, aligned bytes; no racing write).
    unsafe {
        core::arch::asm!(
            "ld.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            p = in(reg64) ptr,
            options(nostack, readonly, preserves_flags)
        )
    };
    [a, b, c, d]
}

/// `st.v4.b32` with a cache operator: one 16-byte store.
macro_rules! store_x4 {
    ($($(#[$doc:meta])* $name:ident: $op:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As `vector::store`.
        #[inline(always)]
        pub(crate) unsafe fn $name(ptr: *mut [u32; 4], v: [u32; 4]) {
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!(
                    concat!($op, " [{p}], {{{a}, {b}, {c}, {d}}};"),
                    p = in(reg64) ptr,
                    a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3],
                    options(nostack, preserves_flags)
                )
            };
        }
    )*};
}
store_x4! {
    /// `st.v4.b32` (weak).
    store_x4: "st.v4.b32";
    /// `st.cs.v4.b32` (weak, cache-streaming: evict-first in L1 and L2).
    store_x4_streaming: "st.cs.v4.b32";
}

/// `st.global.b{16,32,64}`: one plain store through a generic address known to be global
/// (`cvta.to.global` first, which ptxas folds away).
macro_rules! store_global {
    ($($name:ident: $t:ty, $reg:ident, $bits:literal;)*) => {$(
        /// # Safety
        ///
        /// As `global::store`.
        #[inline(always)]
        pub(crate) unsafe fn $name(ptr: *mut $t, v: $t) {
            // SAFETY: the caller's contract (a valid, aligned global address; no racing
            // access).
            unsafe {
                core::arch::asm!(
                    concat!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; st.global.b", $bits, " [g], {v}; }}"),
                    p = in(reg64) ptr,
                    v = in($reg) v,
                    options(nostack, preserves_flags)
                )
            };
        }
    )*};
}
store_global! {
    store_global_u16: u16, reg16, "16";
    store_global_u32: u32, reg32, "32";
    store_global_u64: u64, reg64, "64";
}
