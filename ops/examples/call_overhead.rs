//! Host time per call of two small ops from Rust, the baseline of the Python layer's overhead
//! (`scripts/python_bench.py` times the same calls from Python and prints both): a 4 KiB bf16
//! all-reduce and a 128 × 128 × 128 bf16 GEMM, each called `--calls` times back to back on the
//! PE's stream after a warm-up, in 5 rounds; `host_us` is the median wall time of a round's loop
//! per call (queueing only: the GPU runs behind), `total_us` includes the round's final
//! synchronize. PE 0 prints one JSON line per op; on GPUs also the same calls (`*_legacy`) on
//! the legacy default stream, adopted, which is where torch's default stream queues.
//!
//! ```text
//! RSHMEM_NPES=2 call_overhead [--calls 200]
//! ```
//!
//! Runs on the simulator too (where every call runs to completion when queued, so its
//! numbers are not the GPU's).

use anyhow::Result;
use rshmem::{bf16, Backend, ReduceOp, Shmem, Team};
use rshmem_ops::{BLayout, GemmShape, Ops};
use std::time::Instant;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(200), |v| v.parse())?;
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let ops = Ops::new(shmem)?;
        let stream = shmem.stream();
        let mut x = shmem.alloc_from(&vec![bf16::ONE; 2048])?;
        let (m, n, k) = (128u32, 128u32, 128u32);
        let a = shmem.alloc_from(&vec![bf16::ONE; (m * k) as usize])?;
        let b = shmem.alloc_from(&vec![bf16::ONE; (n * k) as usize])?;
        let mut c = shmem.alloc_zeroed::<f32>((m * n) as usize)?;
        let shape = GemmShape::new(m, n, k, BLayout::NK);
        // Median of ROUNDS rounds: few enough calls per round that the GPU's launch queue never
        // fills (a full queue makes the host wait for the GPU, and the loop would time that).
        const ROUNDS: usize = 5;
        let time = |name: &str, call: &mut dyn FnMut() -> rshmem::Result<()>| -> Result<()> {
            for _ in 0..20 {
                call()?;
            }
            let (mut host, mut total) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                shmem.synchronize()?;
                shmem.barrier_all()?;
                let start = Instant::now();
                for _ in 0..calls {
                    call()?;
                }
                host.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
                shmem.synchronize()?;
                total.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            if shmem.my_pe() == 0 {
                println!(
                    "{{\"op\": \"{name}\", \"calls\": {calls}, \"rounds\": {ROUNDS}, \"host_us\": {:.3}, \"total_us\": {:.3}}}",
                    median(&mut host),
                    median(&mut total)
                );
            }
            Ok(())
        };
        time("all_reduce_4KiB", &mut || {
            ops.all_reduce_in_place(&stream, Team::WORLD, &mut x, 2048, ReduceOp::Max)
        })?;
        time("gemm_128", &mut || ops.gemm(&stream, &a, &b, &mut c, shape))?;
        // The same calls on the stream torch's default is (the legacy NULL stream, handle 0),
        // adopted as the Python layer adopts torch's current stream: the Python rows' like for
        // like. Only on GPUs (the simulator's streams are names).
        if shmem.backend() == Backend::Gpu {
            // SAFETY: handle 0 is the context's legacy default stream, which lives as long as
            // the context, so as long as this PE.
            let legacy = unsafe { shmem.adopt_stream(0) }?;
            time("all_reduce_4KiB_legacy", &mut || {
                ops.all_reduce_in_place(&legacy, Team::WORLD, &mut x, 2048, ReduceOp::Max)
            })?;
            time("gemm_128_legacy", &mut || {
                ops.gemm(&legacy, &a, &b, &mut c, shape)
            })?;
        }
        Ok(())
    })?;
    Ok(())
}
