//! What the checked device mode costs: the same put/get/atomic/wait-heavy kernel
//! (`checked::shmem_workload`: per thread of one 128-thread block, `--iters` rounds of a `p`
//! to the next PE, a `g` from the previous one and an `atomic_add` on the next PE's counter,
//! then a `quiet` and a `wait_until` on its own counter) launched from the unchecked image
//! (`IMAGE`) and from the checked one (`CHECKED_IMAGE`), alternately, each timed on the PE's
//! stream with CUDA events; the median, min and max of `--reps` runs per image and the
//! checked/unchecked ratio of the medians.
//!
//! ```text
//! RSHMEM_NPES=1 cargo run --release -p rshmem-api-tests --example checked_bench
//! RSHMEM_NPES=1 cargo run --release -p rshmem-api-tests --example checked_bench -- --iters 1024 --reps 50
//! ```
//!
//! One PE is the meaningful setting on one GPU (its puts go to itself through the same calls);
//! PEs sharing a GPU time-slice and measure the sharing. PE 0 prints
//! `CB,<image>,<iters>,<median us>,<min us>,<max us>` lines and a table. On the simulator the
//! numbers mean nothing (both images run the same host code): it checks that the program works.

use anyhow::{ensure, Context, Result};
use rshmem::{Backend, KernelImage, LaunchConfig, Shmem, SymBuffer};
use rshmem_api_tests::{checked, CHECKED_IMAGE, IMAGE};
use std::time::Duration;

struct Options {
    iters: u32,
    reps: usize,
}

impl Options {
    fn parse(backend: Backend) -> Result<Self> {
        let mut o = match backend {
            Backend::Gpu => Options {
                iters: 256,
                reps: 25,
            },
            Backend::Sim => Options { iters: 2, reps: 3 },
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--iters" => o.iters = value.parse().context("--iters")?,
                "--reps" => o.reps = value.parse().context("--reps")?,
                _ => anyhow::bail!("unknown option {flag} (--iters N, --reps N)"),
            }
        }
        ensure!(
            o.reps >= 1 && o.iters >= 1,
            "--reps and --iters must be at least 1"
        );
        Ok(o)
    }
}

/// One image's buffers: the workload's data, its counter (which only grows), its output.
struct Run<'s> {
    data: SymBuffer<'s, u64>,
    counter: SymBuffer<'s, u64>,
    out: SymBuffer<'s, u64>,
    round: u32,
}

impl<'s> Run<'s> {
    fn new(shmem: &'s Shmem) -> Result<Self> {
        let threads = checked::WORKLOAD_THREADS as usize;
        Ok(Run {
            data: shmem.alloc_zeroed(threads)?,
            counter: shmem.alloc_zeroed(1)?,
            out: shmem.alloc_zeroed(threads)?,
            round: 0,
        })
    }

    /// Launches one round of `image`'s workload, timed on the PE's stream.
    fn once(&mut self, shmem: &Shmem, module: &rshmem::Module<'_>, iters: u32) -> Result<Duration> {
        let round = self.round;
        let (data, counter, out) = (
            self.data.as_mut_ptr(),
            self.counter.as_mut_ptr(),
            self.out.as_mut_ptr(),
        );
        let took = shmem.time(|| {
            // SAFETY: the buffers have the sizes `shmem_workload` needs; every PE launches the
            // same rounds of each image, whose counter was 0 before its round 0.
            unsafe {
                module.launch::<checked::shmem_workload>(
                    LaunchConfig::new(1, checked::WORKLOAD_THREADS),
                    (data, counter, out, iters, round),
                )
            }
        })?;
        self.round += 1;
        Ok(took)
    }
}

fn stats(mut xs: Vec<Duration>) -> (f64, f64, f64) {
    xs.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(xs[xs.len() / 2]), us(xs[0]), us(xs[xs.len() - 1]))
}

fn pe_main(shmem: &Shmem) -> Result<()> {
    let o = Options::parse(shmem.backend())?;
    let images: [(&str, &KernelImage); 2] = [("unchecked", &IMAGE), ("checked", &CHECKED_IMAGE)];
    let modules = images
        .iter()
        .map(|(_, image)| shmem.load(image))
        .collect::<rshmem::Result<Vec<_>>>()?;
    let mut runs = [Run::new(shmem)?, Run::new(shmem)?];
    let mut times = [Vec::new(), Vec::new()];
    // Two warm-up rounds each, then the timed ones, alternating so that both see the same
    // clocks and the same neighbours.
    for rep in 0..o.reps + 2 {
        for i in 0..2 {
            let took = runs[i].once(shmem, &modules[i], o.iters)?;
            if rep >= 2 {
                times[i].push(took);
            }
        }
    }
    shmem.synchronize()?;
    shmem.barrier_all()?;
    let threads = u64::from(checked::WORKLOAD_THREADS);
    for (i, run) in runs.iter().enumerate() {
        let want = u64::from(run.round) * u64::from(o.iters) * threads;
        ensure!(
            run.counter.to_vec()?[0] == want,
            "{} image: the counter is not {want}: the workload went wrong",
            images[i].0
        );
    }
    if shmem.my_pe() == 0 {
        let rows: Vec<_> = times.iter().map(|t| stats(t.clone())).collect();
        for (i, (med, min, max)) in rows.iter().enumerate() {
            println!("CB,{},{},{med:.2},{min:.2},{max:.2}", images[i].0, o.iters);
        }
        println!(
            "\nchecked_bench: {} PE(s), {} iters x {threads} threads (p + g + atomic_add each), \
             median of {} runs",
            shmem.n_pes(),
            o.iters,
            o.reps
        );
        println!("| image | median µs | min µs | max µs |");
        println!("|---|---|---|---|");
        for (i, (med, min, max)) in rows.iter().enumerate() {
            println!("| {} | {med:.1} | {min:.1} | {max:.1} |", images[i].0);
        }
        println!(
            "checked / unchecked (medians): {:.3}",
            rows[1].0 / rows[0].0
        );
    }
    shmem.barrier_all()?;
    Ok(())
}

fn main() -> Result<()> {
    rshmem::run(pe_main)?;
    Ok(())
}
