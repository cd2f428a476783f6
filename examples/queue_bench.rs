//! Symmetric queue throughput across PEs: producing CTAs on PE 0 push into a queue whose ring
//! lives on PE 1, where as many consuming CTAs pop; items/s and GB/s for 8-, 64- and 1024-byte
//! elements, with warp-batched (`push_batch::<Warp>` of 32, one reservation each) and
//! per-thread operations, next to raw remote `atomic_fetch_add` throughput (PE 1's threads on
//! a counter on PE 0) measured in the same run. Every popped element is checked (tag, bytes,
//! count and sequence sum), and so is the counter.
//!
//! Prints a table and one CSV line per measurement:
//! `QB,<kind>,<element bytes>,<ctas>,<items>,<seconds>,<items per s>,<GB per s>` with kind
//! `queue_warp`, `queue_thread` or `fetch_add` (items = operations for `fetch_add`).
//!
//! ```text
//! cargo run --release --example queue_bench                         # 1..132 CTAs on GPUs
//! cargo run --release --example queue_bench -- --ctas 1,8,132 --sizes 8,1024 --items 4096
//! ```
//!
//! On the simulator the grid and counts are small: it checks correctness, not speed.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{Backend, DeviceQueue, Kernel, LaunchConfig, Module, Pod, Shmem, SymQueue};
use rshmem_examples_image::queue::{self as qk, status, Mode, Tagged};
use rshmem_examples_image::IMAGE;
use std::time::Duration;

struct Options {
    ctas: Vec<u32>,
    threads: u32,
    sizes: Vec<usize>,
    /// Elements per warp (a thread moves a 32nd of them).
    items: u32,
    capacity: usize,
    fetch_add_iters: u32,
    reps: usize,
}

impl Options {
    fn parse(backend: Backend) -> Result<Self> {
        let gpu = backend == Backend::Gpu;
        let mut o = Options {
            ctas: if gpu {
                vec![1, 2, 4, 8, 16, 32, 66, 132]
            } else {
                vec![1, 2]
            },
            threads: if gpu { 256 } else { 64 },
            sizes: vec![8, 64, 1024],
            items: if gpu { 4096 } else { 64 },
            capacity: 4096,
            fetch_add_iters: if gpu { 1000 } else { 8 },
            reps: if gpu { 3 } else { 1 },
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
                "--items" => o.items = value()?.parse()?,
                "--capacity" => o.capacity = value()?.parse()?,
                "--fetch-add-iters" => o.fetch_add_iters = value()?.parse()?,
                "--reps" => o.reps = value()?.parse()?,
                other => bail!(
                    "unknown argument {other:?}: use --ctas A,B --threads T --sizes 8,64,1024 \
                     --items PER_WARP --capacity SLOTS --fetch-add-iters N --reps N"
                ),
            }
        }
        ensure!(
            o.threads % 32 == 0 && o.threads > 0,
            "--threads must be a multiple of 32 (warps push whole batches)"
        );
        for s in &o.sizes {
            ensure!(
                matches!(s, 8 | 64 | 1024),
                "--sizes: {s} is not 8, 64 or 1024"
            );
        }
        Ok(o)
    }
}

/// One measured row.
struct Row {
    kind: &'static str,
    bytes: usize,
    ctas: u32,
    items: u64,
    time: Duration,
}

impl Row {
    fn per_s(&self) -> f64 {
        self.items as f64 / self.time.as_secs_f64()
    }
    fn gbps(&self) -> f64 {
        self.per_s() * self.bytes as f64 / 1e9
    }
}

/// The producer and consumer kernels of one element type.
trait BenchKernels {
    type E: Tagged + Pod;
    type Push: Kernel<Args = (DeviceQueue<Self::E>, u32, u32, *mut Self::E, *mut u64)>;
    type Pop: Kernel<
        Args = (
            DeviceQueue<Self::E>,
            u32,
            u32,
            *mut Self::E,
            *mut u64,
            *mut u64,
        ),
    >;
}

macro_rules! bench_kernels {
    ($($name:ident: $t:ty => $push:ident, $pop:ident;)*) => {$(
        struct $name;
        impl BenchKernels for $name {
            type E = $t;
            type Push = qk::$push;
            type Pop = qk::$pop;
        }
    )*};
}

bench_kernels! {
    E8: u64 => queue_bench_push_e8, queue_bench_pop_e8;
    E64: [u64; 8] => queue_bench_push_e64, queue_bench_pop_e64;
    E1024: [u64; 128] => queue_bench_push_e1024, queue_bench_pop_e1024;
}

/// Median time of `reps` runs of PE 0 pushing and PE 1 popping, timed on PE 1 (returned
/// there; `None` elsewhere), with every run's elements checked.
fn queue_run<K: BenchKernels>(
    shmem: &Shmem,
    module: &Module<'_>,
    o: &Options,
    ctas: u32,
    mode: Mode,
) -> Result<Option<(u64, Duration)>> {
    let me = shmem.my_pe();
    let groups = mode.groups(ctas, o.threads);
    let per_group = match mode {
        Mode::Warp => o.items,
        _ => (o.items / 32).max(1),
    };
    let queue = SymQueue::<K::E>::builder(o.capacity)
        .home(1)
        .label(format!("bench {}B", std::mem::size_of::<K::E>()))
        .build(shmem)?;
    let warps = Mode::Warp.groups(ctas, o.threads) as usize;
    let mut stage = shmem.alloc_zeroed::<K::E>(warps * 32)?;
    let mut scratch = shmem.alloc_zeroed::<u64>(warps)?;
    let mut stat = shmem.alloc_zeroed::<u64>(status::LEN)?;
    let cfg = LaunchConfig::new(ctas, o.threads).cooperative();
    let (q, m) = (queue.handle(), mode as u32);
    let mut times = Vec::new();
    for _ in 0..o.reps {
        stat.copy_from_host(&[0; status::LEN])?;
        shmem.barrier_all()?;
        let launch = || -> rshmem::Result<()> {
            // SAFETY: `stage` holds 32 elements and `scratch` one word per warp of this
            // grid; PE 1 pops exactly what PE 0 pushes, both grids resident (cooperative).
            unsafe {
                match me {
                    0 => module.launch::<K::Push>(
                        cfg,
                        (q, per_group, m, stage.as_mut_ptr(), scratch.as_mut_ptr()),
                    ),
                    1 => module.launch::<K::Pop>(
                        cfg,
                        (
                            q,
                            per_group,
                            m,
                            stage.as_mut_ptr(),
                            scratch.as_mut_ptr(),
                            stat.as_mut_ptr(),
                        ),
                    ),
                    _ => Ok(()),
                }
            }
        };
        times.push(shmem.time(launch)?);
        shmem.barrier_all()?;
        if me == 1 {
            let st = stat.to_vec()?;
            let n = groups as u64 * per_group as u64;
            let sum = groups as u64 * (per_group as u64 * (per_group as u64 - 1) / 2);
            ensure!(
                (
                    st[status::GOOD],
                    st[status::TORN],
                    st[status::FOREIGN],
                    st[status::SEQ_SUM]
                ) == (n, 0, 0, sum),
                "{}-byte elements, {ctas} CTAs, {mode:?}: popped good/torn/foreign/seq-sum \
                 {:?}, expected ({n}, 0, 0, {sum})",
                std::mem::size_of::<K::E>(),
                &st[..4]
            );
            ensure!(queue.is_empty()?, "the queue is not empty after the run");
        }
    }
    times.sort();
    let total = groups as u64 * per_group as u64;
    Ok((me == 1).then(|| (total, times[times.len() / 2])))
}

/// Median time of PE 1's threads doing `iters` remote `fetch_add`s each on a counter on PE 0;
/// PE 0 checks the counter.
fn fetch_add_run(
    shmem: &Shmem,
    module: &Module<'_>,
    o: &Options,
    ctas: u32,
) -> Result<Option<(u64, Duration)>> {
    let me = shmem.my_pe();
    let mut ctr = shmem.alloc_zeroed::<u64>(1)?;
    let ops = ctas as u64 * o.threads as u64 * o.fetch_add_iters as u64;
    let mut times = Vec::new();
    for rep in 0..o.reps {
        shmem.barrier_all()?;
        if me == 1 {
            let launch = || -> rshmem::Result<()> {
                // SAFETY: `ctr` is a symmetric u64; PE 0 exists.
                unsafe {
                    module.launch::<qk::fetch_add_bench>(
                        LaunchConfig::new(ctas, o.threads),
                        (ctr.as_mut_ptr(), o.fetch_add_iters, 0),
                    )
                }
            };
            times.push(shmem.time(launch)?);
        }
        shmem.barrier_all()?;
        if me == 0 {
            let got = ctr.to_vec()?[0];
            ensure!(
                got == ops * (rep as u64 + 1),
                "fetch_add counter {got}, expected {}",
                ops * (rep as u64 + 1)
            );
        }
    }
    times.sort();
    Ok((me == 1).then(|| (ops, times[times.len() / 2])))
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        ensure!(
            shmem.n_pes() >= 2,
            "queue_bench needs 2 PEs (RSHMEM_NPES=2)"
        );
        let o = Options::parse(shmem.backend())?;
        let module = shmem.load(&IMAGE)?;
        let mut rows = Vec::new();
        let mut keep = |kind, bytes, ctas, r: Option<(u64, Duration)>| {
            if let Some((items, time)) = r {
                let row = Row {
                    kind,
                    bytes,
                    ctas,
                    items,
                    time,
                };
                println!(
                    "QB,{kind},{bytes},{ctas},{items},{:.6},{:.0},{:.2}",
                    time.as_secs_f64(),
                    row.per_s(),
                    row.gbps()
                );
                rows.push(row);
            }
        };
        for &ctas in &o.ctas {
            for &bytes in &o.sizes {
                for (mode, kind) in [(Mode::Warp, "queue_warp"), (Mode::Thread, "queue_thread")] {
                    let r = match bytes {
                        8 => queue_run::<E8>(shmem, &module, &o, ctas, mode)?,
                        64 => queue_run::<E64>(shmem, &module, &o, ctas, mode)?,
                        _ => queue_run::<E1024>(shmem, &module, &o, ctas, mode)?,
                    };
                    keep(kind, bytes, ctas, r);
                }
            }
            keep(
                "fetch_add",
                8,
                ctas,
                fetch_add_run(shmem, &module, &o, ctas)?,
            );
        }
        shmem.barrier_all()?;
        if shmem.my_pe() == 1 {
            print_table(&o, &rows);
            println!(
                "(every element checked: tag, bytes, count and sequence sum; the fetch_add \
                 counter too{})",
                if shmem.backend() == Backend::Sim {
                    "; CPU simulator: the rates say nothing about GPUs"
                } else {
                    ""
                }
            );
        }
        Ok(())
    })?;
    Ok(())
}

fn print_table(o: &Options, rows: &[Row]) {
    println!(
        "\nqueue PE 0 -> PE 1 ({} threads/CTA, capacity {}, ring on PE 1): Mitems/s | GB/s",
        o.threads, o.capacity
    );
    let cols: Vec<(&str, usize)> = o
        .sizes
        .iter()
        .flat_map(|&b| [("queue_warp", b), ("queue_thread", b)])
        .chain([("fetch_add", 8)])
        .collect();
    print!("{:>6}", "CTAs");
    for (kind, b) in &cols {
        let name = match *kind {
            "queue_warp" => format!("warp {b}B"),
            "queue_thread" => format!("thread {b}B"),
            _ => "fetch_add".to_string(),
        };
        print!("{name:>20}");
    }
    println!();
    for &c in &o.ctas {
        print!("{c:>6}");
        for (kind, b) in &cols {
            let cell = rows
                .iter()
                .find(|r| r.ctas == c && r.kind == *kind && r.bytes == *b)
                .map_or("-".to_string(), |r| {
                    format!("{:.1} | {:.1}", r.per_s() / 1e6, r.gbps())
                });
            print!("{cell:>20}");
        }
        println!();
    }
}
