//! The collective kernels behind `rshmem::ops`: `rshmem_coll`'s algorithms instantiated for
//! each element type and reduction. Every kernel takes the stream's [`Channel`] and the
//! [`Team`] first; launch them with 1-D blocks (whole warps) of at most 512 threads
//! (`launch_bounds(512)`: ptxas keeps them within 128 registers, so that 512 threads fit an
//! SM's 64 K registers) and at most `Channel::rows` blocks, the same grid on every member.
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
//!
//! On the host, [`ReduceKernels`] picks a type's reduce kernel for a run-time [`Rounds`] and
//! [`Op`] (handing its type to a [`crate::Visit`]), and [`NormKernel`] names the RMSNorm one:
//!
//! ```
//! use rshmem_device::{Kernel, bf16};
//! use rshmem_ops_kernels::coll::{LamportArgs, Op, ReduceKernels};
//! use rshmem_ops_kernels::Visit;
//! struct Name;
//! impl<A> Visit<A> for Name {
//!     type Output = &'static str;
//!     fn visit<K: Kernel<Args = A>>(self) -> &'static str {
//!         K::NAME
//!     }
//! }
//! assert_eq!(<bf16 as ReduceKernels>::lamport(Op::Max, Name), Some("coll_lamport_bf16_max"));
//! assert_eq!(<i32 as ReduceKernels>::lamport::<Name>(Op::Max, Name), None);
//! ```

use rshmem_coll::algo;
pub use rshmem_coll::algo::RmsNormArgs;
pub use rshmem_coll::channel::Channel;
use rshmem_coll::elem::{Max, Min, Sum};
use rshmem_device::prelude::*;
use rshmem_device::{bf16, f16};

/// A reduction, as the host picks it at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// [`Sum`].
    Sum,
    /// [`Max`].
    Max,
    /// [`Min`].
    Min,
}

/// The reduce kernels that move data in rounds of pushes: [`algo::push_rounds`] (one-shot,
/// and the fallback without peer mappings) or [`algo::two_shot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounds {
    /// [`algo::push_rounds`].
    Push,
    /// [`algo::two_shot`].
    TwoShot,
}

/// The arguments of the push and two-shot kernels: `(ch, team, dst, src, count, scatter)`.
pub type ReduceArgs<E> = (Channel, Team, *mut E, *const E, usize, u32);
/// The arguments of the flag-in-data kernels: `(ch, team, dst, src, count)`.
pub type LamportArgs<E> = (Channel, Team, *mut E, *const E, usize);

/// The reduce kernels of an element type, from this module's table.
#[cfg(not(target_arch = "nvptx64"))]
pub trait ReduceKernels: Sized {
    /// `v.visit::<K>()` for `rounds`' kernel of `op`.
    fn reduce<V: crate::Visit<ReduceArgs<Self>>>(rounds: Rounds, op: Op, v: V) -> V::Output;
    /// `v.visit::<K>()` for the flag-in-data kernel of `op`; `None` for types without one
    /// (integers: an empty flag-in-data word, `rshmem_coll::lamport::EMPTY`, is a NaN
    /// pattern that only floats can spare).
    fn lamport<V: crate::Visit<LamportArgs<Self>>>(op: Op, v: V) -> Option<V::Output>;
}

/// The fused all-reduce + residual + RMSNorm kernel of a float type.
#[cfg(not(target_arch = "nvptx64"))]
pub trait NormKernel: Sized {
    /// The kernel.
    type Kernel: rshmem_device::Kernel<Args = (Channel, Team, RmsNormArgs<Self>)>;
}

/// The table's macro: each type's kernels (named once, here) and its [`ReduceKernels`] impl.
macro_rules! reduce_kernels {
    ($($e:ident {
        push: [$ps:ident, $px:ident, $pn:ident],
        two_shot: [$ts:ident, $tx:ident, $tn:ident]
        $(, lamport: [$ls:ident, $lx:ident, $ln:ident])? $(,)?
    })*) => {$(
        reduce_kernels!(@rounds push_rounds, $e: $ps Sum, $px Max, $pn Min);
        reduce_kernels!(@rounds two_shot, $e: $ts Sum, $tx Max, $tn Min);
        $(reduce_kernels!(@lamport $e: $ls Sum, $lx Max, $ln Min);)?

        #[cfg(not(target_arch = "nvptx64"))]
        impl ReduceKernels for $e {
            fn reduce<V: crate::Visit<ReduceArgs<Self>>>(rounds: Rounds, op: Op, v: V) -> V::Output {
                match (rounds, op) {
                    (Rounds::Push, Op::Sum) => v.visit::<$ps>(),
                    (Rounds::Push, Op::Max) => v.visit::<$px>(),
                    (Rounds::Push, Op::Min) => v.visit::<$pn>(),
                    (Rounds::TwoShot, Op::Sum) => v.visit::<$ts>(),
                    (Rounds::TwoShot, Op::Max) => v.visit::<$tx>(),
                    (Rounds::TwoShot, Op::Min) => v.visit::<$tn>(),
                }
            }

            fn lamport<V: crate::Visit<LamportArgs<Self>>>(op: Op, v: V) -> Option<V::Output> {
                reduce_kernels!(@pick op v $([$ls, $lx, $ln])?)
            }
        }
    )*};
    (@rounds $algo:ident, $e:ident: $($name:ident $op:ident),*) => {$(
        #[doc = concat!("[`algo::", stringify!($algo), "`] on `", stringify!($e), "` with `",
            stringify!($op), "`.")]
        ///
        /// # Safety
        ///
        #[doc = concat!("The contract of [`algo::", stringify!($algo), "`].")]
        #[kernel(launch_bounds(512))]
        pub unsafe fn $name(ch: Channel, team: Team, dst: *mut $e, src: *const $e, count: usize, scatter: u32) {
            // SAFETY: this kernel's contract is the algorithm's.
            unsafe { algo::$algo::<$e, $op>(ch, team, dst, src, count, scatter != 0) }
        }
    )*};
    (@lamport $e:ident: $($name:ident $op:ident),*) => {$(
        #[doc = concat!("[`algo::lamport_all_reduce`] on `", stringify!($e), "` with `", stringify!($op), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`algo::lamport_all_reduce`].
        #[kernel(launch_bounds(512))]
        pub unsafe fn $name(ch: Channel, team: Team, dst: *mut $e, src: *const $e, count: usize) {
            // SAFETY: this kernel's contract is the algorithm's.
            unsafe { algo::lamport_all_reduce::<$e, $op>(ch, team, dst, src, count) }
        }
    )*};
    (@pick $op:ident $v:ident) => {{
        let _ = ($op, $v);
        None
    }};
    (@pick $op:ident $v:ident [$sum:ident, $max:ident, $min:ident]) => {
        Some(match $op {
            Op::Sum => $v.visit::<$sum>(),
            Op::Max => $v.visit::<$max>(),
            Op::Min => $v.visit::<$min>(),
        })
    };
}

/// The fused all-reduce + residual + RMSNorm kernels and their [`NormKernel`] impls.
macro_rules! rmsnorm_kernels {
    ($($name:ident: $e:ty;)*) => {$(
        #[doc = concat!("[`algo::all_reduce_rmsnorm`] on `", stringify!($e), "`.")]
        ///
        /// # Safety
        ///
        /// The contract of [`algo::all_reduce_rmsnorm`].
        #[kernel(launch_bounds(512))]
        pub unsafe fn $name(ch: Channel, team: Team, args: RmsNormArgs<$e>) {
            // SAFETY: this kernel's contract is the algorithm's.
            unsafe { algo::all_reduce_rmsnorm::<$e>(ch, team, args) }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl NormKernel for $e {
            type Kernel = $name;
        }
    )*};
}

reduce_kernels! {
    bf16 {
        push: [coll_push_bf16_sum, coll_push_bf16_max, coll_push_bf16_min],
        two_shot: [coll_two_shot_bf16_sum, coll_two_shot_bf16_max, coll_two_shot_bf16_min],
        lamport: [coll_lamport_bf16_sum, coll_lamport_bf16_max, coll_lamport_bf16_min],
    }
    f16 {
        push: [coll_push_f16_sum, coll_push_f16_max, coll_push_f16_min],
        two_shot: [coll_two_shot_f16_sum, coll_two_shot_f16_max, coll_two_shot_f16_min],
        lamport: [coll_lamport_f16_sum, coll_lamport_f16_max, coll_lamport_f16_min],
    }
    f32 {
        push: [coll_push_f32_sum, coll_push_f32_max, coll_push_f32_min],
        two_shot: [coll_two_shot_f32_sum, coll_two_shot_f32_max, coll_two_shot_f32_min],
        lamport: [coll_lamport_f32_sum, coll_lamport_f32_max, coll_lamport_f32_min],
    }
    i32 {
        push: [coll_push_i32_sum, coll_push_i32_max, coll_push_i32_min],
        two_shot: [coll_two_shot_i32_sum, coll_two_shot_i32_max, coll_two_shot_i32_min],
    }
    i64 {
        push: [coll_push_i64_sum, coll_push_i64_max, coll_push_i64_min],
        two_shot: [coll_two_shot_i64_sum, coll_two_shot_i64_max, coll_two_shot_i64_min],
    }
}

rmsnorm_kernels! {
    coll_rmsnorm_bf16: bf16;
    coll_rmsnorm_f16: f16;
    coll_rmsnorm_f32: f32;
}

/// [`algo::all_gather`]: this PE's `src[0..bytes]` into `dst[offset..]` of every member.
///
/// # Safety
///
/// The contract of [`algo::all_gather`].
#[kernel(launch_bounds(512))]
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
#[kernel(launch_bounds(512))]
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
