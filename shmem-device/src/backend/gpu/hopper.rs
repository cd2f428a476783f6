//! nvptx64: the Hopper primitives of `crate::hopper` as inline PTX (sm_90a). Shared-memory
//! operands are 32-bit `.shared::cta` addresses converted from generic pointers.

use crate::contract::hopper::{Kind, TensorMap};
use core::arch::asm;

/// Where a `wgmma`'s A operand comes from.
pub(crate) enum WgmmaA {
    Smem(u64),
    Regs([u32; 4]),
}

#[inline(always)]
pub(crate) fn shared_address(p: *const u8) -> u32 {
    let a: u32;
    // SAFETY: address arithmetic only.
    unsafe {
        asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {p}; cvt.u32.u64 {a}, t; }}",
            p = in(reg64) p,
            a = out(reg32) a,
            options(pure, nomem, nostack)
        )
    };
    a
}

#[inline(always)]
pub(crate) fn fence_proxy_async_shared() {
    // SAFETY: a fence.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) }
}

#[inline(always)]
pub(crate) fn fence_proxy_async_global() {
    // SAFETY: a fence.
    unsafe { asm!("fence.proxy.async.global;", options(nostack)) }
}

#[inline(always)]
pub(crate) fn fence_barrier_init() {
    // SAFETY: a fence.
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) }
}

/// # Safety
///
/// `setmaxnreg`'s contract (`hopper::setmaxnreg_inc`).
#[inline(always)]
pub(crate) unsafe fn setmaxnreg<const N: u32, const INC: bool>() {
    // SAFETY: forwarded contract.
    unsafe {
        if INC {
            asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack))
        } else {
            asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack))
        }
    }
}

/// # Safety
///
/// `MBarrier::init`'s contract.
#[inline(always)]
pub(crate) unsafe fn mbarrier_init(bar: *mut u64, count: u32) {
    // SAFETY: forwarded contract.
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{b}], {n};", b = in(reg32) shared_address(bar.cast()), n = in(reg32) count, options(nostack))
    }
}

/// # Safety
///
/// `MBarrier::arrive`'s contract.
#[inline(always)]
pub(crate) unsafe fn mbarrier_arrive(bar: *mut u64) {
    // SAFETY: forwarded contract.
    unsafe {
        asm!("{{ .reg .b64 s; mbarrier.arrive.shared::cta.b64 s, [{b}]; }}", b = in(reg32) shared_address(bar.cast()), options(nostack))
    }
}

/// # Safety
///
/// `MBarrier::arrive_expect_tx`'s contract.
#[inline(always)]
pub(crate) unsafe fn mbarrier_arrive_expect_tx(bar: *mut u64, bytes: u32) {
    // SAFETY: forwarded contract.
    unsafe {
        asm!("{{ .reg .b64 s; mbarrier.arrive.expect_tx.shared::cta.b64 s, [{b}], {n}; }}", b = in(reg32) shared_address(bar.cast()), n = in(reg32) bytes, options(nostack))
    }
}

/// # Safety
///
/// `MBarrier::expect_tx`'s contract.
#[inline(always)]
pub(crate) unsafe fn mbarrier_expect_tx(bar: *mut u64, bytes: u32) {
    // SAFETY: forwarded contract.
    unsafe {
        asm!("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{b}], {n};", b = in(reg32) shared_address(bar.cast()), n = in(reg32) bytes, options(nostack))
    }
}

/// # Safety
///
/// `MBarrier::try_wait_parity`'s contract.
#[inline(always)]
pub(crate) unsafe fn mbarrier_try_wait_parity(bar: *mut u64, parity: u32) -> bool {
    let done: u32;
    // SAFETY: forwarded contract.
    unsafe {
        asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; selp.u32 {d}, 1, 0, p; }}",
            b = in(reg32) shared_address(bar.cast()),
            q = in(reg32) parity,
            d = out(reg32) done,
            options(nostack)
        )
    };
    done != 0
}

/// # Safety
///
/// `MBarrier::wait_parity`'s contract.
#[inline(always)]
pub(crate) unsafe fn mbarrier_wait_parity(bar: *mut u64, parity: u32) {
    // SAFETY: forwarded contract.
    while !unsafe { mbarrier_try_wait_parity(bar, parity) } {}
}

/// # Safety
///
/// `MBarrier::inval`'s contract.
#[inline(always)]
pub(crate) unsafe fn mbarrier_inval(bar: *mut u64) {
    // SAFETY: forwarded contract.
    unsafe {
        asm!("mbarrier.inval.shared::cta.b64 [{b}];", b = in(reg32) shared_address(bar.cast()), options(nostack))
    }
}

/// # Safety
///
/// `tma::fence_tensormap_acquire`'s contract.
#[inline(always)]
pub(crate) unsafe fn fence_tensormap_acquire(map: *const TensorMap) {
    // SAFETY: forwarded contract.
    unsafe {
        asm!("fence.proxy.tensormap::generic.acquire.gpu [{m}], 128;", m = in(reg64) map, options(nostack))
    }
}

/// # Safety
///
/// `tma::load_2d`'s contract (`rank` 2 or 3).
#[inline(always)]
pub(crate) unsafe fn tma_load(
    map: *const TensorMap,
    dst: *mut u8,
    bar: *mut u64,
    c: [i32; 3],
    rank: u32,
) {
    let (d, b) = (shared_address(dst), shared_address(bar.cast()));
    // SAFETY: forwarded contract.
    unsafe {
        if rank == 2 {
            asm!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
                d = in(reg32) d, m = in(reg64) map, x = in(reg32) c[0], y = in(reg32) c[1], b = in(reg32) b,
                options(nostack)
            )
        } else {
            asm!(
                "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
                d = in(reg32) d, m = in(reg64) map, x = in(reg32) c[0], y = in(reg32) c[1], z = in(reg32) c[2], b = in(reg32) b,
                options(nostack)
            )
        }
    }
}

/// # Safety
///
/// `tma::store_2d`'s contract (`rank` 2 or 3).
#[inline(always)]
pub(crate) unsafe fn tma_store(map: *const TensorMap, src: *const u8, c: [i32; 3], rank: u32) {
    let s = shared_address(src);
    // SAFETY: forwarded contract.
    unsafe {
        if rank == 2 {
            asm!(
                "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
                m = in(reg64) map, x = in(reg32) c[0], y = in(reg32) c[1], s = in(reg32) s,
                options(nostack)
            )
        } else {
            asm!(
                "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [{m}, {{{x}, {y}, {z}}}], [{s}];",
                m = in(reg64) map, x = in(reg32) c[0], y = in(reg32) c[1], z = in(reg32) c[2], s = in(reg32) s,
                options(nostack)
            )
        }
    }
}

#[inline(always)]
pub(crate) fn bulk_commit_group() {
    // SAFETY: no preconditions.
    unsafe { asm!("cp.async.bulk.commit_group;", options(nostack)) }
}

#[inline(always)]
pub(crate) fn bulk_wait_group<const N: u32, const READ: bool>() {
    // SAFETY: waits only.
    unsafe {
        if READ {
            asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack))
        } else {
            asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack))
        }
    }
}

#[inline(always)]
pub(crate) fn wgmma_fence() {
    // SAFETY: no preconditions beyond the warpgroup calling together (documented publicly).
    unsafe { asm!("wgmma.fence.sync.aligned;", options(nostack)) }
}

#[inline(always)]
pub(crate) fn wgmma_commit_group() {
    // SAFETY: as above.
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) }
}

#[inline(always)]
pub(crate) fn wgmma_wait_group<const N: u32>() {
    // SAFETY: as above.
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) }
}

/// One `wgmma.mma_async` instruction: the accumulator operand list generated from the
/// register indices (positional operands), then A (`$aop`), B and the scale-d predicate.
/// `$ty` is the shape's tail and types (`k16.f32.bf16.bf16`), `$tail` the immediates after
/// the scales (16-bit types' `imm-trans-a/b`; none for 8-bit ones).
macro_rules! wgmma_asm {
    ($n:literal, [$d0:literal $($d:literal)*], $dd:ident, $ty:literal, $a:literal, $tail:literal, $b:expr, $sd:expr, $($aop:tt)*) => {
        asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.u32 p, {sd}, 0; wgmma.mma_async.sync.aligned.m64n",
                $n, $ty, " {{{", $d0, "}" $(, ", {", $d, "}")*, "}}, ", $a,
                ", {b}, p, 1, 1", $tail, "; }}"
            ),
            inout(reg32) $dd[$d0], $(inout(reg32) $dd[$d],)*
            $($aop)*
            b = in(reg64) $b,
            sd = in(reg32) $sd,
            options(nostack)
        )
    };
}

/// One `m64nN` shape: its (A source x input type) variants as one function, and the
/// pin of its accumulators (one asm naming them all: a loop of per-register asm would keep
/// LLVM from promoting the array to registers).
macro_rules! wgmma_shape {
    ($f:ident, $settle:ident, $n:literal, [$($d:literal)*]) => {
        #[inline(always)]
        fn $settle(d: &mut [f32; $n / 2], each: &mut dyn FnMut(u32, f32)) {
            // SAFETY: a comment instruction that "reads and writes" each register.
            unsafe { asm!(concat!("// wgmma settle" $(, " {", $d, "}")*), $(inout(reg32) d[$d],)* options(nomem, nostack)) }
            // Straight-line, constant indices: the array stays in registers.
            $(each($d, d[$d]);)*
        }

        #[inline(always)]
        unsafe fn $f<const TB: bool>(kind: Kind, d: &mut [f32; $n / 2], a: &WgmmaA, b: u64, sd: u32) {
            // SAFETY: the caller's contract (`WgmmaAcc::mma_ss`); the operands are this
            // thread's registers and the descriptors.
            unsafe {
                match (kind, a) {
                    (Kind::Bf16, WgmmaA::Smem(ad)) => wgmma_asm!($n, [$($d)*], d, "k16.f32.bf16.bf16", "{a}", ", 0, {tb}", b, sd, a = in(reg64) *ad, tb = const TB as u32,),
                    (Kind::F16, WgmmaA::Smem(ad)) => wgmma_asm!($n, [$($d)*], d, "k16.f32.f16.f16", "{a}", ", 0, {tb}", b, sd, a = in(reg64) *ad, tb = const TB as u32,),
                    (Kind::Bf16, WgmmaA::Regs(r)) => wgmma_asm!($n, [$($d)*], d, "k16.f32.bf16.bf16", "{{{a0}, {a1}, {a2}, {a3}}}", ", {tb}", b, sd,
                        a0 = in(reg32) r[0], a1 = in(reg32) r[1], a2 = in(reg32) r[2], a3 = in(reg32) r[3], tb = const TB as u32,),
                    (Kind::F16, WgmmaA::Regs(r)) => wgmma_asm!($n, [$($d)*], d, "k16.f32.f16.f16", "{{{a0}, {a1}, {a2}, {a3}}}", ", {tb}", b, sd,
                        a0 = in(reg32) r[0], a1 = in(reg32) r[1], a2 = in(reg32) r[2], a3 = in(reg32) r[3], tb = const TB as u32,),
                    // 8-bit: K-major operands only, no transpose immediates (`WgmmaAcc`
                    // refuses MN-major B and register A at compile time).
                    (Kind::E4m3, WgmmaA::Smem(ad)) => wgmma_asm!($n, [$($d)*], d, "k32.f32.e4m3.e4m3", "{a}", "", b, sd, a = in(reg64) *ad,),
                    (Kind::E5m2, WgmmaA::Smem(ad)) => wgmma_asm!($n, [$($d)*], d, "k32.f32.e5m2.e5m2", "{a}", "", b, sd, a = in(reg64) *ad,),
                    (Kind::E4m3 | Kind::E5m2, WgmmaA::Regs(_)) => unreachable!(),
                }
            }
        }
    };
}

/// Every N from 8 to 256 in steps of 8: each step adds 4 accumulator registers, so the index
/// list accumulates and one shape per step is generated, with the dispatch on `R`.
macro_rules! wgmma_family {
    (@acc [$($acc:literal)*] [$(($r:literal, $f:ident, $settle:ident))*]) => {
        /// Pins the accumulator registers after a wait (CUTLASS's
        /// `warpgroup_fence_operand`), so no access to them moves above the `wait_group`.
        /// Then calls `each(i, d[i])` for every register, in straight-line code.
        #[inline(always)]
        pub(crate) fn wgmma_settle<const R: usize>(d: &mut [f32; R], each: &mut dyn FnMut(u32, f32)) {
            // SAFETY: each arm casts `d` to its own length, which equals R in that arm.
            unsafe {
                match R {
                    $($r => $settle(&mut *(d as *mut [f32; R]).cast::<[f32; $r]>(), each),)*
                    _ => unreachable!(),
                }
            }
        }

        /// # Safety
        ///
        /// `WgmmaAcc::mma_ss`'s contract; `R` is one of the shapes (checked by `WgmmaAcc::N`).
        #[inline(always)]
        pub(crate) unsafe fn wgmma<const R: usize, const TB: bool>(kind: Kind, d: &mut [f32; R], a: WgmmaA, b: u64, scale_d: bool) {
            let sd = scale_d as u32;
            // SAFETY: each arm casts `d` to its own length, which equals R in that arm.
            unsafe {
                match R {
                    $($r => $f::<TB>(kind, &mut *(d as *mut [f32; R]).cast::<[f32; $r]>(), &a, b, sd),)*
                    _ => unreachable!(),
                }
            }
        }
    };
    (@acc [$($acc:literal)*] [$($done:tt)*] ($f:ident, $settle:ident, $n:literal, $r:literal: $($new:literal)*) $($rest:tt)*) => {
        wgmma_shape!($f, $settle, $n, [$($acc)* $($new)*]);
        wgmma_family!(@acc [$($acc)* $($new)*] [$($done)* ($r, $f, $settle)] $($rest)*);
    };
}

wgmma_family! { @acc [] []
    (m64n8, settle_n8, 8, 4: 0 1 2 3) (m64n16, settle_n16, 16, 8: 4 5 6 7) (m64n24, settle_n24, 24, 12: 8 9 10 11)
    (m64n32, settle_n32, 32, 16: 12 13 14 15) (m64n40, settle_n40, 40, 20: 16 17 18 19) (m64n48, settle_n48, 48, 24: 20 21 22 23)
    (m64n56, settle_n56, 56, 28: 24 25 26 27) (m64n64, settle_n64, 64, 32: 28 29 30 31) (m64n72, settle_n72, 72, 36: 32 33 34 35)
    (m64n80, settle_n80, 80, 40: 36 37 38 39) (m64n88, settle_n88, 88, 44: 40 41 42 43) (m64n96, settle_n96, 96, 48: 44 45 46 47)
    (m64n104, settle_n104, 104, 52: 48 49 50 51) (m64n112, settle_n112, 112, 56: 52 53 54 55) (m64n120, settle_n120, 120, 60: 56 57 58 59)
    (m64n128, settle_n128, 128, 64: 60 61 62 63) (m64n136, settle_n136, 136, 68: 64 65 66 67) (m64n144, settle_n144, 144, 72: 68 69 70 71)
    (m64n152, settle_n152, 152, 76: 72 73 74 75) (m64n160, settle_n160, 160, 80: 76 77 78 79) (m64n168, settle_n168, 168, 84: 80 81 82 83)
    (m64n176, settle_n176, 176, 88: 84 85 86 87) (m64n184, settle_n184, 184, 92: 88 89 90 91) (m64n192, settle_n192, 192, 96: 92 93 94 95)
    (m64n200, settle_n200, 200, 100: 96 97 98 99) (m64n208, settle_n208, 208, 104: 100 101 102 103) (m64n216, settle_n216, 216, 108: 104 105 106 107)
    (m64n224, settle_n224, 224, 112: 108 109 110 111) (m64n232, settle_n232, 232, 116: 112 113 114 115) (m64n240, settle_n240, 240, 120: 116 117 118 119)
    (m64n248, settle_n248, 248, 124: 120 121 122 123) (m64n256, settle_n256, 256, 128: 124 125 126 127)
}
