//! Symmetric queue throughput across PEs, beside a raw put of the same bytes: producing CTAs
//! on PE 0 push into a queue whose ring lives on PE 1, where as many consuming CTAs pop;
//! items/s and GB/s for 8-, 64- and 1024-byte elements (and, asked for, 14336: a token row of
//! hidden 7168 in bf16, what an MoE dispatch would carry), per kind:
//!
//! | kind | what |
//! |---|---|
//! | `queue_thread` | every thread `push_ref`/`pop`s its own elements |
//! | `queue_warp` | `push_batch`/`pop_batch::<Warp>` of 32: one reservation, each lane moves one element alone |
//! | `queue_coop_warp` | `push_cooperative`/`pop_cooperative::<Warp>` of 32: one reservation, the warp moves each element together |
//! | `queue_coop_block` | `push_cooperative`/`pop_cooperative::<Block>` of one element per thread: each warp moves its part together |
//! | `put_warp`, `put_block` | the same bytes from the same grid as `putmem_nbi` at warp / block scope, in the batches' pieces, then `quiet` (PE 0 → PE 1, no consumer) |
//! | `fetch_add` | PE 1's threads doing remote `atomic_fetch_add` on a counter on PE 0 |
//!
//! Every popped element is checked (tag, bytes, count and sequence sum), every put row too,
//! and the counter. The table gives each queue kind's GB/s beside the put's, and the ratio.
//!
//! `--tags each` (the default) makes every element whole before its push and checks it whole
//! after its pop, inside the timed batches. `--tags once` (the batched kinds; `thread` stays
//! `each`) writes the stage rows whole once before the timed loop, as the put row does, then
//! per batch only each element's key, and checks the popped keys (count and sequence sum, not
//! every byte): the queue's own work beside the put's, as a dispatch pushes rows already in
//! memory.
//!
//! Prints a table and one CSV line per measurement:
//! `QB,<kind>,<element bytes>,<ctas>,<items>,<seconds>,<items per s>,<GB per s>` (items =
//! operations for `fetch_add`). Where the two PEs share a GPU it also prints, per queue run,
//! `QP,<kind>,<bytes>,<ctas>,<SMs of PE 0>,<SMs of PE 1>,<SMs both used>,<µs from the first
//! block's start to the last's>`: where and when the blocks of the two grids ran.
//!
//! ```text
//! cargo run --release --example queue_bench                         # 1..SMs CTAs on GPUs
//! cargo run --release --example queue_bench -- --ctas 1,8,32 --sizes 8,1024 --kinds coop,put
//! ```
//!
//! The queue's producers and consumers wait for each other, so both grids must run at once.
//! Each is launched cooperatively (its own blocks resident together); two PEs sharing a GPU
//! (MPS) get no such promise for the pair, so there the benchmark refuses CTA counts whose two
//! grids may not fit together (`--force` runs them anyway; see docs/queue.md).
//!
//! On the simulator the grid and counts are small: it checks correctness, not speed.

use anyhow::{bail, ensure, Context, Result};
use rshmem::{
    Backend, DeviceQueue, GpuSharing, Kernel, LaunchConfig, Module, Pod, Shmem, SymQueue,
};
use rshmem_examples_image::queue::{self as qk, status, Mode, Tagged, Tags, LOG_WORDS};
use rshmem_examples_image::IMAGE;
use std::time::Duration;

/// What one measurement moves, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Queue(Mode),
    Put(Mode),
    FetchAdd,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Queue(Mode::Thread),
        Kind::Queue(Mode::Warp),
        Kind::Queue(Mode::WarpCoop),
        Kind::Queue(Mode::BlockCoop),
        Kind::Put(Mode::Warp),
        Kind::Put(Mode::Block),
        Kind::FetchAdd,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Queue(Mode::Thread) => "queue_thread",
            Kind::Queue(Mode::Warp) => "queue_warp",
            Kind::Queue(Mode::WarpCoop) => "queue_coop_warp",
            Kind::Queue(_) => "queue_coop_block",
            Kind::Put(Mode::Warp) => "put_warp",
            Kind::Put(_) => "put_block",
            Kind::FetchAdd => "fetch_add",
        }
    }

    /// The kind's group in `--kinds`: `thread`, `warp`, `coop`, `put`, `fetch_add`.
    fn family(self) -> &'static str {
        match self {
            Kind::Queue(Mode::Thread) => "thread",
            Kind::Queue(Mode::Warp) => "warp",
            Kind::Queue(_) => "coop",
            Kind::Put(_) => "put",
            Kind::FetchAdd => "fetch_add",
        }
    }

    /// The put whose bytes and pieces a queue kind is compared with.
    fn baseline(self) -> Option<Kind> {
        match self {
            Kind::Queue(Mode::BlockCoop) => Some(Kind::Put(Mode::Block)),
            Kind::Queue(_) => Some(Kind::Put(Mode::Warp)),
            _ => None,
        }
    }
}

struct Options {
    ctas: Vec<u32>,
    threads: u32,
    sizes: Vec<usize>,
    kinds: Vec<Kind>,
    /// Elements per warp (a thread moves a 32nd of them).
    items: u32,
    capacity: usize,
    fetch_add_iters: u32,
    reps: usize,
    /// How the batched kinds make and check their elements.
    tags: Tags,
    /// Run CTA counts whose two grids may not be resident together (shared GPUs).
    force: bool,
}

impl Options {
    fn parse(shmem: &Shmem) -> Result<Self> {
        let gpu = shmem.backend() == Backend::Gpu;
        let mut o = Options {
            ctas: Vec::new(),
            threads: if gpu { 256 } else { 64 },
            sizes: vec![8, 64, 1024],
            kinds: Kind::ALL.to_vec(),
            items: if gpu { 4096 } else { 64 },
            capacity: 4096,
            fetch_add_iters: if gpu { 1000 } else { 8 },
            reps: if gpu { 3 } else { 1 },
            tags: Tags::Each,
            force: false,
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
            if a == "--force" {
                o.force = true;
                continue;
            }
            let mut value = || it.next().with_context(|| format!("{a} needs a value"));
            match a.as_str() {
                "--ctas" => o.ctas = list(value()?)?.into_iter().map(|x| x as u32).collect(),
                "--threads" => o.threads = value()?.parse()?,
                "--sizes" => o.sizes = list(value()?)?.into_iter().map(|x| x as usize).collect(),
                "--kinds" => {
                    let want: Vec<&str> = value()?.split(',').map(str::trim).collect();
                    for w in &want {
                        ensure!(
                            Kind::ALL.iter().any(|k| k.family() == *w),
                            "--kinds: {w:?} is not one of thread, warp, coop, put, fetch_add"
                        );
                    }
                    o.kinds = Kind::ALL
                        .into_iter()
                        .filter(|k| want.contains(&k.family()))
                        .collect();
                }
                "--items" => o.items = value()?.parse()?,
                "--capacity" => o.capacity = value()?.parse()?,
                "--fetch-add-iters" => o.fetch_add_iters = value()?.parse()?,
                "--reps" => o.reps = value()?.parse()?,
                "--tags" => {
                    o.tags = match value()?.as_str() {
                        "each" => Tags::Each,
                        "once" => Tags::Once,
                        t => bail!("--tags: {t:?} is not each or once"),
                    }
                }
                other => bail!(
                    "unknown argument {other:?}: use --ctas A,B --threads T --sizes 8,64,1024,14336 \
                     --kinds thread,warp,coop,put,fetch_add --items PER_WARP --capacity SLOTS \
                     --fetch-add-iters N --reps N --tags each|once --force"
                ),
            }
        }
        ensure!(
            o.threads % 32 == 0 && o.threads > 0,
            "--threads must be a multiple of 32 (warps push whole batches)"
        );
        ensure!(
            o.items % 32 == 0 && o.items > 0,
            "--items must be a multiple of 32 (elements per warp, moved in batches of 32)"
        );
        for s in &o.sizes {
            ensure!(
                matches!(s, 8 | 64 | 1024 | 14336),
                "--sizes: {s} is not 8, 64, 1024 or 14336"
            );
        }
        if o.ctas.is_empty() {
            o.ctas = default_ctas(shmem);
        }
        check_co_residency(shmem, &o)?;
        Ok(o)
    }
}

/// 1, 2, 4, ... up to what the two grids may use together: every SM of the PE's GPU (each PE
/// has its own), or half the PE's share where the PEs share a GPU; and that bound itself.
fn default_ctas(shmem: &Shmem) -> Vec<u32> {
    if shmem.backend() == Backend::Sim {
        return vec![1, 2];
    }
    let top = pair_bound(shmem);
    let mut v: Vec<u32> = (0..8).map(|i| 1 << i).filter(|&c| c < top).collect();
    v.push(top);
    v
}

/// The CTAs per PE for which the producer and consumer grids, at up to one block per SM, may
/// be resident together: the PE's SMs when it has its GPU alone; where PEs share one under
/// MPS, half of this PE's share. MPS caps each client at its share of the SMs but reserves
/// none and does not keep clients apart (kernels of different clients may run on the same
/// SMs), so only that bound is sure; the cooperative launch guarantees each grid alone.
fn pair_bound(shmem: &Shmem) -> u32 {
    let info = shmem.device_info();
    match info.sharing {
        GpuSharing::Exclusive => info.multiprocessors,
        _ => (info.multiprocessors / 2).max(1),
    }
}

/// Refuses runs that cannot progress: PEs that time-slice one GPU (their kernels never run at
/// once), and on a GPU shared under MPS, CTA counts above [`pair_bound`] (a 2-PE run at 64
/// CTAs per PE on one H200 made no progress). `--force` lets them run, with a warning.
fn check_co_residency(shmem: &Shmem, o: &Options) -> Result<()> {
    let info = shmem.device_info();
    let bound = pair_bound(shmem);
    let too_many: Vec<u32> = o.ctas.iter().copied().filter(|&c| c > bound).collect();
    let problem = match info.sharing {
        GpuSharing::TimeSliced => Some(
            "the PEs share a GPU without MPS: their kernels time-slice and never run at once, \
             so producers spin until the consumers' time slice (start MPS: docs/mps.md)"
                .to_string(),
        ),
        _ if !too_many.is_empty() => Some(format!(
            "--ctas {too_many:?}: above {bound} CTAs per PE the producer and consumer grids may \
             not be resident together ({} SMs for this PE, {}), and each waits for the other: \
             use --ctas up to {bound}",
            info.multiprocessors,
            match info.sharing {
                GpuSharing::Exclusive => "its own GPU".to_string(),
                _ => "a GPU shared under MPS, which reserves no SMs for a PE".to_string(),
            }
        )),
        _ => None,
    };
    match problem {
        Some(p) if o.force => {
            eprintln!("queue_bench: warning (--force): {p}");
            Ok(())
        }
        Some(p) => bail!("queue_bench: {p}; --force runs it anyway (it may hang until the hang watchdog ends it)"),
        None => Ok(()),
    }
}

/// One measured row.
struct Row {
    kind: Kind,
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

/// A producer's or consumer's arguments: queue, items per group, mode, tags, stage, scratch,
/// status, placement log.
type QueueArgs<E> = (
    DeviceQueue<E>,
    u32,
    u32,
    u32,
    *mut E,
    *mut u64,
    *mut u64,
    *mut u64,
);

/// The producer, consumer and raw-put kernels of one element type.
trait BenchKernels {
    type E: Tagged + Pod;
    type Push: Kernel<Args = QueueArgs<Self::E>>;
    type Pop: Kernel<Args = QueueArgs<Self::E>>;
    type Put: Kernel<Args = (*mut Self::E, u32, u32, *mut Self::E)>;
}

macro_rules! bench_kernels {
    ($($name:ident: $t:ty => $push:ident, $pop:ident, $put:ident;)*) => {$(
        struct $name;
        impl BenchKernels for $name {
            type E = $t;
            type Push = qk::$push;
            type Pop = qk::$pop;
            type Put = qk::$put;
        }
    )*};
}

bench_kernels! {
    E8: u64 => queue_bench_push_e8, queue_bench_pop_e8, queue_bench_put_e8;
    E64: [u64; 8] => queue_bench_push_e64, queue_bench_pop_e64, queue_bench_put_e64;
    E1024: [u64; 128] => queue_bench_push_e1024, queue_bench_pop_e1024, queue_bench_put_e1024;
    E14336: [u64; 1792] => queue_bench_push_e14336, queue_bench_pop_e14336, queue_bench_put_e14336;
}

/// Elements each group of `mode` moves when every warp moves `o.items`.
fn per_group(o: &Options, mode: Mode) -> u32 {
    match mode {
        Mode::Thread | Mode::Try => o.items / 32,
        Mode::Warp | Mode::WarpCoop => o.items,
        Mode::Block | Mode::BlockCoop => o.items * o.threads / 32,
    }
}

/// A time measured on PE `from`, on PE 1 (the one that prints): PE `from` puts it there.
fn on_pe1(shmem: &Shmem, mine: Option<Duration>, from: usize) -> Result<Option<Duration>> {
    let mut cell = shmem.alloc_zeroed::<u64>(1)?;
    if let Some(t) = mine.filter(|_| shmem.my_pe() == from) {
        cell.copy_from_host(&[t.as_nanos() as u64])?;
        if from != 1 {
            shmem.stream().put(&cell, &cell, 1)?;
        }
    }
    shmem.barrier_all()?;
    Ok(match shmem.my_pe() {
        1 => Some(Duration::from_nanos(cell.to_vec()?[0])),
        _ => None,
    })
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
    let per_group = per_group(o, mode);
    let queue = SymQueue::<K::E>::builder(o.capacity)
        .home(1)
        .label(format!("bench {}B", std::mem::size_of::<K::E>()))
        .build(shmem)?;
    let warps = Mode::Warp.groups(ctas, o.threads) as usize;
    let mut stage = shmem.alloc_zeroed::<K::E>(warps * 32)?;
    let mut scratch = shmem.alloc_zeroed::<u64>(warps)?;
    let mut stat = shmem.alloc_zeroed::<u64>(status::LEN)?;
    let mut log = shmem.alloc_zeroed::<u64>(2 * ctas as usize * LOG_WORDS)?;
    let cfg = LaunchConfig::new(ctas, o.threads).cooperative();
    let (q, m, t) = (queue.handle(), mode as u32, o.tags as u32);
    let mut times = Vec::new();
    let mut phases = [0u64; status::LEN - status::PUSH_PHASES];
    for _ in 0..o.reps {
        stat.copy_from_host(&[0; status::LEN])?;
        shmem.barrier_all()?;
        let ptrs = (
            stage.as_mut_ptr(),
            scratch.as_mut_ptr(),
            stat.as_mut_ptr(),
            log.as_mut_ptr(),
        );
        let launch = || -> rshmem::Result<()> {
            let (stage, scratch, stat, log) = ptrs;
            // SAFETY: `stage` holds 32 elements and `scratch` one word per warp of this
            // grid, `log` a row per block of both PEs; PE 1 pops exactly what PE 0 pushes,
            // each grid resident (cooperative; the pair: `check_co_residency`).
            unsafe {
                match me {
                    0 => {
                        let args = (q, per_group, m, t, stage, scratch, stat, log);
                        module.launch::<K::Push>(cfg, args)
                    }
                    1 => module
                        .launch::<K::Pop>(cfg, (q, per_group, m, t, stage, scratch, stat, log)),
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
            for (sum, v) in phases.iter_mut().zip(&st[status::PUSH_PHASES..]) {
                *sum += v;
            }
        }
    }
    if me == 1 {
        print_phases(mode, std::mem::size_of::<K::E>(), ctas, &phases);
    }
    if me == 1 && shmem.device_info().sharing != GpuSharing::Exclusive {
        print_placement(mode, std::mem::size_of::<K::E>(), ctas, &log.to_vec()?);
    }
    times.sort();
    let total = groups as u64 * per_group as u64;
    Ok((me == 1).then(|| (total, times[times.len() / 2])))
}

/// Median time of PE 0's groups of `mode` putting the queue runs' bytes to PE 1 (returned on
/// PE 1), each group's rows checked there.
fn put_run<K: BenchKernels>(
    shmem: &Shmem,
    module: &Module<'_>,
    o: &Options,
    ctas: u32,
    mode: Mode,
) -> Result<Option<(u64, Duration)>> {
    let me = shmem.my_pe();
    let (groups, per_group) = (mode.groups(ctas, o.threads), per_group(o, mode));
    let warps = Mode::Warp.groups(ctas, o.threads) as usize;
    let mut stage = shmem.alloc_zeroed::<K::E>(warps * 32)?;
    let mut dst = shmem.alloc_zeroed::<K::E>(warps * 32)?;
    let mut times = Vec::new();
    for _ in 0..o.reps {
        dst.copy_from_host(&vec![unpopulated::<K::E>(); warps * 32])?;
        shmem.barrier_all()?;
        if me == 0 {
            let ptrs = (dst.as_mut_ptr(), stage.as_mut_ptr());
            let launch = || -> rshmem::Result<()> {
                // SAFETY: `dst` and `stage` hold 32 elements per warp of this grid, whose
                // blocks are whole warps; `per_group` is a multiple of the group's size.
                unsafe {
                    module.launch::<K::Put>(
                        LaunchConfig::new(ctas, o.threads),
                        (ptrs.0, per_group, mode as u32, ptrs.1),
                    )
                }
            };
            times.push(shmem.time(launch)?);
        }
        shmem.barrier_all()?;
        if me == 1 {
            let got = dst.to_vec()?;
            let size = mode.group_size(o.threads) as usize;
            for (row, item) in got.iter().enumerate() {
                let want = ((row / size) as u32, (row % size) as u32);
                ensure!(
                    item.untag() == Some(want),
                    "{mode:?} put, {ctas} CTAs: element {row} on PE 1 is {:?}, expected {want:?}",
                    item.untag()
                );
            }
        }
    }
    times.sort();
    let total = groups as u64 * per_group as u64;
    let median = times.get(times.len() / 2).copied();
    Ok(on_pe1(shmem, median, 0)?.map(|t| (total, t)))
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

/// One measurement of `kind` with `K`'s elements.
fn run<K: BenchKernels>(
    shmem: &Shmem,
    module: &Module<'_>,
    o: &Options,
    ctas: u32,
    kind: Kind,
) -> Result<Option<(u64, Duration)>> {
    match kind {
        Kind::Queue(mode) => queue_run::<K>(shmem, module, o, ctas, mode),
        Kind::Put(mode) => put_run::<K>(shmem, module, o, ctas, mode),
        Kind::FetchAdd => fetch_add_run(shmem, module, o, ctas),
    }
}

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        ensure!(
            shmem.n_pes() >= 2,
            "queue_bench needs 2 PEs (RSHMEM_NPES=2)"
        );
        let o = Options::parse(shmem)?;
        let module = shmem.load(&IMAGE)?;
        let mut rows = Vec::new();
        let mut keep = |kind: Kind, bytes, ctas, r: Option<(u64, Duration)>| {
            if let Some((items, time)) = r {
                let row = Row {
                    kind,
                    bytes,
                    ctas,
                    items,
                    time,
                };
                println!(
                    "QB,{},{bytes},{ctas},{items},{:.6},{:.0},{:.2}",
                    kind.name(),
                    time.as_secs_f64(),
                    row.per_s(),
                    row.gbps()
                );
                rows.push(row);
            }
        };
        for &ctas in &o.ctas {
            for &bytes in &o.sizes {
                for &kind in o.kinds.iter().filter(|k| **k != Kind::FetchAdd) {
                    let r = match bytes {
                        8 => run::<E8>(shmem, &module, &o, ctas, kind)?,
                        64 => run::<E64>(shmem, &module, &o, ctas, kind)?,
                        1024 => run::<E1024>(shmem, &module, &o, ctas, kind)?,
                        _ => run::<E14336>(shmem, &module, &o, ctas, kind)?,
                    };
                    keep(kind, bytes, ctas, r);
                }
            }
            if o.kinds.contains(&Kind::FetchAdd) {
                let r = fetch_add_run(shmem, &module, &o, ctas)?;
                keep(Kind::FetchAdd, 8, ctas, r);
            }
        }
        shmem.barrier_all()?;
        if shmem.my_pe() == 1 {
            print_table(&o, &rows);
            println!(
                "({}; every put row; the fetch_add counter{})",
                match o.tags {
                    Tags::Each => "every element checked: tag, bytes, count and sequence sum",
                    Tags::Once => "--tags once: every popped key, the count and sequence sum",
                },
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

/// One table per element size: Mitems/s | GB/s per kind, and each queue kind's GB/s over its
/// put's (`coop/put`).
fn print_table(o: &Options, rows: &[Row]) {
    let find = |c: u32, kind: Kind, b: usize| {
        rows.iter()
            .find(|r| r.ctas == c && r.kind == kind && r.bytes == b)
    };
    for &b in &o.sizes {
        println!(
            "\n{b}-byte elements, PE 0 -> PE 1 ({} threads/CTA, capacity {}, ring on PE 1, \
             tags {}): Mitems/s | GB/s",
            o.threads,
            o.capacity,
            match o.tags {
                Tags::Each => "each",
                Tags::Once => "once",
            }
        );
        let kinds: Vec<Kind> = o
            .kinds
            .iter()
            .copied()
            .filter(|k| *k != Kind::FetchAdd)
            .collect();
        let ratios: Vec<Kind> = kinds
            .iter()
            .copied()
            .filter(|k| matches!(k, Kind::Queue(Mode::WarpCoop | Mode::BlockCoop)))
            .filter(|k| kinds.contains(&k.baseline().unwrap()))
            .collect();
        print!("{:>6}", "CTAs");
        for k in &kinds {
            print!("{:>20}", k.name());
        }
        for k in &ratios {
            print!("{:>20}", format!("{}/put", &k.name()[6..]));
        }
        println!();
        for &c in &o.ctas {
            print!("{c:>6}");
            for &k in &kinds {
                let cell = find(c, k, b).map_or("-".to_string(), |r| {
                    format!("{:.1} | {:.1}", r.per_s() / 1e6, r.gbps())
                });
                print!("{cell:>20}");
            }
            for &k in &ratios {
                let cell = match (find(c, k, b), find(c, k.baseline().unwrap(), b)) {
                    (Some(q), Some(p)) => format!("{:.2}", q.gbps() / p.gbps()),
                    _ => "-".to_string(),
                };
                print!("{cell:>20}");
            }
            println!();
        }
    }
    if o.kinds.contains(&Kind::FetchAdd) {
        println!("\nremote fetch_add, PE 1 -> a counter on PE 0: M operations/s");
        for &c in &o.ctas {
            if let Some(r) = find(c, Kind::FetchAdd, 8) {
                println!("{c:>6}{:>20.1}", r.per_s() / 1e6);
            }
        }
    }
}

/// The queue's phases per batch (`QPHASES` lines), from an image built with
/// `RSHMEM_QUEUE_PHASES=1` (`rshmem_device::queue::phases`); nothing from others. `words`: the
/// status words from `status::PUSH_PHASES` on, summed over the repetitions.
fn print_phases(mode: Mode, bytes: usize, ctas: u32, words: &[u64]) {
    use rshmem::device::queue::phases::{NAMES, PHASES};
    for (side, w) in ["push", "pop"]
        .iter()
        .zip(words.chunks(status::PHASE_WORDS))
    {
        let (batches, cycles, ns) = (w[PHASES], w[PHASES + 1], w[PHASES + 2]);
        if batches == 0 || ns == 0 {
            continue;
        }
        // Cycles to µs per batch at the warps' own clock (their cycles over their time).
        let us = |c: u64| c as f64 / batches as f64 * ns as f64 / cycles as f64 / 1e3;
        let parts: Vec<String> = NAMES
            .iter()
            .zip(w)
            .map(|(n, &c)| format!("{n} {:.2}", us(c)))
            .collect();
        println!(
            "QPHASES {bytes}B {mode:?} {ctas} CTAs {side}: µs per batch {} (timed {:.2} of {:.2}; {:.2} GHz)",
            parts.join(" "),
            us(w[..PHASES].iter().sum()),
            us(cycles),
            cycles as f64 / ns as f64
        );
    }
}

/// The `QP` line of a queue run on a shared GPU, from its placement log (a row of
/// `[SM, start, end]` per block, PE 0's blocks then PE 1's).
fn print_placement(mode: Mode, bytes: usize, ctas: u32, log: &[u64]) {
    let rows: Vec<&[u64]> = log.chunks(LOG_WORDS).collect();
    let (pe0, pe1) = rows.split_at(ctas as usize);
    let sms = |rows: &[&[u64]]| -> std::collections::BTreeSet<u64> {
        rows.iter().map(|r| r[0]).collect()
    };
    let (a, b) = (sms(pe0), sms(pe1));
    let first = rows.iter().map(|r| r[1]).min().unwrap_or(0);
    let last = rows.iter().map(|r| r[1]).max().unwrap_or(0);
    println!(
        "QP,{},{bytes},{ctas},{},{},{},{:.1}",
        Kind::Queue(mode).name(),
        a.len(),
        b.len(),
        a.intersection(&b).count(),
        (last - first) as f64 / 1e3
    );
}

/// An element no put writes: all bytes 0xFF (its tag would name producer and sequence
/// `u32::MAX`, and no filler matches it).
fn unpopulated<E: Pod>() -> E {
    let mut e: E = bytemuck::Zeroable::zeroed();
    bytemuck::bytes_of_mut(&mut e).fill(0xFF);
    e
}
