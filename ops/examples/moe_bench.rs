//! MoE dispatch and combine benchmark for `scripts/moe_bench.py`: one shape per run, every PE
//! of the job. Each PE routes its `--tokens` tokens (random rows, distinct random experts of
//! `--experts` per token, weights in (0, 1)), then, for the normal mode and (with `--ll`) the
//! low-latency one:
//!
//! 1. checks one dispatch + combine with the identity as every expert (`expert_out =
//!    recv_x`): `out[t]` must be `(Σ_valid w) · x[t]` within `2⁻⁸·|ref| + 2⁻²⁰·Σ w|x|` (bf16
//!    rows, an f32 sum rounded once);
//! 2. times `--iters` dispatches and combines (host clock around each call and a stream
//!    synchronisation, after a barrier of every PE), and PE 0 prints one JSON line per mode:
//!    the medians in µs and each step's GB/s — the bytes this PE's tokens put on the links
//!    (the normal mode: `hidden × 2` per (token, destination PE); the low-latency mode: per
//!    valid entry) over the time.
//!
//! With `--fp8` each mode runs again with FP8 rows (`moe_dispatch_fp8`, and with `--ll`
//! `moe_ll_dispatch_fp8`: the rows quantised to e4m3 per token and 128 channels on the host,
//! `hidden + 4 ⌈hidden / 128⌉` bytes per row on the links; the combine's rows bf16): the
//! identity expert there is the received rows dequantised on the host (`expert_out =
//! bf16(byte × scale)`, the scales in the FP8 grouped GEMM's layout in both modes), so the
//! check is `out[t] = (Σ_valid w) · x̂[t]`, `x̂` the dequantised row, within `2⁻⁸·|ref| + (1 +
//! 2⁻⁸)·2⁻⁸·Σ w|x̂| + 2⁻²⁰·Σ w|x̂|` (the expert rows' bf16 rounding on top of the bf16
//! check's); rows `"mode":"normal_fp8"` and `"mode":"low_latency_fp8"`.
//!
//! ```text
//! RSHMEM_BACKEND=gpu RSHMEM_NPES=1 NVSHMEM_SYMMETRIC_SIZE=16G moe_bench \
//!     --tokens 4096 --hidden 7168 --experts 256 --top-k 8 [--ll] [--fp8] [--iters 20]
//! ```
//!
//! `--align A` (default 128) is the normal mode's row multiple per expert (`MoeConfig::align`):
//! the scatter zeroes each expert's padding, so a small `A` (enough for `Ops::grouped_gemm` by
//! offsets) shows what the padding costs.
//!
//! With `--layer I` it also runs the fused layer (`Ops::moe_layer`, experts of intermediate
//! size `I`, weights from a hash any PE recomputes; expert `e` has set `e % 4` of four, so
//! that the host makes four sets, not hundreds, and neighbours still differ): it checks three
//! tokens of each PE (first, middle, last) against an f64 reference of the whole layer, then
//! times the layer and, on the rows its dispatch left, its two grouped GEMMs alone
//! (`Ops::grouped_gemm`, the masked layout of its counts, gate/up's `2 I` columns in bf16),
//! each the median of `--iters` runs with CUDA events after a barrier (the goal on one H200,
//! one PE: the layer within 1.1x of the two GEMMs). The reference's bound for `out = Σ w y`,
//! `y = bf16(W₂ a)`, `a = bf16(silu(g) u)` carries each rounding (`2⁻⁸` relative) and f32
//! accumulation (`K 2⁻²³ Σ|terms|`) through: `|Δa| ≤ 2⁻⁸ |a| + 2 δ` (δ as in
//! `examples/moe_layer.rs`); `|Δy| ≤ 2⁻⁸ (|y| + e) + e` with `e = Σ_i |W₂| |Δa_i| + I 2⁻²³
//! Σ|W₂ a|`; `|Δout| ≤ 2⁻⁸ |out| + Σ w |Δy| + 2⁻²⁰ Σ|w y|`.
//!
//! On the simulator it runs too (small shapes: every simulated GPU thread is a host thread),
//! which is how it is tested without a GPU; its times mean nothing.

#[path = "../../examples/common/mod.rs"]
mod common;

use anyhow::{ensure, Result};
use rshmem::{bf16, Shmem, SymBuffer, Team};
use rshmem_ops::fp8::{self, Blocks};
use rshmem_ops::moe::interleave_gate_up;
use rshmem_ops::{BLayout, GroupRows, GroupedShape, MoeConfig, MoeLayerConfig, MoePayload, Ops};
use std::time::Instant;

struct Args {
    tokens: usize,
    hidden: usize,
    experts: usize,
    top_k: usize,
    ll: bool,
    fp8: bool,
    layer: usize,
    iters: usize,
    align: usize,
}

fn parse() -> Result<Args> {
    let mut a = Args {
        tokens: 128,
        hidden: 1024,
        experts: 8,
        top_k: 2,
        ll: false,
        fp8: false,
        layer: 0,
        iters: 20,
        align: 128,
    };
    common::parse_args(
        "--tokens T --hidden H --experts E --top-k K [--ll] [--fp8] [--layer INTERMEDIATE] [--iters I] [--align A]",
        &["--ll", "--fp8"],
        |name, value| {
            match (name, value) {
                ("--tokens", Some(n)) => a.tokens = n,
                ("--hidden", Some(n)) => a.hidden = n,
                ("--experts", Some(n)) => a.experts = n,
                ("--top-k", Some(n)) => a.top_k = n,
                ("--iters", Some(n)) => a.iters = n,
                ("--ll", None) => a.ll = true,
                ("--fp8", None) => a.fp8 = true,
                ("--layer", Some(n)) => a.layer = n,
                ("--align", Some(n)) => a.align = n,
                _ => return false,
            }
            true
        },
    )?;
    ensure!(
        a.iters > 0 && a.top_k <= a.experts,
        "--iters >= 1 and --top-k <= --experts"
    );
    Ok(a)
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let a = parse()?;
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        ensure!(a.experts % n == 0, "--experts {} must be a multiple of the {n} PEs", a.experts);
        let (t, h, k) = (a.tokens, a.hidden, a.top_k);
        let ops = Ops::new(shmem)?;
        let stream = shmem.stream();
        let mut st = 0x9E37_79B9_7F4A_7C15u64 ^ (me as u64 + 1) << 32;
        let x_host: Vec<bf16> = (0..t * h)
            .map(|_| bf16::from_f32((xorshift(&mut st) % 2001) as f32 / 1000.0 - 1.0))
            .collect();
        let mut topk_host = vec![-1i32; t * k];
        for row in topk_host.chunks_mut(k) {
            for kk in 0..k {
                loop {
                    let e = (xorshift(&mut st) % a.experts as u64) as i32;
                    if !row[..kk].contains(&e) {
                        row[kk] = e;
                        break;
                    }
                }
            }
        }
        let w_host: Vec<f32> = (0..t * k).map(|_| (xorshift(&mut st) % 1000 + 1) as f32 / 1001.0).collect();
        let (x, topk, w) = (shmem.alloc_from(&x_host)?, shmem.alloc_from(&topk_host)?, shmem.alloc_from(&w_host)?);
        let mut out = shmem.alloc_zeroed::<bf16>(t * h)?;
        let local = a.experts / n;
        let pairs: usize = topk_host
            .chunks(k)
            .map(|row| {
                let mut ranks: Vec<usize> = row.iter().map(|&e| e as usize / local).collect();
                ranks.sort_unstable();
                ranks.dedup();
                ranks.len()
            })
            .sum();
        let check = |got: &[bf16], mode: &str| -> Result<()> {
            for i in 0..t {
                let ws: f64 = w_host[i * k..(i + 1) * k].iter().map(|&v| v as f64).sum();
                for e in 0..h {
                    let xv = x_host[i * h + e].to_f64();
                    let want = ws * xv;
                    let bound = want.abs() / 256.0 + ws * xv.abs() / (1u64 << 20) as f64;
                    let v = got[i * h + e].to_f64();
                    ensure!((v - want).abs() <= bound, "PE {me}, {mode}: out[{i}][{e}] = {v}, want {want}");
                }
            }
            Ok(())
        };
        // FP8 rows: the identity expert of the dequantised rows x̂, rounded to bf16.
        let check_fp8 = |got: &[bf16], x_hat: &[f64], mode: &str| -> Result<()> {
            for i in 0..t {
                let ws: f64 = w_host[i * k..(i + 1) * k].iter().map(|&v| v as f64).sum();
                for e in 0..h {
                    let xv = x_hat[i * h + e];
                    let want = ws * xv;
                    let rows = ws * xv.abs() / 256.0;
                    let bound = want.abs() / 256.0 + rows * (1.0 + 1.0 / 256.0) + ws * xv.abs() / (1u64 << 20) as f64;
                    let v = got[i * h + e].to_f64();
                    ensure!((v - want).abs() <= bound, "PE {me}, {mode}: out[{i}][{e}] = {v}, want {want}");
                }
            }
            Ok(())
        };
        let cfg = MoeConfig {
            experts: a.experts as u32,
            top_k: k as u32,
            hidden: h as u32,
            max_tokens: t as u32,
            align: a.align as u32,
            payload: MoePayload::Bf16,
        };
        let timed = |f: &mut dyn FnMut() -> rshmem::Result<()>| -> Result<f64> {
            shmem.barrier_all()?;
            let start = Instant::now();
            f()?;
            stream.synchronize()?;
            Ok(start.elapsed().as_secs_f64() * 1e6)
        };
        let gbs = |bytes: usize, us: f64| bytes as f64 / us / 1e3;
        // One JSON line: a mode's medians and the GB/s of the bytes each step puts on links.
        let row = |mode: &str, d: f64, c: f64, d_bytes: usize, c_bytes: usize| {
            println!(
                "{{\"mode\":\"{mode}\",\"npes\":{n},\"tokens\":{t},\"hidden\":{h},\"experts\":{},\"top_k\":{k},\"align\":{},\
                 \"dispatch_us\":{d:.1},\"combine_us\":{c:.1},\"dispatch_gbs\":{:.1},\"combine_gbs\":{:.1},\"check\":\"ok\"}}",
                a.experts,
                a.align,
                gbs(d_bytes, d),
                gbs(c_bytes, c)
            )
        };

        // Normal mode; the identity expert: expert_out is recv_x itself.
        let mut bufs = ops.moe_buffers(Team::WORLD, cfg)?;
        let mut layout = ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, t as u32)?;
        let eo = shmem.alloc_zeroed::<bf16>(bufs.capacity() * h)?;
        stream.get(&eo, bufs.recv_x()?, me)?;
        ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out)?;
        check(&out.to_vec()?, "normal")?;
        let (mut d_us, mut c_us) = (Vec::new(), Vec::new());
        for _ in 0..a.iters {
            d_us.push(timed(&mut || {
                layout = ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, t as u32)?;
                Ok(())
            })?);
            c_us.push(timed(&mut || ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out))?);
        }
        let (d, c) = (median(d_us), median(c_us));
        if me == 0 {
            row("normal", d, c, pairs * h * 2, pairs * h * 4);
        }

        if a.ll {
            let mut ll = ops.moe_ll_buffers(Team::WORLD, cfg)?;
            let eo = shmem.alloc_zeroed::<bf16>(local * ll.rows_per_expert() * h)?;
            ops.moe_ll_dispatch(&stream, &mut ll, &x, &topk, t as u32)?;
            stream.get(&eo, ll.recv_x()?, me)?;
            ops.moe_ll_combine(&stream, &mut ll, &eo, &topk, &w, &mut out)?;
            check(&out.to_vec()?, "low-latency")?;
            let (mut d_us, mut c_us) = (Vec::new(), Vec::new());
            for _ in 0..a.iters {
                d_us.push(timed(&mut || ops.moe_ll_dispatch(&stream, &mut ll, &x, &topk, t as u32))?);
                c_us.push(timed(&mut || ops.moe_ll_combine(&stream, &mut ll, &eo, &topk, &w, &mut out))?);
            }
            let (d, c) = (median(d_us), median(c_us));
            let entries = t * k;
            if me == 0 {
                row("low_latency", d, c, entries * h * 2, entries * h * 2);
            }
        }
        // FP8 rows: the same tokens quantised (bytes and scales on the heap, once for both
        // modes), and x̂, the rows as the bytes and scales say, in f64.
        let sr = h.div_ceil(128);
        let fp8_rows = match a.fp8 {
            true => {
                let q = fp8::quantize(&x_host, t, h, Blocks::PER_TOKEN);
                let x_hat: Vec<f64> =
                    (0..t * h).map(|i| fp8::to_f32(q.bytes[i]) as f64 * q.scales[i / h * sr + i % h / 128] as f64).collect();
                Some((shmem.alloc_from(&q.bytes)?, shmem.alloc_from(&q.scales)?, x_hat))
            }
            false => None,
        };
        let cfg8 = MoeConfig { payload: MoePayload::Fp8E4m3, ..cfg };
        if let Some((x8, scales, x_hat)) = &fp8_rows {
            let mut bufs = ops.moe_buffers(Team::WORLD, cfg8)?;
            let mut layout = ops.moe_dispatch_fp8(&stream, &mut bufs, x8, scales, &topk, &w, t as u32)?;
            let mut eo = shmem.alloc_zeroed::<bf16>(bufs.capacity() * h)?;
            let (bytes, scales8) = bufs.recv_x_fp8()?;
            eo.copy_from_host(&dequantised_rows(&bytes.to_vec()?, &scales8.to_vec()?, h))?;
            ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out)?;
            check_fp8(&out.to_vec()?, x_hat, "normal FP8")?;
            let (mut d_us, mut c_us) = (Vec::new(), Vec::new());
            for _ in 0..a.iters {
                d_us.push(timed(&mut || {
                    layout = ops.moe_dispatch_fp8(&stream, &mut bufs, x8, scales, &topk, &w, t as u32)?;
                    Ok(())
                })?);
                c_us.push(timed(&mut || ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out))?);
            }
            let (d, c) = (median(d_us), median(c_us));
            if me == 0 {
                row("normal_fp8", d, c, pairs * (h + 4 * sr), pairs * h * 4);
            }
        }
        if let (Some((x8, scales, x_hat)), true) = (&fp8_rows, a.ll) {
            let mut ll = ops.moe_ll_buffers(Team::WORLD, cfg8)?;
            let mut eo = shmem.alloc_zeroed::<bf16>(local * ll.rows_per_expert() * h)?;
            ops.moe_ll_dispatch_fp8(&stream, &mut ll, x8, scales, &topk, t as u32)?;
            let (bytes, scales8) = ll.recv_x_fp8()?;
            eo.copy_from_host(&dequantised_rows(&bytes.to_vec()?, &scales8.to_vec()?, h))?;
            ops.moe_ll_combine(&stream, &mut ll, &eo, &topk, &w, &mut out)?;
            check_fp8(&out.to_vec()?, x_hat, "low-latency FP8")?;
            let (mut d_us, mut c_us) = (Vec::new(), Vec::new());
            for _ in 0..a.iters {
                d_us.push(timed(&mut || ops.moe_ll_dispatch_fp8(&stream, &mut ll, x8, scales, &topk, t as u32))?);
                c_us.push(timed(&mut || ops.moe_ll_combine(&stream, &mut ll, &eo, &topk, &w, &mut out))?);
            }
            let (d, c) = (median(d_us), median(c_us));
            let entries = t * k;
            if me == 0 {
                row("low_latency_fp8", d, c, entries * (h + 4 * sr), entries * h * 2);
            }
        }
        if a.layer > 0 {
            let tokens = Tokens {
                x: &x_host,
                topk: &topk_host,
                w: &w_host,
            };
            layer(shmem, &ops, &a, (&x, &topk, &w), &tokens)?;
        }
        shmem.barrier_all()?;
        Ok(())
    })
    .map_err(anyhow::Error::from)
}

/// The identity expert of FP8 rows, either mode's: every received row (`bytes`, `m × h`)
/// dequantised (`byte × scale`, the scales `⌈h / 128⌉ × m` in the grouped GEMM's layout) and
/// rounded to bf16, row for row; padding rows are zero bytes and scales, and rows no expert
/// holds are never read by the combine.
fn dequantised_rows(bytes: &[u8], scales: &[f32], h: usize) -> Vec<bf16> {
    let m = bytes.len() / h;
    (0..m * h)
        .map(|i| {
            let (r, e) = (i / h, i % h);
            bf16::from_f32(fp8::to_f32(bytes[i]) * scales[e / 128 * m + r])
        })
        .collect()
}

/// This PE's tokens on the host.
struct Tokens<'a> {
    x: &'a [bf16],
    topk: &'a [i32],
    w: &'a [f32],
}

/// Distinct weight sets: expert `e` has set `e % SETS`.
const SETS: usize = 4;

/// Weight `which` (0: gate, 1: up, 2: down) of expert `e` at `(r, c)`, of a matrix `cols`
/// wide: uniform in ±2/√cols, the same on every PE.
fn weight(which: u64, e: usize, r: usize, c: usize, cols: usize) -> bf16 {
    let set = (e % SETS) as u64;
    let mut z = which << 60 ^ set << 40 ^ (r * cols + c) as u64 ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ z >> 30).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ z >> 27).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let u = (z >> 11) as f64 / (1u64 << 53) as f64;
    bf16::from_f64((u * 2.0 - 1.0) * 2.0 / (cols as f64).sqrt())
}

/// The fused layer's row (module docs): check, then time it beside its two grouped GEMMs.
fn layer(
    shmem: &Shmem,
    ops: &Ops,
    a: &Args,
    (x, topk, w): (
        &SymBuffer<'_, bf16>,
        &SymBuffer<'_, i32>,
        &SymBuffer<'_, f32>,
    ),
    host: &Tokens<'_>,
) -> Result<()> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (t, h, k, i_) = (a.tokens, a.hidden, a.top_k, a.layer);
    let local = a.experts / n;
    let stream = shmem.stream();
    let cfg = MoeLayerConfig {
        experts: a.experts as u32,
        top_k: k as u32,
        hidden: h as u32,
        intermediate: i_ as u32,
        max_tokens: t as u32,
    };
    let mut bufs = ops.moe_layer_buffers(Team::WORLD, cfg)?;
    let per = bufs.rows_per_expert();
    // The sets' W₁ (interleaved) and W₂, then each local expert's copy of its set's.
    let set_of = |which, set, rows, cols| -> Vec<bf16> {
        (0..rows * cols)
            .map(|q| weight(which, set, q / cols, q % cols, cols))
            .collect()
    };
    let sets = SETS.min(a.experts);
    let w1_sets: Vec<bf16> = (0..sets)
        .flat_map(|e| interleave_gate_up(&set_of(0, e, i_, h), &set_of(1, e, i_, h), 1, i_, h))
        .collect();
    let w2_sets: Vec<bf16> = (0..sets).flat_map(|e| set_of(2, e, h, i_)).collect();
    let (w1_sets, w2_sets) = (shmem.alloc_from(&w1_sets)?, shmem.alloc_from(&w2_sets)?);
    let w1 = shmem.alloc_zeroed::<bf16>(local * 2 * i_ * h)?;
    let w2 = shmem.alloc_zeroed::<bf16>(local * h * i_)?;
    for j in 0..local {
        let set = (me * local + j) % SETS;
        let (m1, m2) = (2 * i_ * h, h * i_);
        stream.put(
            w1.range(j * m1..(j + 1) * m1)?,
            w1_sets.range(set * m1..(set + 1) * m1)?,
            me,
        )?;
        stream.put(
            w2.range(j * m2..(j + 1) * m2)?,
            w2_sets.range(set * m2..(set + 1) * m2)?,
            me,
        )?;
    }
    stream.synchronize()?;
    drop((w1_sets, w2_sets));
    let weights = ops.moe_layer_weights(&bufs, &w1, &w2)?;
    let mut out = shmem.alloc_zeroed::<bf16>(t * h)?;
    ops.moe_layer(&stream, &mut bufs, &weights, x, topk, w, &mut out, t as u32)?;
    let got = out.to_vec()?;
    let checked: Vec<usize> = if t == 0 {
        vec![]
    } else {
        vec![0, t / 2, t - 1]
    };
    for &tok in &checked {
        // Per entry: the expert's a (SwiGLU, with its bound) and y = W₂ a, in f64.
        let mut want = vec![0f64; h];
        let mut bound = vec![0f64; h];
        for kk in 0..k {
            let e = host.topk[tok * k + kk];
            if e < 0 {
                continue;
            }
            let (e, wt) = (e as usize, host.w[tok * k + kk] as f64);
            let xr = &host.x[tok * h..(tok + 1) * h];
            let (mut act, mut act_err) = (vec![0f64; i_], vec![0f64; i_]);
            for c in 0..i_ {
                let (mut g, mut sg, mut u, mut su) = (0f64, 0f64, 0f64, 0f64);
                for (q, xv) in xr.iter().enumerate() {
                    let (pg, pu) = (
                        xv.to_f64() * weight(0, e, c, q, h).to_f64(),
                        xv.to_f64() * weight(1, e, c, q, h).to_f64(),
                    );
                    (g, sg, u, su) = (g + pg, sg + pg.abs(), u + pu, su + pu.abs());
                }
                let (eg, eu) = (h as f64 * ACC * sg, h as f64 * ACC * su);
                act[c] = g / (1.0 + (-g).exp()) * u;
                let delta = 1.1 * u.abs() * eg + (g.abs() + eg) * eu + 1e-6 * (g * u).abs();
                act_err[c] = act[c].abs() / 256.0 + 2.0 * delta;
            }
            for (col, (wa, bo)) in want.iter_mut().zip(bound.iter_mut()).enumerate() {
                let (mut y, mut mag, mut prop) = (0f64, 0f64, 0f64);
                for c in 0..i_ {
                    let wd = weight(2, e, col, c, i_).to_f64();
                    y += wd * act[c];
                    mag += (wd * act[c]).abs();
                    prop += wd.abs() * act_err[c];
                }
                let err = prop + i_ as f64 * ACC * mag;
                *wa += wt * y;
                *bo += wt * (err + (y.abs() + err) / 256.0) + (wt * y).abs() / (1u64 << 20) as f64;
            }
        }
        for col in 0..h {
            let b = want[col].abs() / 256.0 + bound[col];
            let v = got[tok * h + col].to_f64();
            ensure!(
                (v - want[col]).abs() <= b,
                "PE {me}, fused layer: out[{tok}][{col}] = {v}, want {} ± {b}",
                want[col]
            );
        }
    }
    // Times: the layer, then its two grouped GEMMs alone on the rows the layer's dispatch
    // left (the same counts, the masked layout).
    let median_events = |f: &mut dyn FnMut() -> rshmem::Result<()>| -> Result<f64> {
        f()?;
        let mut us = Vec::new();
        for _ in 0..a.iters {
            shmem.barrier_all()?;
            us.push(shmem.time(&mut *f)?.as_secs_f64() * 1e6);
        }
        Ok(median(us))
    };
    let layer_us = median_events(&mut || {
        ops.moe_layer(&stream, &mut bufs, &weights, x, topk, w, &mut out, t as u32)
    })?;
    let mut gu = shmem.alloc_zeroed::<bf16>(local * per * 2 * i_)?;
    let mut y = shmem.alloc_zeroed::<bf16>(local * per * h)?;
    let shape = |n: usize, k: usize| GroupedShape {
        groups: local as u32,
        n: n as u32,
        k: k as u32,
        b_layout: BLayout::NK,
    };
    let masked = || GroupRows::Masked {
        counts: bufs.recv_count().into(),
        max_m: per as u32,
    };
    let gemms_us = median_events(&mut || {
        ops.grouped_gemm(
            &stream,
            bufs.recv_x(),
            &w1,
            &mut gu,
            shape(2 * i_, h),
            masked(),
        )?;
        ops.grouped_gemm(
            &stream,
            bufs.activations(),
            &w2,
            &mut y,
            shape(h, i_),
            masked(),
        )
    })?;
    if me == 0 {
        println!(
            "{{\"mode\":\"layer\",\"npes\":{n},\"tokens\":{t},\"hidden\":{h},\"intermediate\":{i_},\
             \"experts\":{},\"top_k\":{k},\"layer_us\":{layer_us:.1},\"gemms_us\":{gemms_us:.1},\
             \"ratio\":{:.3},\"checked_tokens\":{},\"check\":\"ok\"}}",
            a.experts,
            layer_us / gemms_us,
            checked.len()
        );
    }
    Ok(())
}

const ACC: f64 = 1.0 / 8_388_608.0; // 2⁻²³
