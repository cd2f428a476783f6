//! One `wgmma` chain per shape: D(64 x N) = A(64 x K) * B(N x K)^T over steps of 32 bytes of
//! K (`m64nNk16` for bf16/f16, `m64nNk32` for e4m3/e5m2), operands loaded by TMA in one of the
//! four swizzle modes, A read from shared memory (descriptors) or, for 16-bit types, from
//! registers (fragments loaded from global memory).

use rshmem_device::hopper::wgmma::{self, WgmmaA, WgmmaAcc};
use rshmem_device::hopper::{
    self, dynamic_shared_aligned, tma, MBarrier, SmemDesc, Swizzle, TensorMap,
};
use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16, E4m3, E5m2};

/// The input type of code `ty`: 0 bf16, 1 f16, 2 e4m3, 3 e5m2; its bytes per element.
pub const fn type_bytes(ty: u32) -> u32 {
    if ty >= 2 {
        1
    } else {
        2
    }
}

/// Where the boxes of a K-major operand of `rows` rows land and how `wgmma` finds K-slice
/// `ks` (32 bytes of K: 16 16-bit or 32 8-bit elements): boxes of a span of K (16 bytes
/// without swizzle) one after another, each `rows * span` bytes.
pub fn operand_desc(base: u32, rows: u32, swizzle: Swizzle, ks: u32) -> SmemDesc {
    let e = swizzle.row_bytes() / 2;
    let (b, off) = (16 * ks / e, (16 * ks % e) * 2);
    let start = base + b * rows * 2 * e + off;
    match swizzle {
        Swizzle::None => SmemDesc::new(start, rows * 16, 128, swizzle),
        s => SmemDesc::new(start, 16, 8 * s.row_bytes(), s),
    }
}

/// Thread 0 loads an operand of `rows` x `k` elements of `size` bytes at row `row0` into
/// `dst`, box by box, on `bar`.
///
/// # Safety
///
/// `map`'s boxes are `span / size` x `rows`; `dst` has room for `rows * k * size` bytes.
pub unsafe fn load_operand(
    map: *const TensorMap,
    dst: *mut u8,
    bar: &hopper::MBarrier,
    (rows, k, size): (u32, u32, u32),
    swizzle: Swizzle,
    k0: u32,
    row0: u32,
) {
    let e = swizzle.row_bytes() / size;
    for b in 0..k / e {
        // SAFETY: the caller's contract.
        unsafe {
            tma::load_2d(
                map,
                dst.add((b * rows * swizzle.row_bytes()) as usize),
                bar,
                (k0 + b * e) as i32,
                row0 as i32,
            )
        };
    }
}

/// The swizzle of code `c` (0 none, 1 32 B, 2 64 B, 3 128 B).
pub fn swizzle_of(c: u32) -> Swizzle {
    [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128][(c & 3) as usize]
}

/// The body shared by every shape.
///
/// # Safety
///
/// As the kernels generated below.
#[inline(always)]
unsafe fn mma_tile<const R: usize>(
    map_a: *const TensorMap,
    map_b: *const TensorMap,
    a: *const u16,
    k: u32,
    swizzle: u32,
    a_regs: u32,
    ty: u32,
    out: *mut f32,
) {
    let n = WgmmaAcc::<R>::N;
    let tid = thread::thread_idx_x();
    let sw = swizzle_of(swizzle);
    let size = type_bytes(ty);
    // SAFETY: the launch gives `(64 + N) * k * size + 2048` bytes of shared memory; the first
    // 8 hold this barrier only.
    let bar = unsafe { MBarrier::in_dynamic_shared(0) };
    // SAFETY: past the barrier, the padding (< 1024) and both operands fit.
    let sa = unsafe { dynamic_shared_aligned(8, 1024) };
    // SAFETY: B follows A's `64 * k * size` bytes, inside the same allocation.
    let sb = unsafe { sa.add((64 * k * size) as usize) };
    if tid == 0 {
        // SAFETY: one thread initialises the fresh barrier, published by the fence and the
        // `sync_threads` below before anyone uses it.
        unsafe {
            bar.init(1);
            hopper::fence_barrier_init();
        }
    }
    thread::sync_threads();
    if tid == 0 {
        // SAFETY: both maps are tensor maps in global memory (the kernels' contract), fenced
        // before their copies, with boxes of `span / size` x rows; `sa` and `sb` hold 64 and
        // N rows of `k` elements; the barrier expects this arrival and every copied byte.
        unsafe {
            tma::fence_tensormap_acquire(map_a);
            tma::fence_tensormap_acquire(map_b);
            bar.arrive_expect_tx((64 + n) * k * size);
            load_operand(map_a, sa, bar, (64, k, size), sw, 0, 0);
            load_operand(map_b, sb, bar, (n, k, size), sw, 0, 0);
        }
    }
    // SAFETY: the barrier is initialised; its first phase (parity 0) is the current one.
    unsafe { bar.wait_parity(0) };
    let (a_at, b_at) = (hopper::shared_address(sa), hopper::shared_address(sb));
    let mut acc = WgmmaAcc::<R>::zero();
    // A fragments from global memory, per K-slice (the registers are written before the fence).
    let frag = |ks: u32| {
        let mut r = [0u32; 4];
        for (i, w) in r.iter_mut().enumerate() {
            for h in 0..2 {
                let (row, kk) = WgmmaA::coords(tid, i as u32, h);
                // SAFETY: `row < 64` and `16 * ks + kk < k`: inside the 64 x `k` A.
                let v = unsafe { *a.add((row * k + 16 * ks + kk) as usize) } as u32;
                *w |= v << (16 * h);
            }
        }
        WgmmaA(r)
    };
    let steps = k * size / 32;
    let mut frags = [WgmmaA::default(); 4];
    if a_regs != 0 && size == 2 {
        for (ks, f) in frags.iter_mut().enumerate().take(steps as usize) {
            *f = frag(ks as u32);
        }
    }
    wgmma::fence();
    for ks in 0..steps {
        let bd = operand_desc(b_at, n, sw, ks);
        let first = ks == 0;
        // SAFETY: the block's 128 threads (one warpgroup) issue every step together after
        // `wgmma::fence`; the operands were loaded by TMA (waited for above) and stay
        // unwritten; the accumulator is read only after `wait_group::<0>` below; sm_90a code.
        unsafe {
            let ad = operand_desc(a_at, 64, sw, ks);
            match (a_regs != 0, ty) {
                (false, 0) => acc.mma_ss::<bf16>(ad, bd, !first),
                (false, 1) => acc.mma_ss::<f16>(ad, bd, !first),
                (false, 2) => acc.mma_ss::<E4m3>(ad, bd, !first),
                (false, _) => acc.mma_ss::<E5m2>(ad, bd, !first),
                (true, 0) => acc.mma_rs::<bf16>(frags[ks as usize], bd, !first),
                (true, _) => acc.mma_rs::<f16>(frags[ks as usize], bd, !first),
            }
        }
    }
    wgmma::commit_group();
    wgmma::wait_group::<0>();
    acc.for_each(|i, v| {
        let (row, col) = WgmmaAcc::<R>::coords(tid, i);
        // SAFETY: `row < 64`, `col < N`: inside the 64 x N `out`.
        unsafe { *out.add((row * n + col) as usize) = v };
    });
    thread::sync_threads();
    if tid == 0 {
        // SAFETY: every thread has passed its wait (the barrier above); nothing uses it again.
        unsafe { bar.inval() };
    }
}

/// One kernel per tested N: `wgmma_n{N}(map_a, map_b, a, k, swizzle, a_regs, ty, out)`, `ty`
/// the input type ([`type_bytes`]: 0 bf16, 1 f16, 2 e4m3, 3 e5m2). `k` is 16..=64 16-bit or
/// 32..=128 8-bit elements (a multiple of the swizzle span), `a` the row-major 64 x `k` A of
/// a 16-bit type (read when `a_regs != 0`; 8-bit inputs ignore `a_regs`), `out` the row-major
/// 64 x N f32 result. One block of 128 threads; shared memory `(64 + N) * k * size + 2048`
/// bytes.
macro_rules! mma_kernels {
    ($($name:ident => $r:literal),*) => {$(
        /// See [`mma_kernels`]-generated docs above: D = A B^T for one N.
        ///
        /// # Safety
        ///
        /// `map_a`/`map_b` point to fenced-for-launch tensor maps in global memory for the 64 x
        /// `k` A and N x `k` B as above; `a` holds 64 x `k` elements, `out` 64 x N f32;
        /// launched as one block of 128 threads with the shared memory above, on sm_90a code.
        #[kernel]
        pub unsafe fn $name(map_a: *const TensorMap, map_b: *const TensorMap, a: *const u16, k: u32, swizzle: u32, a_regs: u32, ty: u32, out: *mut f32) {
            // SAFETY: this kernel's contract is `mma_tile`'s.
            unsafe { mma_tile::<$r>(map_a, map_b, a, k, swizzle, a_regs, ty, out) }
        }
    )*};
}

mma_kernels!(wgmma_n8 => 4, wgmma_n64 => 32, wgmma_n128 => 64, wgmma_n256 => 128);

/// Issues one `wgmma` of shape m64n`n` (every N from 8 to 256; `ty` bf16 0, f16 1, e4m3 2 or
/// e5m2 3; A from shared memory or, 16-bit, registers) on zeroed operands at shared address 0 and stores thread `t`'s first
/// accumulator to `out[t]`. Its purpose is that ptxas assembles every shape of the family at
/// each image build (the other kernels use four); run, it checks that each shape issues and
/// completes (all zeros). One block of 128 threads; shared memory `256 * 32 + 64 * 32`.
///
/// # Safety
///
/// `out` has room for 128 f32s; launched as one block of 128 threads with the shared memory
/// above, on sm_90a code.
#[kernel]
pub unsafe fn wgmma_every_shape(n: u32, ty: u32, a_regs: u32, out: *mut f32) {
    let tid = thread::thread_idx_x();
    // SAFETY: the launch gives the shared memory above (padding included, the contract).
    let base = unsafe { dynamic_shared_aligned(0, 1024) };
    let mut i = tid;
    while i < 256 * 32 + 64 * 32 {
        // SAFETY: `i` is inside the zeroed operands' bytes.
        unsafe { *base.add(i as usize) = 0 };
        i += 128;
    }
    hopper::fence_proxy_async_shared();
    thread::sync_threads();
    let a = hopper::shared_address(base);
    let (ad, bd) = (
        SmemDesc::new(a, 16, 256, Swizzle::B32),
        SmemDesc::new(a + 64 * 32, 16, 256, Swizzle::B32),
    );
    macro_rules! every {
        ($($r:literal)*) => {
            match n / 2 {
                $($r => {
                    let mut acc = WgmmaAcc::<$r>::zero();
                    wgmma::fence();
                    // SAFETY: the 128 threads (one warpgroup) issue it together after the
                    // fence; both operands lie in the zeroed shared memory, made visible to
                    // the async proxy above; the accumulator is read after `wait_group`.
                    unsafe {
                        match (a_regs != 0, ty) {
                            (false, 0) => acc.mma_ss::<bf16>(ad, bd, false),
                            (false, 1) => acc.mma_ss::<f16>(ad, bd, false),
                            (false, 2) => acc.mma_ss::<E4m3>(ad, bd, false),
                            (false, _) => acc.mma_ss::<E5m2>(ad, bd, false),
                            (true, 0) => acc.mma_rs::<bf16>(WgmmaA::default(), bd, false),
                            (true, _) => acc.mma_rs::<f16>(WgmmaA::default(), bd, false),
                        }
                    }
                    wgmma::commit_group();
                    wgmma::wait_group::<0>();
                    // SAFETY: `tid < 128`, the room `out` has.
                    unsafe { *out.add(tid as usize) = acc.regs()[0] };
                })*
                // SAFETY: as above.
                _ => unsafe { *out.add(tid as usize) = f32::NAN },
            }
        };
    }
    every!(4 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64 68 72 76 80 84 88 92 96 100 104 108 112 116 120 124 128);
}
