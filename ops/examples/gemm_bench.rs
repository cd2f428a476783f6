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
//! `--split auto|off|P` sets the split of K (`GemmOptions::split_k`: auto, none, or P parts),
//! `--tile auto|256|128` the sm90 tile (`GemmOptions::tile`: the cost model's, 128 x 256 or
//! 128 x 128); the JSON line says what ran (`Ops::gemm_plan`: `split`, the parts, 1 for none,
//! and `split_from`, the first split row: 0 for all of them, else a split tail;
//! `tile`, the tile's columns).
//!
//! `--fp8 tensor|block` runs the FP8 GEMM instead (`Ops::gemm_fp8`, e4m3, bf16 output; with
//! `--ends` the grouped one, block scales): `a.bin` and `b.bin` hold e4m3 bytes, `sa.bin` and
//! `sb.bin` the f32 scales in the layouts of `rshmem_ops::gemm::fp8` (per tensor one each;
//! block: A's `⌈k/128⌉ x m`, M contiguous, B's `⌈n/128⌉ x ⌈k/128⌉` per group); `--split`
//! applies to the plain one (`Ops::gemm_fp8_with`); the JSON line then has `fp8` and `split`.
//!
//! `--pad-bytes P` allocates P bytes of the symmetric heap before A, B and C, which moves them
//! (and so their L2 slices and DRAM channels): a GEMM's speed differs by placement alone.
//!
//! On the simulator it runs too (small shapes only: every simulated GPU thread is a host
//! thread), which is how it is tested without a GPU.

use anyhow::{bail, ensure, Context, Result};
use rshmem::device::E4m3;
use rshmem::{bf16, Pod, Shmem};
use rshmem_gemm::sm90::{Fp8Tile128, Fp8Tile256};
use rshmem_gemm::Problem;
use rshmem_ops::gemm::split_k;
use rshmem_ops::{
    BLayout, Fp8Scales, GemmOptions, GemmShape, GemmTile, GroupRows, GroupedShape, Kernel, Ops,
    SplitK,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Args {
    dir: PathBuf,
    shape: GemmShape,
    kernel: Kernel,
    split_k: SplitK,
    /// `--tile`.
    tile: GemmTile,
    warmup: usize,
    iters: usize,
    pad_bytes: usize,
    /// The grouped GEMM's cumulative row ends (`--ends`), if grouped.
    ends: Option<Vec<u32>>,
    /// FP8 (`--fp8`): block scales (true) or per tensor.
    fp8: Option<bool>,
}

fn parse() -> Result<Args> {
    let (mut dir, mut m, mut n, mut k) = (None, 0u32, 0u32, 0u32);
    let (mut layout, mut kernel, mut warmup, mut iters) = (BLayout::NK, Kernel::Auto, 3, 20);
    let (mut pad_bytes, mut ends, mut split_k, mut fp8) = (0, None, SplitK::Auto, None);
    let mut tile = GemmTile::Auto;
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
            "--fp8" => {
                fp8 = match value()?.as_str() {
                    "tensor" => Some(false),
                    "block" => Some(true),
                    other => bail!("--fp8 {other:?}: use tensor or block"),
                }
            }
            "--split" => {
                split_k = match value()?.as_str() {
                    "auto" => SplitK::Auto,
                    "off" => SplitK::Off,
                    p => SplitK::Parts(p.parse().context("--split takes auto, off or a count")?),
                }
            }
            "--tile" => {
                tile = match value()?.as_str() {
                    "auto" => GemmTile::Auto,
                    "256" => GemmTile::N256,
                    "128" => GemmTile::N128,
                    other => bail!("--tile {other:?}: use auto, 256 or 128"),
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
                 [--kernel auto|sm90|sm80] [--split auto|off|P] [--tile auto|256|128] [--warmup W] [--iters I] \
                 [--pad-bytes P] [--ends E0,E1,...] [--fp8 tensor|block]"
            ),
        }
    }
    ensure!(iters > 0, "--iters must be > 0");
    Ok(Args {
        dir: dir.context("--dir DIR is needed (where a.bin and b.bin are)")?,
        shape: GemmShape::new(m, n, k, layout),
        kernel,
        split_k,
        tile,
        warmup,
        iters,
        pad_bytes,
        ends,
        fp8,
    })
}

/// `len` elements of `T` from `path`, which must hold exactly that many.
fn read<T: Pod>(path: &Path, len: usize) -> Result<Vec<T>> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let bytes = file.metadata()?.len();
    let size = size_of::<T>();
    ensure!(
        bytes == (size * len) as u64,
        "{} holds {bytes} bytes; the shape needs {len} elements of {size} bytes = {}",
        path.display(),
        size * len
    );
    let mut v = vec![<T as bytemuck::Zeroable>::zeroed(); len];
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
    if let Some(block) = args.fp8 {
        return bench_fp8(shmem, &ops, args, block);
    }
    let a = shmem.alloc_from(&read::<bf16>(&args.dir.join("a.bin"), shape.a_len())?)?;
    let b = shmem.alloc_from(&read::<bf16>(&args.dir.join("b.bin"), b_len)?)?;
    let ends = shmem.alloc_from(args.ends.as_deref().unwrap_or(&[0]))?;
    let mut c = shmem.alloc_zeroed::<bf16>(shape.c_len())?;
    let stream = shmem.stream();
    let options = GemmOptions::kernel(args.kernel)
        .split_k(args.split_k)
        .tile(args.tile);
    let rows = GroupRows::Offsets {
        ends: (&ends).into(),
        m: shape.m,
    };
    let run = || match groups {
        0 => ops.gemm_with(&stream, &a, &b, &mut c, shape, options),
        _ => ops.grouped_gemm_with(&stream, &a, &b, &mut c, grouped, rows, options),
    };
    let (median, min) = time(shmem, args, run)?;
    std::fs::write(args.dir.join("c.bin"), bytemuck::cast_slice(&c.to_vec()?))?;
    let info = ops.device_info();
    // What the call ran: its kernel, tile and split of K (the grouped GEMM never splits).
    let plan = match groups {
        0 => ops.gemm_plan(shape, options)?,
        _ => ops.grouped_gemm_plan(grouped, &rows, options)?,
    };
    let (split, split_from, tile) = (plan.split, plan.split_from, plan.tile.bn());
    println!(
        "{{\"m\": {}, \"n\": {}, \"k\": {}, \"groups\": {groups}, \"split\": {split}, \"split_from\": {split_from}, \"tile\": {tile}, \"layout\": \"{:?}\", \"kernel\": \"{:?}\", \
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
        min,
        shape.flops() / median / 1e9
    );
    Ok(())
}

/// Times `run` as `bench` does: one run, `warmup` more, then `iters` timed; (median, min) ms.
fn time(
    shmem: &Shmem,
    args: &Args,
    mut run: impl FnMut() -> rshmem::Result<()>,
) -> Result<(f64, f64)> {
    run()?;
    shmem.synchronize()?;
    for _ in 0..args.warmup {
        run()?;
    }
    let mut times: Vec<Duration> = (0..args.iters)
        .map(|_| shmem.time(&mut run))
        .collect::<Result<_, _>>()?;
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok((ms(times[times.len() / 2]), ms(times[0])))
}

/// The FP8 GEMM (e4m3, bf16 out), per tensor or block-scaled, plain or grouped (`--ends`).
fn bench_fp8(shmem: &Shmem, ops: &Ops<'_>, args: &Args, block: bool) -> Result<()> {
    let shape = args.shape;
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    let groups = args.ends.as_ref().map_or(1, |e| e.len());
    let (kb, nb) = (k.div_ceil(128), n.div_ceil(128));
    let (sa_len, sb_len) = if block {
        (kb * m, groups * nb * kb)
    } else {
        (1, 1)
    };
    let a = shmem.alloc_from(&read::<E4m3>(&args.dir.join("a.bin"), m * k)?)?;
    let b = shmem.alloc_from(&read::<E4m3>(&args.dir.join("b.bin"), groups * n * k)?)?;
    let sa = shmem.alloc_from(&read::<f32>(&args.dir.join("sa.bin"), sa_len)?)?;
    let sb = shmem.alloc_from(&read::<f32>(&args.dir.join("sb.bin"), sb_len)?)?;
    let ends = shmem.alloc_from(args.ends.as_deref().unwrap_or(&[0]))?;
    let mut c = shmem.alloc_zeroed::<bf16>(m * n)?;
    let stream = shmem.stream();
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
    let grouped = GroupedShape {
        groups: groups as u32,
        n: shape.n,
        k: shape.k,
        b_layout: BLayout::NK,
    };
    let (median, min) = time(shmem, args, || match &args.ends {
        None => {
            ops.gemm_fp8_with::<E4m3, bf16>(&stream, &a, &b, &mut c, shape, scales, args.split_k)
        }
        Some(_) => {
            let rows = GroupRows::Offsets {
                ends: (&ends).into(),
                m: shape.m,
            };
            ops.grouped_gemm_fp8::<E4m3, bf16>(&stream, &a, &b, &mut c, grouped, rows, scales)
        }
    })?;
    std::fs::write(args.dir.join("c.bin"), bytemuck::cast_slice(&c.to_vec()?))?;
    let info = ops.device_info();
    // The parts of K the call ran (the grouped GEMM never splits).
    let problem = Problem {
        m: shape.m,
        n: shape.n,
        k: shape.k,
    };
    let bytes = split_k::workspace_bytes(shmem.backend());
    let sms = info.multiprocessors;
    let split = match (&args.ends, block) {
        (Some(_), _) => 1,
        (None, false) => split_k::parts_of::<Fp8Tile256<E4m3>>(args.split_k, sms, problem, bytes),
        (None, true) => split_k::parts_of::<Fp8Tile128<E4m3>>(args.split_k, sms, problem, bytes),
    };
    println!(
        "{{\"m\": {m}, \"n\": {n}, \"k\": {k}, \"groups\": {}, \"fp8\": \"{}\", \"split\": {split}, \
         \"backend\": \"{:?}\", \"sm\": {}, \"multiprocessors\": {}, \"iters\": {}, \
         \"median_ms\": {median:.4}, \"min_ms\": {min:.4}, \"tflops\": {:.2}}}",
        args.ends.as_ref().map_or(0, |e| e.len()),
        if block { "block" } else { "tensor" },
        shmem.backend(),
        info.sm,
        info.multiprocessors,
        args.iters,
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
