//! The fused mixture-of-experts layer, `Ops::moe_layer`, over all PEs: each PE's tokens go to
//! `top_k` of `experts` experts (spread over the PEs), each expert is a gated MLP, and the
//! outputs come back summed with the router's weights — in one call, kernels only:
//!
//! ```text
//! dispatch → grouped GEMM (gate and up) → SwiGLU → grouped GEMM (down) → combine
//! out[t] = Σ_kk weight[t][kk] · W2_e · (silu(W_gate_e · x[t]) ⊙ (W_up_e · x[t])),  e = topk[t][kk]
//! ```
//!
//! Every stage is checked against an f64 reference of the device's own inputs to it, within
//! a bound derived from how it is computed (f32 accumulation of exact bf16 products, `K`
//! terms: `K · 2⁻²³ · Σ|terms|`; one rounding to bf16: `2⁻⁸ · |ref|`):
//!
//! * dispatch: each local expert's row count, and its rows (by source rank, then the source's
//!   token and entry order) and their sources, bit for bit (but rows of PEs the down GEMM puts
//!   to, which hold its output after the call);
//! * gate/up + SwiGLU (fused: gate and up never reach memory): `bf16(silu(g) · u)` within
//!   `2⁻⁸ |ref| + 2 δ`, `δ = 1.1 |u| e_g + (|g| + e_g) e_u + 10⁻⁶ |g u|` (`e_g`, `e_u`: the
//!   accumulation bounds of `g` and `u` over `hidden` terms; 1.1: SiLU's steepest slope;
//!   10⁻⁶: the kernel's SiLU);
//! * down: each output row as its source PE received it (read back with gets) within `2⁻⁸
//!   |ref| + intermediate · 2⁻²³ · Σ|a w|` of the device's activations times W2;
//! * combine: each token within `2⁻⁸ |ref| + 2⁻²⁰ Σ|w y|` of `Σ w · y` over the rows it
//!   received (`top_k ≤ 16` f32 terms).
//!
//! Timing is `moe_bench --layer` (rshmem-ops' example, `scripts/moe_bench.py` on the GPU
//! machine): the layer beside its two grouped GEMMs alone.
//!
//! ```text
//! cargo run --release --example moe_layer                        # GPUs: 256 tokens per PE
//! RSHMEM_BACKEND=sim RSHMEM_NPES=3 cargo run --release --example moe_layer
//! moe_layer --tokens 128 --hidden 7168 --intermediate 2048 --experts-per-pe 8 --top-k 8
//! ```

mod common;

use anyhow::{ensure, Result};
use rshmem::ops::moe::interleave_gate_up;
use rshmem::ops::{MoeLayerConfig, Ops};
use rshmem::{bf16, Backend, Shmem, Team};

#[derive(Clone, Copy, Debug)]
struct Sizes {
    tokens: usize,
    hidden: usize,
    inter: usize,
    per_pe: usize,
    top_k: usize,
}

fn parse(backend: Backend) -> Result<Sizes> {
    let mut s = match backend {
        Backend::Gpu => Sizes {
            tokens: 256,
            hidden: 2048,
            inter: 1408,
            per_pe: 4,
            top_k: 2,
        },
        _ => Sizes {
            tokens: 13,
            hidden: 72,
            inter: 24,
            per_pe: 2,
            top_k: 2,
        },
    };
    common::parse_args(
        "--tokens T --hidden H --intermediate I --experts-per-pe E --top-k K",
        &[],
        |name, value| {
            match (name, value) {
                ("--tokens", Some(n)) => s.tokens = n,
                ("--hidden", Some(n)) => s.hidden = n,
                ("--intermediate", Some(n)) => s.inter = n,
                ("--experts-per-pe", Some(n)) => s.per_pe = n,
                ("--top-k", Some(n)) => s.top_k = n,
                _ => return false,
            }
            true
        },
    )?;
    Ok(s)
}

/// A hash of `(which, i, j)` in [0, 1): any PE computes any value (the same everywhere).
fn unit(which: u64, i: usize, j: usize) -> f64 {
    let mut z = which << 58 ^ (i as u64) << 29 ^ j as u64 ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ z >> 30).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ z >> 27).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

const X: u64 = 1;
const ROUTE: u64 = 2;
const GATE: u64 = 3;
const UP: u64 = 4;
const DOWN: u64 = 5;
const ACC: f64 = 1.0 / 8_388_608.0; // 2⁻²³

/// PE `pe`'s tokens: rows, experts (distinct; about one entry in 7 is -1), router weights.
struct Tokens {
    x: Vec<bf16>,
    topk: Vec<i32>,
    weights: Vec<f32>,
}

fn tokens(pe: usize, s: &Sizes, experts: usize) -> Tokens {
    let (t, h, k) = (s.tokens, s.hidden, s.top_k);
    let x = (0..t * h)
        .map(|i| bf16::from_f64(unit(X, (pe << 20) | (i / h), i % h) * 2.0 - 1.0))
        .collect();
    let mut topk = vec![-1i32; t * k];
    for i in 0..t {
        let row = &mut topk[i * k..(i + 1) * k];
        for kk in 0..k.min(experts) {
            if unit(ROUTE, pe << 20 | i, 2 * kk) < 1.0 / 7.0 {
                continue;
            }
            let mut e = (unit(ROUTE, pe << 20 | i, 2 * kk + 1) * experts as f64) as i32;
            while row.contains(&e) {
                e = (e + 1) % experts as i32;
            }
            row[kk] = e;
        }
    }
    let weights = (0..t * k)
        .map(|i| unit(ROUTE, (pe << 20) | (i / k), 100 + i % k) as f32)
        .collect();
    Tokens { x, topk, weights }
}

/// Expert `e`'s `rows x cols` matrix `which`, scaled so that a row of products sums to O(1).
fn matrix(which: u64, e: usize, rows: usize, cols: usize) -> Vec<bf16> {
    let scale = 2.0 / (cols as f64).sqrt();
    (0..rows * cols)
        .map(|i| bf16::from_f64((unit(which, e, i) * 2.0 - 1.0) * scale))
        .collect()
}

/// `Σ a b` and `Σ |a b|` in f64.
fn dot(a: &[bf16], b: &[bf16]) -> (f64, f64) {
    a.iter().zip(b).fold((0.0, 0.0), |(s, m), (x, y)| {
        let p = x.to_f64() * y.to_f64();
        (s + p, m + p.abs())
    })
}

/// The worst `|got - want| / bound` over a stage, failing at the first value outside.
struct Stage {
    name: &'static str,
    worst: f64,
    values: usize,
}

impl Stage {
    fn new(name: &'static str) -> Self {
        Stage {
            name,
            worst: 0.0,
            values: 0,
        }
    }

    fn check(&mut self, got: f64, want: f64, bound: f64, at: impl Fn() -> String) -> Result<()> {
        let err = (got - want).abs();
        ensure!(
            err <= bound,
            "{}: {} = {got}, reference {want}, error {err:.3e} above the bound {bound:.3e}",
            self.name,
            at()
        );
        if bound > 0.0 {
            self.worst = self.worst.max(err / bound);
        }
        self.values += 1;
        Ok(())
    }

    fn report(&self) -> String {
        format!(
            "{} ok ({} values, worst {:.2} of the bound)",
            self.name, self.values, self.worst
        )
    }
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let s = parse(shmem.backend())?;
        let (t, h, i_, k, local) = (s.tokens, s.hidden, s.inter, s.top_k, s.per_pe);
        let experts = local * n;
        let ops = Ops::new(shmem)?;
        let stream = shmem.stream();
        let cfg = MoeLayerConfig {
            experts: experts as u32,
            top_k: k as u32,
            hidden: h as u32,
            intermediate: i_ as u32,
            max_tokens: t as u32,
        };
        let mut bufs = ops.moe_layer_buffers(Team::WORLD, cfg)?;
        let per = bufs.rows_per_expert();
        // Every PE's tokens (for the checks) and this PE's experts' weights.
        let all: Vec<Tokens> = (0..n).map(|pe| tokens(pe, &s, experts)).collect();
        let mine = me * local..(me + 1) * local;
        let gate: Vec<Vec<bf16>> = mine.clone().map(|e| matrix(GATE, e, i_, h)).collect();
        let up: Vec<Vec<bf16>> = mine.clone().map(|e| matrix(UP, e, i_, h)).collect();
        let down: Vec<Vec<bf16>> = mine.map(|e| matrix(DOWN, e, h, i_)).collect();
        let w1 = shmem.alloc_from(&interleave_gate_up(
            &gate.concat(),
            &up.concat(),
            local,
            i_,
            h,
        ))?;
        let w2 = shmem.alloc_from(&down.concat())?;
        let weights = ops.moe_layer_weights(&bufs, &w1, &w2)?;
        let x = shmem.alloc_from(&all[me].x)?;
        let topk = shmem.alloc_from(&all[me].topk)?;
        let tw = shmem.alloc_from(&all[me].weights)?;
        let mut out = shmem.alloc_from(&vec![bf16::NAN; t * h])?;
        ops.moe_layer(
            &stream, &mut bufs, &weights, &x, &topk, &tw, &mut out, t as u32,
        )?;

        // Dispatch: what each local expert must hold, by source rank, token, entry.
        let want: Vec<Vec<(usize, usize)>> = (0..local)
            .map(|j| {
                let e = (me * local + j) as i32;
                (0..n)
                    .flat_map(|src| {
                        let topk = &all[src].topk;
                        (0..t * k)
                            .filter(move |&i| topk[i] == e)
                            .map(move |i| (src, i))
                    })
                    .collect()
            })
            .collect();
        let (counts, recv_x, recv_src) = (
            bufs.recv_count().to_vec()?,
            bufs.recv_x().to_vec()?,
            bufs.recv_src().to_vec()?,
        );
        let mut rows = 0;
        for (j, want_j) in want.iter().enumerate() {
            ensure!(
                counts[j] as usize == want_j.len(),
                "dispatch: expert {j} got {} rows, expected {}",
                counts[j],
                want_j.len()
            );
            for (q, &(src, i)) in want_j.iter().enumerate() {
                let row = j * per + q;
                let tok = i / k;
                // Rows for a PE the down GEMM puts to (no mapping, or past the eighth) hold its
                // output after the call: the down check below covers them.
                let row_ok = bufs.puts_to(src as u32)
                    || recv_x[row * h..(row + 1) * h] == all[src].x[tok * h..(tok + 1) * h];
                ensure!(
                    (recv_src[2 * row], recv_src[2 * row + 1]) == (src as u32, i as u32) && row_ok,
                    "dispatch: expert {j}'s row {q} is not PE {src}'s token {tok} (entry {i})"
                );
            }
            rows += want_j.len();
        }

        // Gate/up + SwiGLU, from the received rows.
        let act = bufs.activations().to_vec()?;
        let mut swiglu = Stage::new("gate/up + SwiGLU");
        for (j, want_j) in want.iter().enumerate() {
            for (q, &(src, i)) in want_j.iter().enumerate() {
                let xr = &all[src].x[i / k * h..(i / k + 1) * h];
                for c in 0..i_ {
                    let (g, sg) = dot(xr, &gate[j][c * h..(c + 1) * h]);
                    let (u, su) = dot(xr, &up[j][c * h..(c + 1) * h]);
                    let (eg, eu) = (h as f64 * ACC * sg, h as f64 * ACC * su);
                    let want = g / (1.0 + (-g).exp()) * u;
                    let delta = 1.1 * u.abs() * eg + (g.abs() + eg) * eu + 1e-6 * (g * u).abs();
                    let got = act[(j * per + q) * i_ + c].to_f64();
                    swiglu.check(got, want, want.abs() / 256.0 + 2.0 * delta, || {
                        format!("PE {me}, expert {j}, row {q}, column {c}")
                    })?;
                }
            }
        }

        // Down: each row as its source received it. Every PE's call is over first.
        shmem.barrier_all()?;
        let mut theirs = shmem.alloc_zeroed::<bf16>(t * k * h)?;
        let mut down_stage = Stage::new("down");
        for src in 0..n {
            stream.get(&mut theirs, bufs.combine_rows(), src)?;
            let got_rows = theirs.to_vec()?;
            for (j, want_j) in want.iter().enumerate() {
                for (q, &(s2, i)) in want_j.iter().enumerate() {
                    if s2 != src {
                        continue;
                    }
                    let a = &act[(j * per + q) * i_..(j * per + q + 1) * i_];
                    for c in 0..h {
                        let (want, mag) = dot(a, &down[j][c * i_..(c + 1) * i_]);
                        let bound = want.abs() / 256.0 + i_ as f64 * ACC * mag;
                        down_stage.check(got_rows[i * h + c].to_f64(), want, bound, || {
                            format!("PE {me}'s expert {j}, row {q}, column {c}, at PE {src}")
                        })?;
                    }
                }
            }
        }
        // No PE may run on (and overwrite what others read) before every get is done.
        shmem.barrier_all()?;
        drop(theirs);

        // Combine, from the rows this PE received.
        let (here, got) = (bufs.combine_rows().to_vec()?, out.to_vec()?);
        let mut combine = Stage::new("combine");
        let me_tokens = &all[me];
        for tok in 0..t {
            for c in 0..h {
                let (mut want, mut mag) = (0f64, 0f64);
                for kk in 0..k {
                    if me_tokens.topk[tok * k + kk] >= 0 {
                        let term = me_tokens.weights[tok * k + kk] as f64
                            * here[(tok * k + kk) * h + c].to_f64();
                        want += term;
                        mag += term.abs();
                    }
                }
                let bound = want.abs() / 256.0 + mag / (1u64 << 20) as f64;
                combine.check(got[tok * h + c].to_f64(), want, bound, || {
                    format!("PE {me}, out[{tok}][{c}]")
                })?;
            }
        }
        println!(
            "PE {me}: fused MoE layer of {t} tokens x {h} (intermediate {i_}), top-{k} of \
             {experts} experts over {n} PEs, {rows} rows here: dispatch ok, {}, {}, {}",
            swiglu.report(),
            down_stage.report(),
            combine.report()
        );

        Ok(())
    })
    .map_err(anyhow::Error::from)
}
