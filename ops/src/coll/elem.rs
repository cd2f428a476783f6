//! The element types the collectives take ([`CollElem`]: bf16, f16, f32, i32, i64) and the
//! kernel each (type, reduction, algorithm) runs, chosen by one macro table.
//!
//! ```
//! use rshmem_coll::Elem;
//! fn name<T: rshmem_ops::CollElem>() -> &'static str {
//!     <T as Elem>::NAME
//! }
//! assert_eq!(name::<rshmem_device::bf16>(), "bf16");
//! assert!(<f32 as Elem>::FLOAT && !<i64 as Elem>::FLOAT);
//! ```

use bytemuck::Pod;
use rshmem_coll::Channel;
use rshmem_device::shmem::Team;
use rshmem_device::{bf16, f16};
use rshmem_host::{LaunchConfig, Module, Result, Stream};
use rshmem_ops_coll_kernels as k;

mod private {
    /// Seals [`super::CollElem`].
    pub trait Sealed {}

    /// The reductions the collectives run (public in a private module: nameable only here).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Op {
        Sum,
        Max,
        Min,
    }

    /// Which reduce kernel family.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Family {
        Push,
        TwoShot,
        Lamport,
    }
}

pub(crate) use private::{Family, Op};

/// An element type of the collectives, with its kernels. Sealed: exactly the types with
/// kernels (bf16, f16, f32, i32, i64).
/// Its name and whether it is a float are [`rshmem_coll::Elem`]'s `NAME` and `FLOAT`.
pub trait CollElem: Pod + rshmem_coll::Elem + private::Sealed {
    /// Queues `family`'s kernel for `op`: `(dst, src, count, scatter)`; `Lamport` ignores
    /// `scatter` and is refused for integers by the caller.
    ///
    /// # Safety
    ///
    /// The kernel's contract (`rshmem_coll::algo`).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_reduce(
        module: &Module<'_>,
        stream: &Stream<'_>,
        config: LaunchConfig,
        family: Family,
        op: Op,
        ch: Channel,
        team: Team,
        args: (*mut Self, *const Self, usize, bool),
    ) -> Result<()>;
}

/// Rows: `type: push kernels [sum, max, min], two-shot [..], lamport [..] or none`.
macro_rules! coll_elems {
    ($($t:ident: [$($push:ident),*], [$($two:ident),*], $lamport:tt;)*) => {$(
        impl private::Sealed for $t {}
        impl CollElem for $t {
            unsafe fn launch_reduce(
                module: &Module<'_>,
                stream: &Stream<'_>,
                config: LaunchConfig,
                family: Family,
                op: Op,
                ch: Channel,
                team: Team,
                (dst, src, count, scatter): (*mut Self, *const Self, usize, bool),
            ) -> Result<()> {
                let args = (ch, team, dst, src, count, u32::from(scatter));
                // SAFETY: forwarded from this function's contract.
                unsafe {
                    match family {
                        Family::Push => coll_elems!(@by_op op module stream config args [$($push),*]),
                        Family::TwoShot => coll_elems!(@by_op op module stream config args [$($two),*]),
                        Family::Lamport => coll_elems!(@lamport $lamport op module stream config (ch, team, dst, src, count)),
                    }
                }
            }
        }
    )*};
    (@by_op $op:ident $m:ident $s:ident $c:ident $args:tt [$sum:ident, $max:ident, $min:ident]) => {
        match $op {
            Op::Sum => $m.launch_on::<k::$sum>($s, $c, $args),
            Op::Max => $m.launch_on::<k::$max>($s, $c, $args),
            Op::Min => $m.launch_on::<k::$min>($s, $c, $args),
        }
    };
    (@lamport none $op:ident $m:ident $s:ident $c:ident $args:tt) => {
        unreachable!("the flag-in-data all-reduce is refused for integers before launch")
    };
    (@lamport [$sum:ident, $max:ident, $min:ident] $op:ident $m:ident $s:ident $c:ident $args:tt) => {
        coll_elems!(@by_op $op $m $s $c $args [$sum, $max, $min])
    };
}

coll_elems! {
    bf16: [coll_push_bf16_sum, coll_push_bf16_max, coll_push_bf16_min],
        [coll_two_shot_bf16_sum, coll_two_shot_bf16_max, coll_two_shot_bf16_min],
        [coll_lamport_bf16_sum, coll_lamport_bf16_max, coll_lamport_bf16_min];
    f16: [coll_push_f16_sum, coll_push_f16_max, coll_push_f16_min],
        [coll_two_shot_f16_sum, coll_two_shot_f16_max, coll_two_shot_f16_min],
        [coll_lamport_f16_sum, coll_lamport_f16_max, coll_lamport_f16_min];
    f32: [coll_push_f32_sum, coll_push_f32_max, coll_push_f32_min],
        [coll_two_shot_f32_sum, coll_two_shot_f32_max, coll_two_shot_f32_min],
        [coll_lamport_f32_sum, coll_lamport_f32_max, coll_lamport_f32_min];
    i32: [coll_push_i32_sum, coll_push_i32_max, coll_push_i32_min],
        [coll_two_shot_i32_sum, coll_two_shot_i32_max, coll_two_shot_i32_min],
        none;
    i64: [coll_push_i64_sum, coll_push_i64_max, coll_push_i64_min],
        [coll_two_shot_i64_sum, coll_two_shot_i64_max, coll_two_shot_i64_min],
        none;
}

/// The float types of the fused all-reduce + RMSNorm, with its kernel.
pub trait NormElem: CollElem + rshmem_coll::Elem<Acc = f32> {
    /// Queues the fused kernel.
    ///
    /// # Safety
    ///
    /// `rshmem_coll::algo::all_reduce_rmsnorm`'s contract.
    #[doc(hidden)]
    unsafe fn launch_rmsnorm(
        module: &Module<'_>,
        stream: &Stream<'_>,
        config: LaunchConfig,
        ch: Channel,
        team: Team,
        args: rshmem_coll::algo::RmsNormArgs<Self>,
    ) -> Result<()>;
}

macro_rules! norm_elems {
    ($($t:ident: $kernel:ident;)*) => {$(
        impl NormElem for $t {
            unsafe fn launch_rmsnorm(
                module: &Module<'_>,
                stream: &Stream<'_>,
                config: LaunchConfig,
                ch: Channel,
                team: Team,
                args: rshmem_coll::algo::RmsNormArgs<Self>,
            ) -> Result<()> {
                // SAFETY: forwarded.
                unsafe { module.launch_on::<k::$kernel>(stream, config, (ch, team, args)) }
            }
        }
    )*};
}

norm_elems! {
    bf16: coll_rmsnorm_bf16;
    f16: coll_rmsnorm_f16;
    f32: coll_rmsnorm_f32;
}
