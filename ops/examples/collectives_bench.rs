//! Collectives benchmark for `scripts/collectives_bench.py`: rshmem's all-reduce (each
//! algorithm and `Auto`), reduce-scatter and all-gather, and NVSHMEM's on-stream collectives
//! (`Stream::reduce`, `reducescatter`, `fcollect`), bf16, over every PE, at each size; with and
//! without CUDA graphs. Every PE runs every row; PE 0 prints one JSON line per row.
//!
//! ```text
//! RSHMEM_BACKEND=gpu RSHMEM_NPES=2 NVSHMEM_SYMMETRIC_SIZE=2G collectives_bench \
//!     [--sizes 8,65536,...] [--iters 20] [--inner K] [--ops all_reduce,reduce_scatter,all_gather] \
//!     [--algos auto,lamport,one_shot,two_shot] [--no-graphs] [--no-nvshmem]
//! ```
//!
//! Sizes are bytes of the whole buffer, as NCCL's tests count them: the all-reduce's buffer,
//! the reduce-scatter's input (each PE keeps `size / n`), the all-gather's output (each PE gives
//! `size / n`). Each row first runs the collective once on data whose result is exact (PE `p`
//! gives small integers `p + 1 + i mod 3`) and checks every element on the host (`"check"`),
//! then times it: `--iters` repetitions, each a host barrier of every PE, then CUDA events
//! around `inner` back-to-back calls (20 up to 1 MiB, 5 up to 16 MiB, 2 above); the time of a
//! call is the median repetition over `inner` (`"us"`). With graphs, the `inner` calls are
//! captured once into one graph, launched per repetition (`"us_graph"`). Bus bandwidth is
//! NCCL's: `size / time × 2(n − 1)/n` for the all-reduce, `× (n − 1)/n` for the others.
//!
//! NVSHMEM's host API here has no bf16 reductions: its rows are f32 at the same byte sizes
//! (the same bytes move), and where NVSHMEM refuses them (several PEs on one GPU) the row says
//! so. On the simulator it runs too (small sizes: every simulated GPU thread is a host
//! thread), which is how it is tested without a GPU; its times mean nothing.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{bf16, Graph, ReduceOp, Shmem, Stream, SymBuffer, Team};
use rshmem_ops::{Algorithm, Ops};
use std::time::Duration;

struct Args {
    sizes: Vec<usize>,
    iters: usize,
    /// Calls per repetition, if not by size.
    inner: Option<usize>,
    ops: Vec<String>,
    algos: Vec<Algorithm>,
    graphs: bool,
    nvshmem: bool,
}

fn parse() -> Result<Args> {
    let mut a = Args {
        sizes: vec![
            8,
            64,
            512,
            4 << 10,
            32 << 10,
            64 << 10,
            256 << 10,
            1 << 20,
            4 << 20,
            16 << 20,
            64 << 20,
            256 << 20,
        ],
        iters: 20,
        inner: None,
        ops: ["all_reduce", "reduce_scatter", "all_gather"]
            .map(String::from)
            .to_vec(),
        algos: vec![
            Algorithm::Auto,
            Algorithm::Lamport,
            Algorithm::OneShot,
            Algorithm::TwoShot,
        ],
        graphs: true,
        nvshmem: true,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--sizes" => {
                a.sizes = value()?
                    .split(',')
                    .map(|s| s.parse().with_context(|| format!("--sizes: {s:?}")))
                    .collect::<Result<_>>()?
            }
            "--iters" => a.iters = value()?.parse()?,
            "--inner" => a.inner = Some(value()?.parse()?),
            "--ops" => a.ops = value()?.split(',').map(String::from).collect(),
            "--algos" => {
                a.algos = value()?
                    .split(',')
                    .map(|s| {
                        Ok(match s {
                            "auto" => Algorithm::Auto,
                            "lamport" => Algorithm::Lamport,
                            "one_shot" => Algorithm::OneShot,
                            "two_shot" => Algorithm::TwoShot,
                            other => bail!("--algos {other:?}: auto, lamport, one_shot, two_shot"),
                        })
                    })
                    .collect::<Result<_>>()?
            }
            "--no-graphs" => a.graphs = false,
            "--no-nvshmem" => a.nvshmem = false,
            other => bail!(
                "unknown argument {other:?}: use [--sizes B,..] [--iters I] [--ops ..] [--algos ..] \
                 [--inner K] [--no-graphs] [--no-nvshmem]"
            ),
        }
    }
    ensure!(
        a.iters > 0 && a.inner != Some(0),
        "--iters and --inner must be > 0"
    );
    for op in &a.ops {
        ensure!(
            ["all_reduce", "reduce_scatter", "all_gather"].contains(&op.as_str()),
            "--ops {op:?}: all_reduce, reduce_scatter, all_gather"
        );
    }
    Ok(a)
}

/// Back-to-back calls per timed repetition (`--inner` overrides).
fn inner(bytes: usize) -> usize {
    if bytes <= 1 << 20 {
        20
    } else if bytes <= 16 << 20 {
        5
    } else {
        2
    }
}

/// PE `pe`'s element `i`: exact in bf16 and f32, and so are sums of 8 of them.
fn input(pe: usize, i: usize) -> f32 {
    (pe + 1 + i % 3) as f32
}

/// One row's measurement: median µs per call, plain and under a graph.
struct Timing {
    us: f64,
    us_graph: Option<f64>,
}

/// Times `call` (which queues one collective on `stream`): see the module docs.
fn time(
    shmem: &Shmem,
    stream: &Stream<'_>,
    args: &Args,
    bytes: usize,
    call: &mut dyn FnMut() -> rshmem::Result<()>,
) -> Result<Timing> {
    let k = args.inner.unwrap_or_else(|| inner(bytes));
    for _ in 0..2 {
        call()?;
    }
    stream.synchronize()?;
    let median = |mut t: Vec<Duration>| {
        t.sort();
        t[t.len() / 2].as_secs_f64() * 1e6 / k as f64
    };
    let mut plain = Vec::new();
    for _ in 0..args.iters {
        shmem.barrier_all()?;
        plain.push(stream.time(|| {
            for _ in 0..k {
                call()?;
            }
            Ok(())
        })?);
    }
    let us_graph = if args.graphs {
        let graph: Graph<'_> = stream.capture(|| {
            for _ in 0..k {
                call()?;
            }
            Ok(())
        })?;
        let mut g = Vec::new();
        for _ in 0..args.iters {
            shmem.barrier_all()?;
            // SAFETY: the buffers the recorded collectives use outlive the graph (dropped at
            // the end of this function, before them); every PE launches it in the same order.
            g.push(stream.time(|| unsafe { graph.launch(stream) })?);
        }
        Some(median(g))
    } else {
        None
    };
    Ok(Timing {
        us: median(plain),
        us_graph,
    })
}

/// Checks `got` (this PE's output) against the exact result; "ok" or what differs.
fn check(got: &[f32], want: impl Fn(usize) -> f32) -> String {
    match got.iter().enumerate().find(|&(i, &g)| g != want(i)) {
        None => "ok".into(),
        Some((i, g)) => format!("element {i}: {g}, want {}", want(i)),
    }
}

/// Prints PE 0's row.
#[allow(clippy::too_many_arguments)]
fn row(
    shmem: &Shmem,
    imp: &str,
    op: &str,
    algo: &str,
    dtype: &str,
    bytes: usize,
    check: &str,
    t: Option<&Timing>,
    error: Option<String>,
) {
    if shmem.my_pe() != 0 {
        return;
    }
    let n = shmem.n_pes() as f64;
    let factor = if op == "all_reduce" {
        2.0 * (n - 1.0) / n
    } else {
        (n - 1.0) / n
    };
    let bus = |us: f64| bytes as f64 / us / 1e3 * factor;
    let mut s = format!(
        "{{\"impl\": \"{imp}\", \"op\": \"{op}\", \"algo\": \"{algo}\", \"dtype\": \"{dtype}\", \
         \"bytes\": {bytes}, \"npes\": {}, \"check\": {check:?}",
        shmem.n_pes()
    );
    if let Some(t) = t {
        s += &format!(", \"us\": {:.3}, \"busbw\": {:.2}", t.us, bus(t.us));
        if let Some(g) = t.us_graph {
            s += &format!(", \"us_graph\": {g:.3}, \"busbw_graph\": {:.2}", bus(g));
        }
    }
    if let Some(e) = error {
        s += &format!(", \"error\": {:?}", e.lines().next().unwrap_or(""));
    }
    println!("{s}}}");
}

/// Buffers of one row, bf16 (rshmem) or f32 (NVSHMEM).
fn buffers<'s, T: rshmem::Pod>(
    shmem: &'s Shmem,
    src: &[f32],
    dst_len: usize,
    conv: impl Fn(f32) -> T,
) -> rshmem::Result<(SymBuffer<'s, T>, SymBuffer<'s, T>)> {
    let s = shmem.alloc_from(&src.iter().map(|&v| conv(v)).collect::<Vec<T>>())?;
    let d = shmem.alloc_zeroed::<T>(dst_len)?;
    Ok((s, d))
}

fn bench(shmem: &Shmem, args: &Args) -> Result<()> {
    let ops = Ops::new(shmem)?;
    let stream = shmem.new_stream()?;
    ops.prepare_collectives(&stream)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    for &size in &args.sizes {
        for op in &args.ops {
            // Elements: the all-reduce's buffer; the reduce-scatter's and all-gather's per PE.
            let (count, src_len, dst_len) = match op.as_str() {
                "all_reduce" => (size / 2, size / 2, size / 2),
                "reduce_scatter" => (size / 2 / n, size / 2 / n * n, size / 2 / n),
                _ => (size / 2 / n, size / 2 / n, size / 2 / n * n),
            };
            if count == 0 {
                continue;
            }
            let bytes = if op == "all_reduce" {
                count * 2
            } else {
                count * n * 2
            };
            let src: Vec<f32> = (0..src_len).map(|i| input(me, i)).collect();
            let want = |i: usize| -> f32 {
                match op.as_str() {
                    "all_reduce" => (0..n).map(|p| input(p, i)).sum(),
                    "reduce_scatter" => (0..n).map(|p| input(p, me * count + i)).sum(),
                    _ => input(i / count, i % count),
                }
            };
            let algos: &[Algorithm] = if op == "all_gather" {
                &[Algorithm::Auto]
            } else {
                &args.algos
            };
            for &algo in algos {
                if algo == Algorithm::Lamport && (op != "all_reduce" || bytes > 256 << 10) {
                    continue;
                }
                ops.set_algorithm(algo);
                let (s, mut d) = buffers(shmem, &src, dst_len, bf16::from_f32)?;
                let run = |d: &mut SymBuffer<'_, bf16>| -> rshmem::Result<()> {
                    match op.as_str() {
                        "all_reduce" => {
                            ops.all_reduce(&stream, Team::WORLD, &s, d, count, ReduceOp::Sum)
                        }
                        "reduce_scatter" => {
                            ops.reduce_scatter(&stream, Team::WORLD, &s, d, count, ReduceOp::Sum)
                        }
                        _ => ops.all_gather(&stream, Team::WORLD, &s, d, count),
                    }
                };
                let verdict = match run(&mut d).and_then(|()| stream.synchronize()) {
                    Ok(()) => {
                        let got: Vec<f32> = d.to_vec()?.iter().map(|v| v.to_f32()).collect();
                        check(&got, want)
                    }
                    Err(e) => format!("error: {e}"),
                };
                let t = if verdict == "ok" {
                    Some(time(shmem, &stream, args, bytes, &mut || run(&mut d))?)
                } else {
                    None
                };
                row(
                    shmem,
                    "rshmem",
                    op,
                    &format!("{algo:?}"),
                    "bf16",
                    bytes,
                    &verdict,
                    t.as_ref(),
                    None,
                );
            }
            ops.set_algorithm(Algorithm::Auto);
            if args.nvshmem {
                // f32 at the same bytes: half the elements.
                let count32 = count / 2;
                if count32 == 0 {
                    continue;
                }
                let (src32, dst32) = match op.as_str() {
                    "all_reduce" => (count32, count32),
                    "reduce_scatter" => (count32 * n, count32),
                    _ => (count32, count32 * n),
                };
                let src_f: Vec<f32> = match op.as_str() {
                    "reduce_scatter" => (0..n)
                        .flat_map(|r| (0..count32).map(move |i| (r, i)))
                        .map(|(r, i)| input(me, r * count + i))
                        .collect(),
                    _ => src[..src32].to_vec(),
                };
                let (s, d) = buffers(shmem, &src_f, dst32, |v| v)?;
                let mut call = || -> rshmem::Result<()> {
                    match op.as_str() {
                        "all_reduce" => stream.reduce(Team::WORLD, ReduceOp::Sum, &d, &s),
                        "reduce_scatter" => {
                            stream.reducescatter(Team::WORLD, ReduceOp::Sum, &d, &s)
                        }
                        _ => stream.fcollect(Team::WORLD, &d, &s),
                    }
                };
                let want32 = |i: usize| -> f32 {
                    match op.as_str() {
                        "all_reduce" => (0..n).map(|p| input(p, i)).sum(),
                        "reduce_scatter" => (0..n).map(|p| input(p, me * count + i)).sum(),
                        _ => input(i / count32, i % count32),
                    }
                };
                let bytes32 = if op == "all_reduce" {
                    count32 * 4
                } else {
                    count32 * n * 4
                };
                match call().and_then(|()| stream.synchronize()) {
                    Ok(()) => {
                        let verdict = check(&d.to_vec()?, want32);
                        let t = if verdict == "ok" {
                            // NVSHMEM may refuse to record: time without graphs then.
                            match time(shmem, &stream, args, bytes32, &mut call) {
                                Ok(t) => Some(t),
                                Err(_) => {
                                    let plain = Args {
                                        graphs: false,
                                        sizes: vec![],
                                        ops: vec![],
                                        algos: vec![],
                                        ..*args
                                    };
                                    // (`inner` and `iters` are the caller's.)
                                    Some(time(shmem, &stream, &plain, bytes32, &mut call)?)
                                }
                            }
                        } else {
                            None
                        };
                        row(
                            shmem,
                            "nvshmem",
                            op,
                            "on_stream",
                            "f32",
                            bytes32,
                            &verdict,
                            t.as_ref(),
                            None,
                        );
                    }
                    Err(e) => row(
                        shmem,
                        "nvshmem",
                        op,
                        "on_stream",
                        "f32",
                        bytes32,
                        "refused",
                        None,
                        Some(e.to_string()),
                    ),
                }
            }
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = parse()?;
    rshmem::run(|shmem: &Shmem| -> Result<()> { bench(shmem, &args) })?;
    Ok(())
}
