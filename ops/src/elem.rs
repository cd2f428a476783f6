//! The element types a GEMM takes and gives, and the kernel each pair runs, chosen at compile
//! time: [`GemmIn`] (bf16, f16) for A and B, [`GemmOut<In>`] (f32 and `In` itself) for C.
//!
//! Both traits are sealed: a pair exists exactly where a kernel exists. One macro table below
//! maps each pair to its kernels, so a new pair is one line, not a copy of the dispatch.
//!
//! ```
//! use rshmem_ops::elem::{GemmIn, GemmOut};
//! use rshmem_host::Kernel;
//! fn kernel_of<In: GemmIn, Out: GemmOut<In>>() -> &'static str {
//!     <Out::Sm90Nk as Kernel>::NAME
//! }
//! assert_eq!(kernel_of::<rshmem_device::bf16, f32>(), "gemm90_bf16_f32_nk");
//! ```

use bytemuck::Pod;
use rshmem_device::hopper::TensorMap as DevTensorMap;
use rshmem_device::{bf16, f16};
use rshmem_host::{Kernel, TmaType};
use rshmem_ops_sm90_kernels as k90;

mod private {
    /// Seals [`super::GemmIn`] and [`super::GemmOut`].
    pub trait Sealed {}
}

/// The arguments of the sm90 kernels: `(map_a, map_b, c, ldc, m, n, k)`.
pub type Sm90Args<Out> = (
    *const DevTensorMap,
    *const DevTensorMap,
    *mut Out,
    u32,
    u32,
    u32,
    u32,
);

/// The arguments of the sm80 kernels: `(a, lda, b, ldb, c, ldc, m, n, k)`.
pub type Sm80Args<In, Out> = (*const In, u32, *const In, u32, *mut Out, u32, u32, u32, u32);

/// An input element type of a GEMM (A and B): `bf16` or `f16`.
pub trait GemmIn: Pod + private::Sealed {
    /// Its tensor-map element type.
    const TMA: TmaType;
    /// Its name in messages.
    const NAME: &'static str;
}

/// An output element type of a GEMM with inputs `In` (f32, or `In` itself: rounded to nearest
/// even from the f32 accumulators), with the kernels that compute it.
pub trait GemmOut<In: GemmIn>: Pod + private::Sealed {
    /// The sm_90a kernel for B N x K (A and B through tensor maps).
    type Sm90Nk: Kernel<Args = Sm90Args<Self>>;
    /// The sm_90a kernel for B K x N (wgmma's MN-major B).
    type Sm90Kn: Kernel<Args = Sm90Args<Self>>;
    /// The sm_80 kernel for B N x K.
    type Sm80Nk: Kernel<Args = Sm80Args<In, Self>>;
    /// The sm_80 kernel for B K x N.
    type Sm80Kn: Kernel<Args = Sm80Args<In, Self>>;
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

/// The table: `in => out: sm90 N x K, sm90 K x N, sm80 N x K, sm80 K x N kernels`.
macro_rules! gemm_pairs {
    ($($in:ty => $out:ty: $k90nk:ident, $k90kn:ident, $k80nk:ident, $k80kn:ident;)*) => {$(
        impl GemmOut<$in> for $out {
            type Sm90Nk = k90::$k90nk;
            type Sm90Kn = k90::$k90kn;
            type Sm80Nk = rshmem_ops_sm80_kernels::$k80nk;
            type Sm80Kn = rshmem_ops_sm80_kernels::$k80kn;
        }
    )*};
}

gemm_pairs! {
    bf16 => bf16: gemm90_bf16_bf16_nk, gemm90_bf16_bf16_kn, gemm80_bf16_bf16_nk, gemm80_bf16_bf16_kn;
    bf16 => f32: gemm90_bf16_f32_nk, gemm90_bf16_f32_kn, gemm80_bf16_f32_nk, gemm80_bf16_f32_kn;
    f16 => f16: gemm90_f16_f16_nk, gemm90_f16_f16_kn, gemm80_f16_f16_nk, gemm80_f16_f16_kn;
    f16 => f32: gemm90_f16_f32_nk, gemm90_f16_f32_kn, gemm80_f16_f32_nk, gemm80_f16_f32_kn;
}
