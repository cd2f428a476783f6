//! The element types the collectives take ([`CollElem`]: bf16, f16, f32, i32, i64) and the
//! kernel each (type, reduction, algorithm) runs: named once, in the table of `kernels/ops`'
//! `coll` family ([`ReduceKernels`], [`NormKernel`]), launched here through a [`Visit`].
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
use rshmem_device::{bf16, f16, Kernel, KernelArgs};
use rshmem_host::{Error, LaunchConfig, Module, Result, Stream};
use rshmem_ops_kernels::coll::{NormKernel, ReduceKernels, Rounds};
use rshmem_ops_kernels::Visit;

pub(crate) use rshmem_ops_kernels::coll::Op;

mod private {
    /// Seals [`super::CollElem`].
    pub trait Sealed {}
}

/// Which reduce kernel family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Push,
    TwoShot,
    Lamport,
}

/// An element type of the collectives, with its kernels. Sealed: exactly the types with
/// kernels (bf16, f16, f32, i32, i64).
/// Its name and whether it is a float are [`rshmem_coll::Elem`]'s `NAME` and `FLOAT`.
pub trait CollElem: Pod + rshmem_coll::Elem + ReduceKernels + private::Sealed {}

impl private::Sealed for bf16 {}
impl private::Sealed for f16 {}
impl private::Sealed for f32 {}
impl private::Sealed for i32 {}
impl private::Sealed for i64 {}
impl<T: Pod + rshmem_coll::Elem + ReduceKernels + private::Sealed> CollElem for T {}

/// The float types of the fused all-reduce + RMSNorm, with its kernel.
pub trait NormElem: CollElem + rshmem_coll::Elem<Acc = f32> + NormKernel {}

impl<T: CollElem + rshmem_coll::Elem<Acc = f32> + NormKernel> NormElem for T {}

/// A launch of whichever kernel a table picks: the [`Visit`] that queues it.
struct Launch<'a, 'm, 's, A> {
    module: &'a Module<'m>,
    stream: &'a Stream<'s>,
    config: LaunchConfig,
    args: A,
}

impl<'a, 'm, 's, A> Launch<'a, 'm, 's, A> {
    /// # Safety
    ///
    /// Every kernel the visit may pick accepts `config` and `args` (its contract, in
    /// `rshmem_coll::algo`): a `Launch` exists only to be visited.
    unsafe fn new(
        module: &'a Module<'m>,
        stream: &'a Stream<'s>,
        config: LaunchConfig,
        args: A,
    ) -> Self {
        Self {
            module,
            stream,
            config,
            args,
        }
    }
}

impl<A: KernelArgs> Visit<A> for Launch<'_, '_, '_, A> {
    type Output = Result<()>;
    fn visit<K: Kernel<Args = A>>(self) -> Result<()> {
        // SAFETY: `Launch::new`'s contract: the kernel picked accepts this launch.
        unsafe {
            self.module
                .launch_on::<K>(self.stream, self.config, self.args)
        }
    }
}

/// Queues `family`'s kernel for `op` on `T`: `(dst, src, count, scatter)`; `Lamport` ignores
/// `scatter`.
///
/// # Safety
///
/// The kernel's contract (`rshmem_coll::algo`).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch_reduce<T: CollElem>(
    module: &Module<'_>,
    stream: &Stream<'_>,
    config: LaunchConfig,
    family: Family,
    op: Op,
    ch: Channel,
    team: Team,
    (dst, src, count, scatter): (*mut T, *const T, usize, bool),
) -> Result<()> {
    let rounds = |rounds| {
        let args = (ch, team, dst, src, count, u32::from(scatter));
        // SAFETY: forwarded from this function's contract.
        T::reduce(rounds, op, unsafe {
            Launch::new(module, stream, config, args)
        })
    };
    match family {
        Family::Push => rounds(Rounds::Push),
        Family::TwoShot => rounds(Rounds::TwoShot),
        Family::Lamport => {
            // SAFETY: forwarded from this function's contract.
            let launch =
                unsafe { Launch::new(module, stream, config, (ch, team, dst, src, count)) };
            T::lamport(op, launch).unwrap_or_else(|| {
                Err(Error::Unsupported {
                    call: "Ops::all_reduce",
                    reason: format!(
                        "Algorithm::Lamport on {}: the flag-in-data all-reduce takes floats only",
                        <T as rshmem_coll::Elem>::NAME
                    ),
                })
            })
        }
    }
}

/// Queues the fused all-reduce + RMSNorm kernel of `T`.
///
/// # Safety
///
/// `rshmem_coll::algo::all_reduce_rmsnorm`'s contract.
pub(crate) unsafe fn launch_rmsnorm<T: NormElem>(
    module: &Module<'_>,
    stream: &Stream<'_>,
    config: LaunchConfig,
    ch: Channel,
    team: Team,
    args: rshmem_coll::algo::RmsNormArgs<T>,
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { module.launch_on::<<T as NormKernel>::Kernel>(stream, config, (ch, team, args)) }
}
