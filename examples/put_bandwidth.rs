//! Put bandwidth, PE 0 → PE 1: a kernel on PE 0 writes `size` bytes into PE 1's symmetric
//! buffer with block-scoped non-blocking puts (`putmem_nbi::<Block>`), `iters` times, then
//! `quiet`. Timed with CUDA events (median of 5 launches); every result is checked on PE 1
//! against fresh random data, over a poisoned destination.
//!
//! ```text
//! cargo run --release --example put_bandwidth                    # 4 KiB..256 MiB, 8/32/132 CTAs
//! cargo run --release --example put_bandwidth -- --ctas 32 --threads 512
//! ```
//!
//! On the simulator the sizes and grid are small: it checks correctness, not speed.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{Backend, LaunchConfig, Shmem};
use rshmem_examples_image::{bandwidth, hello, IMAGE};
use std::time::Duration;

struct Options {
    ctas: Vec<u32>,
    threads: u32,
    sizes: Vec<usize>,
}

impl Options {
    fn parse(backend: Backend) -> Result<Self> {
        let gpu = backend == Backend::Gpu;
        let mut o = Options {
            ctas: if gpu { vec![8, 32, 132] } else { vec![1, 2] },
            threads: if gpu { 512 } else { 64 },
            sizes: (0..if gpu { 9 } else { 3 })
                .map(|i| 4096usize << (2 * i))
                .collect(),
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let list = |v: &str| -> Result<Vec<u64>> {
            v.split(',')
                .map(|x| {
                    x.trim()
                        .parse()
                        .with_context(|| format!("bad number {x:?}"))
                })
                .collect()
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().with_context(|| format!("{a} needs a value"));
            match a.as_str() {
                "--ctas" => o.ctas = list(value()?)?.into_iter().map(|x| x as u32).collect(),
                "--threads" => o.threads = value()?.parse()?,
                "--sizes" => o.sizes = list(value()?)?.into_iter().map(|x| x as usize).collect(),
                other => bail!(
                    "unknown argument {other:?}: use --ctas A,B --threads T --sizes BYTES,..."
                ),
            }
        }
        Ok(o)
    }
}

/// Iterations per timed launch: enough bytes that launch overhead does not dominate.
fn iters_for(size: usize, backend: Backend) -> u32 {
    match backend {
        Backend::Gpu => (512usize << 20).div_ceil(size).clamp(4, 20_000) as u32,
        Backend::Sim => 2,
    }
}

/// Deterministic fresh data, the same on every PE (so PE 1 knows what PE 0 sent).
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        ensure!(
            shmem.n_pes() >= 2,
            "put_bandwidth needs 2 PEs (RSHMEM_NPES=2)"
        );
        let opts = Options::parse(shmem.backend())?;
        let me = shmem.my_pe();
        let module = shmem.load(&IMAGE)?;
        let max = *opts.sizes.iter().max().context("no sizes")?;
        // Fresh data every run: PE 0 picks the seed, the others fetch it with a remote get.
        let mut seed_buf = shmem.alloc_zeroed::<i32>(2)?;
        if me == 0 {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
            seed_buf.copy_from_host(&[now.subsec_nanos() as i32, 0])?;
        }
        shmem.barrier_all()?;
        // Element 0 is read from PE 0 into element 1 locally.
        let (first, second) = seed_buf.range_mut(..)?.split_at_mut(1)?;
        // SAFETY: `hello_read` reads element 0 of `first` (on PE 0) and writes one of `second`.
        unsafe {
            module.launch::<hello::hello_read>(LaunchConfig::new(1, 1), (first, 0, 0, second))?
        };
        let seed = seed_buf.to_vec()?[1] as u64;
        let data = random_bytes(max, seed);
        let src = shmem.alloc_from(&data)?;
        let poison = vec![0xA5u8; max + 64];
        let mut dst = shmem.alloc_from(&poison)?;

        let mut rows = Vec::new();
        for &ctas in &opts.ctas {
            for &size in &opts.sizes {
                if me == 1 {
                    dst.copy_from_host(&poison)?;
                }
                shmem.barrier_all()?;
                let iters = iters_for(size, shmem.backend());
                let cfg = LaunchConfig::new(ctas, opts.threads);
                let launch = || {
                    // SAFETY: src and dst are symmetric and hold at least `size` bytes; the
                    // kernel only writes dst on PE 1 and only reads src.
                    unsafe {
                        module.launch::<bandwidth::put_bw>(
                            cfg,
                            (
                                dst.as_ptr() as *mut u8,
                                src.as_ptr(),
                                size as u64,
                                iters,
                                0,
                                1,
                            ),
                        )
                    }
                };
                launch()?;
                let mut times: Vec<Duration> = (0..5)
                    .map(|_| shmem.time(launch))
                    .collect::<Result<_, _>>()?;
                times.sort();
                let median = times[times.len() / 2];
                shmem.barrier_all()?;
                if me == 1 {
                    let got = dst.to_vec()?;
                    ensure!(
                        got[..size] == data[..size],
                        "ctas={ctas} size={size}: PE 1 holds wrong data"
                    );
                    ensure!(
                        got[size..].iter().all(|&b| b == 0xA5),
                        "ctas={ctas} size={size}: wrote past the end"
                    );
                }
                let gbps = (size as f64 * iters as f64) / median.as_secs_f64() / 1e9;
                rows.push((ctas, size, gbps));
                if me == 0 {
                    println!("BW,{ctas},{size},{gbps:.1}");
                }
            }
        }
        shmem.barrier_all()?;
        if me == 0 {
            print_table(&opts, &rows);
            if shmem.backend() == Backend::Sim {
                println!("(CPU simulator: the data was checked; the rates say nothing about GPUs)");
            }
        }
        Ok(())
    })?;
    Ok(())
}

fn print_table(opts: &Options, rows: &[(u32, usize, f64)]) {
    println!(
        "\nput bandwidth PE 0 -> PE 1, GB/s ({} threads/CTA, data checked on PE 1)",
        opts.threads
    );
    print!("{:>10}", "size");
    for c in &opts.ctas {
        print!("{:>10}", format!("{c} CTAs"));
    }
    println!();
    for &size in &opts.sizes {
        let label = if size >= 1 << 20 {
            format!("{} MiB", size >> 20)
        } else {
            format!("{} KiB", size >> 10)
        };
        print!("{label:>10}");
        for &c in &opts.ctas {
            let g = rows
                .iter()
                .find(|r| r.0 == c && r.1 == size)
                .map_or(0.0, |r| r.2);
            print!("{g:>10.1}");
        }
        println!();
    }
}
