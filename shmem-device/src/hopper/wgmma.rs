//! `wgmma.mma_async`: the warpgroup (4 warps, 128 threads) computes D(64 x N) = A(64 x K) *
//! B(K x N) + D on the tensor cores, asynchronously, with f32 accumulators, N = 8, 16, ...,
//! 256, and K = 32 bytes of each operand row: 16 bf16 or f16 elements (`m64nNk16`), or 32 FP8
//! ones, e4m3 or e5m2 (`m64nNk32`, `crate::fp8`).
//!
//! * A comes from shared memory ([`WgmmaAcc::mma_ss`], a [`SmemDesc`]) or, for 16-bit inputs,
//!   from registers ([`WgmmaAcc::mma_rs`], a [`WgmmaA`] fragment); B always from shared
//!   memory. Both are K-major (A as 64 x K, B as N x K, K contiguous; see [`SmemDesc`]); a
//!   16-bit B may also be MN-major ([`WgmmaAcc::mma_ss_b`]). 8-bit operands have no
//!   transposed form in `wgmma`: both K-major, always.
//! * D lives in a [`WgmmaAcc<R>`] of R = N / 2 f32 per thread, laid out as
//!   [`WgmmaAcc::coords`] says.
//! * Order: [`fence`] before the first `mma` and after touching the accumulator or A
//!   registers; `mma`s; [`commit_group`]; [`wait_group`]; then [`WgmmaAcc::regs`].
//!
//! The simulator checks that order: an accumulator read before a `wait_group` covering its
//! group, or an `mma` after a register access without a `fence`, fails the thread.

use super::desc::SmemDesc;
use crate::backend::hopper as backend;
#[doc(hidden)]
pub use crate::contract::hopper::Kind;
pub use crate::contract::hopper::WgmmaA;

/// Input element types of `wgmma`: [`crate::bf16`] (`.bf16`) and [`crate::f16`] (`.f16`),
/// K 16 per instruction; [`crate::E4m3`] (`.e4m3`) and [`crate::E5m2`] (`.e5m2`), K 32.
pub trait WgmmaElem: sealed::Sealed {
    #[doc(hidden)]
    const KIND: Kind;
    /// Bytes per element.
    const BYTES: u32 = Self::KIND.bytes();
    /// K of one instruction (`m64nNk16` or `m64nNk32`): 32 bytes of each operand row.
    const K: u32 = Self::KIND.k();
}

mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for crate::bf16 {}
impl sealed::Sealed for crate::f16 {}
impl WgmmaElem for crate::bf16 {
    const KIND: Kind = Kind::Bf16;
}
impl WgmmaElem for crate::f16 {
    const KIND: Kind = Kind::F16;
}
impl sealed::Sealed for crate::E4m3 {}
impl sealed::Sealed for crate::E5m2 {}
impl WgmmaElem for crate::E4m3 {
    const KIND: Kind = Kind::E4m3;
}
impl WgmmaElem for crate::E5m2 {
    const KIND: Kind = Kind::E5m2;
}

/// The f32 accumulators of an `m64nNk16` `wgmma`, `R = N / 2` per thread (R = 4, 8, ..., 128).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(transparent)]
pub struct WgmmaAcc<const R: usize> {
    regs: [f32; R],
}

impl<const R: usize> WgmmaAcc<R> {
    /// The N of the shape this accumulator serves (compile-time checked: R = 4..=128, R % 4 == 0).
    pub const N: u32 = {
        assert!(
            R >= 4 && R <= 128 && R % 4 == 0,
            "wgmma: WgmmaAcc<R> needs R = N / 2 with N = 8, 16, ..., 256"
        );
        2 * R as u32
    };

    /// Accumulators set to zero.
    #[inline(always)]
    pub const fn zero() -> Self {
        let _ = Self::N;
        Self { regs: [0.0; R] }
    }

    /// Accumulators with these values (the layout of [`WgmmaAcc::coords`]).
    #[inline(always)]
    pub const fn from_regs(regs: [f32; R]) -> Self {
        let _ = Self::N;
        Self { regs }
    }

    /// (row, col) in the 64 x N tile of register `i` of thread `t` (0..128) of the warpgroup:
    /// row `16 w + l / 4 + 8 ((i / 2) % 2)`, col `8 (i / 4) + 2 (l % 4) + i % 2`.
    pub const fn coords(t: u32, i: u32) -> (u32, u32) {
        crate::contract::hopper::wgmma_acc_coords(t, i)
    }

    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T` (`k32` for FP8 `T`) with A and B from
    /// shared memory: `self = A * B + (scale_d ? self : 0)`, asynchronously.
    ///
    /// # Safety
    ///
    /// * All 128 threads of a warpgroup (warps 4g..4g+3 of the block) call it together with
    ///   the same descriptors and `scale_d`, each with its own accumulator.
    /// * A [`fence`] since this thread last touched these registers (or since the kernel
    ///   began); the accumulator is not read or written until a [`wait_group`] covers the
    ///   commit group this `mma` joins.
    /// * `a` (64 x K) and `b` (N x K) describe K-major operands of `T` in this block's
    ///   shared memory, aligned as their swizzle needs, written (and made visible to the
    ///   async proxy by TMA or [`super::fence_proxy_async_shared`]) before, and not written
    ///   until the `mma` completes.
    /// * The kernel is built for sm_90a and runs on an sm_90 GPU.
    #[inline(always)]
    pub unsafe fn mma_ss<T: WgmmaElem>(&mut self, a: SmemDesc, b: SmemDesc, scale_d: bool) {
        // SAFETY: forwarded contract.
        unsafe { self.mma_ss_b::<T, false>(a, b, scale_d) }
    }

    /// As [`WgmmaAcc::mma_ss`], with B's major-ness chosen: `B_MN_MAJOR` = true reads B as
    /// 16 x N with N contiguous (a K x N row-major matrix; `imm-trans-b = 1`), its addresses as
    /// [`SmemDesc::element_address_mn`] says; false is [`WgmmaAcc::mma_ss`]. 16-bit `T` only
    /// with `B_MN_MAJOR` (compile-time checked: `wgmma` has no MN-major 8-bit operands).
    ///
    /// # Safety
    ///
    /// As [`WgmmaAcc::mma_ss`], with `b` describing an operand of that major-ness.
    #[inline(always)]
    pub unsafe fn mma_ss_b<T: WgmmaElem, const B_MN_MAJOR: bool>(
        &mut self,
        a: SmemDesc,
        b: SmemDesc,
        scale_d: bool,
    ) {
        let _ = Self::N;
        const {
            assert!(
                !B_MN_MAJOR || T::BYTES == 2,
                "wgmma: 8-bit operands are K-major only (no imm-trans-b)"
            )
        };
        // SAFETY: forwarded contract.
        unsafe {
            backend::wgmma::<R, B_MN_MAJOR>(
                T::KIND,
                &mut self.regs,
                backend::WgmmaA::Smem(a.0),
                b.0,
                scale_d,
            )
        }
    }

    /// As [`WgmmaAcc::mma_ss`], with A from registers (each thread's [`WgmmaA`] fragment);
    /// 16-bit `T` only (compile-time checked: rshmem has no 8-bit A fragments).
    ///
    /// # Safety
    ///
    /// As [`WgmmaAcc::mma_ss`]; `a`'s registers count as touched registers for the fence rule.
    #[inline(always)]
    pub unsafe fn mma_rs<T: WgmmaElem>(&mut self, a: WgmmaA, b: SmemDesc, scale_d: bool) {
        let _ = Self::N;
        const {
            assert!(
                T::BYTES == 2,
                "wgmma: A from registers is for 16-bit inputs only"
            )
        };
        // SAFETY: forwarded contract.
        unsafe {
            backend::wgmma::<R, false>(
                T::KIND,
                &mut self.regs,
                backend::WgmmaA::Regs(a.0),
                b.0,
                scale_d,
            )
        }
    }

    /// The accumulators, once a [`wait_group`] has covered every `mma` into them: pins the
    /// registers after the wait on the GPU (so the compiler cannot read them earlier); on
    /// the simulator, fails if an `mma` into them is still pending. Writing through the
    /// result counts as touching the registers (a [`fence`] before the next `mma`).
    #[inline(always)]
    pub fn regs(&mut self) -> &mut [f32; R] {
        backend::wgmma_settle::<R>(&mut self.regs, &mut |_, _| {});
        &mut self.regs
    }

    /// As [`WgmmaAcc::regs`], then `each(i, value)` for every register `i` in order, as
    /// straight-line code on the GPU: an epilogue written as a loop over [`WgmmaAcc::regs`]
    /// indexes the array at run time, which keeps it in local memory (ptxas: a stack frame
    /// of `4 R` bytes); this keeps it in registers.
    #[inline(always)]
    pub fn for_each(&mut self, mut each: impl FnMut(u32, f32)) {
        backend::wgmma_settle::<R>(&mut self.regs, &mut each);
    }
}

/// `wgmma.fence.sync.aligned`: orders this thread's register accesses before the `mma`s that
/// follow. All threads of the warpgroup call it.
#[inline(always)]
pub fn fence() {
    backend::wgmma_fence()
}

/// `wgmma.commit_group.sync.aligned`: closes the group of `mma`s this warpgroup issued since
/// the last commit.
#[inline(always)]
pub fn commit_group() {
    backend::wgmma_commit_group()
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` committed groups are pending.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    backend::wgmma_wait_group::<N>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_cover_their_tiles_once() {
        let mut d = std::vec![0u32; 64 * 256];
        for t in 0..128 {
            for i in 0..128 {
                let (r, c) = WgmmaAcc::<128>::coords(t, i);
                d[(r * 256 + c) as usize] += 1;
            }
        }
        assert!(d.iter().all(|&n| n == 1));
        let mut a = [0u32; 64 * 16];
        for t in 0..128 {
            for reg in 0..4 {
                for h in 0..2 {
                    let (r, k) = WgmmaA::coords(t, reg, h);
                    a[(r * 16 + k) as usize] += 1;
                }
            }
        }
        assert!(a.iter().all(|&n| n == 1));
        // The m16n8 C-fragment pattern of each warp: lane 5 holds row 1, columns 2 and 3.
        assert_eq!(WgmmaAcc::<4>::coords(5, 0), (1, 2));
        assert_eq!(WgmmaAcc::<4>::coords(5, 3), (9, 3));
        assert_eq!(WgmmaAcc::<8>::coords(32 + 5, 4), (17, 10));
        assert_eq!(WgmmaAcc::<4>::N, 8);
        assert_eq!(WgmmaAcc::<128>::N, 256);
    }
}
