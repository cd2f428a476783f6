//! The collective kernels behind `rshmem::ops`: `rshmem_coll`'s algorithms instantiated for
//! each element type and reduction. Every kernel takes the stream's [`Channel`] and the
//! [`Team`] first; launch them with 1-D blocks (whole warps) and at most `Channel::rows`
//! blocks, the same grid on every member.
//!
//! | kernels | algorithm | arguments after `(ch, team)` |
//! |---|---|---|
//! | `coll_push_{e}_{op}` | [`algo::push_rounds`] | `dst, src, count, scatter` |
//! | `coll_two_shot_{e}_{op}` | [`algo::two_shot`] | `dst, src, count, scatter` |
//! | `coll_lamport_{e}_{op}` (floats) | [`algo::lamport_all_reduce`] | `dst, src, count` |
//! | `coll_all_gather` | [`algo::all_gather`] | `dst, src, bytes, offset` (bytes) |
//! | `coll_rmsnorm_{e}` (floats) | [`algo::all_reduce_rmsnorm`] | `RmsNormArgs` (needs 4 bytes of dynamic shared memory per warp) |
//! | `coll_probe` | which PEs this one reaches through peer mappings | `out` (u32 per world PE) |
//!
//! `{e}` is `bf16`, `f16`, `f32`, `i32` or `i64`; `{op}` is `sum`, `max` or `min`.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![allow(clippy::too_many_arguments)]

use rshmem_coll::algo;
pub use rshmem_coll::algo::RmsNormArgs;
pub use rshmem_coll::channel::Channel;
use rshmem_coll::elem::{Max, Min, Sum};
use rshmem_device::prelude::*;

/// The kernels of one (element type, reduction): written out by `kernels!` below.
macro_rules! kernels {
    ($($push:ident, $two:ident, $e:ty, $op:ty;)*) => {$(
        #[doc = concat!("[`algo::push_rounds`] on `", stringify!($e), "` with `", stringify!($op), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`algo::push_rounds`].
        #[kernel]
        pub unsafe fn $push(ch: Channel, team: Team, dst: *mut $e, src: *const $e, count: usize, scatter: u32) {
            // SAFETY: this kernel's contract is the algorithm's.
            unsafe { algo::push_rounds::<$e, $op>(ch, team, dst, src, count, scatter != 0) }
        }

        #[doc = concat!("[`algo::two_shot`] on `", stringify!($e), "` with `", stringify!($op), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`algo::two_shot`].
        #[kernel]
        pub unsafe fn $two(ch: Channel, team: Team, dst: *mut $e, src: *const $e, count: usize, scatter: u32) {
            // SAFETY: this kernel's contract is the algorithm's.
            unsafe { algo::two_shot::<$e, $op>(ch, team, dst, src, count, scatter != 0) }
        }
    )*};
}

/// The flag-in-data kernels of one (float type, reduction).
macro_rules! lamport_kernels {
    ($($name:ident, $e:ty, $op:ty;)*) => {$(
        #[doc = concat!("[`algo::lamport_all_reduce`] on `", stringify!($e), "` with `", stringify!($op), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`algo::lamport_all_reduce`].
        #[kernel]
        pub unsafe fn $name(ch: Channel, team: Team, dst: *mut $e, src: *const $e, count: usize) {
            // SAFETY: this kernel's contract is the algorithm's.
            unsafe { algo::lamport_all_reduce::<$e, $op>(ch, team, dst, src, count) }
        }
    )*};
}

/// The fused all-reduce + residual + RMSNorm kernels.
macro_rules! rmsnorm_kernels {
    ($($name:ident, $e:ty;)*) => {$(
        #[doc = concat!("[`algo::all_reduce_rmsnorm`] on `", stringify!($e), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`algo::all_reduce_rmsnorm`].
        #[kernel]
        pub unsafe fn $name(ch: Channel, team: Team, args: RmsNormArgs<$e>) {
            // SAFETY: this kernel's contract is the algorithm's.
            unsafe { algo::all_reduce_rmsnorm::<$e>(ch, team, args) }
        }
    )*};
}

kernels! {
    coll_push_bf16_sum, coll_two_shot_bf16_sum, bf16, Sum;
    coll_push_bf16_max, coll_two_shot_bf16_max, bf16, Max;
    coll_push_bf16_min, coll_two_shot_bf16_min, bf16, Min;
    coll_push_f16_sum, coll_two_shot_f16_sum, f16, Sum;
    coll_push_f16_max, coll_two_shot_f16_max, f16, Max;
    coll_push_f16_min, coll_two_shot_f16_min, f16, Min;
    coll_push_f32_sum, coll_two_shot_f32_sum, f32, Sum;
    coll_push_f32_max, coll_two_shot_f32_max, f32, Max;
    coll_push_f32_min, coll_two_shot_f32_min, f32, Min;
    coll_push_i32_sum, coll_two_shot_i32_sum, i32, Sum;
    coll_push_i32_max, coll_two_shot_i32_max, i32, Max;
    coll_push_i32_min, coll_two_shot_i32_min, i32, Min;
    coll_push_i64_sum, coll_two_shot_i64_sum, i64, Sum;
    coll_push_i64_max, coll_two_shot_i64_max, i64, Max;
    coll_push_i64_min, coll_two_shot_i64_min, i64, Min;
}

lamport_kernels! {
    coll_lamport_bf16_sum, bf16, Sum;
    coll_lamport_bf16_max, bf16, Max;
    coll_lamport_bf16_min, bf16, Min;
    coll_lamport_f16_sum, f16, Sum;
    coll_lamport_f16_max, f16, Max;
    coll_lamport_f16_min, f16, Min;
    coll_lamport_f32_sum, f32, Sum;
    coll_lamport_f32_max, f32, Max;
    coll_lamport_f32_min, f32, Min;
}

rmsnorm_kernels! {
    coll_rmsnorm_bf16, bf16;
    coll_rmsnorm_f16, f16;
    coll_rmsnorm_f32, f32;
}

/// [`algo::all_gather`]: this PE's `src[0..bytes]` into `dst[offset..]` of every member.
///
/// # Safety
///
/// The contract of [`algo::all_gather`].
#[kernel]
pub unsafe fn coll_all_gather(
    ch: Channel,
    team: Team,
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
    offset: usize,
) {
    // SAFETY: this kernel's contract is the algorithm's.
    unsafe { algo::all_gather(ch, team, dst, src, bytes, offset) }
}

/// For every world PE `p`: `out[p] = 1` if this PE reaches `out`'s copy on `p` through a peer
/// mapping (`shmem::ptr` is not null), else 0. Any 1-D launch.
///
/// # Safety
///
/// `out` is a symmetric allocation of at least `shmem::n_pes()` `u32`s.
#[kernel]
pub unsafe fn coll_probe(out: *mut u32) {
    let n = shmem::n_pes() as u32;
    let mut p = thread::index_1d();
    while p < n {
        // SAFETY: `out` is symmetric (the contract) and `p` a PE of the job; element `p`
        // exists.
        unsafe { *out.add(p as usize) = u32::from(!shmem::ptr(out, p as i32).is_null()) };
        p += thread::grid_size_1d();
    }
}
