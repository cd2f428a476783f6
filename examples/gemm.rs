//! `rshmem::ops` GEMM: `C = A · B` with bf16 inputs, bf16 and f32 outputs, B N x K (`A · Bᵀ`)
//! and K x N, on odd shapes, each checked against a host f64 reference. Every PE runs the
//! same GEMMs on its own GPU (or simulated GPU).
//!
//! ```text
//! cargo run --release --example gemm
//! ```
//!
//! On the simulator the shapes are small (1x1x8, 67x45x40, 130x258x72); on GPUs 1000x1000x512
//! and 2048x2048x2048 come too, timed (CUDA events, after a warm-up run). The check is
//! rigorous, whatever order the kernel sums in: bf16 products are exact in f32, and a sum of k
//! terms in f32 whose additions each round or truncate (relative error < 2⁻²³) is within
//! `k · 2⁻²³ · Σ|a||b|` of the exact sum; a bf16 output adds its rounding, half an ulp:
//! `2⁻⁸ · (|ref| + that)` (bf16 keeps 8 significant bits: its ulp at 1 is
//! 2⁻⁷, half of it 2⁻⁸). The measured worst error, as a fraction of its bound, is printed.
//! B K x N runs on the sm80 kernel (`Kernel::Auto`); a build without it says so and skips.
//!
//! The grouped GEMM (`Ops::grouped_gemm`, a mixture-of-experts layer's experts) is checked the
//! same way: groups of 0, 1, 130 and 67 rows (offsets layout), each group's rows against its
//! own B; on GPUs 8 groups of 512 rows too.
//!
//! FP8 (`Ops::gemm_fp8`, `Ops::grouped_gemm_fp8`; sm_90 and the simulator): the same random
//! bf16 operands quantised to e4m3 by `rshmem::ops::fp8` — per tensor, and DeepSeek-V3's block
//! scales (1 x 128 of A, 128 x 128 of B) — checked against an f64 reference of the
//! *dequantised* operands within `γ(n) Σ|a||b|` (`n` the roundings of an f32 sum: the products
//! and K blocks summed, the scales applied; docs/gemm.md derives it), with `u = 2⁻¹³` for the
//! tensor cores' own FP8 sums on GPUs (not IEEE f32 there).

use anyhow::{ensure, Result};
use rshmem::device::fp8::E4m3;
use rshmem::ops::fp8::{self, Blocks};
use rshmem::ops::{BLayout, Fp8Scales, GemmOut, GemmShape, GroupRows, GroupedShape, Ops};
use rshmem::{bf16, Backend, Pod, Shmem};

/// Output element types, read back as f64.
trait Out: GemmOut<bf16> + Pod {
    const NAME: &'static str;
    /// The relative rounding of the output on top of f32 accumulation.
    const ROUNDING: f64;
    fn value(self) -> f64;
}

impl Out for f32 {
    const NAME: &'static str = "f32";
    const ROUNDING: f64 = 0.0;
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Out for bf16 {
    const NAME: &'static str = "bf16";
    const ROUNDING: f64 = 1.0 / 256.0;
    fn value(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// Random bf16 values in [-1, 1) (xorshift).
fn random(len: usize, seed: &mut u64) -> Vec<bf16> {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            bf16::from_f32((*seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect()
}

/// The rows of C the host reference checks: all of them where the reference is quick, else an
/// even sample of at most about 2^29 multiply-adds in f64 (a 4096³ GEMM: every 128th row), and
/// always each group's first and last row and the last row of all.
fn rows_to_check(m: usize, n: usize, k: usize, ends: &[u32]) -> Vec<usize> {
    let step = (m * n * k).div_ceil(1 << 29).max(1);
    let mut rows: Vec<usize> = (0..m).step_by(step).collect();
    let mut start = 0;
    for &end in ends.iter().chain([&(m as u32)]) {
        let end = end as usize;
        if end > start {
            rows.extend([start, end - 1]);
        }
        start = end;
    }
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// Runs `shape` with output `O` and checks it: one GEMM, or with `ends` (cumulative row ends,
/// the last `m`) the grouped GEMM of one B per group.
fn check<O: Out>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    shape: GemmShape,
    ends: &[u32],
    seed: &mut u64,
) -> Result<()> {
    let GemmShape { m, n, k, b_layout } = shape;
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let groups = ends.len().max(1);
    let a = random(mu * ku, seed);
    let b = random(groups * nu * ku, seed);
    let ga = shmem.alloc_from(&a)?;
    let gb = shmem.alloc_from(&b)?;
    let gends = shmem.alloc_from(if ends.is_empty() { &[0] } else { ends })?;
    let mut gc = shmem.alloc_zeroed::<O>(mu * nu)?;
    let stream = shmem.stream();
    let grouped = GroupedShape {
        groups: groups as u32,
        n,
        k,
        b_layout,
    };
    let mut run = || match ends {
        [] => ops.gemm(&stream, &ga, &gb, &mut gc, shape),
        _ => {
            let rows = GroupRows::Offsets {
                ends: (&gends).into(),
                m,
            };
            ops.grouped_gemm(&stream, &ga, &gb, &mut gc, grouped, rows)
        }
    };
    run()?;
    let timing = if shmem.backend() == Backend::Gpu && shape.flops() > 1e9 {
        let t = shmem.time(&mut run)?;
        format!(", {:.1} TFLOP/s", shape.flops() / t.as_secs_f64() / 1e12)
    } else {
        String::new()
    };
    let c = gc.to_vec()?;
    let (a, b): (Vec<f64>, Vec<f64>) = (
        a.iter().map(|v| f64::from(v.to_f32())).collect(),
        b.iter().map(|v| f64::from(v.to_f32())).collect(),
    );
    // Group g's B starts g n k elements in; row `row` is the first group whose end is past it.
    let group_of = |row: usize| ends.iter().position(|&e| row < e as usize).unwrap_or(0);
    let b_at = |g: usize, col: usize, kk: usize| match b_layout {
        BLayout::NK => b[g * nu * ku + col * ku + kk],
        BLayout::KN => b[g * nu * ku + kk * nu + col],
    };
    let accumulation = f64::from(k) * 2f64.powi(-23);
    let mut worst = 0.0f64;
    for row in rows_to_check(mu, nu, ku, ends) {
        let g = group_of(row);
        for col in 0..nu {
            let (mut exact, mut abs) = (0.0, 0.0);
            for kk in 0..ku {
                let p = a[row * ku + kk] * b_at(g, col, kk);
                exact += p;
                abs += p.abs();
            }
            let sum_bound = accumulation * abs;
            let bound = sum_bound + O::ROUNDING * (exact.abs() + sum_bound);
            let got = c[row * nu + col].value();
            let err = (got - exact).abs();
            ensure!(
                err <= bound,
                "{m}x{n}x{k} B {b_layout:?} -> {} (groups {ends:?}): C[{row}][{col}] = {got}, \
                 reference {exact}, error {err:.3e} above the bound {bound:.3e}",
                O::NAME
            );
            if bound > 0.0 {
                worst = worst.max(err / bound);
            }
        }
    }
    let what = match ends {
        [] => String::new(),
        _ => format!(" grouped ({} groups)", ends.len()),
    };
    println!(
        "PE {}: {m}x{n}x{k}{what} B {b_layout:?} bf16 -> {}: ok, worst error {:.1}% of the \
         bound (k·2⁻²³·Σ|a||b|{}){timing}",
        shmem.my_pe(),
        O::NAME,
        100.0 * worst,
        if O::ROUNDING > 0.0 {
            " + 2⁻⁸·|c|"
        } else {
            ""
        }
    );
    Ok(())
}

/// One FP8 GEMM of `m x n x k` (`ends`: the grouped one, block scales), e4m3 into bf16, its
/// operands the bf16 values of `random` quantised with `blocks`' scales, checked against the
/// f64 reference of the dequantised operands.
fn check_fp8(
    shmem: &Shmem,
    ops: &Ops<'_>,
    (m, n, k): (usize, usize, usize),
    block: bool,
    ends: &[u32],
    seed: &mut u64,
) -> Result<()> {
    let groups = ends.len().max(1);
    let (ba, bb) = if block {
        (Blocks::PER_TOKEN, Blocks::PER_BLOCK)
    } else {
        (Blocks::tensor(m, k), Blocks::tensor(n, k))
    };
    let qa = fp8::quantize(&random(m * k, seed), m, k, ba);
    let qb: Vec<_> = (0..groups)
        .map(|_| fp8::quantize(&random(n * k, seed), n, k, bb))
        .collect();
    let a = shmem.alloc_from(qa.values())?;
    let b = shmem.alloc_from(
        &qb.iter()
            .flat_map(|q| q.values().to_vec())
            .collect::<Vec<_>>(),
    )?;
    let sa = shmem.alloc_from(&if block {
        qa.scales_column_major()
    } else {
        qa.scales.clone()
    })?;
    let sb = shmem.alloc_from(&qb.iter().flat_map(|q| q.scales.clone()).collect::<Vec<_>>())?;
    let gends = shmem.alloc_from(if ends.is_empty() { &[0] } else { ends })?;
    let mut c = shmem.alloc_zeroed::<bf16>(m * n)?;
    let stream = shmem.stream();
    let shape = GemmShape::new(m as u32, n as u32, k as u32, BLayout::NK);
    let scales = if block {
        Fp8Scales::Block {
            a: (&sa).into(),
            b: (&sb).into(),
        }
    } else {
        Fp8Scales::Tensor {
            a: (&sa).into(),
            b: (&sb).into(),
        }
    };
    let mut run = || match ends {
        [] => ops.gemm_fp8::<E4m3, bf16>(&stream, &a, &b, &mut c, shape, scales),
        _ => {
            let grouped = GroupedShape {
                groups: groups as u32,
                n: n as u32,
                k: k as u32,
                b_layout: BLayout::NK,
            };
            let rows = GroupRows::Offsets {
                ends: (&gends).into(),
                m: m as u32,
            };
            ops.grouped_gemm_fp8::<E4m3, bf16>(&stream, &a, &b, &mut c, grouped, rows, scales)
        }
    };
    run()?;
    let timing = if shmem.backend() == Backend::Gpu && shape.flops() > 1e9 {
        let t = shmem.time(&mut run)?;
        format!(", {:.1} TFLOP/s", shape.flops() / t.as_secs_f64() / 1e12)
    } else {
        String::new()
    };
    let c = c.to_vec()?;
    let da = qa.dequantize();
    let db: Vec<Vec<f32>> = qb.iter().map(|q| q.dequantize()).collect();
    let group_of = |row: usize| ends.iter().position(|&e| row < e as usize).unwrap_or(0);
    // The roundings of the f32 sum (see the module docs): the tensor cores' sum of the products
    // (all of K per tensor, 128 per block), the scales' product and applications, the blocks'
    // additions.
    let u = 2f64.powi(-24);
    let tc = if shmem.backend() == Backend::Gpu {
        2f64.powi(-13)
    } else {
        u
    };
    let gamma = |n: usize, u: f64| n as f64 * u / (1.0 - n as f64 * u);
    let gam = if block {
        gamma(k.min(128), tc) + gamma(k.div_ceil(128) + 3, u)
    } else {
        gamma(k, tc) + gamma(2, u)
    };
    let mut worst = 0.0f64;
    for row in rows_to_check(m, n, k, ends) {
        let g = group_of(row);
        for col in 0..n {
            let (mut exact, mut abs) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = f64::from(da[row * k + kk]) * f64::from(db[g][col * k + kk]);
                exact += p;
                abs += p.abs();
            }
            let bound = gam * abs + (exact.abs() + gam * abs) / 256.0;
            let got = f64::from(c[row * n + col].to_f32());
            let err = (got - exact).abs();
            ensure!(
                err <= bound,
                "FP8 {m}x{n}x{k} (block {block}, groups {ends:?}): C[{row}][{col}] = {got}, \
                 reference {exact}, error {err:.3e} above the bound {bound:.3e}"
            );
            if bound > 0.0 {
                worst = worst.max(err / bound);
            }
        }
    }
    let what = match (ends, block) {
        ([], true) => "block scales".to_string(),
        ([], false) => "per-tensor scales".to_string(),
        _ => format!("grouped ({} groups), block scales", ends.len()),
    };
    println!(
        "PE {}: FP8 e4m3 {m}x{n}x{k} {what} -> bf16: ok, worst error {:.1}% of the bound \
         (γ(n)·Σ|a||b| of the dequantised operands + 2⁻⁸·|c|){timing}",
        shmem.my_pe(),
        100.0 * worst
    );
    Ok(())
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let ops = Ops::new(shmem)?;
        let info = ops.device_info();
        let mut shapes: Vec<(u32, u32, u32)> = vec![(1, 1, 8), (67, 45, 40), (130, 258, 72)];
        if shmem.backend() == Backend::Gpu {
            shapes.extend([(1000, 1000, 512), (2048, 2048, 2048)]);
        }
        println!(
            "PE {}: {:?}, sm_{}, {} multiprocessors",
            shmem.my_pe(),
            shmem.backend(),
            info.sm,
            info.multiprocessors
        );
        let mut seed = 0x9E37_79B9_7F4A_7C15 ^ shmem.my_pe() as u64;
        let mut ran = 0;
        for (m, n, k) in shapes {
            // B K x N needs rows of a multiple of 8 elements (16 bytes: TMA's and cp.async's
            // granule); N x K takes any n.
            for (layout, n) in [(BLayout::NK, n), (BLayout::KN, n.next_multiple_of(8))] {
                let shape = GemmShape::new(m, n, k, layout);
                check::<bf16>(shmem, &ops, shape, &[], &mut seed)?;
                check::<f32>(shmem, &ops, shape, &[], &mut seed)?;
                ran += 2;
            }
        }
        // Grouped: an empty group, a one-row group, one over a tile, a ragged one.
        let mut grouped: Vec<(Vec<u32>, u32, u32)> = vec![(vec![0, 1, 131, 198], 72, 56)];
        if shmem.backend() == Backend::Gpu {
            grouped.push(((1..=8).map(|g| 512 * g).collect(), 4096, 4096));
        }
        for (ends, n, k) in grouped {
            let m = *ends.last().unwrap_or(&0);
            for layout in [BLayout::NK, BLayout::KN] {
                let shape = GemmShape::new(m, n, k, layout);
                check::<bf16>(shmem, &ops, shape, &ends, &mut seed)?;
                check::<f32>(shmem, &ops, shape, &ends, &mut seed)?;
                ran += 2;
            }
        }
        // FP8 (the sm90 kernels): both scalings, and grouped with an empty group.
        if info.sm == 90 {
            let mut fp8_shapes = vec![(67, 130, 272)];
            if shmem.backend() == Backend::Gpu {
                fp8_shapes.push((2048, 2048, 2048));
            }
            for (m, n, k) in fp8_shapes {
                for block in [false, true] {
                    check_fp8(shmem, &ops, (m, n, k), block, &[], &mut seed)?;
                    ran += 1;
                }
            }
            check_fp8(
                shmem,
                &ops,
                (198, 72, 144),
                true,
                &[0, 1, 131, 198],
                &mut seed,
            )?;
            ran += 1;
        } else {
            println!(
                "PE {}: FP8 skipped: its kernels need sm_90 (this device is sm_{})",
                shmem.my_pe(),
                info.sm
            );
        }
        println!(
            "PE {}: {ran} GEMMs checked (grouped and FP8 ones included)",
            shmem.my_pe()
        );
        Ok(())
    })?;
    Ok(())
}
