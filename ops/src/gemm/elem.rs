//! The element types a GEMM takes and gives, and the kernel each pair runs, chosen at compile
//! time: [`GemmIn`] (bf16, f16) for A and B, [`GemmOut<In>`] (f32 and `In` itself) for C;
//! for the FP8 GEMM ([`crate::Ops::gemm_fp8`]) [`Fp8In`] (e4m3, e5m2) and [`Fp8Out<In>`]
//! (bf16, f32). [`TmaElem`] is what the tensor maps of either need.
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
use rshmem_device::fp8::Fp8;
use rshmem_device::hopper::wgmma::WgmmaElem;
use rshmem_device::{bf16, f16, E4m3, E5m2};
use rshmem_gemm::sm90::Tile128;
use rshmem_host::TmaType;
use rshmem_ops_kernels::gemm80::Gemm80;
use rshmem_ops_kernels::gemm90::{Fp8Gemm90, Fp8SplitK90, Gemm90, SplitK90, SplitReduce};

mod private {
    /// Seals [`super::GemmIn`] and [`super::GemmOut`].
    pub trait Sealed {}
}

/// An element type the sm90 GEMMs read through tensor maps (and `wgmma` multiplies).
pub trait TmaElem: Pod + private::Sealed + WgmmaElem + 'static {
    /// Its tensor-map element type.
    const TMA: TmaType;
    /// Its name in messages.
    const NAME: &'static str;
}

/// An input element type of a GEMM (A and B): `bf16` or `f16`, with split-K kernels of both
/// layouts ([`SplitK90`]).
pub trait GemmIn: TmaElem + SplitK90<false> + SplitK90<true> {}

impl GemmIn for bf16 {}
impl GemmIn for f16 {}

/// An input element type of the FP8 GEMM (A and B): [`E4m3`] or [`E5m2`].
pub trait Fp8In: TmaElem + Fp8 + Fp8SplitK90 {}

impl Fp8In for E4m3 {}
impl Fp8In for E5m2 {}

/// An output element type of the FP8 GEMM with inputs `In`: f32 or bf16 (rounded to nearest
/// even from the f32 accumulators), for which `kernels/ops`' table defines the kernels
/// ([`Fp8Gemm90`]).
pub trait Fp8Out<In: Fp8In>: Pod + private::Sealed + Fp8Gemm90<In> + SplitReduce {}

impl<In: Fp8In, Out: Pod + private::Sealed + Fp8Gemm90<In> + SplitReduce> Fp8Out<In> for Out {}

/// An output element type of a GEMM with inputs `In` (f32, or `In` itself: rounded to nearest
/// even from the f32 accumulators): a type for which `kernels/ops`' tables define the sm_90a
/// kernels of both layouts of B on both tile configurations ([`Gemm90`]: 128 x 256 and
/// 128 x 128), the sm_80 ones ([`Gemm80`]) and a split-K reduction ([`SplitReduce`]).
pub trait GemmOut<In: GemmIn>:
    Pod
    + private::Sealed
    + SplitReduce
    + Gemm90<In, false>
    + Gemm90<In, true>
    + Gemm90<In, false, Tile128<In>>
    + Gemm90<In, true, Tile128<In>>
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
        + Gemm90<In, false, Tile128<In>>
        + Gemm90<In, true, Tile128<In>>
        + Gemm80<In, false>
        + Gemm80<In, true>
{
}

impl private::Sealed for bf16 {}
impl private::Sealed for f16 {}
impl private::Sealed for f32 {}
impl private::Sealed for E4m3 {}
impl private::Sealed for E5m2 {}

macro_rules! tma_elems {
    ($($t:ty: $tma:ident, $name:literal;)*) => {$(
        impl TmaElem for $t {
            const TMA: TmaType = TmaType::$tma;
            const NAME: &'static str = $name;
        }
    )*};
}

tma_elems! {
    bf16: Bf16, "bf16";
    f16: F16, "f16";
    E4m3: U8, "e4m3";
    E5m2: U8, "e5m2";
}
