//! Fused tensor-parallel benchmark for `scripts/tp_bench.py`: one op and shape per run, on
//! every PE of the job (`RSHMEM_NPES`, one per GPU; several may share one GPU for a smoke test).
//!
//! * `--op ag`: `C = all_gather(A) · B` (`Ops::all_gather_gemm`); PE r reads its rows of A
//!   from `DIR/a.bin` (all of A, `m x k`) and its B from `DIR/b{r}.bin`, writes C (`m x n`) to
//!   `DIR/c{r}.bin`.
//! * `--op rs`: this PE's rows of `Σ_r A_r · B_r` (`Ops::gemm_reduce_scatter`); PE r reads A_r
//!   (`m x k`, `k` its share of K) from `DIR/a{r}.bin` and B_r from `DIR/b{r}.bin`, writes its
//!   `m / n x n` rows to `DIR/c{r}.bin`.
//!
//! B is `n x k` (`--kn`: `k x n`), raw little-endian bf16; `--waits` forces where the op
//! waits for the other PEs' data (`Waits`: default auto). After one run (whose output the
//! script checks against torch), each PE times `--iters` runs of the fused op and of the same
//! GEMM alone (`Ops::gemm`, this PE's shape, no communication), CUDA events around each after
//! `--warmup` runs, and prints one JSON line: the medians and minima, the exposed
//! communication (fused - GEMM alone, medians) and TFLOP/s of the fused op at its median.
//!
//! ```text
//! RSHMEM_BACKEND=gpu RSHMEM_NPES=2 NVSHMEM_SYMMETRIC_SIZE=8G \
//!     tp_bench --dir /tmp/x --op ag --m 8192 --n 8192 --k 8192 [--kn] [--kernel auto|sm90|sm80]
//!     [--waits auto|in-gemm|outside]
//! ```
//!
//! On the simulator it runs too (small shapes), which is how it is tested without a GPU.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{bf16, Shmem, SymBuffer};
use rshmem_ops::{BLayout, FusedOptions, GemmOptions, GemmShape, Kernel, Ops, Waits};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    AllGather,
    ReduceScatter,
}

struct Args {
    dir: PathBuf,
    op: Op,
    shape: GemmShape,
    kernel: Kernel,
    waits: Waits,
    warmup: usize,
    iters: usize,
}

fn parse() -> Result<Args> {
    let (mut dir, mut op, mut m, mut n, mut k) = (None, None, 0u32, 0u32, 0u32);
    let (mut layout, mut kernel, mut warmup, mut iters) = (BLayout::NK, Kernel::Auto, 3, 20);
    let mut waits = Waits::Auto;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "--op" => {
                op = Some(match value()?.as_str() {
                    "ag" => Op::AllGather,
                    "rs" => Op::ReduceScatter,
                    other => bail!("--op {other:?}: use ag or rs"),
                })
            }
            "--m" => m = value()?.parse()?,
            "--n" => n = value()?.parse()?,
            "--k" => k = value()?.parse()?,
            "--kn" => layout = BLayout::KN,
            "--warmup" => warmup = value()?.parse()?,
            "--iters" => iters = value()?.parse()?,
            "--kernel" => {
                kernel = match value()?.as_str() {
                    "auto" => Kernel::Auto,
                    "sm90" => Kernel::Sm90,
                    "sm80" => Kernel::Sm80,
                    other => bail!("--kernel {other:?}: use auto, sm90 or sm80"),
                }
            }
            "--waits" => {
                waits = match value()?.as_str() {
                    "auto" => Waits::Auto,
                    "in-gemm" => Waits::InGemm,
                    "outside" => Waits::OutsideGemm,
                    other => bail!("--waits {other:?}: use auto, in-gemm or outside"),
                }
            }
            other => bail!(
                "unknown argument {other:?}: use --dir DIR --op ag|rs --m M --n N --k K [--kn] \
                 [--kernel auto|sm90|sm80] [--waits auto|in-gemm|outside] [--warmup W] \
                 [--iters I]"
            ),
        }
    }
    ensure!(iters > 0, "--iters must be > 0");
    Ok(Args {
        dir: dir.context("--dir DIR is needed (where the inputs are)")?,
        op: op.context("--op ag|rs is needed")?,
        shape: GemmShape::new(m, n, k, layout),
        kernel,
        waits,
        warmup,
        iters,
    })
}

/// `len` bf16 from `path`, which must hold exactly that many.
fn read_bf16(path: &Path, len: usize) -> Result<Vec<bf16>> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let bytes = file.metadata()?.len();
    ensure!(
        bytes == 2 * len as u64,
        "{} holds {bytes} bytes; the shape needs {len} bf16 = {} bytes",
        path.display(),
        2 * len
    );
    let mut v = vec![bf16::ZERO; len];
    file.read_exact(bytemuck::cast_slice_mut(&mut v))?;
    Ok(v)
}

/// Median and minimum of `iters` timed runs of `run`, after `warmup` untimed ones.
fn time(
    shmem: &Shmem,
    (warmup, iters): (usize, usize),
    mut run: impl FnMut() -> rshmem::Result<()>,
) -> Result<(f64, f64)> {
    for _ in 0..warmup {
        run()?;
    }
    shmem.synchronize()?;
    let mut times: Vec<Duration> = (0..iters)
        .map(|_| shmem.time(&mut run))
        .collect::<Result<_, _>>()?;
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok((ms(times[times.len() / 2]), ms(times[0])))
}

fn bench(shmem: &Shmem, args: &Args) -> Result<()> {
    let (me, npes) = (shmem.my_pe(), shmem.n_pes());
    let shape = args.shape;
    let (m, n) = (shape.m as usize, shape.n as usize);
    ensure!(m % npes == 0, "m = {m} is not divisible by the {npes} PEs");
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let fused = FusedOptions {
        kernel: args.kernel,
        waits: args.waits,
        ..FusedOptions::default()
    };
    let plain = GemmOptions::kernel(args.kernel);
    let b = shmem.alloc_from(&read_bf16(
        &args.dir.join(format!("b{me}.bin")),
        shape.b_len(),
    )?)?;
    let mut gemm_c = shmem.alloc_zeroed::<bf16>(shape.c_len())?;
    let runs = (args.warmup, args.iters);
    let (fused_ms, gemm_ms, c) = match args.op {
        Op::AllGather => {
            // This PE's rows of A; the others arrive in the call.
            let rows = m / npes * shape.k as usize;
            let all = read_bf16(&args.dir.join("a.bin"), shape.a_len())?;
            let mut host = vec![bf16::ZERO; shape.a_len()];
            host[me * rows..(me + 1) * rows].copy_from_slice(&all[me * rows..(me + 1) * rows]);
            drop(all);
            let mut a = shmem.alloc_from(&host)?;
            drop(host);
            let mut c = shmem.alloc_zeroed::<bf16>(shape.c_len())?;
            ops.all_gather_gemm_with(&stream, &mut a, &b, &mut c, shape, fused)?;
            let out = c.to_vec()?;
            let f = time(shmem, runs, || {
                ops.all_gather_gemm_with(&stream, &mut a, &b, &mut c, shape, fused)
            })?;
            let g = time(shmem, runs, || {
                ops.gemm_with(&stream, &a, &b, &mut gemm_c, shape, plain)
            })?;
            (f, g, out)
        }
        Op::ReduceScatter => {
            let a_host = read_bf16(&args.dir.join(format!("a{me}.bin")), shape.a_len())?;
            let a: SymBuffer<'_, bf16> = shmem.alloc_from(&a_host)?;
            drop(a_host);
            let mut c = shmem.alloc_zeroed::<bf16>(m / npes * n)?;
            ops.gemm_reduce_scatter_with(&stream, &a, &b, &mut c, shape, fused)?;
            let out = c.to_vec()?;
            let f = time(shmem, runs, || {
                ops.gemm_reduce_scatter_with(&stream, &a, &b, &mut c, shape, fused)
            })?;
            let g = time(shmem, runs, || {
                ops.gemm_with(&stream, &a, &b, &mut gemm_c, shape, plain)
            })?;
            (f, g, out)
        }
    };
    std::fs::write(
        args.dir.join(format!("c{me}.bin")),
        bytemuck::cast_slice(&c),
    )?;
    let info = ops.device_info();
    println!(
        "{{\"pe\": {me}, \"npes\": {npes}, \"op\": \"{}\", \"m\": {}, \"n\": {}, \"k\": {}, \
         \"layout\": \"{:?}\", \"kernel\": \"{:?}\", \"backend\": \"{:?}\", \"sm\": {}, \
         \"multiprocessors\": {}, \"iters\": {}, \"fused_median_ms\": {:.4}, \"fused_min_ms\": {:.4}, \
         \"gemm_median_ms\": {:.4}, \"gemm_min_ms\": {:.4}, \"exposed_ms\": {:.4}, \
         \"fused_tflops\": {:.2}, \"gemm_tflops\": {:.2}}}",
        if args.op == Op::AllGather { "ag" } else { "rs" },
        shape.m,
        shape.n,
        shape.k,
        shape.b_layout,
        args.kernel,
        shmem.backend(),
        info.sm,
        info.multiprocessors,
        args.iters,
        fused_ms.0,
        fused_ms.1,
        gemm_ms.0,
        gemm_ms.1,
        fused_ms.0 - gemm_ms.0,
        shape.flops() / fused_ms.0 / 1e9,
        shape.flops() / gemm_ms.0 / 1e9,
    );
    // No PE frees its buffers while a peer may still write them.
    shmem.barrier_all()?;
    Ok(())
}

fn main() -> Result<()> {
    let args = parse()?;
    rshmem::run(|shmem: &Shmem| -> Result<()> { bench(shmem, &args) })?;
    Ok(())
}
