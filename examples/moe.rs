//! A mixture-of-experts layer over all PEs with rshmem's ops: each PE's tokens are routed to
//! `top_k` of `experts` experts (spread over the PEs), dispatched, multiplied by their
//! expert's weight (one grouped GEMM over the local experts, `Ops::grouped_gemm`: the normal
//! mode's rows by offsets, the low-latency mode's counts as they are on the device), and
//! combined back with the router's weights:
//!
//! ```text
//! out[t] = Σ_kk weight[t][kk] · (x[t] · W_{topk[t][kk]}ᵀ)       (W_e: hidden x hidden, out x in)
//! ```
//!
//! Run in both modes on the same data: normal (`moe_dispatch`, `moe_combine`: rows grouped by
//! expert and padded, the layout returned to the host) and low-latency (`moe_ll_dispatch`,
//! `moe_ll_combine`: fixed rows per expert, counts on the device). Every token of every PE is
//! checked against an f64 reference of the same bf16 inputs:
//! `|out - ref| <= Σ w·(h·2⁻²³·Σ|x||W| + 2⁻⁸·(|y| + that)) + 2⁻⁸·|ref| + 2⁻²⁰·Σ|w·y|` (each
//! expert output's f32 accumulation and bf16 rounding, then the combine's f32 sum rounded
//! once). On GPUs it also times each step.
//!
//! Then the low-latency mode with FP8 rows (`moe_ll_dispatch_fp8`): the tokens quantised to
//! e4m3 per token and 128 channels, the weights per 128 x 128 block (`rshmem::ops::fp8`); the
//! experts are one `Ops::grouped_gemm_fp8` over the received bytes and scales as they are
//! (its masked layout, A's scales in its layout). Checked against an f64 reference of the
//! dequantised rows and weights, with the FP8 GEMM's bound (`docs/gemm.md`: `γ S`, `γ =
//! γ_tc(min(h, 128)) + γ(⌈h/128⌉ + 3)`, the tensor cores' unit 2⁻²⁴ on the simulator, 2⁻¹³
//! assumed on GPUs) in place of `h·2⁻²³·Σ|x||W|`. The FP8 GEMM is Hopper's: on another GPU,
//! or with `hidden` not a multiple of 16, the FP8 pass says it was skipped and why.
//!
//! ```text
//! cargo run --release --example moe                        # GPUs: 512 tokens per PE, hidden 2048
//! RSHMEM_BACKEND=sim RSHMEM_NPES=3 cargo run --release --example moe
//! moe --tokens 128 --hidden 4096 --experts-per-pe 4 --top-k 2 --iters 20
//! ```

mod common;

use anyhow::{ensure, Result};
use rshmem::device::fp8::E4m3;
use rshmem::ops::fp8::{self, Blocks, Quantized};
use rshmem::ops::{
    BLayout, Fp8Scales, GroupRows, GroupedShape, MoeBuffers, MoeConfig, MoeLlBuffers, MoePayload,
    Ops,
};
use rshmem::{bf16, Backend, Shmem, Stream, SymBuffer, Team};

#[derive(Clone, Copy, Debug)]
struct Sizes {
    tokens: usize,
    hidden: usize,
    per_pe: usize,
    top_k: usize,
    iters: usize,
}

fn parse(backend: Backend) -> Result<Sizes> {
    let mut s = match backend {
        Backend::Gpu => Sizes {
            tokens: 512,
            hidden: 2048,
            per_pe: 4,
            top_k: 2,
            iters: 10,
        },
        _ => Sizes {
            tokens: 13,
            hidden: 64,
            per_pe: 2,
            top_k: 2,
            iters: 0,
        },
    };
    common::parse_args(
        "--tokens T --hidden H --experts-per-pe E --top-k K --iters I",
        &[],
        |name, value| {
            match (name, value) {
                ("--tokens", Some(n)) => s.tokens = n,
                ("--hidden", Some(n)) => s.hidden = n,
                ("--experts-per-pe", Some(n)) => s.per_pe = n,
                ("--top-k", Some(n)) => s.top_k = n,
                ("--iters", Some(n)) => s.iters = n,
                _ => return false,
            }
            true
        },
    )?;
    ensure!(
        s.hidden % 8 == 0,
        "hidden = {} must be a multiple of 8 (the GEMMs' k)",
        s.hidden
    );
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
const W: u64 = 2;
const ROUTE: u64 = 3;
const U: f64 = 1.0 / 256.0; // 2⁻⁸
const ACC: f64 = 1.0 / 8_388_608.0; // 2⁻²³

/// PE `pe`'s token `t`: its row, its experts (distinct; about one entry in 7 is -1) and
/// weights.
fn token(pe: usize, t: usize, s: &Sizes, experts: usize) -> (Vec<bf16>, Vec<i32>, Vec<f32>) {
    let row = (0..s.hidden)
        .map(|j| bf16::from_f64(unit(X, pe << 20 | t, j) * 2.0 - 1.0))
        .collect();
    let mut topk = vec![-1i32; s.top_k];
    for kk in 0..s.top_k.min(experts) {
        if unit(ROUTE, pe << 20 | t, 2 * kk) < 1.0 / 7.0 {
            continue;
        }
        let mut e = (unit(ROUTE, pe << 20 | t, 2 * kk + 1) * experts as f64) as i32;
        while topk.contains(&e) {
            e = (e + 1) % experts as i32;
        }
        topk[kk] = e;
    }
    let weights = (0..s.top_k)
        .map(|kk| unit(ROUTE, pe << 20 | t, 100 + kk) as f32)
        .collect();
    (row, topk, weights)
}

/// A pass's inputs: this PE's tokens, their routing, its experts' weights (one after the
/// other: local expert j's h x h at j h²).
struct Inputs<'a, 's> {
    x: &'a SymBuffer<'s, bf16>,
    topk: &'a SymBuffer<'s, i32>,
    weights: &'a SymBuffer<'s, f32>,
    tokens: usize,
    experts: &'a SymBuffer<'s, bf16>,
}

/// One normal-mode pass: dispatch, one grouped GEMM over the local experts' rows, combine.
fn normal<'s>(
    ops: &Ops<'s>,
    stream: &rshmem::Stream<'_>,
    bufs: &mut MoeBuffers<'s>,
    inp: &Inputs<'_, 's>,
    eo: &mut SymBuffer<'s, bf16>,
    ends: &mut SymBuffer<'s, u32>,
    out: &mut SymBuffer<'s, bf16>,
) -> Result<()> {
    let h = bufs.config().hidden;
    let layout = ops.moe_dispatch(
        stream,
        bufs,
        inp.x,
        inp.topk,
        inp.weights,
        inp.tokens as u32,
    )?;
    // The padding before an expert's rows (zero rows) joins its group.
    let e = layout.group_ends();
    ends.copy_from_host(&e)?;
    let m = e.last().copied().unwrap_or(0);
    let shape = GroupedShape {
        groups: e.len() as u32,
        n: h,
        k: h,
        b_layout: BLayout::NK,
    };
    let rows = GroupRows::Offsets {
        ends: (&*ends).into(),
        m,
    };
    ops.grouped_gemm(stream, bufs.recv_x()?, inp.experts, &mut *eo, shape, rows)?;
    ops.moe_combine(stream, bufs, &layout, &*eo, out)?;
    Ok(())
}

/// The FP8 low-latency pass's buffers: the rows and their scales (this PE's tokens,
/// quantised), the local experts' weights and block scales, the experts' output.
struct Fp8Pass<'s> {
    ll: MoeLlBuffers<'s>,
    x: SymBuffer<'s, u8>,
    scales: SymBuffer<'s, f32>,
    w: SymBuffer<'s, E4m3>,
    w_scales: SymBuffer<'s, f32>,
    eo: SymBuffer<'s, bf16>,
}

/// One FP8 low-latency pass: dispatch, one FP8 grouped GEMM over the received rows and scales
/// as they are (the masked layout of the device counts), combine.
fn ll_fp8<'s>(
    ops: &Ops<'s>,
    stream: &Stream<'_>,
    p: &mut Fp8Pass<'s>,
    inp: &Inputs<'_, 's>,
    out: &mut SymBuffer<'s, bf16>,
) -> Result<()> {
    let h = p.ll.config().hidden;
    ops.moe_ll_dispatch_fp8(
        stream,
        &mut p.ll,
        &p.x,
        &p.scales,
        inp.topk,
        inp.tokens as u32,
    )?;
    let (rows, scales) = p.ll.recv_x_fp8()?;
    let shape = GroupedShape {
        groups: p.ll.recv_count().len() as u32,
        n: h,
        k: h,
        b_layout: BLayout::NK,
    };
    let masked = GroupRows::Masked {
        counts: p.ll.recv_count().into(),
        max_m: p.ll.rows_per_expert() as u32,
    };
    let block = Fp8Scales::Block {
        a: scales.into(),
        b: (&p.w_scales).into(),
    };
    let a = rows.range(..)?.cast::<E4m3>()?;
    ops.grouped_gemm_fp8::<E4m3, bf16>(stream, a, &p.w, &mut p.eo, shape, masked, block)?;
    ops.moe_ll_combine(stream, &mut p.ll, &p.eo, inp.topk, inp.weights, out)?;
    Ok(())
}

/// An FP8 value times its scale, exactly (4 significant bits times 24 fit an f64).
fn deq(byte: u8, scale: f32) -> f64 {
    fp8::to_f32(byte) as f64 * scale as f64
}

/// `γ(n)` for unit roundoff `u`.
fn gamma(n: usize, u: f64) -> f64 {
    n as f64 * u / (1.0 - n as f64 * u)
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let s = parse(shmem.backend())?;
        let (t, h, k) = (s.tokens, s.hidden, s.top_k);
        let experts = s.per_pe * n;
        let ops = Ops::new(shmem)?;
        let stream = shmem.stream();
        let cfg = MoeConfig {
            experts: experts as u32,
            top_k: k as u32,
            hidden: h as u32,
            max_tokens: t as u32,
            align: 8,
            payload: MoePayload::Bf16,
        };
        // This PE's tokens, and its experts' weights (expert e: W[e], h x h, out x in).
        let mut rows = Vec::with_capacity(t * h);
        let (mut topk, mut weights) = (Vec::new(), Vec::new());
        for i in 0..t {
            let (r, e, w) = token(me, i, &s, experts);
            rows.extend(r);
            topk.extend(e);
            weights.extend(w);
        }
        let wscale = 2.0 / (h as f64).sqrt();
        let w_of = |e: usize, o: usize, i: usize| bf16::from_f64((unit(W, e, o * h + i) * 2.0 - 1.0) * wscale);
        let w_local: Vec<bf16> = (0..s.per_pe * h * h)
            .map(|x| w_of(me * s.per_pe + x / (h * h), x % (h * h) / h, x % h))
            .collect();
        let w_bufs = shmem.alloc_from(&w_local)?;
        let (x, topk_buf, w_buf) = (shmem.alloc_from(&rows)?, shmem.alloc_from(&topk)?, shmem.alloc_from(&weights)?);

        // Normal mode.
        let mut bufs = ops.moe_buffers(Team::WORLD, cfg)?;
        let mut expert_out = shmem.alloc_zeroed::<bf16>(bufs.capacity() * h)?;
        let mut out = shmem.alloc_zeroed::<bf16>(t * h)?;
        let inputs = Inputs { x: &x, topk: &topk_buf, weights: &w_buf, tokens: t, experts: &w_bufs };
        let mut ends = shmem.alloc_zeroed::<u32>(s.per_pe)?;
        normal(&ops, &stream, &mut bufs, &inputs, &mut expert_out, &mut ends, &mut out)?;
        let got_normal = out.to_vec()?;

        // Low-latency mode, on the same tokens: every expert's rows are at j × rows_per_expert.
        let mut ll = ops.moe_ll_buffers(Team::WORLD, cfg)?;
        let per = ll.rows_per_expert();
        let mut ll_out = shmem.alloc_zeroed::<bf16>(s.per_pe * per * h)?;
        let mut out2 = shmem.alloc_zeroed::<bf16>(t * h)?;
        ops.moe_ll_dispatch(&stream, &mut ll, &x, &topk_buf, t as u32)?;
        // The counts stay on the device: the grouped GEMM's masked layout takes them as they are.
        let shape = GroupedShape { groups: s.per_pe as u32, n: h as u32, k: h as u32, b_layout: BLayout::NK };
        let masked = GroupRows::Masked { counts: ll.recv_count().into(), max_m: per as u32 };
        ops.grouped_gemm(&stream, ll.recv_x()?, &w_bufs, &mut ll_out, shape, masked)?;
        ops.moe_ll_combine(&stream, &mut ll, &ll_out, &topk_buf, &w_buf, &mut out2)?;
        let got_ll = out2.to_vec()?;

        // Low-latency mode with FP8 rows, where the FP8 GEMM runs.
        let backend = match shmem.backend() {
            Backend::Gpu => format!("on GPUs (sm_{})", ops.device_info().sm),
            _ => "on the simulator".to_string(),
        };
        let fp8_skip = if ops.device_info().sm != 90 {
            Some(format!("the FP8 grouped GEMM is Hopper's (sm_90), this GPU is sm_{}", ops.device_info().sm))
        } else if h % 16 != 0 {
            Some(format!("the FP8 GEMM's k (hidden = {h}) must be a multiple of 16"))
        } else {
            None
        };
        let q_x = fp8::quantize(&rows, t, h, Blocks::PER_TOKEN);
        // Every expert's weight, quantised (the reference needs the other PEs' too).
        let q_w: Vec<Quantized> = match fp8_skip {
            Some(_) => Vec::new(),
            None => (0..experts)
                .map(|e| {
                    let w: Vec<bf16> = (0..h * h).map(|x| w_of(e, x / h, x % h)).collect();
                    fp8::quantize(&w, h, h, Blocks::PER_BLOCK)
                })
                .collect(),
        };
        let mut fp8_pass = match fp8_skip {
            Some(_) => None,
            None => {
                let ll = ops.moe_ll_buffers(Team::WORLD, MoeConfig { payload: MoePayload::Fp8E4m3, ..cfg })?;
                let mine = &q_w[me * s.per_pe..(me + 1) * s.per_pe];
                let w: Vec<E4m3> = mine.iter().flat_map(|q| q.values().to_vec()).collect();
                let w_scales: Vec<f32> = mine.iter().flat_map(|q| q.scales.clone()).collect();
                let eo = shmem.alloc_zeroed::<bf16>(s.per_pe * ll.rows_per_expert() * h)?;
                let (x, scales) = (shmem.alloc_from(&q_x.bytes)?, shmem.alloc_from(&q_x.scales)?);
                let (w, w_scales) = (shmem.alloc_from(&w)?, shmem.alloc_from(&w_scales)?);
                Some(Fp8Pass { ll, x, scales, w, w_scales, eo })
            }
        };
        let mut out3 = shmem.alloc_zeroed::<bf16>(t * h)?;
        if let Some(p) = fp8_pass.as_mut() {
            ll_fp8(&ops, &stream, p, &inputs, &mut out3)?;
        }
        let got_fp8 = out3.to_vec()?;

        // The reference: every token of this PE, in f64 from the same bf16 inputs.
        let (mut worst_n, mut worst_l) = (0f64, 0f64);
        for i in 0..t {
            for o in 0..h {
                let (mut want, mut bound, mut mag) = (0f64, 0f64, 0f64);
                for kk in 0..k {
                    let e = topk[i * k + kk];
                    if e < 0 {
                        continue;
                    }
                    let w = weights[i * k + kk] as f64;
                    let (mut y, mut abs) = (0f64, 0f64);
                    for c in 0..h {
                        let p = rows[i * h + c].to_f64() * w_of(e as usize, o, c).to_f64();
                        y += p;
                        abs += p.abs();
                    }
                    let acc = h as f64 * ACC * abs;
                    want += w * y;
                    bound += w * (acc + U * (y.abs() + acc));
                    mag += (w * y).abs();
                }
                bound += U * want.abs() + mag / (1u64 << 20) as f64;
                for (got, worst, mode) in [(&got_normal, &mut worst_n, "normal"), (&got_ll, &mut worst_l, "low-latency")] {
                    let err = (got[i * h + o].to_f64() - want).abs();
                    ensure!(
                        err <= bound,
                        "PE {me}, {mode} mode: out[{i}][{o}] = {}, reference {want}, error {err:.3e} above {bound:.3e}",
                        got[i * h + o]
                    );
                    if bound > 0.0 {
                        *worst = worst.max(err / bound);
                    }
                }
            }
        }
        // The FP8 pass's reference: the dequantised rows and weights, in f64.
        let mut worst_8 = 0f64;
        if fp8_pass.is_some() {
            let tc = match shmem.backend() {
                Backend::Gpu => 1.0 / 8192.0, // 2⁻¹³
                _ => ACC / 2.0,               // 2⁻²⁴
            };
            let gam = gamma(h.min(128), tc) + gamma(h.div_ceil(128) + 3, ACC / 2.0);
            let (kb, sr) = (h.div_ceil(128), h.div_ceil(128));
            for i in 0..t {
                let xq: Vec<f64> = (0..h).map(|c| deq(q_x.bytes[i * h + c], q_x.scales[i * sr + c / 128])).collect();
                for o in 0..h {
                    let (mut want, mut err, mut mag) = (0f64, 0f64, 0f64);
                    for kk in 0..k {
                        let e = topk[i * k + kk];
                        if e < 0 {
                            continue;
                        }
                        let (w, q) = (weights[i * k + kk] as f64, &q_w[e as usize]);
                        let (mut y, mut abs) = (0f64, 0f64);
                        for (c, xv) in xq.iter().enumerate() {
                            let p = xv * deq(q.bytes[o * h + c], q.scales[o / 128 * kb + c / 128]);
                            y += p;
                            abs += p.abs();
                        }
                        want += w * y;
                        err += w * (gam * abs + U * (y.abs() + gam * abs));
                        mag += (w * y).abs();
                    }
                    let bound = err + U * (want.abs() + err) + (mag + err) / (1u64 << 20) as f64;
                    let off = (got_fp8[i * h + o].to_f64() - want).abs();
                    ensure!(
                        off <= bound,
                        "PE {me}, low-latency FP8: out[{i}][{o}] = {}, reference {want}, error {off:.3e} above {bound:.3e}",
                        got_fp8[i * h + o]
                    );
                    if bound > 0.0 {
                        worst_8 = worst_8.max(off / bound);
                    }
                }
            }
        }
        let fp8_note = match &fp8_skip {
            Some(why) => format!("low-latency FP8 skipped ({why})"),
            None => format!("low-latency FP8 ok (worst error {worst_8:.2} of its bound)"),
        };
        println!(
            "PE {me}: MoE layer of {t} tokens x {h}, top-{k} of {experts} experts over {n} PEs \
             {backend}: normal ok, low-latency ok (worst error {:.2} and {:.2} of the bound), \
             {fp8_note}",
            worst_n, worst_l
        );

        if s.iters > 0 {
            let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
                f()?;
                stream.synchronize()?;
                let mut v = Vec::new();
                for _ in 0..s.iters {
                    shmem.barrier_all()?;
                    let start = std::time::Instant::now();
                    f()?;
                    stream.synchronize()?;
                    v.push(start.elapsed().as_secs_f64() * 1e6);
                }
                v.sort_by(|a, b| a.total_cmp(b));
                Ok(v[v.len() / 2])
            };
            let normal_us = time(&mut || normal(&ops, &stream, &mut bufs, &inputs, &mut expert_out, &mut ends, &mut out))?;
            let ll_us = time(&mut || {
                ops.moe_ll_dispatch(&stream, &mut ll, &x, &topk_buf, t as u32)?;
                let masked = GroupRows::Masked { counts: ll.recv_count().into(), max_m: per as u32 };
                ops.grouped_gemm(&stream, ll.recv_x()?, &w_bufs, &mut ll_out, shape, masked)?;
                ops.moe_ll_combine(&stream, &mut ll, &ll_out, &topk_buf, &w_buf, &mut out2)?;
                Ok(())
            })?;
            let fp8_us = match fp8_pass.as_mut() {
                Some(p) => Some(time(&mut || ll_fp8(&ops, &stream, p, &inputs, &mut out3))?),
                None => None,
            };
            if me == 0 {
                println!(
                    "PE 0: median of {} (host clock, synchronised): normal dispatch + experts + \
                     combine {normal_us:.1} us; low-latency dispatch + experts + combine \
                     {ll_us:.1} us{}",
                    s.iters,
                    fp8_us.map_or(String::new(), |us| format!("; low-latency FP8 {us:.1} us"))
                );
            }
        }
        Ok(())
    })
    .map_err(anyhow::Error::from)
}
