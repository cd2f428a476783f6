//! Typed fragments: the registers one lane holds of a warp-wide matrix operand, with the
//! shape, element type and layout in the type, and the `mma.sync` that consumes them.

use core::marker::PhantomData;

use crate::backend;
use crate::half::{bf16, f16};

/// The `m16n8k16` shape: A is 16×16, B 16×8, C/D 16×8.
#[derive(Clone, Copy, Debug, Default)]
pub struct M16N8K16;
/// The `m16n8k8` shape: A is 16×8, B 8×8, C/D 16×8.
#[derive(Clone, Copy, Debug, Default)]
pub struct M16N8K8;

/// An `mma` shape.
pub trait Shape: Copy + Default + sealed::Sealed + 'static {
    /// Rows of A and C.
    const M: usize;
    /// Columns of B and C.
    const N: usize;
    /// Columns of A, rows of B.
    const K: usize;
}

impl Shape for M16N8K16 {
    const M: usize = 16;
    const N: usize = 8;
    const K: usize = 16;
}
impl Shape for M16N8K8 {
    const M: usize = 16;
    const N: usize = 8;
    const K: usize = 8;
}

/// Row-major operand (A of every `mma.sync` here).
#[derive(Clone, Copy, Debug, Default)]
pub struct Row;
/// Column-major operand (B of every `mma.sync` here).
#[derive(Clone, Copy, Debug, Default)]
pub struct Col;

/// tf32: an f32 with a 10-bit mantissa, held in a 32-bit register whose 13 low bits are zero
/// (make one with [`crate::half::to_tf32`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tf32;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::M16N8K16 {}
    impl Sealed for super::M16N8K8 {}
    impl Sealed for super::Tf32 {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// The registers of a fragment: `[u32; N]` or `[f32; N]`.
pub trait Regs: Copy + Default + AsRef<[Self::Word]> + AsMut<[Self::Word]> + 'static {
    /// `u32` or `f32`.
    type Word: Copy;
}
impl<const N: usize> Regs for [u32; N]
where
    [u32; N]: Default,
{
    type Word = u32;
}
impl<const N: usize> Regs for [f32; N]
where
    [f32; N]: Default,
{
    type Word = f32;
}

/// An element type of `mma` operands A and B at shape `S`: bf16 and f16 at [`M16N8K16`],
/// [`Tf32`] at [`M16N8K8`].
pub trait Operand<S: Shape>: Copy + sealed::Sealed + 'static {
    /// A's registers per lane.
    type A: Regs<Word = u32>;
    /// B's registers per lane.
    type B: Regs<Word = u32>;
    /// The value of one element as kernels handle it (`bf16`, `f16`, or `f32` for tf32).
    type Value: Copy;
    /// Elements per register (2 for 16-bit types, 1 for tf32).
    const PER_REG: usize;
    /// (row, column) in A of element `i` of lane `lane`'s fragment.
    fn a_at(lane: usize, i: usize) -> (usize, usize);
    /// (row, column) in B (K×N) of element `i` of lane `lane`'s fragment.
    fn b_at(lane: usize, i: usize) -> (usize, usize);
    /// The bits of a value in a register (the low `32 / PER_REG` bits); for tf32, the f32
    /// rounded with [`crate::half::to_tf32`], as `mma` needs.
    fn to_bits(v: Self::Value) -> u32;
    /// A value from its bits.
    fn from_bits(bits: u32) -> Self::Value;
    #[doc(hidden)]
    fn mma(a: Self::A, b: Self::B, c: [f32; 4]) -> [f32; 4];
}

/// `groupID` and `threadID_in_group` of the PTX ISA's fragment tables.
#[inline(always)]
fn group(lane: usize) -> (usize, usize) {
    (lane / 4, lane % 4)
}

macro_rules! operand_16bit {
    ($($t:ident => $mma:ident;)*) => {$(
        impl Operand<M16N8K16> for $t {
            type A = [u32; 4];
            type B = [u32; 2];
            type Value = $t;
            const PER_REG: usize = 2;
            #[inline(always)]
            fn a_at(lane: usize, i: usize) -> (usize, usize) {
                // a0..a7: bit 1 of i picks rows +8, bit 2 columns +8.
                let (g, t) = group(lane);
                (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2))
            }
            #[inline(always)]
            fn b_at(lane: usize, i: usize) -> (usize, usize) {
                let (g, t) = group(lane);
                (2 * t + (i & 1) + 8 * (i >> 1), g)
            }
            #[inline(always)]
            fn to_bits(v: $t) -> u32 {
                u32::from(v.to_bits())
            }
            #[inline(always)]
            fn from_bits(bits: u32) -> $t {
                $t::from_bits(bits as u16)
            }
            #[inline(always)]
            fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
                backend::mma::$mma(a, b, c)
            }
        }
    )*};
}

operand_16bit! {
    bf16 => mma_m16n8k16_bf16;
    f16 => mma_m16n8k16_f16;
}

impl Operand<M16N8K8> for Tf32 {
    type A = [u32; 4];
    type B = [u32; 2];
    type Value = f32;
    const PER_REG: usize = 1;
    #[inline(always)]
    fn a_at(lane: usize, i: usize) -> (usize, usize) {
        let (g, t) = group(lane);
        (g + 8 * (i & 1), t + 4 * (i >> 1))
    }
    #[inline(always)]
    fn b_at(lane: usize, i: usize) -> (usize, usize) {
        let (g, t) = group(lane);
        (t + 4 * i, g)
    }
    #[inline(always)]
    fn to_bits(v: f32) -> u32 {
        crate::half::to_tf32(v)
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> f32 {
        f32::from_bits(bits)
    }
    #[inline(always)]
    fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        backend::mma::mma_m16n8k8_tf32(a, b, c)
    }
}

macro_rules! operand_fragment {
    ($(#[$doc:meta])* $name:ident, $layout:ident, $regs:ident, $at:ident, $rows:expr, $cols:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name<S: Shape, E: Operand<S>, L = $layout> {
            /// The registers, in the order `mma.sync` takes them.
            pub regs: E::$regs,
            _layout: PhantomData<(S, L)>,
        }

        impl<S: Shape, E: Operand<S>> $name<S, E, $layout> {
            /// Matrix rows.
            pub const ROWS: usize = $rows;
            /// Matrix columns.
            pub const COLS: usize = $cols;
            /// Elements each lane holds.
            pub const ELEMS: usize = $rows * $cols / 32;

            /// A fragment of these registers.
            #[inline(always)]
            pub fn from_regs(regs: E::$regs) -> Self {
                Self { regs, _layout: PhantomData }
            }

            /// All elements zero.
            #[inline(always)]
            pub fn zero() -> Self {
                Self::from_regs(Default::default())
            }

            /// (row, column) in the matrix of element `i` of lane `lane`'s fragment (the PTX ISA's
            /// fragment table).
            #[inline(always)]
            pub fn coord(lane: usize, i: usize) -> (usize, usize) {
                E::$at(lane, i)
            }

            /// Element `i` (`0..ELEMS`) of this lane's fragment.
            #[inline(always)]
            pub fn get(&self, i: usize) -> E::Value {
                let shift = 32 / E::PER_REG * (i % E::PER_REG);
                let word = self.regs.as_ref()[i / E::PER_REG];
                E::from_bits(if E::PER_REG == 1 { word } else { (word >> shift) & 0xFFFF })
            }

            /// Sets element `i` (`0..ELEMS`) of this lane's fragment (a tf32 element is rounded
            /// from the f32 given, `cvt.rna.tf32.f32`).
            #[inline(always)]
            pub fn set(&mut self, i: usize, v: E::Value) {
                let r = &mut self.regs.as_mut()[i / E::PER_REG];
                if E::PER_REG == 1 {
                    *r = E::to_bits(v);
                } else {
                    let shift = 16 * (i % 2);
                    *r = (*r & !(0xFFFF << shift)) | (E::to_bits(v) << shift);
                }
            }

            /// Loads this lane's elements from a matrix at `ptr` whose element (row, column) is at
            /// `ptr[row * row_stride + col * col_stride]` (row-major: `(ld, 1)`; column-major:
            /// `(1, ld)`). Plain per-lane loads; [`ldmatrix`](super::ldmatrix) is faster from
            /// shared memory.
            ///
            /// # Safety
            ///
            /// Every element of the `ROWS × COLS` matrix must be readable at those offsets.
            #[inline(always)]
            pub unsafe fn load(ptr: *const E::Value, row_stride: usize, col_stride: usize) -> Self {
                let lane = crate::warp::lane_id() as usize;
                let mut f = Self::zero();
                for i in 0..Self::ELEMS {
                    let (r, c) = Self::coord(lane, i);
                    // SAFETY: in the matrix, by the caller's contract.
                    f.set(i, unsafe { ptr.add(r * row_stride + c * col_stride).read() });
                }
                f
            }
        }
    };
}

operand_fragment!(
    /// A lane's part of operand A (`M × K`, row-major as `mma.sync` reads it).
    FragA, Row, A, a_at, S::M, S::K
);
operand_fragment!(
    /// A lane's part of operand B (`K × N`, column-major as `mma.sync` reads it).
    FragB, Col, B, b_at, S::K, S::N
);

/// A lane's part of the f32 accumulator C/D (`M × N`, 16×8 for both shapes: 4 registers).
#[derive(Clone, Copy, Debug, Default)]
pub struct FragC<S: Shape> {
    /// The registers, `c0..c3` of the PTX ISA.
    pub regs: [f32; 4],
    _shape: PhantomData<S>,
}

impl<S: Shape> FragC<S> {
    /// Matrix rows.
    pub const ROWS: usize = S::M;
    /// Matrix columns.
    pub const COLS: usize = S::N;
    /// Elements each lane holds.
    pub const ELEMS: usize = 4;

    /// A fragment of these registers.
    #[inline(always)]
    pub fn from_regs(regs: [f32; 4]) -> Self {
        Self {
            regs,
            _shape: PhantomData,
        }
    }

    /// All zero.
    #[inline(always)]
    pub fn zero() -> Self {
        Self::from_regs([0.0; 4])
    }

    /// (row, column) of element `i` of lane `lane`'s fragment.
    #[inline(always)]
    pub fn coord(lane: usize, i: usize) -> (usize, usize) {
        let (g, t) = group(lane);
        (g + 8 * (i >> 1), 2 * t + (i & 1))
    }

    /// Loads this lane's elements of a row-major `M × N` f32 matrix with leading dimension `ld`.
    ///
    /// # Safety
    ///
    /// Every element of the matrix must be readable.
    #[inline(always)]
    pub unsafe fn load(ptr: *const f32, ld: usize) -> Self {
        let lane = crate::warp::lane_id() as usize;
        Self::from_regs(core::array::from_fn(|i| {
            let (r, c) = Self::coord(lane, i);
            // SAFETY: element (r, c) of the matrix, readable by the caller's contract.
            unsafe { ptr.add(r * ld + c).read() }
        }))
    }

    /// Stores this lane's elements into a row-major `M × N` f32 matrix with leading dimension
    /// `ld` (together, the warp writes the whole matrix).
    ///
    /// # Safety
    ///
    /// Every element of the matrix must be writable, and no other thread may access it
    /// meanwhile.
    #[inline(always)]
    pub unsafe fn store(&self, ptr: *mut f32, ld: usize) {
        let lane = crate::warp::lane_id() as usize;
        for (i, v) in self.regs.iter().enumerate() {
            let (r, c) = Self::coord(lane, i);
            // SAFETY: in the matrix, by the caller's contract.
            unsafe { ptr.add(r * ld + c).write(*v) }
        }
    }
}

/// `D = A·B + C` on the tensor cores (`mma.sync.aligned.<shape>.row.col.f32.<E>.<E>.f32`),
/// accumulating in f32.
///
/// # Safety
///
/// All 32 lanes of the warp must execute this call together, converged (no lane exited or
/// in another branch), as `mma.sync.aligned` requires; the GPU gives undefined results or
/// hangs otherwise (the simulator stops the kernel). Needs sm_80. For [`Tf32`], every
/// register's 13 low bits must be zero ([`crate::half::to_tf32`]).
#[inline(always)]
pub unsafe fn mma_sync<S: Shape, E: Operand<S>>(
    a: &FragA<S, E, Row>,
    b: &FragB<S, E, Col>,
    c: &FragC<S>,
) -> FragC<S> {
    FragC::from_regs(E::mma(a.regs, b.regs, c.regs))
}
