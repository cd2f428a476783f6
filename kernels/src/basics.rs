//! GPU basics on every backend: warp shuffles and votes, scoped atomics, dynamic shared
//! memory, and system-scope atomics through a peer mapping (`shmem::ptr`).

use rshmem_device::atomic::{self, Gpu, Ordering, Sys};
use rshmem_device::prelude::*;
use rshmem_device::warp::FULL_MASK;

/// Values per thread written by [`warp_ops`].
pub const WARP_OPS_OUT: usize = 8;

/// Thread `t` (one warp per block) reads `v = input[t]` and writes `WARP_OPS_OUT` results:
/// `shfl_idx(v, 3)`, `shfl_up(v, 1)`, `shfl_down(v, 2)`, `shfl_xor(v, 5)`, `ballot(v odd)`,
/// `all(v > 0)`, `any(v == 7)`, `warp::sum(v)` (and a 64-bit shuffle checked into slot 0).
///
/// # Safety
///
/// Whole warps only: `input` holds one `u32` per launched thread and `out` `WARP_OPS_OUT`
/// per launched thread.
#[kernel]
pub unsafe fn warp_ops(input: *const u32, out: *mut u32) {
    let t = thread::index_1d() as usize;
    let v = *input.add(t);
    let o = out.add(t * WARP_OPS_OUT);
    let wide = warp::shfl_idx(FULL_MASK, (v as u64) << 32 | v as u64, 3);
    *o = if wide >> 32 == wide & 0xffff_ffff {
        wide as u32
    } else {
        u32::MAX
    };
    *o.add(1) = warp::shfl_up(FULL_MASK, v, 1);
    *o.add(2) = warp::shfl_down(FULL_MASK, v, 2);
    *o.add(3) = warp::shfl_xor(FULL_MASK, v, 5);
    *o.add(4) = warp::ballot(FULL_MASK, v % 2 == 1);
    *o.add(5) = warp::all(FULL_MASK, v > 0) as u32;
    *o.add(6) = warp::any(FULL_MASK, v == 7) as u32;
    *o.add(7) = warp::sum(v);
}

/// Every thread adds `input[t]` to `sums[0]` (GPU scope, relaxed) and `sums[1]` (system
/// scope, acq_rel), and takes the max into `sums[2]` and the xor into `sums[3]`.
///
/// # Safety
///
/// `input` holds `n` elements and `sums` four, aligned, accessed by others only atomically.
#[kernel]
pub unsafe fn scoped_atomics(input: *const u64, sums: *mut u64, n: u32) {
    let t = thread::index_1d();
    if t < n {
        let v = *input.add(t as usize);
        atomic::fetch_add::<Gpu, u64>(sums, v, Ordering::Relaxed);
        atomic::fetch_add::<Sys, u64>(sums.add(1), v, Ordering::AcqRel);
        atomic::fetch_max::<Gpu, u64>(sums.add(2), v, Ordering::Relaxed);
        atomic::fetch_xor::<Gpu, u64>(sums.add(3), v, Ordering::SeqCst);
    }
}

/// Each block reverses its `block_dim` elements of `data` through dynamic shared memory
/// (launch with `block_dim * 4` bytes of it).
///
/// # Safety
///
/// `data` holds `n` elements; the launch gives each block `block_dim * 4` bytes of dynamic
/// shared memory, and no block starts past `n`.
#[kernel]
pub unsafe fn shared_reverse(data: *mut i32, n: u32) {
    let (shared, len) = thread::dynamic_shared::<i32>();
    let t = thread::thread_idx_x();
    let b = thread::block_dim_x();
    let base = thread::block_idx_x() * b;
    if (t as usize) < len && base + t < n {
        *shared.add(t as usize) = *data.add((base + t) as usize);
    }
    thread::sync_threads();
    let count = b.min(n - base);
    if t < count {
        *data.add((base + t) as usize) = *shared.add((count - 1 - t) as usize);
    }
}

/// Thread 0 adds `me + 1` to the right neighbour's `counter` through a direct peer pointer
/// with a system-scope atomic (NVSHMEM's transports where no direct pointer exists), then
/// all PEs meet.
///
/// # Safety
///
/// Every PE launches it (its thread 0 meets the other PEs in `barrier_all`); `counter` is a
/// symmetric, aligned `u64`.
#[kernel]
pub unsafe fn peer_atomic(counter: *mut u64) {
    if thread::index_1d() == 0 {
        let (me, n) = (shmem::my_pe(), shmem::n_pes());
        let right = (me + 1) % n;
        let direct = shmem::ptr(counter, right);
        if direct.is_null() {
            shmem::atomic_add(counter, me as u64 + 1, right);
        } else {
            atomic::fetch_add::<Sys, u64>(direct, me as u64 + 1, Ordering::Relaxed);
        }
        shmem::barrier_all::<Thread>();
    }
}

/// Thread 0 prints its inputs with `printf!` and stores `a / b`; `b == 0` fails a
/// `device_assert!`, which traps the kernel.
///
/// # Safety
///
/// `out` is valid for one `i32` write.
#[kernel]
pub unsafe fn checked_div(a: i32, b: i32, out: *mut i32) {
    if thread::index_1d() == 0 {
        rshmem_device::device_assert!(b != 0, "dividing %d by zero", a);
        rshmem_device::printf!(
            "checked_div on PE %d: %d / %d = %d\n",
            shmem::my_pe(),
            a,
            b,
            a / b
        );
        *out = a / b;
    }
}
