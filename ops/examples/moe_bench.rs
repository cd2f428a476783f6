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
//! ```text
//! RSHMEM_BACKEND=gpu RSHMEM_NPES=1 NVSHMEM_SYMMETRIC_SIZE=16G moe_bench \
//!     --tokens 4096 --hidden 7168 --experts 256 --top-k 8 [--ll] [--iters 20]
//! ```
//!
//! On the simulator it runs too (small shapes: every simulated GPU thread is a host thread),
//! which is how it is tested without a GPU; its times mean nothing.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{bf16, Shmem, Team};
use rshmem_ops::{MoeConfig, MoePayload, Ops};
use std::time::Instant;

struct Args {
    tokens: usize,
    hidden: usize,
    experts: usize,
    top_k: usize,
    ll: bool,
    iters: usize,
}

fn parse() -> Result<Args> {
    let mut a = Args {
        tokens: 128,
        hidden: 1024,
        experts: 8,
        top_k: 2,
        ll: false,
        iters: 20,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || -> Result<usize> {
            Ok(it
                .next()
                .with_context(|| format!("{arg} needs a value"))?
                .parse()?)
        };
        match arg.as_str() {
            "--tokens" => a.tokens = value()?,
            "--hidden" => a.hidden = value()?,
            "--experts" => a.experts = value()?,
            "--top-k" => a.top_k = value()?,
            "--iters" => a.iters = value()?,
            "--ll" => a.ll = true,
            other => bail!(
                "unknown argument {other:?}: use --tokens T --hidden H --experts E --top-k K \
                 [--ll] [--iters I]"
            ),
        }
    }
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
        let cfg = MoeConfig {
            experts: a.experts as u32,
            top_k: k as u32,
            hidden: h as u32,
            max_tokens: t as u32,
            align: 128,
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
                "{{\"mode\":\"{mode}\",\"npes\":{n},\"tokens\":{t},\"hidden\":{h},\"experts\":{},\"top_k\":{k},\
                 \"dispatch_us\":{d:.1},\"combine_us\":{c:.1},\"dispatch_gbs\":{:.1},\"combine_gbs\":{:.1},\"check\":\"ok\"}}",
                a.experts,
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
            stream.get(&eo, ll.recv_x(), me)?;
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
        shmem.barrier_all()?;
        Ok(())
    })
    .map_err(anyhow::Error::from)
}
