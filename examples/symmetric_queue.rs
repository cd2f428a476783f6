//! The symmetric queue: the seed's program (PE 0 pushes 42, barrier, PE 1 pops 42), then a
//! producer/consumer pipeline across all PEs over per-PE queues (mailboxes), checked
//! element by element.
//!
//! ```text
//! cargo run --release --example symmetric_queue
//! RSHMEM_BACKEND=sim RSHMEM_NPES=3 cargo run --release --example symmetric_queue
//! ```

use anyhow::{ensure, Result};
use rshmem::{LaunchConfig, Module, Shmem, SymQueue};
use rshmem_examples_image::{hello, queue, IMAGE};

/// Fresh data every run, the same on every PE: PE 0's clock, fetched by the others with a
/// remote get.
fn shared_seed(shmem: &Shmem, module: &Module<'_>) -> Result<u64> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let mut buf = shmem.alloc_from(&[now.subsec_nanos() as i32, 0])?;
    shmem.barrier_all()?;
    // PE 0's first element is read into this PE's second.
    let (first, second) = buf.range_mut(..)?.split_at_mut(1)?;
    // SAFETY: `hello_read` reads element 0 of `first` (on PE 0) and writes one of `second`.
    unsafe { module.launch::<hello::hello_read>(LaunchConfig::new(1, 1), (first, 0, 0, second))? };
    let seed = buf.to_vec()?[1] as u32 as u64;
    shmem.barrier_all()?;
    Ok(seed)
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        ensure!(
            n >= 2,
            "symmetric_queue needs 2 PEs or more (RSHMEM_NPES=2)"
        );
        let module = shmem.load(&IMAGE)?;

        // 1. The seed: a 100-slot queue of i32 on PE 0.
        let q = SymQueue::<i32>::new(shmem, 100, 0)?;
        let forty_two = shmem.alloc_from(&[42])?;
        let mut got = shmem.alloc_from(&[-1])?;
        if me == 0 {
            // SAFETY: `queue_push` reads 1 element of `forty_two`; the queue outlives the
            // launch.
            unsafe {
                module.launch::<queue::queue_push>(
                    LaunchConfig::new(1, 1),
                    (q.handle(), &forty_two, 1),
                )?
            };
            println!("PE 0: pushed 42 ({})", q.snapshot()?);
        }
        shmem.barrier_all()?;
        if me == 1 {
            // SAFETY: `queue_pop` writes 1 element of `got`.
            unsafe {
                module.launch::<queue::queue_pop>(
                    LaunchConfig::new(1, 1),
                    (q.handle(), &mut got, 1),
                )?
            };
            let v = got.to_vec()?[0];
            println!("PE 1: popped {v}");
            ensure!(v == 42, "PE 1 popped {v}, not 42");
        }
        shmem.barrier_all()?;

        // 2. A pipeline: PE 0 produces, each next PE adds its number and passes it on, the
        //    last PE collects. Mailboxes of 16 slots, fewer than the elements, so producers
        //    wait for consumers all along.
        let count = 1000u32;
        let mailboxes = SymQueue::<[u64; 2]>::builder(16)
            .per_pe()
            .label("pipeline")
            .build(shmem)?;
        let seed = shared_seed(shmem, &module)?;
        let src: Vec<u64> = (0..count as u64)
            .map(|i| (seed ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8)
            .collect();
        let src_buf = shmem.alloc_from(&src)?;
        let mut out = shmem.alloc_from(&vec![u64::MAX; count as usize])?;
        shmem.barrier_all()?;
        // SAFETY: `src` and `out` hold `count` elements; every PE launches, cooperatively,
        // so every stage runs at once.
        unsafe {
            module.launch::<queue::queue_pipeline>(
                LaunchConfig::new(1, 64).cooperative(),
                (mailboxes.handle(), &src_buf, count, &mut out),
            )?
        };
        shmem.barrier_all()?;
        if me == n - 1 {
            // Stages 1..n each added their PE number; every PE derived `src` from one seed.
            let added: u64 = (1..n as u64).sum();
            let got = out.to_vec()?;
            for (i, (&g, &s)) in got.iter().zip(&src).enumerate() {
                ensure!(
                    g == s + added,
                    "element {i}: got {g}, expected {}",
                    s + added
                );
            }
            ensure!(mailboxes.is_empty()?, "the last mailbox is not empty");
            println!(
                "pipeline: checked {count} elements through {n} PEs (each stage added its PE \
                 number; every element arrived once, with the right value); {}",
                mailboxes.snapshot()?
            );
        }
        shmem.barrier_all()?;
        Ok(())
    })?;
    Ok(())
}
