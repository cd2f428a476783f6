//! `rshmem::ops` all-reduce: every algorithm (flag-in-data one-shot, one-shot through push
//! slots, two-shot) and `Auto`, bf16 sums over every PE, each result checked against an f64
//! reference, in a small table; then the fused all-reduce + RMSNorm, checked too.
//!
//! ```text
//! cargo run --release --example all_reduce               # GPUs if present, else the simulator
//! RSHMEM_BACKEND=sim RSHMEM_NPES=4 cargo run --release --example all_reduce
//! ```
//!
//! The check: inputs are bf16 values in [-1, 1); the kernels sum in f32 in rank order and round
//! once, so the result is within `2⁻⁸·(|S| + e) + e` of the exact sum `S`, where
//! `e = (n − 1)·2⁻²⁴·Σ|xᵢ|` bounds the f32 additions (bf16 keeps 8 significant bits: half an
//! ulp is at most `2⁻⁸` of the value). The worst error seen, as a fraction of its bound, is
//! printed. On GPUs each size is also timed (CUDA events, median of 20 after a warm-up) with
//! the bus bandwidth NCCL reports (`2·(n − 1)/n · bytes / time`); on the simulator times mean
//! nothing and are not shown. `scripts/collectives_bench.py` is the benchmark.

use anyhow::{ensure, Result};
use rshmem::ops::{Algorithm, Ops};
use rshmem::{bf16, Backend, ReduceOp, Shmem, Team};

/// PE `pe`'s value `i` of a run: bf16 in [-1, 1) from a hash (every PE can compute all).
fn value(seed: u64, pe: usize, i: usize) -> bf16 {
    let mut x = seed ^ (pe as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64) << 20;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    bf16::from_f64((x >> 11) as f64 / (1u64 << 52) as f64 * 2.0 - 1.0)
}

/// The worst `|got − S| / bound` over the elements (≤ 1 passes).
fn check(got: &[bf16], seed: u64, n: usize) -> f64 {
    let mut worst = 0f64;
    for (i, g) in got.iter().enumerate() {
        let xs: Vec<f64> = (0..n).map(|pe| value(seed, pe, i).to_f64()).collect();
        let sum: f64 = xs.iter().sum();
        let e = (n as f64 - 1.0) * 2f64.powi(-24) * xs.iter().map(|x| x.abs()).sum::<f64>();
        let bound = 2f64.powi(-8) * (sum.abs() + e) + e;
        let err = (g.to_f64() - sum).abs();
        worst = worst.max(if bound == 0.0 {
            err * f64::INFINITY
        } else {
            err / bound
        });
    }
    worst
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let ops = Ops::new(shmem)?;
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let gpu = shmem.backend() == Backend::Gpu;
        let sizes: &[usize] = if gpu {
            &[1, 4096, 32 << 10, 512 << 10, 8 << 20]
        } else {
            &[1, 4099, (128 << 10) + 3]
        };
        let stream = shmem.stream();
        if me == 0 {
            println!(
                "all_reduce of bf16 sums on {n} PEs ({}); results checked against f64",
                if gpu { "GPU" } else { "simulator" }
            );
            println!(
                "| algorithm | elements | bytes | worst error / bound | time (µs) | bus GB/s |"
            );
            println!("|---|---|---|---|---|---|");
        }
        let mut seed = 0x5eed_u64;
        for &count in sizes {
            for algo in [
                Algorithm::Auto,
                Algorithm::Lamport,
                Algorithm::OneShot,
                Algorithm::TwoShot,
            ] {
                let bytes = count * 2;
                if algo == Algorithm::Lamport && bytes > 256 << 10 {
                    continue;
                }
                seed += 1;
                ops.set_algorithm(algo);
                let x = shmem
                    .alloc_from(&(0..count).map(|i| value(seed, me, i)).collect::<Vec<_>>())?;
                let mut y = shmem.alloc_zeroed::<bf16>(count)?;
                ops.all_reduce(&stream, Team::WORLD, &x, &mut y, count, ReduceOp::Sum)?;
                let worst = check(&y.to_vec()?, seed, n);
                ensure!(
                    worst <= 1.0,
                    "{algo:?} on {count} elements: an error {worst:.2} times its bound on PE {me}"
                );
                let timing = if gpu {
                    let mut times = Vec::new();
                    for _ in 0..20 {
                        let t = stream.time(|| {
                            ops.all_reduce(&stream, Team::WORLD, &x, &mut y, count, ReduceOp::Sum)
                        })?;
                        times.push(t.as_secs_f64());
                    }
                    times.sort_by(f64::total_cmp);
                    let t = times[times.len() / 2];
                    let bus = 2.0 * (n as f64 - 1.0) / n as f64 * bytes as f64 / t / 1e9;
                    format!("{:.1} | {bus:.1}", t * 1e6)
                } else {
                    "- | -".into()
                };
                if me == 0 {
                    println!("| {algo:?} | {count} | {bytes} | {worst:.3} | {timing} |");
                }
            }
        }
        ops.set_algorithm(Algorithm::Auto);

        // The fused all-reduce + residual add + RMSNorm, rows of 1003 (not a multiple of the
        // pack): out = (Σ x + residual) / rms · weight, checked against f64 within bf16's
        // rounding of each step.
        let (rows, hidden) = (5usize, 1003usize);
        let xs: Vec<bf16> = (0..rows * hidden).map(|i| value(seed + 7, me, i)).collect();
        let res0: Vec<bf16> = (0..rows * hidden).map(|i| value(seed + 8, 0, i)).collect();
        let w: Vec<bf16> = (0..hidden).map(|i| value(seed + 9, 0, i)).collect();
        let x = shmem.alloc_from(&xs)?;
        let mut residual = shmem.alloc_from(&res0)?;
        let weight = shmem.alloc_from(&w)?;
        let mut out = shmem.alloc_zeroed::<bf16>(rows * hidden)?;
        ops.all_reduce_rmsnorm(
            &stream,
            Team::WORLD,
            &x,
            &mut residual,
            &weight,
            &mut out,
            rows,
            hidden,
            1e-5,
        )?;
        let (r, o) = (residual.to_vec()?, out.to_vec()?);
        let mut worst = 0f64;
        for row in 0..rows {
            let at = row * hidden;
            let ms = (0..hidden).map(|i| r[at + i].to_f64().powi(2)).sum::<f64>() / hidden as f64;
            let scale = 1.0 / (ms + 1e-5).sqrt();
            for i in 0..hidden {
                let sum: f64 = (0..n)
                    .map(|pe| value(seed + 7, pe, at + i).to_f64())
                    .sum::<f64>()
                    + res0[at + i].to_f64();
                let e = n as f64 * 2f64.powi(-24) * 4.0;
                ensure!(
                    (r[at + i].to_f64() - sum).abs() <= 2f64.powi(-8) * (sum.abs() + e) + e,
                    "residual row {row} element {i}: {} vs {sum}",
                    r[at + i]
                );
                let want = r[at + i].to_f64() * scale * w[i].to_f64();
                let bound = (2f64.powi(-8) + 16.0 * 2f64.powi(-24)) * want.abs() + 1e-30;
                worst = worst.max((o[at + i].to_f64() - want).abs() / bound);
            }
        }
        ensure!(
            worst <= 1.0,
            "all_reduce_rmsnorm: an error {worst:.2} times its bound on PE {me}"
        );
        if me == 0 {
            println!(
                "all_reduce_rmsnorm {rows} x {hidden} bf16: ok (worst error / bound {worst:.3})"
            );
            println!("all_reduce results checked on every PE");
        }
        Ok(())
    })?;
    Ok(())
}
