//! The CPU simulator end to end: the shipped kernels and kernels defined here, run through
//! the public host API (`rshmem_host::run`) with `RSHMEM_BACKEND=sim`, on 1 to 4 PEs.
//!
//! `run` reads the PE count from `RSHMEM_NPES`, so the tests of this file take turns (a lock)
//! to set it. Every run has a deadline, so a hang fails the test instead of stalling CI.

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, ensure};
use rshmem_device::prelude::*;
use rshmem_host::{Error, KernelImage, LaunchConfig, Shmem};

// ---------------------------------------------------------------------------------------
// Test kernels

/// Moves `bytes` bytes between this PE and its right neighbour, split into one chunk per
/// thread, warp or block (`scope` 0, 1, 2). `op`: 0 putmem, 1 putmem_nbi, 2 getmem,
/// 3 getmem_nbi. Puts go from local `src` to the neighbour's `dst`; gets fetch the
/// neighbour's `src` into local `dst`.
///
/// # Safety
///
/// `dst` and `src` are symmetric and hold `bytes` bytes on every PE; launched on every PE.
#[kernel]
pub unsafe fn rma_chunks(dst: *mut u8, src: *const u8, bytes: u64, scope: u32, op: u32) {
    let right = (shmem::my_pe() + 1) % shmem::n_pes();
    let warps_per_block = thread::block_dim_x().div_ceil(32);
    let (unit, units) = match scope {
        0 => (thread::index_1d(), thread::grid_size_1d()),
        1 => (
            thread::block_idx_x() * warps_per_block + thread::thread_idx_x() / 32,
            thread::grid_dim_x() * warps_per_block,
        ),
        _ => (thread::block_idx_x(), thread::grid_dim_x()),
    };
    let chunk = bytes.div_ceil(units as u64);
    let start = (unit as u64 * chunk).min(bytes);
    let len = chunk.min(bytes - start) as usize;
    if len == 0 {
        return;
    }
    let (d, s) = (dst.add(start as usize), src.add(start as usize));
    match scope {
        0 => rma_in::<Thread>(op, d, s, len, right),
        1 => rma_in::<Warp>(op, d, s, len, right),
        _ => rma_in::<Block>(op, d, s, len, right),
    }
}

/// One chunk of [`rma_chunks`] at scope `S`.
///
/// # Safety
///
/// `d` and `s` are symmetric and hold `len` bytes on this PE and on `pe`; every thread of
/// the scope calls it alike.
unsafe fn rma_in<S: Scope>(op: u32, d: *mut u8, s: *const u8, len: usize, pe: i32) {
    match op {
        0 => shmem::putmem::<S>(d, s, len, pe),
        1 => shmem::putmem_nbi::<S>(d, s, len, pe),
        2 => shmem::getmem::<S>(d, s, len, pe),
        _ => shmem::getmem_nbi::<S>(d, s, len, pe),
    }
    if op % 2 == 1 {
        shmem::quiet();
    }
}

/// Each thread passes values around its block `rounds` times through `scratch`, with
/// `sync_threads` between writes and reads; `out[i]` ends as
/// `block_start + (t + rounds) % block_dim`.
///
/// # Safety
///
/// `scratch` and `out` hold one `u32` per thread of the grid.
#[kernel]
pub unsafe fn rotate(scratch: *mut u32, out: *mut u32, rounds: u32) {
    let (t, bd) = (thread::thread_idx_x(), thread::block_dim_x());
    let base = (thread::block_idx_x() * bd) as usize;
    let mut v = thread::index_1d();
    for _ in 0..rounds {
        *scratch.add(base + t as usize) = v;
        thread::sync_threads();
        v = *scratch.add(base + ((t + 1) % bd) as usize);
        thread::sync_threads();
    }
    *out.add(base + t as usize) = v;
}

/// Threads below `leave` return early; the rest wait in `sync_threads`: a divergent barrier.
///
/// # Safety
///
/// None beyond a launch's; it exists to be refused (the barrier is divergent).
#[kernel]
pub unsafe fn diverge(leave: u32) {
    if thread::thread_idx_x() < leave {
        return;
    }
    thread::sync_threads();
}

/// Thread 3 of block 1 writes `buf[index]` on PE `pe`, by `p` (`how` 0), `g` (1) or a
/// byte-shifted, misaligned `p` (2).
///
/// # Safety
///
/// `buf` is a symmetric buffer. `index`, `pe` and `how` may aim outside it or misalign the
/// access: those are the accesses the simulator must refuse, and only it may run them.
#[kernel]
pub unsafe fn poke(buf: *mut i32, index: u32, pe: i32, how: u32) {
    if thread::block_idx_x() != 1 || thread::thread_idx_x() != 3 {
        return;
    }
    let at = buf.wrapping_add(index as usize);
    match how {
        0 => shmem::p(at, 7, pe),
        1 => {
            let _ = shmem::g(at.cast_const(), pe);
        }
        _ => shmem::p(at.cast::<u8>().wrapping_add(1).cast::<i32>(), 7, pe),
    }
}

/// Thread 0 waits in a device-side barrier over all PEs.
///
/// # Safety
///
/// Launched on every PE (else it waits for the missing ones).
#[kernel]
pub unsafe fn wait_all() {
    if thread::index_1d() == 0 {
        shmem::barrier_all::<Thread>();
    }
}

/// Every PE puts its id into its right neighbour's `dst[0]`, synchronising with
/// `barrier_all` at scope `scope` (0 thread, 1 warp, 2 block) called by block 0.
///
/// # Safety
///
/// `dst` is symmetric and holds one `i32`; launched on every PE.
#[kernel]
pub unsafe fn ring_scoped(dst: *mut i32, scope: u32) {
    if thread::block_idx_x() != 0 {
        return;
    }
    let (me, n) = (shmem::my_pe(), shmem::n_pes());
    match scope {
        0 => {
            if thread::thread_idx_x() == 0 {
                shmem::p(dst, me, (me + 1) % n);
                shmem::barrier_all::<Thread>();
            }
        }
        1 => {
            if thread::thread_idx_x() < 32 {
                if thread::thread_idx_x() == 0 {
                    shmem::p(dst, me, (me + 1) % n);
                }
                shmem::barrier_all::<Warp>();
            }
        }
        _ => {
            if thread::thread_idx_x() == 0 {
                shmem::p(dst, me, (me + 1) % n);
            }
            shmem::barrier_all::<Block>();
        }
    }
}

/// All threads of the block call `putmem::<Block>`, but thread 5 with a different size.
///
/// # Safety
///
/// `dst` and `src` are symmetric and hold 4 bytes; the mismatch is what must be refused.
#[kernel]
pub unsafe fn block_put_mismatch(dst: *mut u8, src: *const u8) {
    let bytes = if thread::thread_idx_x() == 5 { 3 } else { 4 };
    shmem::putmem::<Block>(dst, src, bytes, shmem::my_pe());
}

/// `dst[i] = src[i] + k` for `i < n`.
///
/// # Safety
///
/// `dst` and `src` hold `n` elements; the grid covers them.
#[kernel]
pub unsafe fn add_into(dst: *mut u32, src: *const u32, n: u32, k: u32) {
    let i = thread::index_1d();
    if i < n {
        *dst.add(i as usize) = *src.add(i as usize) + k;
    }
}

/// `out[0] = view.len()`, `out[1] = view[0]`, `out[2] = view[len - 1]` (bounds-checked).
///
/// # Safety
///
/// `out` holds 3 elements; `view` is not empty.
#[kernel]
pub unsafe fn view_ends(view: rshmem_device::view::SymSlice<u32>, out: *mut u32) {
    if thread::index_1d() == 0 {
        *out = view.len() as u32;
        *out.add(1) = view.read(0);
        *out.add(2) = view.read(view.len() - 1);
    }
}

// ---------------------------------------------------------------------------------------
// Harness

static SHIPPED: KernelImage = KernelImage {
    name: "rshmem-example-kernels",
    nvshmem_version: None,
    kernels: &["hello_fill", "hello_read", "ring", "put_bw"],
    signatures: &[],
    targets: &[],
};

static LOCAL: KernelImage = KernelImage {
    name: "sim-tests",
    nvshmem_version: None,
    kernels: &[
        "rma_chunks",
        "rotate",
        "diverge",
        "poke",
        "wait_all",
        "ring_scoped",
        "block_put_mismatch",
        "add_into",
        "view_ends",
    ],
    signatures: &[],
    targets: &[],
};

static ENV: Mutex<()> = Mutex::new(());

/// Runs `f` on `npes` simulated PEs through `rshmem_host::run`; fails if it takes more
/// than 60 seconds (a hang).
fn on_sim<F>(npes: usize, f: F) -> rshmem_host::Result<()>
where
    F: Fn(&Shmem) -> anyhow::Result<()> + Send + Sync + 'static,
{
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("RSHMEM_BACKEND", "sim");
    std::env::set_var("RSHMEM_NPES", npes.to_string());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(rshmem_host::run(f));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the simulated job hung (no result within 60 s)")
}

/// xorshift64*: fresh test data every run, reproducible from the seed a failure prints.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut r = Self::new(seed);
        (0..n).map(|_| r.next() as u8).collect()
    }
}

fn fresh_seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    t.as_nanos() as u64
}

/// The `KernelFailed` message of `result`, checked to name `kernel` and `pe`.
fn kernel_failure(
    result: rshmem_host::Result<()>,
    kernel: &str,
    pe: usize,
) -> anyhow::Result<String> {
    match result {
        Err(e @ Error::KernelFailed { .. }) => {
            let text = e.to_string();
            let Error::KernelFailed {
                kernel: k,
                pe: p,
                message,
            } = e
            else {
                unreachable!()
            };
            ensure!(k == kernel && p == pe, "wrong kernel or PE in: {text}");
            ensure!(
                text.contains(&format!("`{kernel}`")) && text.contains(&format!("PE {pe}")),
                "{text}"
            );
            Ok(message)
        }
        other => Err(anyhow!(
            "expected KernelFailed from `{kernel}` on PE {pe}, got {other:?}"
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Correct programs

#[test]
fn hello_fills_and_reads_the_neighbour() {
    for npes in [2, 4] {
        on_sim(npes, |shmem| {
            let (me, n) = (shmem.my_pe(), shmem.n_pes());
            let module = shmem.load(&SHIPPED)?;
            let mut buf = shmem.alloc_zeroed::<i32>(300)?;
            let mut out = shmem.alloc_zeroed::<i32>(1)?;
            // SAFETY: `buf` holds 300 ints; the grid covers them; `out` holds one.
            unsafe {
                module.launch::<rshmem_example_kernels::hello::hello_fill>(
                    LaunchConfig::for_num_elems(300, 128),
                    (buf.as_mut_ptr(), 300),
                )?;
            }
            let mine = buf.to_vec()?;
            ensure!(mine
                .iter()
                .enumerate()
                .all(|(i, &v)| v == (me * 1000 + i) as i32));
            shmem.barrier_all()?;
            let from = (me + 1) % n;
            // SAFETY: index 123 is in `buf` on every PE; `from` is a PE.
            unsafe {
                module.launch::<rshmem_example_kernels::hello::hello_read>(
                    LaunchConfig::new(1, 32),
                    (buf.as_ptr(), 123, from as i32, out.as_mut_ptr()),
                )?;
            }
            ensure!(out.to_vec()? == [(from * 1000 + 123) as i32], "PE {me}");
            shmem.barrier_all()?;
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn buffers_and_ranges_are_kernel_arguments() {
    on_sim(1, |shmem| {
        const POISON: u32 = 0xDEAD_BEEF;
        let module = shmem.load(&LOCAL)?;
        let src = shmem.alloc_from(&(0..16).collect::<Vec<u32>>())?;
        let mut dst = shmem.alloc_from(&[POISON; 16])?;
        let cfg = LaunchConfig::new(1, 32);
        // The whole buffers, as `*mut u32` and `*const u32`; the literals infer as u32.
        // SAFETY: both hold 16 elements.
        unsafe { module.launch::<add_into>(cfg, (&mut dst, &src, 16, 1))? };
        ensure!(dst.to_vec()? == (1..17).collect::<Vec<u32>>());
        // Ranges: dst[4..8] = src[10..14] + 100, nothing else written.
        let mut out = dst.range_mut(4..8)?;
        // SAFETY: both ranges hold 4 elements. `&mut out` reborrows the range.
        unsafe { module.launch::<add_into>(cfg, (&mut out, src.range(10..14)?, 4, 100))? };
        // SAFETY: as above, and `out` by value.
        unsafe { module.launch::<add_into>(cfg, (out, src.range(10..)?, 1, 200))? };
        let want: Vec<u32> = (0..16)
            .map(|i| match i {
                4 => 210,
                5..8 => i + 6 + 100,
                _ => i + 1,
            })
            .collect();
        ensure!(dst.to_vec()? == want, "{:?}", dst.to_vec()?);
        // A range as a bounds-checked view: its own length and first element.
        let mut ends = shmem.alloc_zeroed::<u32>(3)?;
        // SAFETY: `ends` holds 3; the view is not empty.
        unsafe { module.launch::<view_ends>(cfg, (src.range(3..9)?, &mut ends))? };
        ensure!(ends.to_vec()? == [6, 3, 8], "{:?}", ends.to_vec()?);
        // SAFETY: as above, the whole buffer.
        unsafe { module.launch::<view_ends>(cfg, (&src, ends.range_mut(..)?))? };
        ensure!(ends.to_vec()? == [16, 0, 15], "{:?}", ends.to_vec()?);
        // A range is checked when made: past the end is an error naming the call.
        let e = dst.range_mut(10..17).unwrap_err().to_string();
        ensure!(
            e.contains("SymBuffer::range_mut") && e.contains("16 elements"),
            "{e}"
        );
        let e = src.range(2..6)?.range(3..5).unwrap_err().to_string();
        ensure!(
            e.contains("SymRange::range") && e.contains("range's 4 elements"),
            "{e}"
        );
        Ok(())
    })
    .unwrap();
}

#[test]
fn ring_passes_ids_to_the_right() {
    for npes in [2, 3, 4] {
        on_sim(npes, |shmem| {
            let (me, n) = (shmem.my_pe(), shmem.n_pes());
            let module = shmem.load(&SHIPPED)?;
            let mut dst = shmem.alloc_from(&[-1i32])?;
            shmem.barrier_all()?;
            // SAFETY: `dst` is symmetric, one int.
            unsafe {
                module.launch::<rshmem_example_kernels::ring::ring>(
                    LaunchConfig::new(1, 32).cooperative(),
                    (dst.as_mut_ptr(),),
                )?;
            }
            ensure!(
                dst.to_vec()? == [((me + n - 1) % n) as i32],
                "PE {me} of {n}"
            );
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn device_barriers_at_every_scope() {
    for scope in 0..3 {
        on_sim(3, move |shmem| {
            let (me, n) = (shmem.my_pe(), shmem.n_pes());
            let module = shmem.load(&LOCAL)?;
            let mut dst = shmem.alloc_from(&[-1i32])?;
            shmem.barrier_all()?;
            // SAFETY: `dst` is symmetric, one int; every PE launches.
            unsafe {
                module.launch::<ring_scoped>(
                    LaunchConfig::new(2, 64).cooperative(),
                    (dst.as_mut_ptr(), scope),
                )?;
            }
            ensure!(
                dst.to_vec()? == [((me + n - 1) % n) as i32],
                "scope {scope}, PE {me}"
            );
            Ok(())
        })
        .unwrap();
    }
}

#[test]
fn putmem_and_getmem_at_every_scope() {
    let seed = fresh_seed();
    for (scope, bytes, offset) in [
        (0, 1, 0),
        (0, 1001, 3),
        (1, 77, 1),
        (1, 4099, 0),
        (2, 13, 5),
        (2, 3333, 3),
    ] {
        for op in 0..4u32 {
            on_sim(3, move |shmem| {
                let (me, n) = (shmem.my_pe(), shmem.n_pes());
                let data =
                    |pe: usize| Rng::bytes(seed ^ ((pe as u64 + 1) << 12) ^ bytes, bytes as usize);
                let module = shmem.load(&LOCAL)?;
                let mut src = shmem.alloc_zeroed::<u8>(bytes as usize + 8)?;
                let mut dst = shmem.alloc_zeroed::<u8>(bytes as usize + 8)?;
                let mut init = vec![0u8; bytes as usize + 8];
                init[offset..offset + bytes as usize].copy_from_slice(&data(me));
                src.copy_from_host(&init)?;
                shmem.barrier_all()?;
                // SAFETY: both buffers hold `offset + bytes` bytes on every PE; 2 blocks of
                // 48 threads (a partial warp each); every thread of a group calls alike.
                unsafe {
                    module.launch::<rma_chunks>(
                        LaunchConfig::new(2, 48),
                        (
                            dst.as_mut_ptr().wrapping_add(offset),
                            src.as_ptr().wrapping_add(offset),
                            bytes,
                            scope,
                            op,
                        ),
                    )?;
                }
                shmem.barrier_all()?;
                let peer = if op < 2 {
                    (me + n - 1) % n
                } else {
                    (me + 1) % n
                };
                let got = dst.to_vec()?;
                ensure!(
                    got[offset..offset + bytes as usize] == data(peer)[..],
                    "scope {scope}, op {op}, {bytes} bytes at +{offset}, PE {me}, seed {seed:#x}"
                );
                ensure!(got[..offset]
                    .iter()
                    .chain(&got[offset + bytes as usize..])
                    .all(|&b| b == 0));
                shmem.barrier_all()?;
                Ok(())
            })
            .unwrap();
        }
    }
}

#[test]
fn put_bw_kernel_moves_the_data() {
    let seed = fresh_seed();
    on_sim(2, move |shmem| {
        let bytes = 10_007usize;
        let module = shmem.load(&SHIPPED)?;
        let src = shmem.alloc_from(&Rng::bytes(seed + shmem.my_pe() as u64, bytes))?;
        let mut dst = shmem.alloc_zeroed::<u8>(bytes)?;
        // SAFETY: both buffers hold `bytes` bytes on both PEs.
        unsafe {
            module.launch::<rshmem_example_kernels::bandwidth::put_bw>(
                LaunchConfig::new(3, 64),
                (dst.as_mut_ptr(), src.as_ptr(), bytes as u64, 2, 0, 1),
            )?;
        }
        shmem.barrier_all()?;
        if shmem.my_pe() == 1 {
            ensure!(dst.to_vec()? == Rng::bytes(seed, bytes), "seed {seed:#x}");
        } else {
            ensure!(dst.to_vec()?.iter().all(|&b| b == 0));
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn sync_threads_orders_the_block() {
    on_sim(1, |shmem| {
        let module = shmem.load(&LOCAL)?;
        let (blocks, bd, rounds) = (3u32, 100u32, 5u32);
        let mut scratch = shmem.alloc_zeroed::<u32>((blocks * bd) as usize)?;
        let mut out = shmem.alloc_zeroed::<u32>((blocks * bd) as usize)?;
        // SAFETY: both buffers cover the grid.
        unsafe {
            module.launch::<rotate>(
                LaunchConfig::new(blocks, bd),
                (scratch.as_mut_ptr(), out.as_mut_ptr(), rounds),
            )?;
        }
        let out = out.to_vec()?;
        for b in 0..blocks {
            for t in 0..bd {
                let want = b * bd + (t + rounds) % bd;
                ensure!(out[(b * bd + t) as usize] == want, "block {b} thread {t}");
            }
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn four_thousand_threads_run_in_seconds() {
    on_sim(2, |shmem| {
        let module = shmem.load(&LOCAL)?;
        let (blocks, bd) = (4u32, 1024u32);
        let mut scratch = shmem.alloc_zeroed::<u32>((blocks * bd) as usize)?;
        let mut out = shmem.alloc_zeroed::<u32>((blocks * bd) as usize)?;
        let start = Instant::now();
        // SAFETY: both buffers cover the grid.
        unsafe {
            module.launch::<rotate>(
                LaunchConfig::new(blocks, bd).cooperative(),
                (scratch.as_mut_ptr(), out.as_mut_ptr(), 3),
            )?;
        }
        let took = start.elapsed();
        ensure!(took < Duration::from_secs(5), "4096 threads took {took:?}");
        let out = out.to_vec()?;
        ensure!(out[5] == 8 && out[1023] == 2 && out[1024 + 1022] == 1024 + 1);
        Ok(())
    })
    .unwrap();
}

// ---------------------------------------------------------------------------------------
// Programs the simulator must reject, clearly and without hanging

#[test]
fn divergent_barrier_is_reported() {
    on_sim(2, |shmem| {
        let module = shmem.load(&LOCAL)?;
        // SAFETY: no pointers.
        let result = unsafe { module.launch::<diverge>(LaunchConfig::new(2, 40), (5,)) };
        let msg = kernel_failure(result, "diverge", shmem.my_pe())?;
        ensure!(
            msg.contains("divergent barrier") && msg.contains("sync_threads"),
            "{msg}"
        );
        ensure!(
            msg.contains("left the kernel") && msg.contains("block ("),
            "{msg}"
        );
        Ok(())
    })
    .unwrap();
}

#[test]
fn bad_remote_accesses_name_kernel_pe_block_and_thread() {
    on_sim(2, |shmem| {
        let me = shmem.my_pe();
        let module = shmem.load(&LOCAL)?;
        let mut buf = shmem.alloc_zeroed::<i32>(4)?;
        let cases: [(u32, i32, u32, &str); 5] = [
            (4, 1, 0, "out of bounds"),
            (3, 1, 1, ""),
            (1000, 0, 1, "not inside any live symmetric allocation"),
            (0, 2, 0, "PE 2 is out of range"),
            (0, 1, 2, "not aligned"),
        ];
        for (index, pe, how, want) in cases {
            // SAFETY: the kernel's accesses are checked by the simulator, which is the test.
            let result = unsafe {
                module.launch::<poke>(LaunchConfig::new(2, 8), (buf.as_mut_ptr(), index, pe, how))
            };
            if want.is_empty() {
                result?;
                continue;
            }
            let msg = kernel_failure(result, "poke", me)?;
            ensure!(msg.contains(want), "{msg}");
            ensure!(msg.contains("block (1, 0, 0), thread (3, 0, 0)"), "{msg}");
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn group_calls_with_different_arguments_are_reported() {
    on_sim(1, |shmem| {
        let module = shmem.load(&LOCAL)?;
        let mut dst = shmem.alloc_zeroed::<u8>(4)?;
        let src = shmem.alloc_from(&[1u8, 2, 3, 4])?;
        // SAFETY: both buffers hold 4 bytes.
        let result = unsafe {
            module.launch::<block_put_mismatch>(
                LaunchConfig::new(1, 16),
                (dst.as_mut_ptr(), src.as_ptr()),
            )
        };
        let msg = kernel_failure(result, "block_put_mismatch", 0)?;
        ensure!(
            msg.contains("shmem::putmem::<Block>") && msg.contains("same arguments"),
            "{msg}"
        );
        ensure!(
            msg.contains("bytes = 3, pe = 0") && msg.contains("bytes = 4, pe = 0"),
            "{msg}"
        );
        Ok(())
    })
    .unwrap();
}

#[test]
fn launch_limits_are_checked_before_running() {
    on_sim(1, |shmem| {
        let module = shmem.load(&LOCAL)?;
        // SAFETY: nothing runs: every launch is refused.
        let too_many = unsafe { module.launch::<diverge>(LaunchConfig::new(9, 1024), (0,)) };
        let msg = too_many.unwrap_err().to_string();
        ensure!(
            msg.contains("9216 threads") && msg.contains("RSHMEM_SIM_MAX_THREADS"),
            "{msg}"
        );
        // SAFETY: as above.
        let wide = unsafe { module.launch::<diverge>(LaunchConfig::new(1, 2048), (0,)) };
        let msg = wide.unwrap_err().to_string();
        ensure!(
            msg.contains("2048 threads") && msg.contains("at most 1024"),
            "{msg}"
        );
        // SAFETY: as above.
        let shared =
            unsafe { module.launch::<diverge>(LaunchConfig::new(1, 1).shared_mem(1 << 20), (0,)) };
        ensure!(matches!(
            shared,
            Err(Error::Launch {
                kernel: "diverge",
                ..
            })
        ));
        Ok(())
    })
    .unwrap();
}

#[test]
fn asymmetric_alloc_fails_on_every_pe() {
    on_sim(3, |shmem| {
        let me = shmem.my_pe();
        match shmem.alloc_zeroed::<u8>(10 + me % 2) {
            Err(Error::AsymmetricAlloc { pe, mine, others }) => {
                ensure!(pe == me && mine == 10 + me % 2);
                let expect: Vec<(usize, usize)> = (0..3)
                    .filter(|q| q % 2 != me % 2)
                    .map(|q| (q, 10 + q % 2))
                    .collect();
                ensure!(others == expect, "PE {me}: {others:?}");
            }
            other => return Err(anyhow!("PE {me}: expected AsymmetricAlloc, got {other:?}")),
        }
        // The heap is still usable, and symmetric, afterwards.
        let buf = shmem.alloc_zeroed::<u64>(3)?;
        ensure!(buf.to_vec()? == [0, 0, 0]);
        Ok(())
    })
    .unwrap();
}

#[test]
fn heap_exhaustion_is_an_error_on_every_pe() {
    on_sim(2, |shmem| {
        let huge = 1usize << 40;
        match shmem.alloc_zeroed::<u8>(huge) {
            Err(e @ Error::HeapExhausted { requested, .. }) => {
                ensure!(requested == huge);
                // The advice names the variable the simulator's heap size came from.
                let var = match (
                    std::env::var_os("RSHMEM_SIM_HEAP"),
                    std::env::var_os("NVSHMEM_SYMMETRIC_SIZE"),
                ) {
                    (None, Some(_)) => "NVSHMEM_SYMMETRIC_SIZE",
                    _ => "RSHMEM_SIM_HEAP",
                };
                let msg = e.to_string();
                ensure!(msg.contains(&format!("Set {var} (e.g. {var}=4G)")), "{msg}");
            }
            other => return Err(anyhow!("expected HeapExhausted, got {other:?}")),
        }
        ensure!(shmem.alloc_from(&[7u16; 5])?.to_vec()? == [7; 5]);
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_failing_pe_ends_the_job_instead_of_hanging() {
    // Host-side barrier: PE 1 fails while PE 0 waits.
    let err = on_sim(2, |shmem| {
        if shmem.my_pe() == 1 {
            std::thread::sleep(Duration::from_millis(50));
            return Err(anyhow!("boom on purpose"));
        }
        shmem.barrier_all()?;
        Err(anyhow!("the barrier should have failed"))
    })
    .unwrap_err();
    assert!(
        matches!(&err, Error::PeFailed { pe: 1, reason } if reason.contains("boom on purpose")),
        "{err}"
    );

    // Device-side barrier: PE 2 panics while PEs 0 and 1 wait in a kernel.
    let err = on_sim(3, |shmem| {
        if shmem.my_pe() == 2 {
            std::thread::sleep(Duration::from_millis(50));
            panic!("panic on purpose");
        }
        let module = shmem.load(&LOCAL)?;
        // SAFETY: no pointers.
        unsafe { module.launch::<wait_all>(LaunchConfig::new(1, 1).cooperative(), ())? };
        Ok(())
    })
    .unwrap_err();
    assert!(
        matches!(&err, Error::PeFailed { pe: 2, reason } if reason.contains("panic on purpose")),
        "{err}"
    );
}

#[test]
fn a_pe_that_returns_early_fails_the_collective() {
    let err = on_sim(2, |shmem| {
        if shmem.my_pe() == 0 {
            return Ok(());
        }
        shmem.barrier_all()?;
        Ok(())
    })
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, Error::PeFailed { pe: 1, .. })
            && msg.contains("PE 0 returned from its closure without calling `barrier_all`"),
        "{msg}"
    );
}

#[test]
fn different_collectives_on_different_pes_are_reported() {
    let err = on_sim(2, |shmem| {
        if shmem.my_pe() == 0 {
            shmem.alloc_zeroed::<u8>(8)?;
        } else {
            shmem.barrier_all()?;
        }
        Ok(())
    })
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`alloc`") && msg.contains("`barrier_all`"),
        "{msg}"
    );
}

#[test]
fn a_failed_kernel_releases_peers_waiting_in_device_barriers() {
    on_sim(2, |shmem| {
        let me = shmem.my_pe();
        let module = shmem.load(&LOCAL)?;
        let mut buf = shmem.alloc_zeroed::<i32>(4)?;
        if me == 0 {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: the bad index is the test; the simulator checks it.
            let result = unsafe {
                module.launch::<poke>(LaunchConfig::new(2, 8), (buf.as_mut_ptr(), 9, 1, 0))
            };
            kernel_failure(result, "poke", 0)?;
        } else {
            // SAFETY: no pointers.
            let result = unsafe { module.launch::<wait_all>(LaunchConfig::new(1, 1), ()) };
            let msg = kernel_failure(result, "wait_all", 1)?;
            ensure!(
                msg.contains("kernel `poke` failed on PE 0") && msg.contains("out of bounds"),
                "{msg}"
            );
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_kernel_failure_that_stops_peers_is_blamed_on_its_pe() {
    // PE 0's kernel fails; PE 1's kernel fails in consequence (its barrier can never
    // complete), and PE 1 usually returns its error first. The run names PE 0.
    let err = on_sim(2, |shmem| {
        let module = shmem.load(&LOCAL)?;
        let mut buf = shmem.alloc_zeroed::<i32>(4)?;
        if shmem.my_pe() == 0 {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: the bad index is the test; the simulator checks it.
            unsafe { module.launch::<poke>(LaunchConfig::new(2, 8), (buf.as_mut_ptr(), 9, 1, 0))? };
        } else {
            // SAFETY: no pointers.
            unsafe { module.launch::<wait_all>(LaunchConfig::new(1, 1), ())? };
        }
        Ok(())
    })
    .unwrap_err();
    assert!(
        matches!(&err, Error::PeFailed { pe: 0, reason } if reason.contains("kernel `poke` failed on PE 0")),
        "{err}"
    );
}

#[test]
fn device_functions_outside_a_kernel_panic_clearly() {
    let err = std::panic::catch_unwind(rshmem_device::shmem::my_pe).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("shmem::my_pe") && msg.contains("outside a kernel"),
        "{msg}"
    );
}

#[test]
fn freeing_different_buffers_on_different_pes_is_reported() {
    on_sim(2, |shmem| {
        let me = shmem.my_pe();
        let a = shmem.alloc_zeroed::<u8>(8)?;
        let b = shmem.alloc_zeroed::<u8>(8)?;
        // Each PE keeps a different one of two same-sized buffers.
        let _kept = if me == 0 {
            drop(a);
            b
        } else {
            drop(b);
            a
        };
        match shmem.alloc_zeroed::<u8>(8) {
            Err(Error::Collective {
                op: "alloc",
                pe,
                message,
            }) => {
                ensure!(
                    pe == me && message.contains("at other offsets"),
                    "{message}"
                );
                Ok(())
            }
            other => Err(anyhow!(
                "PE {me}: expected a Collective error, got {other:?}"
            )),
        }
    })
    .unwrap();
}
