//! `Sm90Launch` and `Sm80Launch`: a kernel on rshmem-gemm's mainloops launched with nothing but
//! what they give (config, maps or operand views, problem), against a host reference, C a
//! strided view (rows wider than n, the columns past n poisoned and checked untouched). The
//! kernels are the ops' own (`kernels/ops`' `gemm90` and `gemm80` families: the mainloops with the
//! plain epilogue), launched directly as a user's kernel would be. Odd M and N, both B
//! layouts, more tiles than the simulator's two multiprocessors (the persistent loop); inputs
//! are small integers, so the f32 results are exact. Also the errors, which name the call.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{bf16, Shmem};
use rshmem_ops::{BLayout, GemmShape, Sm80Launch, Sm90Launch};

per_backend! {
    sm90_launch_computes_the_gemm => [1];
    sm80_launch_computes_the_gemm => [1];
    launches_refuse_what_the_gemm_refuses => [1];
}

fn small(i: u32, j: u32, salt: u32) -> f32 {
    ((i * 7 + j * 3 + salt) % 9) as f32 - 4.0
}

/// A (m x k) and B (n x k or k x n) as bf16, and the f64 reference of `A · B` (m x n).
fn operands(m: u32, n: u32, k: u32, layout: BLayout) -> (Vec<bf16>, Vec<bf16>, Vec<f64>) {
    let a: Vec<f32> = (0..m * k).map(|i| small(i / k, i % k, 1)).collect();
    let b_at = |q: u32, j: u32| small(j, q, 5) / 2.0; // B(k = q, n = j)
    let b: Vec<f32> = match layout {
        BLayout::KN => (0..k * n).map(|i| b_at(i / n, i % n)).collect(),
        BLayout::NK => (0..n * k).map(|i| b_at(i % k, i / k)).collect(),
    };
    let c = (0..m * n)
        .map(|i| {
            let (r, j) = (i / n, i % n);
            (0..k)
                .map(|q| f64::from(a[(r * k + q) as usize]) * f64::from(b_at(q, j)))
                .sum()
        })
        .collect();
    let bf = |v: Vec<f32>| v.into_iter().map(bf16::from_f32).collect();
    (bf(a), bf(b), c)
}

/// C (m x n, rows `ld` apart) against `want`; the columns past n must still hold NaN.
fn check_c(got: &[f32], want: &[f64], (n, ld): (u32, u32), what: &str) -> Outcome {
    for (r, row) in got.chunks(ld as usize).enumerate() {
        for (j, &g) in row.iter().enumerate() {
            let w = want
                .get(r * n as usize + j)
                .copied()
                .filter(|_| j < n as usize);
            match w {
                Some(w) if f64::from(g) != w => {
                    return Err(format!("{what}: C[{r}, {j}] = {g}, expected {w}").into())
                }
                None if !g.is_nan() => {
                    return Err(format!("{what}: C[{r}, {j}] (past n) written: {g}").into())
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// C's leading dimension in these tests: wider than n (and even, as the stores want).
fn ld_of(n: u32) -> u32 {
    n + 6
}

/// Shapes with odd edges and more tiles than the simulator's two multiprocessors.
const SHAPES: [(u32, u32, u32); 2] = [(200, 300, 72), (129, 40, 136)];

fn sm90_launch_computes_the_gemm(shmem: &Shmem) -> Outcome {
    if shmem.device_info().sm != 90 {
        return Ok(()); // the sm90 mainloop runs on sm_90 only (the error is tested below)
    }
    let module = shmem.load(&rshmem_ops::gemm::IMAGE90)?;
    for (m, n, k) in SHAPES {
        for layout in [BLayout::NK, BLayout::KN] {
            let n = if layout == BLayout::KN {
                n.next_multiple_of(8)
            } else {
                n
            };
            let (a, b, want) = operands(m, n, k, layout);
            let (a, b) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
            let ld = ld_of(n);
            let mut c = shmem.alloc_from(&vec![f32::NAN; (m * ld) as usize])?;
            let shape = GemmShape::new(m, n, k, layout);
            let gemm = Sm90Launch::new(shmem, &a, &b, shape)?;
            let (cfg, p) = (gemm.config(), gemm.problem());
            let tiles = m.div_ceil(128) * n.div_ceil(256);
            let sms = shmem.device_info().multiprocessors;
            assert_eq!(cfg.grid, (tiles.min(sms), 1, 1), "{m} x {n}");
            assert_eq!(cfg.block, (rshmem_gemm::sm90::THREADS, 1, 1));
            assert_eq!(cfg.shared_mem_bytes, rshmem_gemm::sm90::SHARED_BYTES);
            assert_eq!((p.m, p.n, p.k, gemm.tiles()), (m, n, k, tiles));
            let args = (gemm.maps(), p, c.matrix_mut_ld(m, n, ld)?);
            // SAFETY: the ops' sm90 kernels are sm90::gemm with B_KN as named, launched with
            // the helper's config and maps of `a` and `b`; c's view holds m x n.
            unsafe {
                match layout {
                    BLayout::NK => module
                        .launch::<rshmem_ops_kernels::gemm90::gemm90_bf16_f32_nk>(cfg, args)?,
                    BLayout::KN => module
                        .launch::<rshmem_ops_kernels::gemm90::gemm90_bf16_f32_kn>(cfg, args)?,
                }
            };
            let what = format!("sm90 {m}x{n}x{k} {layout:?}");
            check_c(&c.to_vec()?, &want, (n, ld), &what)?;
        }
    }
    Ok(())
}

fn sm80_launch_computes_the_gemm(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&rshmem_ops::gemm::IMAGE80)?;
    for (m, n, k) in SHAPES {
        for layout in [BLayout::NK, BLayout::KN] {
            let n = if layout == BLayout::KN {
                n.next_multiple_of(8)
            } else {
                n
            };
            let (a, b, want) = operands(m, n, k, layout);
            let (a, b) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
            let ld = ld_of(n);
            let mut c = shmem.alloc_from(&vec![f32::NAN; (m * ld) as usize])?;
            let gemm = Sm80Launch::new(shmem, &a, &b, GemmShape::new(m, n, k, layout))?;
            let (cfg, p) = (gemm.config(), gemm.problem());
            let tiles = m.div_ceil(128) * n.div_ceil(128);
            let sms = shmem.device_info().multiprocessors;
            assert_eq!(cfg.grid, (tiles.min(sms), 1, 1), "{m} x {n}");
            assert_eq!(cfg.block, (rshmem_gemm::sm80::THREADS, 1, 1));
            assert_eq!(cfg.shared_mem_bytes, rshmem_gemm::sm80::SHARED_BYTES);
            assert_eq!(gemm.tiles(), tiles);
            let (b_rows, b_cols) = GemmShape::new(m, n, k, layout).b_dims();
            let (ga, gb) = (gemm.a(), gemm.b());
            assert_eq!(
                (ga.as_ptr(), ga.rows(), ga.cols(), ga.ld()),
                (a.as_ptr(), m, k, k)
            );
            assert_eq!(
                (gb.as_ptr(), gb.rows(), gb.cols()),
                (b.as_ptr(), b_rows, b_cols)
            );
            let args = (ga, gb, p, c.matrix_mut_ld(m, n, ld)?);
            // SAFETY: the ops' sm80 kernels are sm80::gemm with B_KN as named, launched with
            // the helper's config and operand views (checked); c's view holds m x n.
            unsafe {
                match layout {
                    BLayout::NK => module
                        .launch::<rshmem_ops_kernels::gemm80::gemm80_bf16_f32_nk>(cfg, args)?,
                    BLayout::KN => module
                        .launch::<rshmem_ops_kernels::gemm80::gemm80_bf16_f32_kn>(cfg, args)?,
                }
            };
            let what = format!("sm80 {m}x{n}x{k} {layout:?}");
            check_c(&c.to_vec()?, &want, (n, ld), &what)?;
        }
    }
    Ok(())
}

fn launches_refuse_what_the_gemm_refuses(shmem: &Shmem) -> Outcome {
    let a = shmem.alloc_zeroed::<bf16>(64 * 64)?;
    let b = shmem.alloc_zeroed::<bf16>(64 * 64)?;
    let short = GemmShape::new(65, 64, 64, BLayout::NK);
    let odd_k = GemmShape::new(64, 64, 60, BLayout::NK);
    let e = Sm80Launch::new(shmem, &a, &b, short)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Sm80Launch::new") && e.contains("`a` has 4096"),
        "{e}"
    );
    let e = Sm80Launch::new(shmem, &a, &b, odd_k)
        .unwrap_err()
        .to_string();
    assert!(e.contains("k = 60") && e.contains("multiple of 8"), "{e}");
    // The views a kernel's C takes check their extent and leading dimension.
    let mut c = shmem.alloc_zeroed::<f32>(64 * 64)?;
    let e = c.matrix_mut_ld(64, 64, 63).unwrap_err().to_string();
    assert!(
        e.contains("leading dimension 63 is less than the 64 columns"),
        "{e}"
    );
    let e = c.matrix_mut_ld(64, 60, 65).unwrap_err().to_string();
    assert!(e.contains("needs 4155 elements, the range has 4096"), "{e}");
    assert!(c.range_mut(1..)?.matrix_mut(64, 64).is_err());
    let e = Sm90Launch::new(shmem, &a, &b, short)
        .err()
        .unwrap()
        .to_string();
    if shmem.device_info().sm == 90 {
        assert!(
            e.contains("Sm90Launch::new") && e.contains("`a` has 4096"),
            "{e}"
        );
    } else {
        assert!(
            e.contains("Sm90Launch::new") && e.contains("use Sm80Launch"),
            "{e}"
        );
    }
    Ok(())
}
