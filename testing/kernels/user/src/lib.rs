//! A stand-in for a user's kernel crate that a program loads at run time: no test or example
//! is compiled with it, so the simulator can run these kernels only through the simulator
//! library `testing/examples-image/build.rs` builds (`Builder::sim_library`). Each kernel
//! exercises one kind of simulator state the library's copy of `rshmem-device` shares with
//! the loading program's: the thread's coordinates, the symmetric heap and PE-wide barriers,
//! shared memory and block barriers, and failures.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use rshmem_device::prelude::*;

/// `y[i] = a * x[i] + y[i]` for `i < n`.
///
/// # Safety
///
/// `x` and `y` are valid for `n` elements.
#[kernel]
pub unsafe fn axpy(x: *const f32, y: *mut f32, n: u32, a: f32) {
    let i = thread::index_1d();
    if i < n {
        let i = i as usize;
        *y.add(i) += a * *x.add(i);
    }
}

/// Puts `x[..n]` into the next PE's `y` (thread 0), then every PE meets in a barrier: after
/// it, `y` on PE `k` holds PE `k - 1`'s `x`. Launch one block, cooperatively, on every PE.
///
/// # Safety
///
/// `x` and `y` are symmetric, of at least `n` elements.
#[kernel]
pub unsafe fn shift(x: *const i64, y: *mut i64, n: u32) {
    if thread::index_1d() == 0 {
        let (me, npes) = (shmem::my_pe(), shmem::n_pes());
        shmem::put::<Thread, i64>(y, x, n as usize, (me + 1) % npes);
        shmem::barrier_all::<Thread>();
    }
}

/// `out[0] = x[0] + ... + x[block size - 1]`, through dynamic shared memory and a block
/// barrier. Launch one block with `4 × block size` bytes of shared memory.
///
/// # Safety
///
/// `x` holds a value per thread of the block; `out` one value.
#[kernel]
pub unsafe fn block_sum(x: *const i32, out: *mut i32) {
    let (shared, _) = thread::dynamic_shared::<i32>();
    let t = thread::thread_rank_in_block() as usize;
    *shared.add(t) = *x.add(t);
    thread::sync_threads();
    if t == 0 {
        let n = thread::block_dim_x() as usize;
        *out = (0..n).map(|i| *shared.add(i)).sum();
    }
}

/// Panics in thread 0 of PE `pe` with a message naming it; other threads return.
///
/// # Safety
///
/// None beyond a launch's.
#[kernel]
pub unsafe fn fail_on(pe: i32) {
    if shmem::my_pe() == pe && thread::index_1d() == 0 {
        panic!("fail_on: PE {pe} fails on purpose");
    }
}
