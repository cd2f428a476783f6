//! The sm_90a GEMM kernels of `kernels/ops`' `gemm90` family launched directly, against a host reference:
//! odd M and N, K edges and K long enough to cycle the pipeline's stages several times, both
//! B layouts, f32 and bf16/f16 outputs, and a grid smaller than the tile count (the
//! persistent loop). Inputs are small integers (exact in bf16 and f16) so the f32 results are
//! exact and the 16-bit outputs are the reference rounded to nearest even. C is poisoned and
//! has a guard band past its last row that must stay poisoned.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::device::matrix::MatrixMut;
use rshmem::{bf16, f16, Swizzle};
use rshmem::{Backend, LaunchConfig, Shmem, SymBuffer, TensorMap, TiledSpec, TmaType};
use rshmem_gemm::{Problem, Sm90Maps};
use rshmem_ops_kernels::gemm90::{self as k, sm90};

per_backend! {
    sm90_gemm_nk => [1];
    sm90_gemm_kn => [1];
    sm90_gemm_long_k => [1];
    launch_bound_is_checked => [1];
}

fn small(i: u32, j: u32, salt: u32) -> f32 {
    ((i * 7 + j * 3 + salt) % 9) as f32 - 4.0
}

/// One tensor map of a row-major `rows x cols` 16-bit matrix, in a symmetric buffer.
fn map<'s>(
    shmem: &'s Shmem,
    ty: TmaType,
    data: *const u16,
    rows: u32,
    cols: u32,
    box_dims: [u32; 2],
) -> Result<SymBuffer<'s, TensorMap>, rshmem::Error> {
    let spec = TiledSpec {
        ty,
        global: data.cast(),
        dims: &[cols as u64, rows as u64],
        strides: &[cols as u64 * 2],
        box_dims: &box_dims,
        swizzle: Swizzle::B128,
    };
    shmem.alloc_from(&[TensorMap::tiled(shmem, &spec)?])
}

/// The launch: at most `max_blocks` persistent blocks.
fn config(m: u32, n: u32, max_blocks: u32) -> LaunchConfig {
    let tiles = m.div_ceil(sm90::BM) * n.div_ceil(sm90::BN);
    LaunchConfig::new(tiles.min(max_blocks), sm90::THREADS).shared_mem(sm90::SHARED_BYTES)
}

/// Rows of poison past C.
const GUARD_ROWS: u32 = 2;

/// Runs C = A·B for A m x k, B (k x n when `kn`, else n x k), into f32 and into 16-bit C of
/// the input type, and checks both.
fn check(shmem: &Shmem, (m, n, kk): (u32, u32, u32), kn: bool, f16_in: bool) -> Outcome {
    let module = shmem.load(&rshmem_ops::gemm::IMAGE90)?;
    let a: Vec<f32> = (0..m * kk).map(|i| small(i / kk, i % kk, 1)).collect();
    // b[q][j] = B(k = q, n = j) whichever way it is stored.
    let b_at = |q: u32, j: u32| small(j, q, 5) / 2.0;
    let b: Vec<f32> = if kn {
        (0..kk * n).map(|i| b_at(i / n, i % n)).collect()
    } else {
        (0..n * kk).map(|i| b_at(i % kk, i / kk)).collect()
    };
    let bits = |v: &[f32]| -> Vec<u16> {
        v.iter()
            .map(|&x| {
                if f16_in {
                    f16::from_f32(x).to_bits()
                } else {
                    bf16::from_f32(x).to_bits()
                }
            })
            .collect()
    };
    let (ga, gb) = (shmem.alloc_from(&bits(&a))?, shmem.alloc_from(&bits(&b))?);
    let ty = if f16_in { TmaType::F16 } else { TmaType::Bf16 };
    let ma = map(shmem, ty, ga.as_ptr(), m, kk, sm90::A_BOX)?;
    let mb = if kn {
        map(shmem, ty, gb.as_ptr(), kk, n, sm90::B_BOX_KN)?
    } else {
        map(shmem, ty, gb.as_ptr(), n, kk, sm90::B_BOX_NK)?
    };
    let want: Vec<f32> = (0..m * n)
        .map(|i| {
            let (r, c) = (i / n, i % n);
            (0..kk).map(|q| a[(r * kk + q) as usize] * b_at(q, c)).sum()
        })
        .collect();
    let len = ((m + GUARD_ROWS) * n) as usize;
    let mut c32 = shmem.alloc_from(&vec![f32::NAN; len])?;
    let mut c16 = shmem.alloc_from(&vec![0xFFFFu16; len])?;
    let (pa, pb) = (TensorMap::kernel_ptr(&ma), TensorMap::kernel_ptr(&mb));
    let cfg = config(m, n, 2);
    macro_rules! launch {
        ($kernel:ident, $c:expr) => {
            // SAFETY: maps of `ga` (m x kk) and `gb` in its layout, of the kernel's input
            // type; C holds m rows of n (and guard rows); the launch is sm90's shape.
            unsafe {
                let c = MatrixMut::from_raw_parts($c, m, n, n);
                let maps = Sm90Maps { a: pa, b: pb };
                module.launch::<k::$kernel>(cfg, (maps, Problem { m, n, k: kk }, c))?
            }
        };
    }
    match (f16_in, kn) {
        (false, false) => {
            launch!(gemm90_bf16_f32_nk, c32.as_mut_ptr());
            launch!(gemm90_bf16_bf16_nk, c16.as_mut_ptr().cast());
        }
        (false, true) => {
            launch!(gemm90_bf16_f32_kn, c32.as_mut_ptr());
            launch!(gemm90_bf16_bf16_kn, c16.as_mut_ptr().cast());
        }
        (true, false) => {
            launch!(gemm90_f16_f32_nk, c32.as_mut_ptr());
            launch!(gemm90_f16_f16_nk, c16.as_mut_ptr().cast());
        }
        (true, true) => {
            launch!(gemm90_f16_f32_kn, c32.as_mut_ptr());
            launch!(gemm90_f16_f16_kn, c16.as_mut_ptr().cast());
        }
    }
    let (got32, got16) = (c32.to_vec()?, c16.to_vec()?);
    let what = format!("{m} x {n} x {kk}, B {}", if kn { "k x n" } else { "n x k" });
    for (i, &w) in want.iter().enumerate() {
        let (r, c) = (i as u32 / n, i as u32 % n);
        assert_eq!(got32[i], w, "{what}: f32 C[{r}][{c}]");
        let w16 = if f16_in {
            f16::from_f32(w).to_bits()
        } else {
            bf16::from_f32(w).to_bits()
        };
        assert_eq!(got16[i], w16, "{what}: 16-bit C[{r}][{c}] (want {w})");
    }
    assert!(
        got32[want.len()..].iter().all(|v| v.is_nan()),
        "{what}: f32 guard rows written"
    );
    assert!(
        got16[want.len()..].iter().all(|&v| v == 0xFFFF),
        "{what}: 16-bit guard rows written"
    );
    if shmem.backend() == Backend::Gpu {
        eprintln!("sm90 gemm {what} (f16 {f16_in}) matches the host reference on the GPU");
    }
    Ok(())
}

/// B n x k: odd M and N, K one k-step and a partial one, several tiles over two blocks.
fn sm90_gemm_nk(shmem: &Shmem) -> Outcome {
    for shape in [(1, 1, 8), (37, 45, 24), (130, 257, 72)] {
        check(shmem, shape, false, false)?;
    }
    check(shmem, (67, 19, 40), false, true)
}

/// B k x n (N a multiple of 8, as TMA's 16-byte row stride needs): wgmma's MN-major B.
fn sm90_gemm_kn(shmem: &Shmem) -> Outcome {
    for shape in [(1, 8, 8), (37, 48, 24), (130, 264, 72)] {
        check(shmem, shape, true, false)?;
    }
    check(shmem, (67, 24, 40), true, true)
}

/// Ten k-steps through four stages, then a second tile on the same block: the stages'
/// phases carry on across tiles.
fn sm90_gemm_long_k(shmem: &Shmem) -> Outcome {
    check(shmem, (200, 16, 600), false, false)?;
    check(shmem, (200, 16, 600), true, false)
}

/// `#[kernel(launch_bounds(384, 1))]`: a wider block is refused before anything runs, naming
/// the bound (the GPU code's registers are allocated for 384 threads).
fn launch_bound_is_checked(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&rshmem_ops::gemm::IMAGE90)?;
    let cfg = LaunchConfig::new(1, 512).shared_mem(sm90::SHARED_BYTES);
    let null = std::ptr::null();
    let maps = Sm90Maps { a: null, b: null };
    // SAFETY: refused before launch (the test's point); nothing is dereferenced.
    let err = unsafe {
        let c = MatrixMut::from_raw_parts(std::ptr::null_mut(), 8, 8, 8);
        module.launch::<k::gemm90_bf16_f32_nk>(cfg, (maps, Problem { m: 8, n: 8, k: 8 }, c))
    }
    .expect_err("512 threads must be refused");
    let msg = err.to_string();
    assert!(
        msg.contains("512 threads") && msg.contains("launch bound of 384"),
        "{msg}"
    );
    Ok(())
}
