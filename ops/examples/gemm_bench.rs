//! GEMM benchmark for `scripts/gemm_bench.py`: one shape per run, on the GPU backend with one
//! PE. Reads A (m x k) and B (n x k, or k x n with `--kn`) as raw little-endian bf16 from
//! `DIR/a.bin` and `DIR/b.bin`, runs `C = A · B` once through `Ops::gemm` (bf16 output) and
//! writes C to `DIR/c.bin`; then times `--iters` runs (CUDA events around each, after
//! `--warmup` runs) and prints one JSON line: shape, kernel, median and min milliseconds,
//! TFLOP/s at the median.
//!
//! ```text
//! RSHMEM_BACKEND=gpu RSHMEM_NPES=1 NVSHMEM_SYMMETRIC_SIZE=4G \
//!     gemm_bench --dir /tmp/x --m 4096 --n 4096 --k 4096 [--kn] [--kernel auto|sm90|sm80] \
//!     [--pad-bytes P]
//! ```
//!
//! `--ends E0,E1,...` runs the grouped GEMM instead (`Ops::grouped_gemm`, offsets layout): one
//! group per end (cumulative rows of A, the last one `m`), `b.bin` holding one B per group;
//! the JSON line then has `groups`.
//!
//! `--split auto|off|P` sets the split of K (`GemmOptions::split_k`: auto, none, or P parts);
//! the JSON line says which split ran (`split`: the parts, 1 for none).
//!
//! `--pad-bytes P` allocates P bytes of the symmetric heap before A, B and C, which moves them
//! (and so their L2 slices and DRAM channels): a GEMM's speed differs by placement alone.
//!
//! On the simulator it runs too (small shapes only: every simulated GPU thread is a host
//! thread), which is how it is tested without a GPU.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{bf16, Shmem};
use rshmem_ops::{BLayout, GemmOptions, GemmShape, GroupRows, GroupedShape, Kernel, Ops, SplitK};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Args {
    dir: PathBuf,
    shape: GemmShape,
    kernel: Kernel,
    split_k: SplitK,
    warmup: usize,
    iters: usize,
    pad_bytes: usize,
    /// The grouped GEMM's cumulative row ends (`--ends`), if grouped.
    ends: Option<Vec<u32>>,
}

fn parse() -> Result<Args> {
    let (mut dir, mut m, mut n, mut k) = (None, 0u32, 0u32, 0u32);
    let (mut layout, mut kernel, mut warmup, mut iters) = (BLayout::NK, Kernel::Auto, 3, 20);
    let (mut pad_bytes, mut ends, mut split_k) = (0, None, SplitK::Auto);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "--m" => m = value()?.parse()?,
            "--n" => n = value()?.parse()?,
            "--k" => k = value()?.parse()?,
            "--kn" => layout = BLayout::KN,
            "--warmup" => warmup = value()?.parse()?,
            "--iters" => iters = value()?.parse()?,
            "--pad-bytes" => pad_bytes = value()?.parse()?,
            "--ends" => {
                let list: Result<Vec<u32>, _> = value()?.split(',').map(str::parse).collect();
                ends = Some(list.context("--ends takes row ends: E0,E1,...")?)
            }
            "--split" => {
                split_k = match value()?.as_str() {
                    "auto" => SplitK::Auto,
                    "off" => SplitK::Off,
                    p => SplitK::Parts(p.parse().context("--split takes auto, off or a count")?),
                }
            }
            "--kernel" => {
                kernel = match value()?.as_str() {
                    "auto" => Kernel::Auto,
                    "sm90" => Kernel::Sm90,
                    "sm80" => Kernel::Sm80,
                    other => bail!("--kernel {other:?}: use auto, sm90 or sm80"),
                }
            }
            other => bail!(
                "unknown argument {other:?}: use --dir DIR --m M --n N --k K [--kn] \
                 [--kernel auto|sm90|sm80] [--split auto|off|P] [--warmup W] [--iters I] \
                 [--pad-bytes P] [--ends E0,E1,...]"
            ),
        }
    }
    ensure!(iters > 0, "--iters must be > 0");
    Ok(Args {
        dir: dir.context("--dir DIR is needed (where a.bin and b.bin are)")?,
        shape: GemmShape::new(m, n, k, layout),
        kernel,
        split_k,
        warmup,
        iters,
        pad_bytes,
        ends,
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

fn bench(shmem: &Shmem, args: &Args) -> Result<()> {
    let shape = args.shape;
    let ops = Ops::new(shmem)?;
    let _pad = match args.pad_bytes {
        0 => None,
        p => Some(shmem.alloc_zeroed::<u8>(p)?),
    };
    let groups = args.ends.as_ref().map_or(0, |e| e.len() as u32);
    let grouped = GroupedShape {
        groups,
        n: shape.n,
        k: shape.k,
        b_layout: shape.b_layout,
    };
    let b_len = if groups > 0 {
        grouped.b_len()
    } else {
        shape.b_len()
    };
    let a = shmem.alloc_from(&read_bf16(&args.dir.join("a.bin"), shape.a_len())?)?;
    let b = shmem.alloc_from(&read_bf16(&args.dir.join("b.bin"), b_len)?)?;
    let ends = shmem.alloc_from(args.ends.as_deref().unwrap_or(&[0]))?;
    let mut c = shmem.alloc_zeroed::<bf16>(shape.c_len())?;
    let stream = shmem.stream();
    let options = GemmOptions {
        kernel: args.kernel,
        split_k: args.split_k,
    };
    let mut run = || match groups {
        0 => ops.gemm_with(&stream, &a, &b, &mut c, shape, options),
        _ => {
            let rows = GroupRows::Offsets {
                ends: (&ends).into(),
                m: shape.m,
            };
            ops.grouped_gemm_with(&stream, &a, &b, &mut c, grouped, rows, options)
        }
    };
    run()?;
    shmem.synchronize()?;
    for _ in 0..args.warmup {
        run()?;
    }
    let mut times: Vec<Duration> = (0..args.iters)
        .map(|_| shmem.time(&mut run))
        .collect::<Result<_, _>>()?;
    std::fs::write(args.dir.join("c.bin"), bytemuck::cast_slice(&c.to_vec()?))?;
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = ms(times[times.len() / 2]);
    let info = ops.device_info();
    // What the call split K into (the grouped GEMM never splits; the sm80 kernel neither).
    let bytes = rshmem_ops::gemm::split_k::workspace_bytes(shmem.backend());
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let split = match groups {
        0 if info.sm == 90 && args.kernel != Kernel::Sm80 => {
            rshmem_ops::gemm::split_k::parts(args.split_k, info.multiprocessors, m, n, k, bytes)
        }
        _ => 1,
    };
    println!(
        "{{\"m\": {}, \"n\": {}, \"k\": {}, \"groups\": {groups}, \"split\": {split}, \"layout\": \"{:?}\", \"kernel\": \"{:?}\", \
         \"backend\": \"{:?}\", \"sm\": {}, \"multiprocessors\": {}, \"iters\": {}, \
         \"median_ms\": {median:.4}, \"min_ms\": {:.4}, \"tflops\": {:.2}}}",
        shape.m,
        shape.n,
        shape.k,
        shape.b_layout,
        args.kernel,
        shmem.backend(),
        info.sm,
        info.multiprocessors,
        args.iters,
        ms(times[0]),
        shape.flops() / median / 1e9
    );
    Ok(())
}

fn main() -> Result<()> {
    let args = parse()?;
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        // Meant for one PE (RSHMEM_NPES=1): every PE would run the shape and write C.
        bench(shmem, &args)
    })?;
    Ok(())
}
