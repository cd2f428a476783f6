//! The sm_80 GEMM kernels of `kernels/ops`' `gemm80` family (`rshmem_gemm::sm80`) against a host
//! reference, on every backend: both layouts of B, bf16 and f16 inputs, f32 and 16-bit
//! outputs, shapes with ragged edges in M, N and K (a multiple of 8), more tiles than blocks
//! (the persistent loop), padded rows of A, B and C.
//!
//! Inputs are small integers times powers of two (`-4..=4 · 2^-2..=2^1`), exact in bf16 and
//! f16, whose products and every partial sum are exact in f32: an f32 C must equal the f64
//! reference exactly and a 16-bit C must equal it rounded to nearest even. A, B and C are
//! poisoned with NaN past their matrices (row padding, guard rows), so a read past K, M or N
//! or a write outside C shows.
//!
//! `cargo test -p rshmem-ops --test sm80_kernel` runs the simulator instances; the GPU ones
//! (`gpu::*`) are ignored without GPUs.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::device::half::{bf16, f16, Half};
use rshmem::device::matrix::{Matrix, MatrixMut};
use rshmem::device::Kernel;
use rshmem::{LaunchConfig, Module, Shmem};
use rshmem_gemm::Problem;
use rshmem_ops_kernels::gemm80::{self as k, sm80};

per_backend! {
    bf16_to_f32_nk => [1];
    bf16_to_f32_kn => [1];
    bf16_to_bf16_nk => [1];
    bf16_to_bf16_kn => [1];
    f16_to_f32_nk => [1];
    f16_to_f32_kn => [1];
}

/// Three extents: (m, n, k), or how far A's, B's and C's rows are padded beyond their
/// minimum (multiples of 8 for A and B, whose rows must stay 16-byte aligned).
type Dims = (usize, usize, usize);

/// The cases: (m, n, k) and the rows' padding.
const SHAPES: &[(Dims, Dims)] = &[
    ((1, 1, 8), (0, 0, 0)),
    ((37, 45, 24), (8, 0, 3)),
    ((130, 129, 72), (0, 8, 1)),
    ((128, 128, 32), (0, 0, 0)),
    // 2 x 3 tiles on 4 blocks: two of them take a second tile.
    ((200, 300, 40), (8, 0, 2)),
];

/// An element type of C: how the kernel's result is checked.
trait Out: bytemuck::Pod + std::fmt::Debug {
    /// The poison C starts with.
    const POISON: Self;
    /// The expected value for the exact f32 `v`.
    fn expect(v: f32) -> Self;
    /// Equal as values (so +0 == -0), or both the same bits.
    fn same(a: Self, b: Self) -> bool;
    /// Whether `a` is still the poison, bit for bit.
    fn is_poison(a: Self) -> bool;
}

impl Out for f32 {
    const POISON: f32 = f32::from_bits(0x7FC0_1234);
    fn expect(v: f32) -> f32 {
        v
    }
    fn same(a: f32, b: f32) -> bool {
        a == b
    }
    fn is_poison(a: f32) -> bool {
        a.to_bits() == Self::POISON.to_bits()
    }
}

impl Out for bf16 {
    const POISON: bf16 = bf16::from_bits(0xFFFF);
    fn expect(v: f32) -> bf16 {
        // The `half` crate's conversion rounds to nearest even.
        bf16::from_f32(v)
    }
    fn same(a: bf16, b: bf16) -> bool {
        a.to_f32() == b.to_f32()
    }
    fn is_poison(a: bf16) -> bool {
        a.to_bits() == 0xFFFF
    }
}

/// An input element type: its NaN (for the padding) and conversion.
trait In: bytemuck::Pod + Half {
    const NAN_BITS: u16;
    fn from_bits16(b: u16) -> Self;
}
impl In for bf16 {
    const NAN_BITS: u16 = 0x7FC1;
    fn from_bits16(b: u16) -> bf16 {
        bf16::from_bits(b)
    }
}
impl In for f16 {
    const NAN_BITS: u16 = 0x7E01;
    fn from_bits16(b: u16) -> f16 {
        f16::from_bits(b)
    }
}

/// The kernels' argument tuple.
type Args<I, O> = (Matrix<I>, Matrix<I>, Problem, MatrixMut<O>);

/// An exact small value from a random word: `-4..=4` times `2^-2..=2^1`.
fn value(r: u32) -> f32 {
    ((r % 9) as f32 - 4.0) * 2f32.powi((r / 9 % 4) as i32 - 2)
}

fn case<I: In, O: Out, K: Kernel<Args = Args<I, O>>>(
    shmem: &Shmem,
    module: &Module<'_>,
    b_kn: bool,
    seed: u64,
) -> Outcome {
    for (si, &((m, n, kk), (pa, pb, pc))) in SHAPES.iter().enumerate() {
        let lda = kk + pa;
        // B's rows: n of ldb >= k (N x K) or k of ldb >= n rounded up to 8 (K x N).
        let (b_rows, b_cols) = if b_kn { (kk, n) } else { (n, kk) };
        let ldb = b_cols.div_ceil(8) * 8 + pb;
        let ldc = n + pc;
        let words = common::random_u32(m * kk + b_rows * b_cols, seed ^ (si as u64 * 0x9E37));
        let nan = I::from_bits16(I::NAN_BITS);
        let mut a = vec![nan; m * lda];
        let mut b = vec![nan; b_rows * ldb];
        let mut w = words.iter().copied();
        for r in 0..m {
            for c in 0..kk {
                a[r * lda + c] = I::from_f32_rn(value(w.next().unwrap()));
            }
        }
        for r in 0..b_rows {
            for c in 0..b_cols {
                b[r * ldb + c] = I::from_f32_rn(value(w.next().unwrap()));
            }
        }
        // Two guard rows past C's m rows.
        let c_len = (m + 2) * ldc;
        let (abuf, bbuf) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
        let mut cbuf = shmem.alloc_from(&vec![O::POISON; c_len])?;
        let tiles = m.div_ceil(sm80::BM as usize) * n.div_ceil(sm80::BN as usize);
        let grid = (tiles as u32).min(4);
        let config = LaunchConfig::new(grid, sm80::THREADS).shared_mem(sm80::SHARED_BYTES);
        let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
        let args = (
            abuf.matrix_ld(mu, ku, lda as u32)?,
            bbuf.matrix_ld(b_rows as u32, b_cols as u32, ldb as u32)?,
            Problem {
                m: mu,
                n: nu,
                k: ku,
            },
            cbuf.matrix_mut_ld(mu, nu, ldc as u32)?,
        );
        // SAFETY: k a multiple of 8, A and B 16-byte aligned allocations with rows a multiple
        // of 8 apart holding the matrices (the views, checked), C's view m x n; the launch is
        // the kernel's.
        unsafe { module.launch::<K>(config, args)? };
        let got = cbuf.to_vec()?;
        let at_b = |kx: usize, col: usize| {
            if b_kn {
                b[kx * ldb + col]
            } else {
                b[col * ldb + kx]
            }
        };
        for r in 0..m + 2 {
            for col in 0..ldc {
                let g = got[r * ldc + col];
                if r >= m || col >= n {
                    assert!(
                        O::is_poison(g),
                        "{} shape {m}x{n}x{kk}: C[{r}][{col}] outside C written: {g:?}",
                        K::NAME
                    );
                    continue;
                }
                let want: f64 = (0..kk)
                    .map(|x| {
                        f64::from(a[r * lda + x].to_f32_exact())
                            * f64::from(at_b(x, col).to_f32_exact())
                    })
                    .sum();
                let want = want as f32;
                assert!(
                    O::same(g, O::expect(want)),
                    "{} shape {m}x{n}x{kk} (lda {lda}, ldb {ldb}, ldc {ldc}, grid {grid}): \
                     C[{r}][{col}] = {g:?}, reference {want} -> {:?}",
                    K::NAME,
                    O::expect(want)
                );
            }
        }
    }
    Ok(())
}

fn run<I: In, O: Out, K: Kernel<Args = Args<I, O>>>(shmem: &Shmem, b_kn: bool) -> Outcome {
    let module = shmem.load(&rshmem_ops::gemm::IMAGE80)?;
    let seed = common::agreed_seed(shmem)?;
    case::<I, O, K>(shmem, &module, b_kn, seed)
}

fn bf16_to_f32_nk(shmem: &Shmem) -> Outcome {
    run::<bf16, f32, k::gemm80_bf16_f32_nk>(shmem, false)
}
fn bf16_to_f32_kn(shmem: &Shmem) -> Outcome {
    run::<bf16, f32, k::gemm80_bf16_f32_kn>(shmem, true)
}
fn bf16_to_bf16_nk(shmem: &Shmem) -> Outcome {
    run::<bf16, bf16, k::gemm80_bf16_bf16_nk>(shmem, false)
}
fn bf16_to_bf16_kn(shmem: &Shmem) -> Outcome {
    run::<bf16, bf16, k::gemm80_bf16_bf16_kn>(shmem, true)
}
fn f16_to_f32_nk(shmem: &Shmem) -> Outcome {
    run::<f16, f32, k::gemm80_f16_f32_nk>(shmem, false)
}
fn f16_to_f32_kn(shmem: &Shmem) -> Outcome {
    run::<f16, f32, k::gemm80_f16_f32_kn>(shmem, true)
}
