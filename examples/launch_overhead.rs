//! Launch overhead with and without graphs: µs per kernel launch issued plainly, recorded in one
//! graph of many launches, and as a graph of one launch launched many times; the same for
//! NVSHMEM's on-stream barrier. A tiny kernel (`bump`: one element per thread) makes the launch
//! the cost. Each row is timed on the stream with CUDA events (the median of `--reps` runs of
//! `--launches` launches) and on the host (the wall time of issuing them); the kernel's counts
//! are checked at the end.
//!
//! ```text
//! cargo run --release --example launch_overhead                       # 1000 launches, 20 reps
//! cargo run --release --example launch_overhead -- --launches 200 --reps 50
//! ```
//!
//! Every PE measures its own launches and prints `LO,<row>,<launches>,<stream us>,<host us>`
//! lines (µs per launch); PE 0 also prints a table. On the simulator the numbers mean
//! nothing (it runs each launch's threads on the host): it checks that the program works.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{Backend, Error, Graph, LaunchConfig, Shmem, Stream};
use rshmem_examples_image::{launch::bump, IMAGE};
use std::time::{Duration, Instant};

struct Options {
    launches: usize,
    reps: usize,
}

impl Options {
    fn parse(backend: Backend) -> Result<Self> {
        let mut o = match backend {
            Backend::Gpu => Options {
                launches: 1000,
                reps: 20,
            },
            Backend::Sim => Options {
                launches: 10,
                reps: 3,
            },
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let value = it.next().with_context(|| format!("{a} needs a value"))?;
            let n: usize = value
                .parse()
                .with_context(|| format!("{a} {value:?}: not a whole number"))?;
            ensure!(n > 0, "{a} must be at least 1");
            match a.as_str() {
                "--launches" => o.launches = n,
                "--reps" => o.reps = n,
                other => bail!("unknown argument {other:?}: use --launches N --reps R"),
            }
        }
        Ok(o)
    }
}

/// Elements `bump` touches: one block.
const N: u32 = 128;
const CFG: LaunchConfig = LaunchConfig::new(1, N);

/// One row: µs per launch on the stream and on the host, medians over the reps.
struct Row {
    name: &'static str,
    stream_us: f64,
    host_us: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `reps` runs of `issue` (which issues `per_run` launches on `stream`).
fn measure(
    name: &'static str,
    stream: &Stream<'_>,
    o: &Options,
    per_run: usize,
    mut issue: impl FnMut() -> rshmem::Result<()>,
) -> Result<Row> {
    issue()?; // warm-up
    stream.synchronize()?;
    let (mut on_stream, mut on_host) = (Vec::new(), Vec::new());
    for _ in 0..o.reps {
        let mut host = Duration::ZERO;
        let took = stream.time(|| {
            let start = Instant::now();
            let issued = issue();
            host = start.elapsed();
            issued
        })?;
        on_stream.push(took.as_secs_f64() * 1e6 / per_run as f64);
        on_host.push(host.as_secs_f64() * 1e6 / per_run as f64);
    }
    Ok(Row {
        name,
        stream_us: median(on_stream),
        host_us: median(on_host),
    })
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let o = Options::parse(shmem.backend())?;
        let module = shmem.load(&IMAGE)?;
        let stream = shmem.new_stream()?;
        let mut x = shmem.alloc_zeroed::<u32>(N as usize)?;
        let ptr = x.as_mut_ptr();
        let launch = || {
            // SAFETY: `x` holds N u32s and outlives every launch and graph here.
            unsafe { module.launch_on::<bump>(&stream, CFG, (ptr, N)) }
        };
        let mut bumps = 0usize;
        let mut rows = Vec::new();

        // Kernels: plain launches, one graph of them all, a graph of one launched many times.
        rows.push(measure("kernel: plain", &stream, &o, o.launches, || {
            (0..o.launches).try_for_each(|_| launch())
        })?);
        let many = stream.capture(|| (0..o.launches).try_for_each(|_| launch()))?;
        let one = stream.capture(launch)?;
        let run = |graph: &Graph<'_>| {
            // SAFETY: the graphs here bump `x` (alive until the end) or hold barriers, which
            // every PE launches alike, in the same order.
            unsafe { graph.launch(&stream) }
        };
        rows.push(measure(
            "kernel: one graph of all",
            &stream,
            &o,
            o.launches,
            || run(&many),
        )?);
        rows.push(measure(
            "kernel: graph of one",
            &stream,
            &o,
            o.launches,
            || (0..o.launches).try_for_each(|_| run(&one)),
        )?);
        // Warm-up and reps, each `launches` bumps, for each of the three rows.
        bumps += 3 * (1 + o.reps) * o.launches;
        drop((many, one));

        // NVSHMEM's barrier on the stream (collective: every PE runs the same rows).
        let barriers = o.launches.min(100);
        rows.push(measure(
            "barrier_all: plain",
            &stream,
            &o,
            barriers,
            || (0..barriers).try_for_each(|_| stream.barrier_all()),
        )?);
        match stream.capture(|| (0..barriers).try_for_each(|_| stream.barrier_all())) {
            Ok(graph) => {
                rows.push(measure(
                    "barrier_all: one graph of all",
                    &stream,
                    &o,
                    barriers,
                    || run(&graph),
                )?);
            }
            // NVSHMEM's limited multi-process-per-GPU mode (PEs sharing a GPU without MPS)
            // cannot record this barrier: said, not measured.
            Err(Error::Unsupported { reason, .. })
                if shmem.device_info().sharing == rshmem::GpuSharing::TimeSliced =>
            {
                if shmem.my_pe() == 0 {
                    println!("barrier_all in a graph: refused here ({reason})");
                }
            }
            Err(e) => return Err(e.into()),
        }

        let got = x.to_vec()?;
        ensure!(
            got.iter().all(|&v| v as usize == bumps),
            "PE {}: the kernel ran {} times, expected {bumps}",
            shmem.my_pe(),
            got[0]
        );
        for r in &rows {
            println!(
                "LO,{},{},{:.3},{:.3}",
                r.name, o.launches, r.stream_us, r.host_us
            );
        }
        if shmem.my_pe() == 0 {
            print_table(shmem, &o, &rows);
        }
        shmem.barrier_all()?;
        Ok(())
    })?;
    Ok(())
}

fn print_table(shmem: &Shmem, o: &Options, rows: &[Row]) {
    println!(
        "\nlaunch overhead on PE 0 of {}, {} launches x {} reps (median), µs per launch:",
        shmem.n_pes(),
        o.launches,
        o.reps
    );
    println!("{:<32} {:>12} {:>12}", "", "stream", "host");
    for r in rows {
        println!("{:<32} {:>12.3} {:>12.3}", r.name, r.stream_us, r.host_us);
    }
    if shmem.backend() == Backend::Sim {
        println!("(the CPU simulator: these numbers mean nothing; the counts were checked)");
    } else {
        println!("(the kernel's counts were checked)");
    }
}
