//! The element types a GEMM takes and gives, and the kernel each pair runs, chosen at compile
//! time: [`GemmIn`] (bf16, f16) for A and B, [`GemmOut<In>`] (f32 and `In` itself) for C.
//!
//! Both traits are sealed: a pair exists exactly where a kernel exists, and the kernels are
//! named once, in `kernels/ops`' tables ([`Gemm90`], [`Gemm80`]): a new pair is a line there.
//!
//! ```
//! use rshmem_ops::gemm::elem::{GemmIn, GemmOut};
//! use rshmem_ops_kernels::gemm90::{Gemm90, SplitK90, SplitReduce};
//! use rshmem_host::Kernel;
//! fn kernel_of<In: GemmIn, Out: GemmOut<In>>() -> &'static str {
//!     <<Out as Gemm90<In, false>>::Kernel as Kernel>::NAME
//! }
//! assert_eq!(kernel_of::<rshmem_device::bf16, f32>(), "gemm90_bf16_f32_nk");
//! ```

use bytemuck::Pod;
use rshmem_device::{bf16, f16};
use rshmem_host::TmaType;
use rshmem_ops_kernels::gemm80::Gemm80;
use rshmem_ops_kernels::gemm90::{Gemm90, SplitK90, SplitReduce};

mod private {
    /// Seals [`super::GemmIn`] and [`super::GemmOut`].
    pub trait Sealed {}
}

/// An input element type of a GEMM (A and B): `bf16` or `f16`, with split-K kernels of both
/// layouts ([`SplitK90`]).
pub trait GemmIn: Pod + private::Sealed + SplitK90<false> + SplitK90<true> {
    /// Its tensor-map element type.
    const TMA: TmaType;
    /// Its name in messages.
    const NAME: &'static str;
}

/// An output element type of a GEMM with inputs `In` (f32, or `In` itself: rounded to nearest
/// even from the f32 accumulators): a type for which `kernels/ops`' tables define the sm_90a
/// and sm_80 kernels of both layouts of B ([`Gemm90`], [`Gemm80`]) and a split-K reduction
/// ([`SplitReduce`]).
pub trait GemmOut<In: GemmIn>:
    Pod
    + private::Sealed
    + SplitReduce
    + Gemm90<In, false>
    + Gemm90<In, true>
    + Gemm80<In, false>
    + Gemm80<In, true>
{
}

impl<In: GemmIn, Out> GemmOut<In> for Out where
    Out: Pod
        + private::Sealed
        + SplitReduce
        + Gemm90<In, false>
        + Gemm90<In, true>
        + Gemm80<In, false>
        + Gemm80<In, true>
{
}

impl private::Sealed for bf16 {}
impl private::Sealed for f16 {}
impl private::Sealed for f32 {}

impl GemmIn for bf16 {
    const TMA: TmaType = TmaType::Bf16;
    const NAME: &'static str = "bf16";
}

impl GemmIn for f16 {
    const TMA: TmaType = TmaType::F16;
    const NAME: &'static str = "f16";
}
