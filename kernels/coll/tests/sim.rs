//! The building blocks and algorithms on the CPU simulator, driven directly (no kernel image):
//! several simulated PEs run the same block-level code at once, with and without peer
//! mappings, and the results are checked exactly (integer-valued data, so float sums are
//! exact too). `ops/tests/coll.rs` tests the same algorithms through `rshmem::ops`.

use std::sync::atomic::{AtomicU64, Ordering};

use rshmem_coll::channel::{Channel, Shape};
use rshmem_coll::elem::{Elem, Max, Min, Reduce, Sum};
use rshmem_coll::{algo, lamport, signal, tile};
use rshmem_device::shmem::Team;
use rshmem_device::sim::{LaunchSpec, World};
use rshmem_device::thread::Dim3;
use rshmem_device::{bf16, f16};

/// A symmetric allocation of the test's world: its offset (the same on every PE).
#[derive(Clone, Copy)]
struct Sym(usize);

impl Sym {
    fn new(world: &World, bytes: usize) -> Sym {
        let offsets: Vec<usize> = (0..world.n_pes())
            .map(|pe| world.heap(pe).alloc(bytes).unwrap())
            .collect();
        assert!(offsets.iter().all(|&o| o == offsets[0]));
        Sym(offsets[0])
    }

    /// PE `pe`'s copy.
    fn at<T>(self, world: &World, pe: usize) -> *mut T {
        world.heap(pe).base().wrapping_add(self.0).cast()
    }

    fn write<T: Copy>(self, world: &World, pe: usize, data: &[T]) {
        // SAFETY: plain data viewed as bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data))
        };
        world
            .heap(pe)
            .write(self.at::<u8>(world, pe) as usize, bytes)
            .unwrap();
    }

    fn read<T: Copy + Default>(self, world: &World, pe: usize, len: usize) -> Vec<T> {
        let mut out = vec![T::default(); len];
        // SAFETY: as above, for the destination.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                len * std::mem::size_of::<T>(),
            )
        };
        world
            .heap(pe)
            .read(self.at::<u8>(world, pe) as usize, bytes)
            .unwrap();
        out
    }
}

/// Something the simulated threads may share (raw pointers the test hands them).
#[derive(Clone, Copy)]
struct Shared<T>(T);
// SAFETY: the tests' kernels synchronise their accesses like GPU kernels do.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

impl<T: Copy> Shared<T> {
    fn get(&self) -> T {
        self.0
    }
}

/// Runs `body(pe)` as a grid of `grid` x `threads` on every PE at once.
fn launch(world: &World, grid: u32, threads: u32, body: impl Fn(usize) + Sync) {
    let spec = LaunchSpec {
        kernel: "coll-test",
        grid: Dim3 {
            x: grid,
            y: 1,
            z: 1,
        },
        block: Dim3 {
            x: threads,
            y: 1,
            z: 1,
        },
        shared_mem_bytes: 256,
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..world.n_pes())
            .map(|pe| {
                let body = &body;
                s.spawn(move || {
                    let r = world.launch(pe, &spec, &|| body(pe));
                    if let Err(e) = &r {
                        world.pe_failed(pe, e.to_string());
                    }
                    r
                })
            })
            .collect();
        for (pe, h) in handles.into_iter().enumerate() {
            if let Err(e) = h.join().unwrap() {
                panic!("PE {pe}: {e}");
            }
        }
    });
}

/// A fresh value every call (the tests' data differ between runs and calls).
fn salt() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    t ^ NEXT.fetch_add(0x9E37_79B9, Ordering::Relaxed)
}

/// Small integers (exact in every element type) for PE `pe`, element `i`, call `seed`.
fn value(seed: u64, pe: usize, i: usize) -> i64 {
    let mut x = seed ^ ((pe as u64) << 40) ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    (x % 64) as i64 - 32
}

/// Element types built from small integers, and back.
trait Num: Elem + std::fmt::Debug {
    fn from_i64(v: i64) -> Self;
    fn to_i64(self) -> i64;
}
macro_rules! nums {
    ($($t:ty: |$v:ident| $from:expr, |$s:ident| $to:expr;)*) => {$(
        impl Num for $t {
            fn from_i64($v: i64) -> Self { $from }
            fn to_i64(self) -> i64 { let $s = self; $to }
        }
    )*};
}
nums! {
    bf16: |v| bf16::from_f32(v as f32), |s| s.to_f32() as i64;
    f16: |v| f16::from_f32(v as f32), |s| s.to_f32() as i64;
    f32: |v| v as f32, |s| s as i64;
    i32: |v| v as i32, |s| s as i64;
    i64: |v| v, |s| s;
}

fn fold<O: Reduce>(vals: impl Iterator<Item = i64>) -> i64 {
    vals.reduce(|a, b| match O::NAME {
        "sum" => a + b,
        "max" => a.max(b),
        _ => a.min(b),
    })
    .unwrap()
}

/// A test world with a channel of small slots, so that rounds and slot reuse happen at
/// small counts.
struct Fixture {
    world: World,
    shape: Shape,
    ch: Sym,
}

impl Fixture {
    fn new(npes: usize, p2p: bool) -> Fixture {
        let world = World::new(npes, 8 << 20).unwrap();
        let world = if p2p {
            world
        } else {
            world.without_peer_mappings()
        };
        let shape = Shape {
            world: npes as u32,
            rows: 4,
            push_region: 256,
            lamport_slots: 4,
            lamport_region: 256,
        };
        let layout = shape.layout();
        let ch = Sym::new(&world, layout.bytes);
        for pe in 0..npes {
            world.heap(pe).zero(ch.0, layout.bytes);
            let empty = vec![0xFFu8; layout.lamport_bytes];
            Sym(ch.0 + layout.lamport_offset).write(&world, pe, &empty);
        }
        Fixture { world, shape, ch }
    }

    fn channel(&self, pe: usize) -> Channel {
        Channel::new(self.ch.at(&self.world, pe), self.shape)
    }

    fn n(&self) -> usize {
        self.world.n_pes()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Algo {
    Push,
    TwoShot,
    Lamport,
}

/// One all-reduce (or reduce-scatter) of `count` elements with fresh data, checked on every PE.
fn all_reduce<E: Num, O: Reduce>(
    f: &Fixture,
    algo: Algo,
    count: usize,
    in_place: bool,
    scatter: bool,
) {
    let (w, n) = (&f.world, f.n());
    let seed = salt();
    let total = if scatter { n * count } else { count };
    let src = Sym::new(w, total * size_of::<E>() + 16);
    let dst = if in_place && !scatter {
        src
    } else {
        Sym::new(w, count * size_of::<E>() + 16)
    };
    for pe in 0..n {
        let data: Vec<E> = (0..total)
            .map(|i| E::from_i64(value(seed, pe, i)))
            .collect();
        src.write(w, pe, &data);
        if dst.0 != src.0 {
            dst.write(w, pe, &vec![E::from_i64(99); count]);
        }
    }
    let chans: Vec<_> = (0..n).map(|pe| Shared(f.channel(pe))).collect();
    let ptrs: Vec<_> = (0..n)
        .map(|pe| Shared((dst.at::<E>(w, pe), src.at::<E>(w, pe).cast_const())))
        .collect();
    launch(w, 2, 32, |pe| {
        let (d, s) = ptrs[pe].get();
        let ch = chans[pe].get();
        // SAFETY: the fixture's buffers hold what the algorithms read and write; every PE runs
        // the same call on the same channel.
        unsafe {
            match algo {
                Algo::Push => algo::push_rounds::<E, O>(ch, Team::WORLD, d, s, count, scatter),
                Algo::TwoShot => algo::two_shot::<E, O>(ch, Team::WORLD, d, s, count, scatter),
                Algo::Lamport => algo::lamport_all_reduce::<E, O>(ch, Team::WORLD, d, s, count),
            }
        }
    });
    for pe in 0..n {
        let got: Vec<E> = dst.read(w, pe, count);
        for (i, g) in got.iter().enumerate() {
            let at = if scatter { pe * count + i } else { i };
            let want = fold::<O>((0..n).map(|q| value(seed, q, at)));
            assert_eq!(
                g.to_i64(),
                want,
                "{algo:?} {} {} of {count} on {n} PEs (in place {in_place}, scatter {scatter}): PE {pe} element {i}",
                E::NAME,
                O::NAME
            );
        }
    }
    for pe in 0..n {
        // Frees in the same order on every PE keep the offsets symmetric.
        if dst.0 != src.0 {
            w.heap(pe).free(dst.0);
        }
        w.heap(pe).free(src.0);
    }
}

fn size_of<T>() -> usize {
    std::mem::size_of::<T>()
}

#[test]
fn push_rounds_with_and_without_peer_mappings() {
    for n in [2, 3, 4] {
        for p2p in [true, false] {
            let f = Fixture::new(n, p2p);
            // 1, odd, and more than one round (2 blocks x 256 bytes per round).
            for count in [1, 37, 301] {
                all_reduce::<bf16, Sum>(&f, Algo::Push, count, false, false);
                all_reduce::<i64, Max>(&f, Algo::Push, count, true, false);
                all_reduce::<f32, Min>(&f, Algo::Push, count, false, true);
            }
        }
    }
}

#[test]
fn two_shot_and_lamport_share_a_channel() {
    for n in [2, 3, 4] {
        let f = Fixture::new(n, true);
        // Alternating algorithms on one channel: the step counts keep every pair's parities.
        for count in [1, 9, 200, 253] {
            all_reduce::<f16, Sum>(&f, Algo::TwoShot, count, true, false);
            all_reduce::<f32, Sum>(&f, Algo::Lamport, count, false, false);
            all_reduce::<bf16, Max>(&f, Algo::Lamport, count, true, false);
            all_reduce::<i32, Sum>(&f, Algo::Push, count, true, false);
            all_reduce::<bf16, Min>(&f, Algo::Lamport, count, false, false);
            all_reduce::<i32, Min>(&f, Algo::TwoShot, count, false, true);
        }
    }
}

#[test]
fn lamport_slots_are_empty_after_use() {
    let f = Fixture::new(3, true);
    for _ in 0..3 {
        all_reduce::<f32, Sum>(&f, Algo::Lamport, 4 * 64 - 3, false, false);
    }
    let layout = f.shape.layout();
    for pe in 0..3 {
        let words: Vec<u32> =
            Sym(f.ch.0 + layout.lamport_offset).read(&f.world, pe, layout.lamport_bytes / 4);
        assert!(words.iter().all(|&w| w == lamport::EMPTY), "PE {pe}");
    }
}

#[test]
fn all_gather_v_with_and_without_peer_mappings() {
    for n in [2, 3, 4] {
        for p2p in [true, false] {
            let f = Fixture::new(n, p2p);
            let w = &f.world;
            for round in 0..3 {
                let seed = salt();
                // Unequal contributions, one of them empty, odd byte counts.
                let counts: Vec<usize> = (0..n).map(|pe| (pe * 37 + round * 5) % 61).collect();
                let offs: Vec<usize> = counts
                    .iter()
                    .scan(0, |a, &c| {
                        let o = *a;
                        *a += c;
                        Some(o)
                    })
                    .collect();
                let total: usize = counts.iter().sum();
                let src = Sym::new(w, 64);
                let dst = Sym::new(w, total.max(1));
                for (pe, &c) in counts.iter().enumerate() {
                    let mine: Vec<u8> = (0..c).map(|i| value(seed, pe, i) as u8).collect();
                    src.write(w, pe, &mine);
                }
                let ptrs: Vec<_> = (0..n)
                    .map(|pe| {
                        Shared((
                            dst.at::<u8>(w, pe),
                            src.at::<u8>(w, pe).cast_const(),
                            f.channel(pe),
                        ))
                    })
                    .collect();
                launch(w, 2, 32, |pe| {
                    let (d, s, ch) = ptrs[pe].get();
                    // SAFETY: each PE's range of `dst` is its own; `src` holds its bytes.
                    unsafe { algo::all_gather(ch, Team::WORLD, d, s, counts[pe], offs[pe]) };
                });
                for pe in 0..n {
                    let got: Vec<u8> = dst.read(w, pe, total);
                    for q in 0..n {
                        for i in 0..counts[q] {
                            assert_eq!(
                                got[offs[q] + i],
                                value(seed, q, i) as u8,
                                "PE {pe} from {q} byte {i} (p2p {p2p})"
                            );
                        }
                    }
                }
                for pe in 0..n {
                    w.heap(pe).free(dst.0);
                    w.heap(pe).free(src.0);
                }
            }
        }
    }
}

/// The bare blocks, as a fused kernel would use them: push a tile to the right neighbour,
/// signal it per chunk, wait for the left neighbour's chunks, reduce own + received.
#[test]
fn push_signal_wait_reduce_per_chunk() {
    for p2p in [true, false] {
        let f = Fixture::new(3, p2p);
        let w = &f.world;
        let (len, chunks) = (45usize, 3usize);
        let x = Sym::new(w, len * 4);
        let inbox = Sym::new(w, len * 4);
        let out = Sym::new(w, len * 4);
        let flags = Sym::new(w, chunks * 8);
        for pe in 0..3 {
            w.heap(pe).zero(flags.0, chunks * 8);
        }
        for epoch in 1..=3u64 {
            let seed = salt();
            for pe in 0..3 {
                let data: Vec<f32> = (0..len).map(|i| value(seed, pe, i) as f32).collect();
                x.write(w, pe, &data);
            }
            let ptrs: Vec<_> = (0..3)
                .map(|pe| {
                    Shared((
                        x.at::<f32>(w, pe),
                        inbox.at::<f32>(w, pe),
                        out.at::<f32>(w, pe),
                        flags.at::<u64>(w, pe),
                    ))
                })
                .collect();
            launch(w, 1, 32, |pe| {
                let (x, inbox, out, flags) = ptrs[pe].get();
                let (right, left) = ((pe + 1) % 3, (pe + 2) % 3);
                let per = len.div_ceil(chunks);
                for c in 0..chunks {
                    let lo = c * per;
                    let l = per.min(len - lo);
                    // SAFETY: the fixture's symmetric buffers; chunk `c` of `inbox` on the right
                    // neighbour is written only by this PE, and read there after the signal.
                    unsafe {
                        tile::push_tile(inbox.add(lo), x.add(lo), l, right as i32);
                        signal::signal_block(flags.add(c), epoch, right as i32);
                    }
                }
                for c in 0..chunks {
                    let lo = c * per;
                    let l = per.min(len - lo);
                    // SAFETY: the left neighbour signalled chunk `c` of this PE's inbox.
                    unsafe {
                        signal::wait_block(flags.add(c), epoch, left as i32);
                        tile::reduce_tile::<f32, Sum>(
                            &[out.add(lo)],
                            &[x.add(lo).cast_const(), inbox.add(lo).cast_const()],
                            l,
                        );
                    }
                }
            });
            for pe in 0..3 {
                let got: Vec<f32> = out.read(w, pe, len);
                let left = (pe + 2) % 3;
                for (i, &g) in got.iter().enumerate() {
                    assert_eq!(
                        g as i64,
                        value(seed, pe, i) + value(seed, left, i),
                        "p2p {p2p} epoch {epoch} PE {pe} {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn copy_tile_every_skew() {
    let w = World::new(1, 1 << 16).unwrap();
    let buf = Sym::new(&w, 4096);
    let src: Vec<u8> = (0..200u32).map(|i| (i * 7 + 1) as u8).collect();
    for s in 0..17 {
        for d in 0..17 {
            for len in [0usize, 1, 15, 16, 17, 100] {
                buf.write(&w, 0, &vec![0u8; 4096]);
                Sym(buf.0 + 1024).write(&w, 0, &src);
                let base = Shared(buf.at::<u8>(&w, 0));
                for streaming in [false, true] {
                    buf.write(&w, 0, &vec![0u8; 1024]);
                    launch(&w, 1, 8, |_| {
                        let b = base.get();
                        let from = b.wrapping_add(1024 + s).cast_const();
                        // SAFETY: both ranges lie inside the 4 KiB buffer and do not overlap.
                        unsafe {
                            if streaming {
                                tile::copy_tile_with::<tile::Streaming, u8>(b.add(d), from, len)
                            } else {
                                tile::copy_tile(b.add(d), from, len)
                            }
                        };
                    });
                    let got: Vec<u8> = buf.read(&w, 0, 4096);
                    let at = format!("s {s} d {d} len {len} streaming {streaming}");
                    assert_eq!(&got[d..d + len], &src[s..s + len], "{at}");
                    assert!(
                        got[..d].iter().chain(&got[d + len..1024]).all(|&b| b == 0),
                        "{at}"
                    );
                }
            }
        }
    }
}

#[test]
fn fan_out_and_zero_tile_every_skew() {
    let w = World::new(1, 1 << 16).unwrap();
    let buf = Sym::new(&w, 4096);
    let src: Vec<u8> = (0..200u32).map(|i| (i * 7 + 1) as u8).collect();
    for s in [0usize, 1, 8, 16] {
        for d in 0..17 {
            for len in [0usize, 1, 15, 16, 17, 100] {
                // Destinations at 0 + d, 256 (aligned), 512 + 3; slots 1 and 3 left null.
                let at = [d, 256, 512 + 3];
                buf.write(&w, 0, &vec![0u8; 4096]);
                Sym(buf.0 + 1024).write(&w, 0, &src);
                let base = Shared(buf.at::<u8>(&w, 0));
                launch(&w, 1, 8, |_| {
                    let b = base.get();
                    let mut dsts = [core::ptr::null_mut(); rshmem_coll::MAX_PEERS];
                    // SAFETY: every range lies inside the 4 KiB buffer, none overlapping.
                    unsafe {
                        (dsts[0], dsts[2], dsts[4]) = (b.add(at[0]), b.add(at[1]), b.add(at[2]));
                        tile::fan_out(&dsts, b.add(1024 + s).cast_const(), len);
                    }
                });
                let got: Vec<u8> = buf.read(&w, 0, 4096);
                for a in at {
                    assert_eq!(&got[a..a + len], &src[s..s + len], "s {s} d {a} len {len}");
                }
                let outside = (0..1024).filter(|i| !at.iter().any(|&a| (a..a + len).contains(i)));
                assert!(
                    outside.into_iter().all(|i| got[i] == 0),
                    "s {s} d {d} len {len}"
                );
            }
        }
    }
    for d in 0..17 {
        for len in [0usize, 1, 15, 16, 17, 100] {
            buf.write(&w, 0, &vec![0xFFu8; 4096]);
            let base = Shared(buf.at::<u8>(&w, 0));
            launch(&w, 1, 8, |_| {
                // SAFETY: the range lies inside the buffer.
                unsafe { tile::zero_tile(base.get().add(d), len) };
            });
            let got: Vec<u8> = buf.read(&w, 0, 4096);
            assert!(got[d..d + len].iter().all(|&b| b == 0), "d {d} len {len}");
            assert!(got[..d].iter().chain(&got[d + len..]).all(|&b| b == 0xFF));
        }
    }
}

/// Many collectives back to back in one launch per PE, with no host synchronisation between
/// them: a fast PE runs ahead into the next call while a slow one still reads the last, which
/// is what the slot parities (push, flag-in-data) must survive.
#[test]
fn back_to_back_calls_reuse_slots_safely() {
    const CALLS: usize = 12;
    for (n, algos) in [
        (2, [Algo::Lamport; 4]),
        (3, [Algo::Lamport, Algo::Lamport, Algo::Push, Algo::Lamport]),
        (4, [Algo::Lamport, Algo::Push, Algo::Lamport, Algo::TwoShot]),
        (3, [Algo::Push, Algo::Push, Algo::TwoShot, Algo::Push]),
    ] {
        let f = Fixture::new(n, true);
        let w = &f.world;
        for _ in 0..3 {
            let seed = salt();
            let count = 150; // f32: 600 bytes, 3 flag-in-data slots, 2 push rounds
            let srcs: Vec<Sym> = (0..CALLS).map(|_| Sym::new(w, count * 4)).collect();
            let dsts: Vec<Sym> = (0..CALLS).map(|_| Sym::new(w, count * 4)).collect();
            for (k, s) in srcs.iter().enumerate() {
                for pe in 0..n {
                    let data: Vec<f32> = (0..count)
                        .map(|i| value(seed ^ k as u64, pe, i) as f32)
                        .collect();
                    s.write(w, pe, &data);
                }
            }
            let ptrs: Vec<Vec<_>> = (0..n)
                .map(|pe| {
                    (0..CALLS)
                        .map(|k| {
                            Shared((
                                dsts[k].at::<f32>(w, pe),
                                srcs[k].at::<f32>(w, pe).cast_const(),
                            ))
                        })
                        .collect()
                })
                .collect();
            let chans: Vec<_> = (0..n).map(|pe| Shared(f.channel(pe))).collect();
            launch(w, 2, 32, |pe| {
                let ch = chans[pe].get();
                for (k, p) in ptrs[pe].iter().enumerate() {
                    let (d, s) = p.get();
                    // SAFETY: every PE makes the same calls in the same order on one channel.
                    unsafe {
                        match algos[k % algos.len()] {
                            Algo::Push => {
                                algo::push_rounds::<f32, Sum>(ch, Team::WORLD, d, s, count, false)
                            }
                            Algo::TwoShot => {
                                algo::two_shot::<f32, Sum>(ch, Team::WORLD, d, s, count, false)
                            }
                            Algo::Lamport => {
                                algo::lamport_all_reduce::<f32, Sum>(ch, Team::WORLD, d, s, count)
                            }
                        }
                    }
                }
            });
            for (k, d) in dsts.iter().enumerate() {
                for pe in 0..n {
                    let got: Vec<f32> = d.read(w, pe, count);
                    for (i, &g) in got.iter().enumerate() {
                        let want: i64 = (0..n).map(|q| value(seed ^ k as u64, q, i)).sum();
                        assert_eq!(
                            g as i64,
                            want,
                            "call {k} ({:?}) on {n} PEs: PE {pe} element {i}",
                            algos[k % algos.len()]
                        );
                    }
                }
            }
            for pe in 0..n {
                for s in srcs.iter().chain(&dsts) {
                    w.heap(pe).free(s.0);
                }
            }
        }
    }
}
