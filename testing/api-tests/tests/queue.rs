//! The symmetric queue (`rshmem::SymQueue`, device side `rshmem_device::queue`) on every
//! backend: the seed's program, stress runs checked for loss, duplication, tearing and
//! per-producer order, the edge capacities, tickets past 2^32, batches, element sizes, the
//! non-blocking operations, the host's snapshot and errors; on the simulator only, the debug
//! bound's message. (The queue's two examples are run by `tests/examples.rs` of `rshmem`,
//! the package that builds them.)
//!
//! `RSHMEM_QUEUE_STRESS_ITEMS` sets the elements of each stress run (default: 20 000 on the
//! simulator, 4 000 000 on GPUs; the 1 KiB-element runs use a tenth).

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
// The queue's push, pop and benchmark kernels are the examples' (in their image); the stress
// kernels and the non-blocking round trip are test fixtures (in this package's image).
use rshmem::{Backend, DeviceQueue, Job, Kernel, LaunchConfig, Pod, QueueError, Shmem, SymQueue};
use rshmem_api_tests::queue_stress as qs;
use rshmem_api_tests::IMAGE as FIXTURES;
use rshmem_examples_image::queue::{self as qk, status, Mode, Tagged, Tags};
use rshmem_examples_image::IMAGE as EXAMPLES;

per_backend! {
    seed_push_42_pop_42 => [2, 3];
    stress_threads => [2, 3, 4];
    stress_try_ops => [2, 3];
    stress_warp_batches => [2, 3];
    stress_block_batches => [2];
    stress_mailboxes => [2, 3];
    stress_mailboxes_warp_batches => [2];
    stress_warp_cooperative => [2, 3];
    stress_block_cooperative => [2];
    stress_mailboxes_cooperative => [2];
    capacity_1 => [2];
    capacity_2 => [2];
    tickets_past_2_pow_32 => [2];
    element_10_bytes => [2];
    element_12_bytes => [2];
    element_1024_bytes => [2];
    try_ops_stop_at_full_and_empty => [2];
    snapshot_on_the_home_pe => [2];
    creation_errors_name_the_problem => [2];
    pipeline_batches_larger_than_capacity => [2];
}

/// A seed every PE agrees on: PE 0's clock, broadcast through a queue-free symmetric get.
fn shared_seed(shmem: &Shmem) -> Result<u64, rshmem::BoxError> {
    let module = shmem.load(&EXAMPLES)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as i32;
    let mut buf = shmem.alloc_from(&[now, 0])?;
    shmem.barrier_all()?;
    // SAFETY: two symmetric i32s: PE 0's first is read into this PE's second.
    unsafe {
        module.launch::<rshmem_examples_image::hello::hello_read>(
            LaunchConfig::new(1, 1),
            (buf.as_ptr(), 0, 0, buf.as_mut_ptr().wrapping_add(1)),
        )?
    };
    let seed = buf.to_vec()?[1] as u32 as u64;
    shmem.barrier_all()?;
    Ok(seed)
}

/// The seed's program: PE 0 pushes 42, barrier, PE 1 pops 42 — then the same with a fresh
/// random value behind it, which must come out second.
fn seed_push_42_pop_42(shmem: &Shmem) -> Outcome {
    let me = shmem.my_pe();
    let module = shmem.load(&EXAMPLES)?;
    let fresh = common::random_u32(1, shared_seed(shmem)?)[0] as i32;
    let queue = SymQueue::<i32>::new(shmem, 100, 0)?;
    let values = shmem.alloc_from(&[42, fresh])?;
    let mut out = shmem.alloc_from(&[-1i32, -1])?;
    if me == 0 {
        // SAFETY: `values` holds 2 i32s; the queue outlives the launch.
        unsafe {
            module.launch::<qk::queue_push>(
                LaunchConfig::new(1, 1),
                (queue.handle(), values.as_ptr(), 2),
            )?
        };
    }
    shmem.barrier_all()?;
    if me == 0 {
        assert_eq!(queue.len()?, 2, "two elements wait on PE 0");
    }
    // PE 1 pops only after PE 0 has looked.
    shmem.barrier_all()?;
    if me == 1 {
        // SAFETY: `out` holds 2 i32s.
        unsafe {
            module.launch::<qk::queue_pop>(
                LaunchConfig::new(1, 1),
                (queue.handle(), out.as_mut_ptr(), 2),
            )?
        };
        assert_eq!(
            out.to_vec()?,
            vec![42, fresh],
            "PE 1 pops 42, then the fresh value"
        );
    }
    shmem.barrier_all()?;
    if me == 0 {
        assert!(queue.is_empty()?, "{}", queue.snapshot()?);
    }
    shmem.barrier_all()?;
    Ok(())
}

/// One stress run's shape.
#[derive(Clone, Copy, Debug)]
struct Stress {
    capacity: usize,
    mode: Mode,
    mailbox: bool,
    first_ticket: u64,
    /// Divides the element count: 1 KiB elements move ten times fewer, and tiny capacities,
    /// where most operations wait for another thread, fewer too (the simulator runs each
    /// simulated thread on a host thread, and 2 cores switch between them slowly).
    scale_down: u64,
}

impl Stress {
    fn new(capacity: usize, mode: Mode) -> Self {
        Self {
            capacity,
            mode,
            mailbox: false,
            first_ticket: 0,
            scale_down: 1,
        }
    }
}

/// The stress kernel of element type `E`.
trait StressKernel<E: Copy + 'static>:
    Kernel<
    Args = (
        DeviceQueue<E>,
        u32,
        u32,
        u32,
        *mut u64,
        *mut u64,
        *mut E,
        *mut u64,
    ),
>
{
}
impl<E: Copy + 'static, K> StressKernel<E> for K where
    K: Kernel<
        Args = (
            DeviceQueue<E>,
            u32,
            u32,
            u32,
            *mut u64,
            *mut u64,
            *mut E,
            *mut u64,
        ),
    >
{
}

/// Total elements of a stress run: `RSHMEM_QUEUE_STRESS_ITEMS`, or the backend's default.
fn stress_items(backend: Backend, scale_down: u64) -> u64 {
    let default = match backend {
        Backend::Sim => 20_000,
        Backend::Gpu => 4_000_000,
    };
    let total = std::env::var("RSHMEM_QUEUE_STRESS_ITEMS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default);
    (total / scale_down).max(1)
}

/// Every producer of every PE pushes its tagged elements and pops as many (kernel `K`); then
/// no PE saw a torn, foreign or duplicate element, PE 0's record holds every element exactly
/// once, each consumer saw each producer's elements in order, and the queue is empty with
/// its counters where they must be.
fn stress<E: Tagged + Pod, K: StressKernel<E>>(shmem: &Shmem, s: Stress) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let module = shmem.load(&FIXTURES)?;
    // Blocks of 40 threads on the simulator: one whole warp and a partial one. GPUs get whole
    // warps (NVSHMEM's warp calls want every lane) and enough threads to contend.
    let (grid, block) = match (shmem.backend(), s.mode) {
        (Backend::Sim, Mode::Thread | Mode::Try) => (2, 5),
        (Backend::Sim, _) => (2, 40),
        (Backend::Gpu, Mode::Thread | Mode::Try) => (16, 128),
        (Backend::Gpu, _) => (16, 128),
    };
    // Fewer blocks per PE on more PEs, so every producer gets a tag (`u32` elements tag at
    // most 4096 producers: 2 GPUs × 2048 threads).
    let producers_of = |grid: u32| s.mode.groups(grid, block) as u64 * n as u64;
    let grid = (1..=grid)
        .rev()
        .find(|&g| producers_of(g) <= E::MAX_PRODUCERS as u64)
        .unwrap_or(1);
    let groups = s.mode.groups(grid, block);
    let producers = producers_of(grid);
    let items = (stress_items(shmem.backend(), s.scale_down) / producers).max(1) as u32;
    assert!(
        producers <= E::MAX_PRODUCERS as u64 && items <= E::MAX_SEQ,
        "{producers} producers of {items} elements do not fit {}'s tag",
        std::any::type_name::<E>()
    );
    let builder = SymQueue::<E>::builder(s.capacity)
        .first_ticket(s.first_ticket)
        .label(format!("stress {:?}", s.mode));
    let queue = if s.mailbox {
        builder.per_pe()
    } else {
        builder.home(n - 1)
    }
    .build::<E>(shmem)?;
    let total = producers as usize * items as usize;
    let mut record = shmem.alloc_zeroed::<u64>(total)?;
    let mut stat = shmem.alloc_zeroed::<u64>(status::LEN)?;
    let mut stage = shmem.alloc_zeroed::<E>((groups * s.mode.stage_per_group(block)) as usize)?;
    let mut scratch = shmem.alloc_zeroed::<u64>(groups as usize)?;
    shmem.barrier_all()?;
    // SAFETY: the buffers have the sizes the kernel derives from the same launch shape; every
    // PE launches, cooperatively, so producers and consumers run together.
    unsafe {
        module.launch::<K>(
            LaunchConfig::new(grid, block).cooperative(),
            (
                queue.handle(),
                items,
                s.mode as u32,
                s.mailbox as u32,
                record.as_mut_ptr(),
                stat.as_mut_ptr(),
                stage.as_mut_ptr(),
                scratch.as_mut_ptr(),
            ),
        )?
    };
    shmem.barrier_all()?;
    let st = stat.to_vec()?;
    assert_eq!(
        (st[status::TORN], st[status::FOREIGN], st[status::DUPLICATE]),
        (0, 0, 0),
        "PE {me}: torn, foreign and duplicate elements popped ({s:?}, {items} per producer)"
    );
    if me == 0 {
        check_record(&record.to_vec()?, producers as usize, items as usize)?;
    }
    let popped_here = if s.mailbox {
        items as u64 * groups as u64
    } else {
        total as u64
    };
    if s.mailbox || me == n - 1 {
        let snap = queue.snapshot()?;
        assert_eq!(
            (snap.len(), snap.tail, snap.head),
            (
                0,
                s.first_ticket + popped_here,
                s.first_ticket + popped_here
            ),
            "PE {me}: {snap}"
        );
    }
    shmem.barrier_all()?;
    Ok(())
}

/// Every `(producer, seq)` was popped exactly once (the kernels count duplicates), and every
/// consumer popped each producer's elements in sequence order.
fn check_record(record: &[u64], producers: usize, items: usize) -> Outcome {
    let missing: Vec<(usize, usize)> = record
        .iter()
        .enumerate()
        .filter(|(_, &r)| r == 0)
        .map(|(i, _)| (i / items, i % items))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} elements were never popped, e.g. (producer, seq) {:?}",
        missing.len(),
        record.len(),
        &missing[..missing.len().min(8)]
    );
    // Per producer: the position each consumer last popped one of its elements at.
    let mut last: std::collections::HashMap<u32, (usize, u32)> = Default::default();
    for p in 0..producers {
        last.clear();
        for seq in 0..items {
            let r = record[p * items + seq];
            let (consumer, k) = ((r >> 32) as u32 & 0x7FFF_FFFF, r as u32);
            if let Some(&(prev_seq, prev_k)) = last.get(&consumer) {
                assert!(
                    k > prev_k,
                    "consumer {consumer} popped producer {p}'s element {seq} as its #{k}, \
                     but element {prev_seq} later, as #{prev_k}: not FIFO per producer"
                );
            }
            last.insert(consumer, (seq, k));
        }
    }
    Ok(())
}

fn stress_threads(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, Stress::new(100, Mode::Thread))
}

fn stress_try_ops(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, Stress::new(13, Mode::Try))
}

fn stress_warp_batches(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, Stress::new(64, Mode::Warp))
}

fn stress_block_batches(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, Stress::new(300, Mode::Block))
}

fn stress_mailboxes(shmem: &Shmem) -> Outcome {
    let s = Stress {
        mailbox: true,
        ..Stress::new(7, Mode::Thread)
    };
    stress::<u32, qs::queue_stress_u32>(shmem, s)
}

fn stress_mailboxes_warp_batches(shmem: &Shmem) -> Outcome {
    let s = Stress {
        mailbox: true,
        ..Stress::new(50, Mode::Warp)
    };
    stress::<[u32; 3], qs::queue_stress_e12>(shmem, s)
}

/// Each element moved by a whole warp (`push_cooperative`/`pop_cooperative::<Warp>`); on the
/// simulator blocks of 40 threads, so one warp of each is partial (8 lanes).
fn stress_warp_cooperative(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, Stress::new(64, Mode::WarpCoop))
}

/// Each warp of a block moves its part of the block's batch.
fn stress_block_cooperative(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, Stress::new(300, Mode::BlockCoop))
}

fn stress_mailboxes_cooperative(shmem: &Shmem) -> Outcome {
    let s = Stress {
        mailbox: true,
        ..Stress::new(50, Mode::WarpCoop)
    };
    stress::<[u32; 3], qs::queue_stress_e12>(shmem, s)?;
    let s = Stress {
        mailbox: true,
        ..Stress::new(90, Mode::BlockCoop)
    };
    stress::<[u32; 3], qs::queue_stress_e12>(shmem, s)
}

/// A stress run on a tiny ring, where most operations wait.
fn tiny(capacity: usize, mode: Mode) -> Stress {
    Stress {
        scale_down: 8,
        ..Stress::new(capacity, mode)
    }
}

fn capacity_1(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, tiny(1, Mode::Thread))?;
    stress::<u32, qs::queue_stress_u32>(shmem, tiny(1, Mode::Try))?;
    stress::<u32, qs::queue_stress_u32>(shmem, tiny(1, Mode::Warp))?;
    stress::<u32, qs::queue_stress_u32>(shmem, tiny(1, Mode::WarpCoop))
}

fn capacity_2(shmem: &Shmem) -> Outcome {
    stress::<u32, qs::queue_stress_u32>(shmem, tiny(2, Mode::Thread))?;
    stress::<u32, qs::queue_stress_u32>(shmem, tiny(2, Mode::Block))?;
    stress::<u32, qs::queue_stress_u32>(shmem, tiny(2, Mode::BlockCoop))
}

/// Counters that start just below 2^32 cross it during the run, with a capacity that is not
/// a power of two (so `ticket mod capacity` jumps there) and with one that is.
fn tickets_past_2_pow_32(shmem: &Shmem) -> Outcome {
    for (capacity, mode) in [(5, Mode::Thread), (8, Mode::Warp), (7, Mode::WarpCoop)] {
        let s = Stress {
            first_ticket: (1 << 32) - 37,
            ..tiny(capacity, mode)
        };
        stress::<u32, qs::queue_stress_u32>(shmem, s)?;
    }
    Ok(())
}

/// 10 bytes: neither 8- nor 4-byte words tile it (bytes do, where a PE has no peer mapping).
fn element_10_bytes(shmem: &Shmem) -> Outcome {
    stress::<[u8; 10], qs::queue_stress_e10>(shmem, tiny(7, Mode::Thread))?;
    stress::<[u8; 10], qs::queue_stress_e10>(shmem, Stress::new(20, Mode::Warp))?;
    stress::<[u8; 10], qs::queue_stress_e10>(shmem, Stress::new(20, Mode::WarpCoop))
}

fn element_12_bytes(shmem: &Shmem) -> Outcome {
    stress::<[u32; 3], qs::queue_stress_e12>(shmem, tiny(9, Mode::Thread))?;
    stress::<[u32; 3], qs::queue_stress_e12>(shmem, Stress::new(33, Mode::Warp))?;
    stress::<[u32; 3], qs::queue_stress_e12>(shmem, Stress::new(33, Mode::BlockCoop))
}

fn element_1024_bytes(shmem: &Shmem) -> Outcome {
    let s = |capacity, mode| Stress {
        scale_down: 10,
        ..Stress::new(capacity, mode)
    };
    stress::<[u64; 128], qs::queue_stress_e1024>(shmem, s(6, Mode::Thread))?;
    stress::<[u64; 128], qs::queue_stress_e1024>(shmem, s(40, Mode::Block))?;
    stress::<[u64; 128], qs::queue_stress_e1024>(shmem, s(40, Mode::WarpCoop))?;
    stress::<[u64; 128], qs::queue_stress_e1024>(shmem, s(9, Mode::BlockCoop))
}

/// From PE 1, on PE 0's queue of 7: `try_push` takes 7 of 10 fresh values and refuses the
/// 8th; `try_pop` returns those 7 in order, then nothing.
fn try_ops_stop_at_full_and_empty(shmem: &Shmem) -> Outcome {
    let me = shmem.my_pe();
    let module = shmem.load(&FIXTURES)?;
    let values: Vec<i32> = common::random_u32(10, shared_seed(shmem)?)
        .into_iter()
        .map(|v| v as i32)
        .collect();
    let queue = SymQueue::<i32>::new(shmem, 7, 0)?;
    let src = shmem.alloc_from(&values)?;
    let mut out = shmem.alloc_from(&[i32::MIN; 10])?;
    let mut report = shmem.alloc_zeroed::<u64>(4)?;
    if me == 1 {
        // SAFETY: `src` holds 10 values, `out` room for 10, `report` 4 words.
        unsafe {
            module.launch::<qs::queue_try_roundtrip>(
                LaunchConfig::new(1, 1),
                (
                    queue.handle(),
                    src.as_ptr(),
                    10,
                    out.as_mut_ptr(),
                    report.as_mut_ptr(),
                ),
            )?
        };
        assert_eq!(
            report.to_vec()?,
            vec![7, 7, 7, 0],
            "pushed, popped, full, empty"
        );
        assert_eq!(out.to_vec()?[..7], values[..7]);
        assert_eq!(out.to_vec()?[7..], [i32::MIN; 3]);
    }
    shmem.barrier_all()?;
    if me == 0 {
        let snap = queue.snapshot()?;
        assert_eq!((snap.tail, snap.head, snap.len()), (7, 7, 0), "{snap}");
    }
    shmem.barrier_all()?;
    Ok(())
}

/// The host's snapshot counts what PE 0 pushed into PE 1's queue, and refuses to describe
/// the unused copy on PE 0.
fn snapshot_on_the_home_pe(shmem: &Shmem) -> Outcome {
    let me = shmem.my_pe();
    let module = shmem.load(&EXAMPLES)?;
    let values: Vec<i32> = common::random_u32(5, shared_seed(shmem)?)
        .into_iter()
        .map(|v| v as i32)
        .collect();
    let queue = SymQueue::<i32>::builder(16)
        .home(1)
        .label("inbox")
        .build(shmem)?;
    let src = shmem.alloc_from(&values)?;
    let mut out = shmem.alloc_zeroed::<i32>(5)?;
    if me == 0 {
        // SAFETY: `src` holds 5 values.
        unsafe {
            module.launch::<qk::queue_push>(
                LaunchConfig::new(1, 1),
                (queue.handle(), src.as_ptr(), 5),
            )?
        };
        match queue.snapshot() {
            Err(e @ QueueError::NotHome { home: 1, pe: 0, .. }) => {
                assert!(e.to_string().contains("\"inbox\" lives on PE 1"), "{e}")
            }
            other => panic!("PE 0's snapshot of PE 1's queue: {other:?}"),
        }
    }
    shmem.barrier_all()?;
    if me == 1 {
        let snap = queue.snapshot()?;
        assert_eq!((snap.len(), snap.tail, snap.head), (5, 5, 0), "{snap}");
        // SAFETY: `out` has room for 5.
        unsafe {
            module.launch::<qk::queue_pop>(
                LaunchConfig::new(1, 1),
                (queue.handle(), out.as_mut_ptr(), 5),
            )?
        };
        assert_eq!(out.to_vec()?, values);
        assert!(queue.is_empty()?);
    }
    shmem.barrier_all()?;
    Ok(())
}

fn creation_errors_name_the_problem(shmem: &Shmem) -> Outcome {
    let n = shmem.n_pes();
    let err = SymQueue::<u64>::new(shmem, 0, 0).expect_err("capacity 0");
    assert!(matches!(err, QueueError::ZeroCapacity), "{err}");
    let err = SymQueue::<u64>::new(shmem, 4, n).expect_err("no such PE");
    assert!(
        err.to_string().contains(&format!(
            "home PE {n} does not exist: the job has {n} PE(s)"
        )),
        "{err}"
    );
    let err = SymQueue::<()>::new(shmem, 4, 0).expect_err("zero-sized");
    assert!(err.to_string().contains("size 0"), "{err}");
    // The heap is untouched by the refusals: a real queue still works.
    let q = SymQueue::<[u32; 3]>::per_pe(shmem, 3)?;
    assert_eq!(q.len()?, 0);
    assert_eq!(q.label(), "SymQueue<[u32; 3]>");
    shmem.barrier_all()?;
    Ok(())
}

/// PE 0's warps push batches of 32 into PE 1's queue of 8 (one reservation each, four
/// times the capacity) while PE 1's warps pop them: the benchmark's kernels, checked.
fn pipeline_batches_larger_than_capacity(shmem: &Shmem) -> Outcome {
    let me = shmem.my_pe();
    let module = shmem.load(&EXAMPLES)?;
    let (grid, block) = match shmem.backend() {
        Backend::Sim => (2, 64),
        Backend::Gpu => (32, 256),
    };
    let items = (stress_items(shmem.backend(), 1) / (grid * block) as u64).max(1) as u32;
    let queue = SymQueue::<[u64; 8]>::new(shmem, 8, 1)?;
    let warps = Mode::Warp.groups(grid, block) as usize;
    let mut stage = shmem.alloc_zeroed::<[u64; 8]>(warps * 32)?;
    let mut scratch = shmem.alloc_zeroed::<u64>(warps)?;
    let mut stat = shmem.alloc_zeroed::<u64>(status::LEN)?;
    shmem.barrier_all()?;
    let cfg = LaunchConfig::new(grid, block).cooperative();
    let (q, mode, tags) = (queue.handle(), Mode::Warp as u32, Tags::Each as u32);
    // SAFETY: `stage` holds 32 elements and `scratch` one word per warp; PE 0 pushes exactly
    // what PE 1 pops.
    unsafe {
        match me {
            0 => module.launch::<qk::queue_bench_push_e64>(
                cfg,
                (
                    q,
                    items,
                    mode,
                    tags,
                    stage.as_mut_ptr(),
                    scratch.as_mut_ptr(),
                    std::ptr::null_mut::<u64>(),
                    std::ptr::null_mut::<u64>(),
                ),
            )?,
            1 => module.launch::<qk::queue_bench_pop_e64>(
                cfg,
                (
                    q,
                    items,
                    mode,
                    tags,
                    stage.as_mut_ptr(),
                    scratch.as_mut_ptr(),
                    stat.as_mut_ptr(),
                    std::ptr::null_mut::<u64>(),
                ),
            )?,
            _ => {}
        }
    }
    shmem.barrier_all()?;
    if me == 1 {
        let st = stat.to_vec()?;
        let n = items as u64 * warps as u64;
        assert_eq!(
            (st[status::GOOD], st[status::TORN], st[status::FOREIGN]),
            (n, 0, 0)
        );
        assert_eq!(
            st[status::SEQ_SUM],
            warps as u64 * (items as u64 * (items as u64 - 1) / 2)
        );
        assert!(queue.is_empty()?);
    }
    shmem.barrier_all()?;
    Ok(())
}

/// Runs `case` on 2 simulated PEs and returns the first PE failure's text.
fn sim_failure(case: fn(&Shmem) -> Outcome) -> String {
    Job::new()
        .backend(Backend::Sim)
        .npes(2)
        .run(case)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// A pop from an empty queue with a debug bound fails, naming the queue, the PEs, the
/// ticket and why. (Simulator only: on a GPU the same bound traps the kernel after printing
/// the line, which leaves that PE's CUDA context unusable.)
#[test]
fn debug_bound_names_queue_pe_and_ticket() {
    fn case(shmem: &Shmem) -> Outcome {
        let module = shmem.load(&EXAMPLES)?;
        let queue = SymQueue::<i32>::builder(4)
            .label("jobs")
            .max_spins(300)
            .first_ticket((1 << 32) + 3)
            .build(shmem)?;
        let mut out = shmem.alloc_zeroed::<i32>(1)?;
        if shmem.my_pe() == 1 {
            // SAFETY: `out` holds one i32.
            let r = unsafe {
                module.launch::<qk::queue_pop>(
                    LaunchConfig::new(1, 1),
                    (queue.handle(), out.as_mut_ptr(), 1),
                )
            };
            r.and_then(|()| shmem.synchronize())?;
        }
        shmem.barrier_all()?;
        Ok(())
    }
    let msg = sim_failure(case);
    for part in [
        "SymQueue \"jobs\" (capacity 4, on PE 0)",
        "pop by PE 1",
        "gave up after 300 polls for ticket 4294967299",
        "the queue stayed empty",
    ] {
        assert!(msg.contains(part), "{part:?} missing from: {msg}");
    }
}

/// A push into a full queue with a debug bound fails the same way, saying it stayed full.
#[test]
fn debug_bound_on_a_full_queue() {
    fn case(shmem: &Shmem) -> Outcome {
        let module = shmem.load(&EXAMPLES)?;
        let queue = SymQueue::<i32>::builder(1)
            .home(1)
            .max_spins(300)
            .build(shmem)?;
        let src = shmem.alloc_from(&[5, 6])?;
        if shmem.my_pe() == 0 {
            // SAFETY: `src` holds 2 i32s.
            let r = unsafe {
                module.launch::<qk::queue_push>(
                    LaunchConfig::new(1, 1),
                    (queue.handle(), src.as_ptr(), 2),
                )
            };
            r.and_then(|()| shmem.synchronize())?;
        }
        shmem.barrier_all()?;
        Ok(())
    }
    let msg = sim_failure(case);
    for part in [
        "SymQueue \"SymQueue<i32>\" (capacity 1, on PE 1)",
        "push by PE 0",
        "for ticket 1",
        "the queue stayed full",
    ] {
        assert!(msg.contains(part), "{part:?} missing from: {msg}");
    }
}

/// Across nodes a PE has no peer mapping of the home PE's ring, and elements move word by
/// word with `p`/`g` (8-byte, 4-byte and 2-byte words for the 1024-, 12- and 10-byte
/// elements): the element tests again, in a child process of this binary on a simulator that
/// withholds peer mappings (`RSHMEM_SIM_P2P=0`, a process-wide setting).
#[test]
fn elements_move_without_peer_mappings() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["sim::element_", "--test-threads=1"])
        .env("RSHMEM_SIM_P2P", "0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("test result: ok. 3 passed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
