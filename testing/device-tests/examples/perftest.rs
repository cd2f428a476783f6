//! Perftest: each kernel of `testing/kernels/perftest` timed on 2 or more PEs — put and get
//! bandwidth, `p`/`g`/atomic latency, atomic throughput, put-with-signal ping-pong, device
//! barrier, and fcollect / reduce latency — beside its CUDA C++ NVSHMEM twin
//! (`scripts/cuda/perftest.cu`, run by `scripts/gpu-check.sh`, which joins both outputs into
//! Rust / C++ ratios).
//!
//! ```text
//! cargo run --release -p rshmem-device-tests --example perftest      # every row, one PE per GPU
//! RSHMEM_NPES=2 cargo run --release -p rshmem-device-tests --example perftest -- --rows g_lat,pingpong --reps 9
//! cargo run --release -p rshmem-device-tests --example perftest -- --plan gpu   # the C++ twin's plan
//! ```
//!
//! The point-to-point rows (bandwidth, latencies, atomic throughput, ping-pong) run between
//! PE 0 and PE 1 whatever the job's size (the other PEs launch and return); the barrier and
//! the collectives run over all PEs. The kernels come from the perftest's own image
//! (`rshmem_device_tests::perftest::IMAGE`, sm_90 only); rshmem's image supplies the seed's read.
//!
//! Every case is one [`Case`]: grid, block, iterations, size and, for bandwidth, how many
//! slots its iterations rotate over. `--plan` prints them as `PLAN,...` lines; the C++ driver
//! runs exactly those, so both sides always agree. Each case runs once to warm up, is checked
//! where it moves data (fresh random data, poisoned destinations), then timed with CUDA
//! events: the median of `--reps` (default 5) launches, each after a host barrier. PE 0 prints
//! `PT,<row>,<param>,<value>,<unit>` per case and a table at the end.
//!
//! On the simulator the sizes, grids and iteration counts are tiny: it checks correctness
//! only, and says so.

use anyhow::{anyhow, bail, ensure, Context, Result};
use rshmem::{Backend, LaunchConfig, Module, Shmem};
use rshmem_device_tests::perftest;
use rshmem_examples_image::hello;
use std::time::Duration;

/// The families of rows, in the order they run (the names `--rows` takes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    PutBw,
    GetBw,
    PLat,
    GLat,
    AmoLat,
    AmoTput,
    PingPong,
    Barrier,
    Fcollect,
    Reduce,
}

impl Family {
    const ALL: [Family; 10] = [
        Family::PutBw,
        Family::GetBw,
        Family::PLat,
        Family::GLat,
        Family::AmoLat,
        Family::AmoTput,
        Family::PingPong,
        Family::Barrier,
        Family::Fcollect,
        Family::Reduce,
    ];

    fn name(self) -> &'static str {
        match self {
            Family::PutBw => "put_bw",
            Family::GetBw => "get_bw",
            Family::PLat => "p_lat",
            Family::GLat => "g_lat",
            Family::AmoLat => "amo_lat",
            Family::AmoTput => "amo_tput",
            Family::PingPong => "pingpong",
            Family::Barrier => "barrier",
            Family::Fcollect => "fcollect",
            Family::Reduce => "reduce",
        }
    }

    fn parse(name: &str) -> Result<Family> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .with_context(|| {
                let all: Vec<_> = Family::ALL.iter().map(|f| f.name()).collect();
                format!("unknown row {name:?}: use some of {}", all.join(","))
            })
    }

    /// The unit of the printed value, and how the value follows from the median time.
    fn unit(self) -> Unit {
        match self {
            Family::PutBw | Family::GetBw => Unit::GigabytesPerSecond,
            Family::AmoTput => Unit::MegaopsPerSecond,
            _ => Unit::Microseconds,
        }
    }

    /// Whether the kernel waits for other PEs, so all its blocks must be resident at once.
    fn cooperative(self) -> bool {
        matches!(
            self,
            Family::PingPong | Family::Barrier | Family::Fcollect | Family::Reduce
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    /// `bytes * iters / time`.
    GigabytesPerSecond,
    /// `time / iters`: one iteration.
    Microseconds,
    /// `threads * iters / time`.
    MegaopsPerSecond,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::GigabytesPerSecond => "GB/s",
            Unit::Microseconds => "us",
            Unit::MegaopsPerSecond => "Mops/s",
        }
    }
}

/// Bytes a GPU bandwidth case spreads its iterations over, in the source and again in the
/// destination (`rotating_copy` in `testing/kernels/perftest`): repeating one transfer let caches
/// answer it (gets of 256 KiB – 4 MiB beat the NVLink rate several times over). 256 MiB is 5
/// times an H200's 50 MB L2 and far beyond its L1s, and no more heap than the largest size
/// needs anyway.
const GPU_WINDOW: u64 = 256 << 20;

/// The simulator's window: a few slots of its small sizes, so that a partial window, a wrap
/// and a single slot are all checked.
const SIM_WINDOW: u64 = 5000;

/// Slots start at multiples of this: each has slot 0's alignment, and no cache line holds
/// bytes of two slots.
const SLOT_ALIGN: u64 = 256;

/// Bytes from one slot's start to the next for transfers of `bytes` bytes.
fn slot_stride(bytes: u64) -> u64 {
    bytes.next_multiple_of(SLOT_ALIGN)
}

/// One measurement. `arg` is the family's size argument: bytes (bandwidth, ping-pong), chain
/// length (`g_lat`), elements per PE (collectives), 1 for "same word" (`amo_tput`). `slots`:
/// a bandwidth case's iteration `i` moves `arg` bytes at offset `(i % slots) * stride()` of
/// source and destination; 1 for the other rows.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Case {
    family: Family,
    row: String,
    param: u64,
    grid: u32,
    block: u32,
    iters: u32,
    arg: u64,
    slots: u32,
    reps: u32,
}

impl Case {
    /// Bytes from one slot's start to the next.
    fn stride(&self) -> u64 {
        slot_stride(self.arg)
    }

    /// Bytes of source and of destination the case touches: all its slots.
    fn span(&self) -> u64 {
        self.stride() * u64::from(self.slots)
    }

    fn config(&self) -> LaunchConfig {
        let cfg = LaunchConfig::new(self.grid, self.block);
        if self.family.cooperative() {
            cfg.cooperative()
        } else {
            cfg
        }
    }

    /// The value printed for a median launch time.
    fn value(&self, median: Duration) -> f64 {
        let (iters, secs) = (f64::from(self.iters), median.as_secs_f64());
        match self.family.unit() {
            Unit::GigabytesPerSecond => self.arg as f64 * iters / secs / 1e9,
            Unit::Microseconds => secs / iters * 1e6,
            Unit::MegaopsPerSecond => {
                f64::from(self.grid) * f64::from(self.block) * iters / secs / 1e6
            }
        }
    }

    /// The line `scripts/cuda/perftest.cu` reads.
    fn plan_line(&self) -> String {
        format!(
            "PLAN,{},{},{},{},{},{},{},{},{}",
            self.family.name(),
            self.row,
            self.param,
            self.grid,
            self.block,
            self.iters,
            self.arg,
            self.slots,
            self.reps
        )
    }
}

/// The cases of `families` for a backend: GPU sizes follow NVSHMEM's perftests; simulator
/// sizes are small and not multiples of vector widths (correctness, not speed).
fn plan(gpu: bool, families: &[Family], reps: u32) -> Vec<Case> {
    // The GPU setting or the simulator's.
    macro_rules! pick {
        ($gpu:expr, $sim:expr) => {
            if gpu {
                $gpu
            } else {
                $sim
            }
        };
    }
    let window = pick!(GPU_WINDOW, SIM_WINDOW);
    let mut cases = Vec::new();
    let mut add = |family: Family, row: String, param: u64, grid, block, iters, arg: u64| {
        let slots = match family {
            // As many slots as fit the window, at least one (a size beyond it uses offset 0).
            Family::PutBw | Family::GetBw => {
                (window / slot_stride(arg)).clamp(1, u32::MAX.into()) as u32
            }
            _ => 1,
        };
        cases.push(Case {
            family,
            row,
            param,
            grid,
            block,
            iters,
            arg,
            slots,
            reps,
        })
    };
    for &f in families {
        let name = f.name();
        match f {
            Family::PutBw | Family::GetBw => {
                // Simulator: 4 slots for 3 iterations, 2 slots wrapped, 1 slot.
                let sizes: Vec<u64> = pick!(
                    (0..9).map(|i| 4096u64 << (2 * i)).collect(),
                    vec![1000, 1800, 4099]
                );
                for ctas in pick!(vec![8, 32, 132], vec![1, 2]) {
                    for &size in &sizes {
                        // Enough bytes per launch that the launch itself does not count.
                        let iters = pick!((512u64 << 20).div_ceil(size).clamp(4, 20_000) as u32, 3);
                        let row = format!("{name}_{ctas}ctas");
                        add(f, row, size, ctas, pick!(512, 64), iters, size);
                    }
                }
            }
            Family::PLat => add(f, name.into(), 8, 1, 1, pick!(10_000, 4), 0),
            // A chain longer than the iteration count: no entry is read twice in a launch, so
            // no cache on the reading GPU can answer (NVSHMEM's `g` is a plain load).
            Family::GLat => add(f, name.into(), 4, 1, 1, pick!(10_000, 4), pick!(10_007, 37)),
            Family::AmoLat => add(f, name.into(), 8, 1, 1, pick!(10_000, 4), 0),
            Family::AmoTput => {
                let (grid, block) = pick!((32, 256), (2, 32));
                for (mode, same) in [("distinct", 0), ("same", 1)] {
                    let row = format!("{name}_{mode}");
                    let threads = u64::from(grid * block);
                    add(f, row, threads, grid, block, pick!(100, 3), same);
                }
            }
            Family::PingPong => {
                for bytes in pick!(vec![8, 4096, 65536], vec![8, 1000]) {
                    add(
                        f,
                        name.into(),
                        bytes,
                        1,
                        pick!(128, 32),
                        pick!(2000, 3),
                        bytes,
                    );
                }
            }
            Family::Barrier => add(f, "barrier_all".into(), 1, 1, 1, pick!(2000, 3), 0),
            Family::Fcollect | Family::Reduce => {
                let row = if f == Family::Reduce {
                    "reduce_sum".into()
                } else {
                    name.to_string()
                };
                // 256 threads: NVSHMEM's collectives, fully inlined, take 255 registers per
                // thread, so a block of 512 would not fit an SM's 64K registers.
                for n in pick!(vec![2, 256, 16384, 262144], vec![3, 37]) {
                    add(f, row.clone(), n * 4, 1, pick!(256, 32), pick!(200, 2), n);
                }
            }
        }
    }
    cases
}

struct Options {
    families: Vec<Family>,
    reps: u32,
    /// `--plan gpu|sim`: print that backend's plan and exit.
    plan_for: Option<Backend>,
}

impl Options {
    fn parse() -> Result<Self> {
        let mut o = Options {
            families: Family::ALL.to_vec(),
            reps: 5,
            plan_for: None,
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().with_context(|| format!("{a} needs a value"));
            match a.as_str() {
                "--rows" => {
                    o.families = value()?
                        .split(',')
                        .map(|r| Family::parse(r.trim()))
                        .collect::<Result<_>>()?
                }
                "--reps" => {
                    let v = value()?;
                    o.reps = v
                        .parse()
                        .ok()
                        .filter(|&r| r >= 1)
                        .with_context(|| format!("--reps takes a count >= 1, not {v:?}"))?
                }
                "--plan" => {
                    o.plan_for = Some(match value()?.as_str() {
                        "gpu" => Backend::Gpu,
                        "sim" => Backend::Sim,
                        other => bail!("--plan takes gpu or sim, not {other:?}"),
                    })
                }
                other => {
                    bail!("unknown argument {other:?}: use --rows A,B --reps N --plan gpu|sim")
                }
            }
        }
        Ok(o)
    }
}

/// xorshift64* seeded per PE: every PE can regenerate any PE's data from the job's seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, pe: usize) -> Self {
        // splitmix64 of (seed, pe): distinct, well-mixed, never zero in practice.
        let mut z = seed ^ (pe as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 56) as u8).collect()
    }

    fn u64s(&mut self, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.next()).collect()
    }

    fn i32s(&mut self, n: usize) -> Vec<i32> {
        (0..n).map(|_| (self.next() >> 32) as i32).collect()
    }

    /// A random permutation of `0..n` that is one single cycle (Sattolo's algorithm), so a
    /// chase from any entry visits all of them.
    fn cycle(&mut self, n: usize) -> Vec<u32> {
        let mut p: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            let j = (self.next() % i as u64) as usize;
            p.swap(i, j);
        }
        p
    }
}

/// `u32`s between consecutive `g_lat` chain entries (8 KiB): the 10 007 entries of the GPU
/// case span 82 MB, more than the 50 MB L2, and no two share a cache line. Packed (40 KB), the
/// chain was served from cache after its first lines and `g_lat` read 0.13 µs, a seventh of a
/// remote atomic's round trip.
const CHAIN_STRIDE: usize = 2048;

/// The cycle `next` laid out [`CHAIN_STRIDE`] apart: entry `i` at `i * CHAIN_STRIDE` holds the
/// position of entry `next[i]`; the gaps hold `u32::MAX`, which no walk reads.
fn spread_chain(next: &[u32]) -> Vec<u32> {
    let mut chain = vec![u32::MAX; next.len() * CHAIN_STRIDE];
    for (i, &n) in next.iter().enumerate() {
        chain[i * CHAIN_STRIDE] = n * CHAIN_STRIDE as u32;
    }
    chain
}

const POISON: u8 = 0xA5;
const POISON_U64: u64 = u64::from_ne_bytes([POISON; 8]);
const POISON_I32: i32 = i32::from_ne_bytes([POISON; 4]);
/// Poisoned elements after every destination, to catch writes past the end.
const GUARD: usize = 64;

/// `first + (first + 1) + ... + (first + count - 1)`, wrapping like the device's `u64` adds.
fn arith_sum(first: u64, count: u64) -> u64 {
    // count * (count - 1) / 2 without overflow: halve the even factor first.
    let tail = if count % 2 == 0 {
        (count / 2).wrapping_mul(count.wrapping_sub(1))
    } else {
        ((count - 1) / 2).wrapping_mul(count)
    };
    first.wrapping_mul(count).wrapping_add(tail)
}

/// `v` with 4 significant digits and no exponent (GPU rates are hundreds, simulator rates
/// thousandths).
fn sig4(v: f64) -> String {
    let decimals = if v > 0.0 && v.is_finite() {
        (3 - v.log10().floor() as i32).clamp(0, 12) as usize
    } else {
        3
    };
    format!("{v:.decimals$}")
}

/// Fails unless `got` is `want` followed by poison only.
fn check_poisoned<T: PartialEq + Copy + std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &[T],
    poison: T,
) -> Result<()> {
    ensure!(got.len() >= want.len(), "{what}: buffer too short");
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        bail!(
            "{what}: element {i} is {:?}, expected {:?}",
            got[i],
            want[i]
        );
    }
    if let Some(i) = (want.len()..got.len()).find(|&i| got[i] != poison) {
        bail!("{what}: wrote past the end (element {i})");
    }
    Ok(())
}

/// One PE's benchmark state.
struct Bench<'s> {
    shmem: &'s Shmem,
    /// The perftest's image.
    module: Module<'s>,
    seed: u64,
    me: usize,
}

impl<'s> Bench<'s> {
    fn rng(&self, pe: usize) -> Rng {
        Rng::new(self.seed, pe)
    }

    /// Runs `launch` once (the warm-up) and waits for every PE, so the caller can check.
    fn warm_up(&self, launch: &mut impl FnMut() -> rshmem::Result<()>) -> Result<()> {
        launch()?;
        self.shmem.barrier_all()?;
        Ok(())
    }

    /// The median of `case.reps` timed launches, each after `reset` and a host barrier (so
    /// every PE starts together); returns after a last barrier.
    fn median(
        &self,
        case: &Case,
        mut reset: impl FnMut() -> Result<()>,
        mut launch: impl FnMut() -> rshmem::Result<()>,
    ) -> Result<f64> {
        let mut times = Vec::with_capacity(case.reps as usize);
        for _ in 0..case.reps {
            reset()?;
            self.shmem.barrier_all()?;
            times.push(self.shmem.time(&mut launch)?);
        }
        // Peers may still be writing into this PE: wait for them before anyone resets data.
        self.shmem.barrier_all()?;
        times.sort();
        Ok(case.value(times[times.len() / 2]))
    }

    /// Runs the cases of one family (all of `cases`), returning one value per case.
    fn run(&self, family: Family, cases: &[Case]) -> Result<Vec<f64>> {
        match family {
            Family::PutBw | Family::GetBw => self.bandwidth(family == Family::GetBw, cases),
            Family::PLat => self.p_lat(cases),
            Family::GLat => self.g_lat(cases),
            Family::AmoLat => self.amo_lat(cases),
            Family::AmoTput => self.amo_tput(cases),
            Family::PingPong => self.pingpong(cases),
            Family::Barrier => self.barrier(cases),
            Family::Fcollect | Family::Reduce => self.collective(family, cases),
        }
    }

    /// Put: PE 0's data into PE 1's `dst`; get: PE 1's data into PE 0's `dst`. Each PE's
    /// source holds its own data, so reading the wrong PE shows. The warm-up's iterations
    /// fill the case's first `min(iters, slots)` slots; the check covers the whole buffer.
    fn bandwidth(&self, get: bool, cases: &[Case]) -> Result<Vec<f64>> {
        let (shmem, me) = (self.shmem, self.me);
        let len = cases.iter().map(|c| c.span() as usize).max().unwrap_or(0);
        let src = shmem.alloc_from(&self.rng(me).bytes(len))?;
        let poison = vec![POISON; len + GUARD];
        let mut dst = shmem.alloc_from(&poison)?;
        let (checker, sender) = if get { (0, 1) } else { (1, 0) };
        let sent = self.rng(sender).bytes(len);
        let (dst_ptr, src_ptr) = (dst.as_mut_ptr(), src.as_ptr());
        let mut values = Vec::new();
        for case in cases {
            let (size, stride) = (case.arg as usize, case.stride() as usize);
            if me == checker {
                dst.copy_from_host(&poison)?;
            }
            shmem.barrier_all()?;
            let args = (
                dst_ptr,
                src_ptr,
                case.arg,
                case.stride(),
                case.slots,
                case.iters,
                0,
                1,
            );
            let mut launch = || {
                // SAFETY: src and dst are symmetric with `span()` bytes or more, all that the
                // case's slots cover; the kernel reads src on one PE and writes dst on one PE.
                unsafe {
                    if get {
                        self.module
                            .launch::<perftest::get_bw_rotating>(case.config(), args)
                    } else {
                        self.module
                            .launch::<perftest::put_bw_rotating>(case.config(), args)
                    }
                }
            };
            self.warm_up(&mut launch)?;
            if me == checker {
                // Written slots hold the sender's bytes at the same offsets; the gaps between
                // them, the slots not reached and everything after stay poison.
                let mut want = vec![POISON; case.span() as usize];
                for slot in 0..case.slots.min(case.iters) as usize {
                    let at = slot * stride;
                    want[at..at + size].copy_from_slice(&sent[at..at + size]);
                }
                let what = format!("{} {size} B, PE {checker}", case.row);
                check_poisoned(&what, &dst.to_vec()?, &want, POISON)?;
            }
            values.push(self.median(case, || Ok(()), launch)?);
        }
        Ok(values)
    }

    fn p_lat(&self, cases: &[Case]) -> Result<Vec<f64>> {
        let mut dst = self.shmem.alloc_from(&[POISON_U64])?;
        let dst_ptr = dst.as_mut_ptr();
        let base = self.rng(0).next();
        let mut values = Vec::new();
        for case in cases {
            dst.copy_from_host(&[POISON_U64])?;
            self.shmem.barrier_all()?;
            let mut launch = || {
                // SAFETY: dst is a symmetric u64; PE 0 writes it on PE 1.
                unsafe {
                    self.module
                        .launch::<perftest::p_lat>(case.config(), (dst_ptr, base, case.iters, 0, 1))
                }
            };
            self.warm_up(&mut launch)?;
            if self.me == 1 {
                let want = base.wrapping_add(u64::from(case.iters) - 1);
                check_poisoned("p_lat, PE 1", &dst.to_vec()?, &[want], POISON_U64)?;
            }
            values.push(self.median(case, || Ok(()), launch)?);
        }
        Ok(values)
    }

    fn g_lat(&self, cases: &[Case]) -> Result<Vec<f64>> {
        let mut values = Vec::new();
        for case in cases {
            let len = case.arg as usize;
            let chain = self
                .shmem
                .alloc_from(&spread_chain(&self.rng(self.me).cycle(len)))?;
            let mut out = self.shmem.alloc_from(&[u32::MAX])?;
            let (chain_ptr, out_ptr) = (chain.as_ptr(), out.as_mut_ptr());
            let mut launch = || {
                // SAFETY: chain is symmetric and holds indices into itself on every PE; out is
                // one u32 on PE 0.
                unsafe {
                    self.module.launch::<perftest::g_lat>(
                        case.config(),
                        (chain_ptr, case.iters, 0, 1, out_ptr),
                    )
                }
            };
            self.warm_up(&mut launch)?;
            if self.me == 0 {
                let peer = spread_chain(&self.rng(1).cycle(len));
                let want = (0..case.iters).fold(0u32, |at, _| peer[at as usize]);
                check_poisoned("g_lat, PE 0", &out.to_vec()?, &[want], u32::MAX)?;
            }
            values.push(self.median(case, || Ok(()), launch)?);
        }
        Ok(values)
    }

    fn amo_lat(&self, cases: &[Case]) -> Result<Vec<f64>> {
        let start = self.rng(self.me).next();
        let mut ctr = self.shmem.alloc_from(&[start])?;
        let mut out = self.shmem.alloc_from(&[POISON_U64])?;
        let (ctr_ptr, out_ptr) = (ctr.as_mut_ptr(), out.as_mut_ptr());
        let mut values = Vec::new();
        for case in cases {
            ctr.copy_from_host(&[start])?;
            out.copy_from_host(&[POISON_U64])?;
            self.shmem.barrier_all()?;
            let mut launch = || {
                // SAFETY: ctr is a symmetric u64 (PE 0 updates PE 1's); out is one u64 on PE 0.
                unsafe {
                    self.module.launch::<perftest::amo_lat>(
                        case.config(),
                        (ctr_ptr, case.iters, 0, 1, out_ptr),
                    )
                }
            };
            self.warm_up(&mut launch)?;
            // Replay the chain of increments from PE 1's starting value.
            let (mut value, mut add, mut old) = (self.rng(1).next(), 1u64, 0u64);
            for _ in 0..case.iters {
                old = value;
                value = value.wrapping_add(add);
                add = (old & 1) + 1;
            }
            match self.me {
                0 => check_poisoned("amo_lat result, PE 0", &out.to_vec()?, &[old], POISON_U64)?,
                1 => check_poisoned("amo_lat counter, PE 1", &ctr.to_vec()?, &[value], 0)?,
                _ => {}
            }
            values.push(self.median(case, || Ok(()), launch)?);
        }
        Ok(values)
    }

    fn amo_tput(&self, cases: &[Case]) -> Result<Vec<f64>> {
        let threads = cases
            .iter()
            .map(|c| (c.grid * c.block) as usize)
            .max()
            .unwrap_or(0);
        let init = self.rng(self.me).u64s(threads);
        let peer_init = self.rng(1).u64s(threads);
        let mut words = self.shmem.alloc_from(&init)?;
        let poison = vec![POISON_U64; threads];
        let mut sums = self.shmem.alloc_from(&poison)?;
        let (words_ptr, sums_ptr) = (words.as_mut_ptr(), sums.as_mut_ptr());
        let mut values = Vec::new();
        for case in cases {
            let n = (case.grid * case.block) as usize;
            let (iters, same) = (u64::from(case.iters), case.arg != 0);
            words.copy_from_host(&init)?;
            sums.copy_from_host(&poison)?;
            self.shmem.barrier_all()?;
            let mut launch = || {
                // SAFETY: words and sums are symmetric with one u64 per thread of the grid.
                unsafe {
                    self.module.launch::<perftest::amo_tput>(
                        case.config(),
                        (words_ptr, case.arg as u32, case.iters, 0, 1, sums_ptr),
                    )
                }
            };
            self.warm_up(&mut launch)?;
            let what = format!("{}, PE {}", case.row, self.me);
            match (self.me, same) {
                (1, _) => {
                    let mut want = peer_init.clone();
                    if same {
                        want[0] = want[0].wrapping_add(iters * n as u64);
                    } else {
                        want[..n]
                            .iter_mut()
                            .for_each(|w| *w = w.wrapping_add(iters));
                    }
                    check_poisoned(&what, &words.to_vec()?, &want, 0)?;
                }
                (0, false) => {
                    let want: Vec<u64> = peer_init[..n]
                        .iter()
                        .map(|&w| arith_sum(w, iters))
                        .collect();
                    check_poisoned(&what, &sums.to_vec()?, &want, POISON_U64)?;
                }
                (0, true) => {
                    // The old values are init, init + 1, ... in some order across threads.
                    let got = sums.to_vec()?;
                    let total = got[..n].iter().fold(0u64, |a, &s| a.wrapping_add(s));
                    ensure!(
                        total == arith_sum(peer_init[0], iters * n as u64),
                        "{what}: the fetched values do not add up"
                    );
                }
                _ => {}
            }
            values.push(self.median(case, || Ok(()), launch)?);
        }
        Ok(values)
    }

    fn pingpong(&self, cases: &[Case]) -> Result<Vec<f64>> {
        let max = cases.iter().map(|c| c.arg as usize).max().unwrap_or(0);
        let src = self.shmem.alloc_from(&self.rng(self.me).bytes(max))?;
        let poison = vec![POISON; max + GUARD];
        let mut mid = self.shmem.alloc_from(&poison)?;
        let mut back = self.shmem.alloc_from(&poison)?;
        let mut sig = self.shmem.alloc_zeroed::<u64>(1)?;
        let sent = self.rng(0).bytes(max);
        let (src_ptr, mid_ptr, back_ptr) = (src.as_ptr(), mid.as_mut_ptr(), back.as_mut_ptr());
        let sig_ptr = sig.as_mut_ptr();
        let mut values = Vec::new();
        for case in cases {
            let size = case.arg as usize;
            mid.copy_from_host(&poison)?;
            back.copy_from_host(&poison)?;
            sig.copy_from_host(&[0])?;
            self.shmem.barrier_all()?;
            let mut launch = || {
                // SAFETY: all buffers are symmetric with at least `size` bytes, `sig` is 0 on
                // both PEs (reset before every launch), and both PEs launch.
                unsafe {
                    self.module.launch::<perftest::pingpong>(
                        case.config(),
                        (src_ptr, mid_ptr, back_ptr, case.arg, sig_ptr, case.iters),
                    )
                }
            };
            self.warm_up(&mut launch)?;
            let what = format!("pingpong {size} B, PE {}", self.me);
            match self.me {
                0 => check_poisoned(&what, &back.to_vec()?, &sent[..size], POISON)?,
                1 => check_poisoned(&what, &mid.to_vec()?, &sent[..size], POISON)?,
                _ => {}
            }
            values.push(self.median(case, || Ok(sig.copy_from_host(&[0])?), launch)?);
        }
        Ok(values)
    }

    fn barrier(&self, cases: &[Case]) -> Result<Vec<f64>> {
        let mut values = Vec::new();
        for case in cases {
            let mut launch = || {
                // SAFETY: collective; every PE launches it.
                unsafe {
                    self.module
                        .launch::<perftest::barrier_lat>(case.config(), (case.iters,))
                }
            };
            self.warm_up(&mut launch)?;
            values.push(self.median(case, || Ok(()), launch)?);
        }
        Ok(values)
    }

    /// fcollect: `dest` holds every PE's `src` in PE order; reduce: the element-wise sum.
    fn collective(&self, family: Family, cases: &[Case]) -> Result<Vec<f64>> {
        let npes = self.shmem.n_pes();
        let max = cases.iter().map(|c| c.arg as usize).max().unwrap_or(0);
        let all: Vec<Vec<i32>> = (0..npes).map(|pe| self.rng(pe).i32s(max)).collect();
        let src = self.shmem.alloc_from(&all[self.me])?;
        let dest_len = if family == Family::Fcollect {
            max * npes
        } else {
            max
        };
        let poison = vec![POISON_I32; dest_len + GUARD];
        let mut dest = self.shmem.alloc_from(&poison)?;
        let (dest_ptr, src_ptr) = (dest.as_mut_ptr(), src.as_ptr());
        let mut values = Vec::new();
        for case in cases {
            let n = case.arg as usize;
            dest.copy_from_host(&poison)?;
            self.shmem.barrier_all()?;
            let mut launch = || {
                // SAFETY: collective over every PE; src holds `n` and dest `n * npes` (fcollect)
                // or `n` (reduce) symmetric elements.
                unsafe {
                    let args = (dest_ptr, src_ptr, case.arg, case.iters);
                    if family == Family::Fcollect {
                        self.module
                            .launch::<perftest::fcollect_lat>(case.config(), args)
                    } else {
                        self.module
                            .launch::<perftest::reduce_lat>(case.config(), args)
                    }
                }
            };
            self.warm_up(&mut launch)?;
            let want: Vec<i32> = if family == Family::Fcollect {
                all.iter().flat_map(|s| s[..n].iter().copied()).collect()
            } else {
                (0..n)
                    .map(|k| all.iter().fold(0i32, |a, s| a.wrapping_add(s[k])))
                    .collect()
            };
            let what = format!("{} {n} elements, PE {}", case.row, self.me);
            check_poisoned(&what, &dest.to_vec()?, &want, POISON_I32)?;
            values.push(self.median(case, || Ok(()), launch)?);
        }
        Ok(values)
    }
}

/// Where each family's data is checked (`None`: it moves none), for the message PE 0 prints
/// once every PE passed.
fn checked_where(family: Family) -> Option<&'static str> {
    match family {
        Family::PutBw | Family::PLat => Some("on PE 1"),
        Family::GetBw | Family::GLat => Some("on PE 0"),
        Family::AmoLat | Family::AmoTput | Family::PingPong => Some("on PEs 0 and 1"),
        Family::Fcollect | Family::Reduce => Some("on every PE"),
        Family::Barrier => None,
    }
}

fn main() -> Result<()> {
    let opts = Options::parse()?;
    if let Some(backend) = opts.plan_for {
        for case in plan(backend == Backend::Gpu, &opts.families, opts.reps) {
            println!("{}", case.plan_line());
        }
        return Ok(());
    }
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let npes = shmem.n_pes();
        ensure!(
            npes >= 2,
            "perftest needs at least 2 PEs (RSHMEM_NPES=2 or more)"
        );
        let gpu = shmem.backend() == Backend::Gpu;
        let cases = plan(gpu, &opts.families, opts.reps);
        let me = shmem.my_pe();
        let shipped = shmem.load(&rshmem_examples_image::IMAGE)?;
        let module = shmem.load(&perftest::IMAGE)?;
        let seed = share_seed(shmem, &shipped)?;
        let bench = Bench {
            shmem,
            module,
            seed,
            me,
        };
        if me == 0 {
            println!("{}", header(npes));
            if !gpu {
                println!("CPU simulator: tiny sizes and iteration counts, correctness only");
            }
        }
        let mut results = Vec::new();
        for &family in &opts.families {
            let mine: Vec<Case> = cases
                .iter()
                .filter(|c| c.family == family)
                .cloned()
                .collect();
            // `{e:#}`: the whole chain, as the runtime reports only the error's top line.
            let values = bench
                .run(family, &mine)
                .map_err(|e| anyhow!("row {}: {e:#}", family.name()))?;
            // A failed check on any PE ends the job before this barrier returns.
            shmem.barrier_all()?;
            if me == 0 {
                for (case, &v) in mine.iter().zip(&values) {
                    let unit = family.unit().name();
                    println!("PT,{},{},{},{unit}", case.row, case.param, sig4(v));
                }
                let cases = match mine.len() {
                    1 => "1 case".to_string(),
                    n => format!("{n} cases"),
                };
                match checked_where(family) {
                    None => println!("check ok: {} ({cases}, no data moved)", family.name()),
                    Some(at) => println!(
                        "check ok: {} ({cases}, data verified {at} over poisoned destinations)",
                        family.name()
                    ),
                }
            }
            results.extend(mine.into_iter().zip(values));
        }
        if me == 0 {
            print_table(&results);
            if !gpu {
                println!(
                    "(CPU simulator: the data was checked; the numbers say nothing about GPUs)"
                );
            }
        }
        Ok(())
    })?;
    Ok(())
}

/// What runs where, printed first (`scripts/cuda/perftest.cu` prints the same line).
fn header(npes: usize) -> String {
    let idle = if npes > 2 { ", the others idle" } else { "" };
    format!(
        "perftest on {npes} PEs: point-to-point rows (put_bw, get_bw, p_lat, g_lat, amo_lat, \
         amo_tput, pingpong) between PE 0 and PE 1{idle}; barrier_all, fcollect and reduce_sum \
         over all {npes} PEs"
    )
}

/// Fresh data every run: PE 0 picks the seed, the others read it from PE 0 with a remote get.
fn share_seed(shmem: &Shmem, module: &Module<'_>) -> Result<u64> {
    let mut buf = shmem.alloc_zeroed::<i32>(2)?;
    if shmem.my_pe() == 0 {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
        buf.copy_from_host(&[now.subsec_nanos() as i32 ^ now.as_secs() as i32, 0])?;
    }
    shmem.barrier_all()?;
    // SAFETY: `buf` is symmetric with 2 i32s: element 0 is read from PE 0 into element 1.
    unsafe {
        module.launch::<hello::hello_read>(
            LaunchConfig::new(1, 1),
            (buf.as_ptr(), 0, 0, buf.as_mut_ptr().wrapping_add(1)),
        )?
    };
    Ok(buf.to_vec()?[1] as u32 as u64)
}

fn print_table(results: &[(Case, f64)]) {
    println!(
        "\n{:<22} {:>10} {:>12} {:<7} {:>10} {:>7}",
        "row", "param", "value", "unit", "grid", "iters"
    );
    for (case, v) in results {
        println!(
            "{:<22} {:>10} {:>12} {:<7} {:>10} {:>7}",
            case.row,
            case.param,
            sig4(*v),
            case.family.unit().name(),
            format!("{}x{}", case.grid, case.block),
            case.iters
        );
    }
}
