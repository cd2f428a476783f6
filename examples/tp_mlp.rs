//! A two-layer tensor-parallel MLP over all PEs, with rshmem's fused ops:
//!
//! ```text
//! X (m x h, rows sharded)  --all_gather_gemm-->  Y = X · W1_rᵀ (m x f/n, this PE's columns)
//!                          --GELU (in place)-->  G
//!                          --gemm_reduce_scatter-->  Z = Σ_r G_r · W2_rᵀ (this PE's m/n rows)
//! ```
//!
//! W1 (`f x h`) is split by rows (output features) and W2 (`h x f`) by columns over the `n`
//! PEs, as in Megatron-style tensor parallelism; weights are stored out x in (B N x K). Data
//! are random (the same on every PE, from one seed). Each layer is checked against a
//! single-PE host reference, in f64, of the whole unsplit layer on the same bf16 inputs:
//!
//! * layer 1: `|y - ref| <= h·2⁻²³·Σ|x||w| + 2⁻⁸·(|ref| + that)` (f32 accumulation in any
//!   order, then the bf16 output's rounding, half an ulp);
//! * GELU: `|g - gelu(y)| <= e + 2⁻⁸·(|gelu(y)| + e)`, `e = 10⁻⁶·(1 + |y|)` (the kernel's f32
//!   tanh form, see `testing/kernels/examples/src/gelu.rs`, then bf16 rounding);
//! * layer 2: with `P_q` PE q's exact partial product and `A_q = (f/n)·2⁻²³·Σ|g||w|` its f32
//!   accumulation error, `|z - Σ P_q| <= A + 2⁻⁸·(S + A) + n·2⁻²³·S + 2⁻⁸·(|Σ P_q| + ...)`,
//!   `A = Σ A_q`, `S = Σ |P_q|` (the partials travel as bf16, the owner adds them in f32 and
//!   rounds once).
//!
//! It also prints how far Z is from the unrounded f64 MLP (bf16 through two layers: a
//! relative error of order 2⁻⁸, not a check) and, on GPUs, the time of each layer.
//!
//! ```text
//! cargo run --release --example tp_mlp                       # GPUs: m = h = 4096, f = 16384
//! RSHMEM_BACKEND=sim RSHMEM_NPES=4 cargo run --release --example tp_mlp   # small shapes
//! tp_mlp --m 8192 --hidden 8192 --ffn 28672 --iters 10       # any shape (f and m divisible by n)
//! ```

mod common;

use anyhow::{ensure, Result};
use rshmem::ops::{BLayout, GemmShape, Ops};
use rshmem::{bf16, Backend, LaunchConfig, Shmem};
use rshmem_examples_image::{gelu, IMAGE};

/// The MLP's sizes: tokens `m`, hidden `h`, feed-forward `f`.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    m: usize,
    h: usize,
    f: usize,
    iters: usize,
}

fn parse(backend: Backend, npes: usize) -> Result<Sizes> {
    let mut s = match backend {
        Backend::Gpu => Sizes {
            m: 4096,
            h: 4096,
            f: 16384,
            iters: 10,
        },
        // Chunks of 40 rows (not a whole tile), 48 feature columns per PE.
        _ => Sizes {
            m: 40 * npes,
            h: 64,
            f: 48 * npes,
            iters: 0,
        },
    };
    common::parse_args("--m M --hidden H --ffn F --iters I", &[], |name, value| {
        match (name, value) {
            ("--m", Some(n)) => s.m = n,
            ("--hidden", Some(n)) => s.h = n,
            ("--ffn", Some(n)) => s.f = n,
            ("--iters", Some(n)) => s.iters = n,
            _ => return false,
        }
        true
    })?;
    ensure!(
        s.m % npes == 0 && s.f % npes == 0,
        "m = {} and f = {} must be divisible by the {npes} PEs",
        s.m,
        s.f
    );
    ensure!(
        s.h % 8 == 0 && (s.f / npes) % 8 == 0,
        "h = {} and f / n = {} must be multiples of 8 (the GEMMs' k)",
        s.h,
        s.f / npes
    );
    Ok(s)
}

/// Element `(i, j)` of random matrix `which`, uniform in [-scale, scale), as bf16: a hash of
/// the position, so any PE computes any element (the same everywhere).
fn elem(which: u64, i: usize, j: usize, scale: f32) -> bf16 {
    let mut z = which << 58 ^ (i as u64) << 29 ^ j as u64 ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ z >> 30).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ z >> 27).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    bf16::from_f32(((z >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * scale)
}

const X: u64 = 1;
const W1: u64 = 2;
const W2: u64 = 3;

fn f64_of(v: bf16) -> f64 {
    f64::from(v.to_f32())
}

/// The tanh form of GELU, in f64.
fn gelu64(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh())
}

/// Tracks the worst error as a fraction of its bound.
#[derive(Default)]
struct Worst(f64);

impl Worst {
    fn check(&mut self, got: f64, want: f64, bound: f64, what: impl Fn() -> String) -> Result<()> {
        let err = (got - want).abs();
        ensure!(
            err <= bound,
            "{}: {got}, reference {want}, error {err:.3e} above the bound {bound:.3e}",
            what()
        );
        if bound > 0.0 {
            self.0 = self.0.max(err / bound);
        }
        Ok(())
    }
}

const U: f64 = 1.0 / 256.0; // 2⁻⁸: bf16 rounding, relative
const ACC: f64 = 1.0 / 8_388_608.0; // 2⁻²³: one f32 addition, relative

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let s = parse(shmem.backend(), n)?;
        let (m, h, f) = (s.m, s.h, s.f);
        let (rows, cols) = (m / n, f / n); // this PE's rows of X and Z; its features
        let ops = Ops::new(shmem)?;
        let module = shmem.load(&IMAGE)?;
        let (w1s, w2s) = (2.0 / (h as f32).sqrt(), 2.0 / (f as f32).sqrt());

        // X: this PE's rows in its chunk of the gathered buffer (the others arrive in layer 1).
        let mut x_host = vec![bf16::ZERO; m * h];
        for i in me * rows..(me + 1) * rows {
            for j in 0..h {
                x_host[i * h + j] = elem(X, i, j, 1.0);
            }
        }
        let mut x = shmem.alloc_from(&x_host)?;
        drop(x_host);
        // W1 (f x h) and W2 (h x f), whole (the host reference needs them); W1_r is this PE's
        // features, rows me*cols.. of W1 (cols x h); W2_r those columns of W2 (h x cols).
        let w1_all: Vec<bf16> = (0..f * h).map(|e| elem(W1, e / h, e % h, w1s)).collect();
        let w2_all: Vec<bf16> = (0..h * f).map(|e| elem(W2, e / f, e % f, w2s)).collect();
        let w1_mine = &w1_all[me * cols * h..(me + 1) * cols * h];
        let w2_mine: Vec<bf16> = (0..h * cols)
            .map(|e| w2_all[e / cols * f + me * cols + e % cols])
            .collect();
        let (w1, w2) = (shmem.alloc_from(w1_mine)?, shmem.alloc_from(&w2_mine)?);
        let mut y = shmem.alloc_zeroed::<bf16>(m * cols)?; // layer 1's output, then G
        let mut z = shmem.alloc_zeroed::<bf16>(rows * h)?;
        let layer1 = GemmShape::new(m as u32, cols as u32, h as u32, BLayout::NK);
        let layer2 = GemmShape::new(m as u32, h as u32, cols as u32, BLayout::NK);
        let stream = shmem.stream();
        let gelu_cfg = LaunchConfig::new(((m * cols).div_ceil(256) as u32).min(1024), 256);
        let run_gelu = |y: &mut rshmem::SymBuffer<'_, bf16>| -> rshmem::Result<()> {
            // SAFETY: `gelu_bf16` touches its first m x cols elements, all of `y`'s; only this
            // kernel touches it meanwhile.
            unsafe { module.launch::<gelu::gelu_bf16>(gelu_cfg, (y, (m * cols) as u64)) }
        };

        // One pass, checked layer by layer.
        ops.all_gather_gemm(&stream, &mut x, &w1, &mut y, layer1)?;
        let y_host = y.to_vec()?;
        run_gelu(&mut y)?;
        let g_host = y.to_vec()?;
        ops.gemm_reduce_scatter(&stream, &y, &w2, &mut z, layer2)?;
        let z_host = z.to_vec()?;

        // Sampled rows on GPUs (the host reference is f64), every row on the simulator.
        let sample = |count: usize, lo: usize, hi: usize| -> Vec<usize> {
            let step = ((hi - lo) / count).max(1);
            let mut v: Vec<usize> = (lo..hi).step_by(step).collect();
            v.push(hi - 1);
            v.dedup();
            v
        };
        let gpu = shmem.backend() == Backend::Gpu;
        let (all1, all2) = if gpu { (16, 8) } else { (m, rows) };

        // Layer 1 and GELU: this PE's features of sampled rows of all of M.
        let (mut worst1, mut worst_g) = (Worst::default(), Worst::default());
        let x_row = |i: usize| -> Vec<f64> { (0..h).map(|k| f64_of(elem(X, i, k, 1.0))).collect() };
        for i in sample(all1, 0, m) {
            let xi = x_row(i);
            for c in 0..cols {
                let (mut exact, mut abs) = (0.0, 0.0);
                for (k, xk) in xi.iter().enumerate() {
                    let p = xk * f64_of(w1_mine[c * h + k]);
                    exact += p;
                    abs += p.abs();
                }
                let acc = h as f64 * ACC * abs;
                let got = f64_of(y_host[i * cols + c]);
                worst1.check(got, exact, acc + U * (exact.abs() + acc), || {
                    format!("PE {me}: layer 1, Y[{i}][{}]", me * cols + c)
                })?;
                let (g, want) = (f64_of(g_host[i * cols + c]), gelu64(got));
                let e = 1e-6 * (1.0 + got.abs());
                worst_g.check(g, want, e + U * (want.abs() + e), || {
                    format!("PE {me}: GELU of Y[{i}][{}] = {got}", me * cols + c)
                })?;
            }
        }

        // Layer 2: sampled rows of this PE's chunk. Every PE's G of those rows comes from its
        // symmetric buffer (a get per PE and row; the peers' GELU finished before their
        // partial tiles reached us).
        let own = sample(all2, me * rows, (me + 1) * rows);
        let g_rows = shmem.alloc_zeroed::<bf16>(own.len() * f)?;
        for (s_i, &i) in own.iter().enumerate() {
            for q in 0..n {
                let at = s_i * f + q * cols;
                shmem.get_on_stream(
                    g_rows.range(at..at + cols)?,
                    y.range(i * cols..(i + 1) * cols)?,
                    q,
                )?;
            }
        }
        let g_rows = g_rows.to_vec()?;
        let (mut worst2, mut e2e) = (Worst::default(), (0.0f64, 0.0f64));
        for (s_i, &i) in own.iter().enumerate() {
            // The unsplit MLP in f64 for this row: Y, GELU, then Z below.
            let xi = x_row(i);
            let g_exact: Vec<f64> = (0..f)
                .map(|c| gelu64((0..h).map(|k| xi[k] * f64_of(w1_all[c * h + k])).sum()))
                .collect();
            for j in 0..h {
                let (mut sum, mut a, mut s_abs) = (0.0, 0.0, 0.0);
                for q in 0..n {
                    let (mut p, mut abs) = (0.0, 0.0);
                    for c in q * cols..(q + 1) * cols {
                        let t = f64_of(g_rows[s_i * f + c]) * f64_of(w2_all[j * f + c]);
                        p += t;
                        abs += t.abs();
                    }
                    sum += p;
                    a += cols as f64 * ACC * abs;
                    s_abs += p.abs();
                }
                let partials = a + U * (s_abs + a) + n as f64 * ACC * s_abs;
                let bound = partials + U * (sum.abs() + partials);
                let got = f64_of(z_host[(i - me * rows) * h + j]);
                worst2.check(got, sum, bound, || format!("PE {me}: layer 2, Z[{i}][{j}]"))?;
                let exact: f64 = (0..f).map(|c| g_exact[c] * f64_of(w2_all[j * f + c])).sum();
                e2e = (e2e.0.max((got - exact).abs()), e2e.1.max(exact.abs()));
            }
        }
        println!(
            "PE {me}: {m}x{h} -> {f} -> {h} MLP over {n} PEs ({:?}, sm_{}): layer 1 ok (worst \
             {:.1}% of its bound), GELU ok ({:.1}%), layer 2 ok ({:.1}%); vs the f64 MLP: max \
             |error| / max |Z| = {:.2e}",
            shmem.backend(),
            ops.device_info().sm,
            100.0 * worst1.0,
            100.0 * worst_g.0,
            100.0 * worst2.0,
            e2e.0 / e2e.1.max(f64::MIN_POSITIVE)
        );

        // Timing (GPUs): each layer on its own, after a warm-up pass.
        if s.iters > 0 {
            let mut t = [0.0f64; 3];
            for it in 0..=s.iters {
                let l1 =
                    shmem.time(|| ops.all_gather_gemm(&stream, &mut x, &w1, &mut y, layer1))?;
                let act = shmem.time(|| run_gelu(&mut y))?;
                let l2 =
                    shmem.time(|| ops.gemm_reduce_scatter(&stream, &y, &w2, &mut z, layer2))?;
                if it > 0 {
                    for (acc, d) in t.iter_mut().zip([l1, act, l2]) {
                        *acc += d.as_secs_f64() / s.iters as f64;
                    }
                }
            }
            let tf = |shape: GemmShape, secs: f64| shape.flops() / secs / 1e12;
            println!(
                "PE {me}: per layer (mean of {}): all_gather_gemm {:.1} us ({:.0} TFLOP/s), GELU \
                 {:.1} us, gemm_reduce_scatter {:.1} us ({:.0} TFLOP/s)",
                s.iters,
                t[0] * 1e6,
                tf(layer1, t[0]),
                t[1] * 1e6,
                t[2] * 1e6,
                tf(layer2, t[2])
            );
        }
        // No PE frees its buffers while a peer may still read them.
        shmem.barrier_all()?;
        Ok(())
    })?;
    Ok(())
}
