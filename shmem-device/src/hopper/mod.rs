//! Hopper (sm_90a) primitives: the asynchronous warpgroup tensor-core MMA (`wgmma`), the
//! shared-memory matrix descriptors and swizzles it reads, `mbarrier` transaction barriers,
//! the bulk tensor copy engine (TMA) and the proxy fences between them, and `setmaxnreg`.
//!
//! * [`desc`]: [`Swizzle`] (the exact 32/64/128-byte address patterns) and [`SmemDesc`] (the
//!   64-bit shared-memory matrix descriptor `wgmma` takes).
//! * [`mbarrier`]: [`MBarrier`] in shared memory: arrival counts, transaction bytes, phases.
//! * [`tma`]: [`TensorMap`] (made on the host by `rshmem::TensorMap`) and the 2-D/3-D tensor
//!   copies global → shared (completing on an mbarrier) and shared → global (bulk groups).
//! * [`wgmma`]: [`WgmmaAcc`] accumulators for `m64nNk16` with N = 8, 16, ..., 256, A from shared
//!   memory or from registers ([`WgmmaA`]), `fence`/`commit_group`/`wait_group`.
//!
//! Code using these must be built for `Arch::Sm90a` (rshmem-builder) and runs on sm_90 GPUs
//! only; the simulator runs all of it on the host (see `rshmem_device::sim` for what it models
//! and what it refuses). A tile GEMM that puts them together is in `docs/tensor-cores.md (## Hopper)`.
//!
//! ```ignore
//! use rshmem_device::hopper::{mbarrier::MBarrier, tma, wgmma::{self, WgmmaAcc}, SmemDesc, Swizzle};
//! // one warpgroup: thread 0 loads a 64x64 bf16 tile of A and of B with TMA, all wait, all mma.
//! if thread::thread_idx_x() == 0 {
//!     unsafe { bar.init(1); hopper::fence_barrier_init() };
//! }
//! thread::sync_threads();
//! if thread::thread_idx_x() == 0 {
//!     unsafe {
//!         bar.arrive_expect_tx(2 * 64 * 64 * 2);
//!         tma::load_2d(map_a, sa, bar, 0, m0);
//!         tma::load_2d(map_b, sb, bar, 0, n0);
//!     }
//! }
//! unsafe { bar.wait_parity(0) };
//! let mut acc = WgmmaAcc::<32>::zero(); // m64n64: 32 f32 per thread
//! wgmma::fence();
//! for k in 0..4 {
//!     let a = SmemDesc::k_major(sa.add(k * 16), Swizzle::B128, 8 * 128);
//!     let b = SmemDesc::k_major(sb.add(k * 16), Swizzle::B128, 8 * 128);
//!     unsafe { acc.mma_ss::<bf16>(a, b, k > 0) };
//! }
//! wgmma::commit_group();
//! wgmma::wait_group::<0>();
//! let d = acc.regs();
//! ```

use crate::backend::hopper as backend;

pub mod desc;
pub mod mbarrier;
pub mod tma;
pub mod wgmma;

pub use desc::{SmemDesc, Swizzle};
pub use mbarrier::MBarrier;
pub use tma::{TensorMap, TmaType};
pub use wgmma::{WgmmaA, WgmmaAcc, WgmmaElem};

/// The 32-bit shared-memory (`.shared::cta` window) address of `p`, a generic pointer into
/// this block's shared memory: what swizzle patterns and descriptors are computed on. Align
/// swizzled buffers by this address (1024 bytes for [`Swizzle::B128`]), not by `p`.
///
/// On the simulator a pointer outside the block's shared memory fails the thread.
#[inline(always)]
pub fn shared_address<T>(p: *const T) -> u32 {
    backend::shared_address(p.cast())
}

/// This block's dynamic shared memory from the first `align`-aligned shared address (what
/// swizzle patterns are computed on: 1024 for [`Swizzle::B128`]) at or after `skip` bytes,
/// which the caller keeps for itself (mbarriers: see [`MBarrier::in_dynamic_shared`]).
///
/// # Safety
///
/// The launch gave at least `skip + align` more bytes of dynamic shared memory than the
/// caller uses from the result; `align` is a power of two.
#[inline(always)]
pub unsafe fn dynamic_shared_aligned(skip: u32, align: u32) -> *mut u8 {
    let (base, _) = crate::thread::dynamic_shared::<u8>();
    let at = shared_address(base) + skip;
    let pad = at.wrapping_neg() & (align - 1);
    // SAFETY: within the launch's shared memory (the caller's contract).
    unsafe { base.add((skip + pad) as usize) }
}

/// `fence.proxy.async.shared::cta`: makes this thread's generic-proxy writes to shared memory
/// visible to the async proxy (TMA stores, `wgmma` operand reads) and orders async-proxy writes
/// before later generic reads. Call it after writing shared memory that a TMA store or a
/// `wgmma` will read, before the `sync_threads` that hands it over.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    backend::fence_proxy_async_shared()
}

/// `fence.proxy.async.global`: orders this thread's earlier generic-proxy accesses of global
/// memory before its later async-proxy ones (TMA loads) and the other way round. A TMA load
/// of data another thread, PE or copy engine wrote, published by a flag this thread
/// acquired (`ld.acquire.sys`, or a poll and then `fence.acq_rel.sys`), comes after this
/// fence: the acquire orders the generic proxy only.
#[inline(always)]
pub fn fence_proxy_async_global() {
    backend::fence_proxy_async_global()
}

/// `fence.mbarrier_init.release.cluster`: makes the `mbarrier.init`s this thread made visible
/// to the async proxy (TMA's `complete_tx`) and to other threads; call it after initialising
/// barriers, before the `sync_threads` that publishes them.
#[inline(always)]
pub fn fence_barrier_init() {
    backend::fence_barrier_init()
}

/// `setmaxnreg.inc.sync.aligned.u32 N`: raises this warpgroup's per-thread register limit to
/// `N` (24..=256, a multiple of 8), waiting until the registers are free. Compile-time checked.
///
/// ptxas 13.0 acts on `setmaxnreg` only when it knows the kernel's register count at entry
/// (`.maxnreg`, CUDA's `__launch_bounds__`/`maxnreg`), which rustc's nvptx backend cannot
/// emit yet: it then reports "C7508: 'setmaxnreg' ignored" and the instruction does nothing.
///
/// # Safety
///
/// All 128 threads of the warpgroup (4 consecutive warps starting at a warp index divisible
/// by 4) must call it together with the same `N`, and the kernel must be launched with a
/// register budget that other warpgroups' `setmaxnreg_dec` release (`N` above the launch's
/// allocation otherwise waits forever).
#[inline(always)]
pub unsafe fn setmaxnreg_inc<const N: u32>() {
    const {
        assert!(
            N >= 24 && N <= 256 && N % 8 == 0,
            "setmaxnreg: N must be 24..=256, a multiple of 8"
        )
    };
    // SAFETY: forwarded contract.
    unsafe { backend::setmaxnreg::<N, true>() }
}

/// `setmaxnreg.dec.sync.aligned.u32 N`: lowers this warpgroup's per-thread register limit to
/// `N` (24..=256, a multiple of 8), releasing the rest to other warpgroups.
///
/// # Safety
///
/// As [`setmaxnreg_inc`]; in addition the code after it must fit in `N` registers (ptxas
/// spills otherwise decide nothing: the limit is set at run time).
#[inline(always)]
pub unsafe fn setmaxnreg_dec<const N: u32>() {
    const {
        assert!(
            N >= 24 && N <= 256 && N % 8 == 0,
            "setmaxnreg: N must be 24..=256, a multiple of 8"
        )
    };
    // SAFETY: forwarded contract.
    unsafe { backend::setmaxnreg::<N, false>() }
}
