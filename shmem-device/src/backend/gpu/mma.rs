//! nvptx64: warp-level tensor cores as inline PTX: `mma.sync` (sm_80), `ldmatrix` (sm_75),
//! `stmatrix` (sm_90), `cp.async` (sm_80). The simulator's twin is `sim::mma`. The callers'
//! contracts (converged warp, alignment, shared-memory addresses) are on the public functions
//! in `crate::mma`.

use core::arch::asm;

macro_rules! mma_16bit {
    ($($name:ident: $ty:literal;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
            let mut d = [0f32; 4];
            // SAFETY: registers only; the caller's contract (all 32 lanes converged) is
            // documented on `mma::mma_sync`.
            unsafe {
                asm!(
                    concat!("mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty, ".f32 ",
                        "{{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, ",
                        "{{{c0}, {c1}, {c2}, {c3}}};"),
                    d0 = out(reg32) d[0], d1 = out(reg32) d[1], d2 = out(reg32) d[2], d3 = out(reg32) d[3],
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                    c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
                    options(pure, nomem, nostack),
                )
            };
            d
        }
    )*};
}

mma_16bit! {
    mma_m16n8k16_bf16: "bf16";
    mma_m16n8k16_f16: "f16";
}

#[inline(always)]
pub(crate) fn mma_m16n8k8_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let mut d = [0f32; 4];
    // SAFETY: as `mma_m16n8k16_bf16`.
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, \
             {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};",
            d0 = out(reg32) d[0], d1 = out(reg32) d[1], d2 = out(reg32) d[2], d3 = out(reg32) d[3],
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
            options(pure, nomem, nostack),
        )
    };
    d
}

/// `ldmatrix` of `N` (1, 2, 4) matrices; `row` is this lane's row address (generic, in shared
/// memory). `N` and `trans` are constants after inlining, so one arm remains.
#[inline(always)]
pub(crate) fn ldmatrix<const N: usize>(row: *const u8, trans: bool) -> [u32; N] {
    let mut r = [0u32; N];
    macro_rules! ld {
        ($x:literal, $t:literal; $($reg:ident = $i:literal),*) => {
            // SAFETY: the caller's contract (converged warp, 16-byte aligned shared rows) is
            // on `mma::ldmatrix`; the generic address is converted to the shared window.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ldmatrix.sync.aligned.m8n8.",
                        $x, $t, ".shared.b16 {{", ld!(@list $($reg),*), "}}, [s]; }}"),
                    p = in(reg64) row,
                    $($reg = out(reg32) r[$i],)*
                    options(readonly, nostack),
                )
            }
        };
        (@list $first:ident $(, $reg:ident)*) => {
            concat!("{", stringify!($first), "}" $(, ", {", stringify!($reg), "}")*)
        };
    }
    match (N, trans) {
        (1, false) => ld!("x1", ""; r0 = 0),
        (1, true) => ld!("x1", ".trans"; r0 = 0),
        (2, false) => ld!("x2", ""; r0 = 0, r1 = 1),
        (2, true) => ld!("x2", ".trans"; r0 = 0, r1 = 1),
        (4, false) => ld!("x4", ""; r0 = 0, r1 = 1, r2 = 2, r3 = 3),
        (4, true) => ld!("x4", ".trans"; r0 = 0, r1 = 1, r2 = 2, r3 = 3),
        _ => unreachable!("ldmatrix takes 1, 2 or 4 matrices"),
    }
    r
}

/// `stmatrix` of `N` (1, 2, 4) matrices (sm_90).
#[inline(always)]
pub(crate) fn stmatrix<const N: usize>(row: *mut u8, regs: [u32; N], trans: bool) {
    macro_rules! st {
        ($x:literal, $t:literal; $($reg:ident = $i:literal),*) => {
            // SAFETY: as `ldmatrix`, writing.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; stmatrix.sync.aligned.m8n8.",
                        $x, $t, ".shared.b16 [s], {{", st!(@list $($reg),*), "}}; }}"),
                    p = in(reg64) row,
                    $($reg = in(reg32) regs[$i],)*
                    options(nostack),
                )
            }
        };
        (@list $first:ident $(, $reg:ident)*) => {
            concat!("{", stringify!($first), "}" $(, ", {", stringify!($reg), "}")*)
        };
    }
    match (N, trans) {
        (1, false) => st!("x1", ""; r0 = 0),
        (1, true) => st!("x1", ".trans"; r0 = 0),
        (2, false) => st!("x2", ""; r0 = 0, r1 = 1),
        (2, true) => st!("x2", ".trans"; r0 = 0, r1 = 1),
        (4, false) => st!("x4", ""; r0 = 0, r1 = 1, r2 = 2, r3 = 3),
        (4, true) => st!("x4", ".trans"; r0 = 0, r1 = 1, r2 = 2, r3 = 3),
        _ => unreachable!("stmatrix takes 1, 2 or 4 matrices"),
    }
}

/// `cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes`: `bytes` is 4, 8 or 16
/// (16 for `.cg`), a constant after inlining; bytes past `src_bytes` are zero-filled.
#[inline(always)]
pub(crate) fn cp_async(dst: *mut u8, src: *const u8, bytes: usize, src_bytes: usize, cg: bool) {
    macro_rules! cp {
        ($cache:literal, $n:literal) => {
            // SAFETY: the caller's contract (aligned, `dst` in shared and `src` in global
            // memory, both valid for `bytes`) is on `mma::cp_async`.
            unsafe {
                asm!(
                    concat!("{{ .reg .u64 d, s; cvta.to.shared.u64 d, {dst}; cvta.to.global.u64 s, {src}; ",
                        "cp.async.", $cache, ".shared.global [d], [s], ", $n, ", {n}; }}"),
                    dst = in(reg64) dst,
                    src = in(reg64) src,
                    n = in(reg32) src_bytes as u32,
                    options(nostack),
                )
            }
        };
    }
    match (cg, bytes) {
        (false, 4) => cp!("ca", "4"),
        (false, 8) => cp!("ca", "8"),
        (false, 16) => cp!("ca", "16"),
        (true, 16) => cp!("cg", "16"),
        _ => unreachable!("cp.async copies 4, 8 or 16 bytes (.cg: 16)"),
    }
}

#[inline(always)]
pub(crate) fn cp_async_commit() {
    // SAFETY: no operands; orders nothing by itself.
    unsafe { asm!("cp.async.commit_group;", options(nostack)) }
}

/// `cp.async.wait_group n` for `n` in `0..=7` (the count is an immediate in PTX; a constant
/// after inlining).
#[inline(always)]
pub(crate) fn cp_async_wait_group(n: usize) {
    macro_rules! wait {
        ($($k:literal),*) => {
            match n {
                // SAFETY: waits for this thread's own copies; no operands.
                $($k => unsafe { asm!(concat!("cp.async.wait_group ", stringify!($k), ";"), options(nostack)) },)*
                _ => unreachable!("cp_async_wait_group takes 0..=7"),
            }
        };
    }
    wait!(0, 1, 2, 3, 4, 5, 6, 7)
}

#[inline(always)]
pub(crate) fn cp_async_wait_all() {
    // SAFETY: as `cp_async_wait_group`.
    unsafe { asm!("cp.async.wait_all;", options(nostack)) }
}
