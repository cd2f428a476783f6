//! The simulator's tensor-core operations, launched on one simulated warp (or block) through
//! the public API, against references written from the PTX ISA's tables.

use std::string::String;
use std::sync::Mutex;
use std::vec;
use std::vec::Vec;

use super::layout;
use crate::half::{bf16, f16, to_tf32, Half};
use crate::mma::*;
use crate::sim::{LaunchSpec, World};
use crate::thread::{self, Dim3};
use crate::warp;

fn spec(threads: u32, shared: usize) -> LaunchSpec {
    LaunchSpec {
        kernel: "tensor_test",
        grid: Dim3 { x: 1, y: 1, z: 1 },
        block: Dim3 {
            x: threads,
            y: 1,
            z: 1,
        },
        shared_mem_bytes: shared,
    }
}

/// Runs `body` on one warp with `shared` bytes of shared memory; the launch's failure text.
fn run(threads: u32, shared: usize, body: &(dyn Fn() + Sync)) -> Result<(), String> {
    let job = World::new(1, 1 << 16).unwrap();
    job.launch(0, &spec(threads, shared), body)
        .map_err(|f| f.message)
}

fn smem() -> *mut u16 {
    thread::dynamic_shared::<u16>().0.cast()
}

/// A raw pointer that may be shared with the simulated threads.
#[derive(Clone, Copy)]
struct P<T>(*mut T);
// SAFETY: the tests' threads write disjoint elements or synchronise.
unsafe impl<T> Send for P<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for P<T> {}

impl<T> P<T> {
    /// The pointer (a method, so closures capture the whole `P`, not its field).
    fn at(self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

#[test]
fn public_coordinates_are_the_isas_tables() {
    for lane in 0..32 {
        for i in 0..8 {
            assert_eq!(
                FragA::<M16N8K16, bf16>::coord(lane, i),
                layout::a_m16n8k16(lane, i)
            );
        }
        for i in 0..4 {
            assert_eq!(
                FragB::<M16N8K16, f16>::coord(lane, i),
                layout::b_m16n8k16(lane, i)
            );
            assert_eq!(FragC::<M16N8K16>::coord(lane, i), layout::c_m16n8(lane, i));
            assert_eq!(
                FragA::<M16N8K8, Tf32>::coord(lane, i),
                layout::a_m16n8k8_tf32(lane, i)
            );
        }
        for i in 0..2 {
            assert_eq!(
                FragB::<M16N8K8, Tf32>::coord(lane, i),
                layout::b_m16n8k8_tf32(lane, i)
            );
        }
    }
    // Every element of each matrix is held exactly once.
    let mut seen = [[0u8; 16]; 16];
    for lane in 0..32 {
        for i in 0..8 {
            let (r, c) = FragA::<M16N8K16, bf16>::coord(lane, i);
            seen[r][c] += 1;
        }
    }
    assert!(seen.iter().flatten().all(|&n| n == 1));
}

/// What lane `lane` must hold in register `m` after `ldmatrix` of matrices whose element
/// (r, c) of matrix m is `m * 64 + r * 8 + c` (the PTX ISA's ldmatrix figure).
fn expected_ld(lane: usize, m: usize, trans: bool) -> u32 {
    let (r, c) = (lane / 4, 2 * (lane % 4));
    let at = |r: usize, c: usize| (m * 64 + r * 8 + c) as u32;
    if trans {
        at(c, r) | at(c + 1, r) << 16
    } else {
        at(r, c) | at(r, c + 1) << 16
    }
}

fn ldmatrix_case<const N: usize>(trans: bool)
where
    [u32; N]: Matrices,
{
    let got = Mutex::new(vec![[0u32; 4]; 32]);
    // Matrix m's rows are 32 bytes apart (16-byte aligned, not contiguous) to catch stride bugs.
    run(32, 4 * 8 * 32, &|| {
        let lane = warp::lane_id() as usize;
        let s = smem();
        // SAFETY: each lane writes its own elements of the 4 × 8 rows of 16 u16, then the warp
        // meets; row addresses are 32-byte aligned and inside the 1 KiB.
        unsafe {
            for m in 0..4 {
                for c in 0..8 {
                    let r = lane % 8;
                    if lane / 8 == m {
                        *s.add((m * 8 + r) * 16 + c) = (m * 64 + r * 8 + c) as u16;
                    }
                }
            }
            warp::sync_warp(warp::FULL_MASK);
            let row = s.add(((lane / 8) * 8 + lane % 8) * 16);
            let regs: [u32; N] = if trans {
                ldmatrix_trans::<N>(row)
            } else {
                ldmatrix::<N>(row)
            };
            got.lock().unwrap()[lane][..N].copy_from_slice(&regs);
        }
    })
    .unwrap();
    for (lane, regs) in got.into_inner().unwrap().iter().enumerate() {
        for (m, &r) in regs.iter().enumerate().take(N) {
            assert_eq!(
                r,
                expected_ld(lane, m, trans),
                "x{N} trans={trans} lane {lane} reg {m}"
            );
        }
    }
}

#[test]
fn ldmatrix_delivers_the_isas_layout() {
    for trans in [false, true] {
        ldmatrix_case::<1>(trans);
        ldmatrix_case::<2>(trans);
        ldmatrix_case::<4>(trans);
    }
}

fn stmatrix_case<const N: usize>(trans: bool)
where
    [u32; N]: Matrices,
{
    let out = Mutex::new(vec![0u16; 4 * 64]);
    run(32, 4 * 64 * 2, &|| {
        let lane = warp::lane_id() as usize;
        // Registers as ldmatrix (non-trans) would have loaded element (r, c) = m*64 + r*8 + c.
        let regs: [u32; N] = core::array::from_fn(|m| expected_ld(lane, m, false));
        let s = smem();
        // SAFETY: row addresses are 16-byte aligned rows of 8 u16, inside the 512 bytes.
        unsafe {
            let row = s.add(((lane / 8) * 8 + lane % 8) * 8);
            if trans {
                stmatrix_trans::<N>(row, regs)
            } else {
                stmatrix::<N>(row, regs)
            }
            warp::sync_warp(warp::FULL_MASK);
            if lane == 0 {
                let mut o = out.lock().unwrap();
                for (i, v) in o.iter_mut().enumerate() {
                    *v = *s.add(i);
                }
            }
        }
    })
    .unwrap();
    let out = out.into_inner().unwrap();
    for m in 0..4 {
        for r in 0..8 {
            for c in 0..8 {
                let want = if m >= N {
                    0
                } else if trans {
                    (m * 64 + c * 8 + r) as u16
                } else {
                    (m * 64 + r * 8 + c) as u16
                };
                assert_eq!(
                    out[m * 64 + r * 8 + c],
                    want,
                    "x{N} trans={trans} m{m} ({r}, {c})"
                );
            }
        }
    }
}

#[test]
fn stmatrix_stores_the_isas_layout() {
    for trans in [false, true] {
        stmatrix_case::<1>(trans);
        stmatrix_case::<2>(trans);
        stmatrix_case::<4>(trans);
    }
}

/// Pseudo-random values in `[-range, range]`, multiples of `1 / quantum`.
fn values(n: usize, seed: u64, range: i32, quantum: f32) -> Vec<f32> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 33) as i64 % (2 * range as i64 + 1) - range as i64) as f32 / quantum
        })
        .collect()
}

/// D = A·B + C in f64, A row-major M×K, B row-major K×N, C row-major M×N.
fn reference(a: &[f32], b: &[f32], c: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    (0..m * n)
        .map(|i| {
            let (r, col) = (i / n, i % n);
            f64::from(c[i])
                + (0..k)
                    .map(|kk| f64::from(a[r * k + kk]) * f64::from(b[kk * n + col]))
                    .sum::<f64>()
        })
        .collect()
}

fn mma_16bit_case<E: Half + Operand<M16N8K16, Value = E>>(range: i32, quantum: f32) -> f64 {
    let (a, b, c) = (
        values(256, 1, range, quantum),
        values(128, 2, range, quantum),
        values(128, 3, range, quantum),
    );
    // Round through the element type: the reference multiplies what the tensor core sees.
    let a: Vec<f32> = a
        .iter()
        .map(|&x| E::from_f32_rn(x).to_f32_exact())
        .collect();
    let b: Vec<f32> = b
        .iter()
        .map(|&x| E::from_f32_rn(x).to_f32_exact())
        .collect();
    let (ah, bh): (Vec<E>, Vec<E>) = (
        a.iter().map(|&x| E::from_f32_rn(x)).collect(),
        b.iter().map(|&x| E::from_f32_rn(x)).collect(),
    );
    let d = Mutex::new(vec![0f32; 128]);
    let (pa, pb, pc, pd) = (
        P(ah.as_ptr().cast_mut()),
        P(bh.as_ptr().cast_mut()),
        P(c.as_ptr().cast_mut()),
        P(d.lock().unwrap().as_mut_ptr()),
    );
    run(32, 0, &|| {
        // SAFETY: the matrices are in bounds; D's elements are written once each.
        unsafe {
            let fa = FragA::<M16N8K16, E>::load(pa.at(0), 16, 1);
            let fb = FragB::<M16N8K16, E>::load(pb.at(0), 8, 1);
            let fc = FragC::<M16N8K16>::load(pc.at(0), 8);
            mma_sync(&fa, &fb, &fc).store(pd.at(0), 8);
        }
    })
    .unwrap();
    let want = reference(&a, &b, &c, 16, 8, 16);
    let d = d.into_inner().unwrap();
    want.iter()
        .zip(&d)
        .map(|(w, g)| (w - f64::from(*g)).abs())
        .fold(0.0, f64::max)
}

#[test]
fn mma_m16n8k16_multiplies_16bit_fragments() {
    // Small integers: every sum is exact, so any layout mistake shows as a wrong value.
    assert_eq!(mma_16bit_case::<bf16>(8, 1.0), 0.0);
    assert_eq!(mma_16bit_case::<f16>(8, 1.0), 0.0);
    // Fractions: rounded once from the exact sum.
    assert!(mma_16bit_case::<bf16>(1000, 997.0) < 1e-5);
    assert!(mma_16bit_case::<f16>(1000, 997.0) < 1e-5);
}

#[test]
fn mma_m16n8k8_multiplies_tf32_fragments() {
    let (a, b, c) = (
        values(128, 4, 50, 8.0),
        values(64, 5, 50, 8.0),
        values(128, 6, 9, 1.0),
    );
    let d = Mutex::new(vec![0f32; 128]);
    let (pa, pb, pc, pd) = (
        P(a.as_ptr().cast_mut()),
        P(b.as_ptr().cast_mut()),
        P(c.as_ptr().cast_mut()),
        P(d.lock().unwrap().as_mut_ptr()),
    );
    run(32, 0, &|| {
        // SAFETY: in bounds; each element of D written once.
        unsafe {
            // `load` rounds to tf32 (these values are exact in tf32 already).
            let fa = FragA::<M16N8K8, Tf32>::load(pa.at(0), 8, 1);
            let fb = FragB::<M16N8K8, Tf32>::load(pb.at(0), 8, 1);
            assert!(fa.regs.iter().chain(&fb.regs).all(|r| r & 0x1FFF == 0));
            assert_eq!(fa.get(1), f32::from_bits(to_tf32(fa.get(1))));
            let fc = FragC::<M16N8K8>::load(pc.at(0), 8);
            mma_sync(&fa, &fb, &fc).store(pd.at(0), 8);
        }
    })
    .unwrap();
    let want = reference(&a, &b, &c, 16, 8, 8);
    for (w, g) in want.iter().zip(d.into_inner().unwrap()) {
        assert_eq!(*w, f64::from(g));
    }
}

#[test]
fn ldmatrix_fragments_feed_mma() {
    // A 16×16 row-major and B 16×8 K-major in shared memory, loaded with ldmatrix.x4 and
    // ldmatrix.x2.trans, against per-lane loads of the same matrices.
    let (a, b) = (values(256, 7, 6, 1.0), values(128, 8, 6, 1.0));
    let ah: Vec<bf16> = a.iter().map(|&x| bf16::from_f32_rn(x)).collect();
    let bh: Vec<bf16> = b.iter().map(|&x| bf16::from_f32_rn(x)).collect();
    let d = Mutex::new(vec![0f32; 128]);
    let (pa, pb, pd) = (
        P(ah.as_ptr().cast_mut()),
        P(bh.as_ptr().cast_mut()),
        P(d.lock().unwrap().as_mut_ptr()),
    );
    run(32, 1024, &|| {
        let lane = warp::lane_id() as usize;
        let s: *mut bf16 = thread::dynamic_shared::<u16>().0.cast();
        // SAFETY: 512 + 256 + 256 bytes of shared memory; lanes copy disjoint elements, then meet.
        unsafe {
            for i in (lane..256).step_by(32) {
                *s.add(i) = *pa.at(i);
            }
            for i in (lane..128).step_by(32) {
                *s.add(256 + i) = *pb.at(i);
                // Bᵀ (N-major, 8 × 16) after it, for the non-transposing loader.
                let (kk, nn) = (i / 8, i % 8);
                *s.add(384 + nn * 16 + kk) = *pb.at(i);
            }
            warp::sync_warp(warp::FULL_MASK);
            let fa = FragA::<M16N8K16, bf16>::ldmatrix(s, 16);
            let fb = FragB::<M16N8K16, bf16>::ldmatrix_trans(s.add(256), 8);
            assert_eq!(fa.regs, FragA::<M16N8K16, bf16>::load(pa.at(0), 16, 1).regs);
            assert_eq!(fb.regs, FragB::<M16N8K16, bf16>::load(pb.at(0), 8, 1).regs);
            assert_eq!(
                fb.regs,
                FragB::<M16N8K16, bf16>::ldmatrix(s.add(384), 16).regs
            );
            mma_sync(&fa, &fb, &FragC::zero()).store(pd.at(0), 8);
        }
    })
    .unwrap();
    let want = reference(&a, &b, &[0.0; 128], 16, 8, 16);
    for (w, g) in want.iter().zip(d.into_inner().unwrap()) {
        assert_eq!(*w, f64::from(g));
    }
}

#[test]
fn cp_async_lands_at_the_wait_in_group_order() {
    let src: Vec<u8> = (0..64u8).collect();
    let ps = P(src.as_ptr().cast_mut());
    run(32, 64, &|| {
        if warp::lane_id() != 0 {
            return;
        }
        let s = thread::dynamic_shared::<u8>().0;
        // SAFETY: aligned copies into the 64 bytes of shared memory from the 64-byte source.
        unsafe {
            cp_async_ca::<4>(s, ps.at(0));
            cp_async_ca::<8>(s.add(8), ps.at(8));
            commit_group();
            cp_async_ca::<16>(s.add(16), ps.at(16));
            cp_async_cg(s.add(32), ps.at(32));
            commit_group();
            cp_async_cg_zfill(s.add(48), ps.at(48), 5);
            // Nothing has landed before a wait (the simulator copies at the wait).
            assert!((0..64).all(|i| *s.add(i) == 0));
            wait_group::<1>();
            assert!((0..4).chain(8..16).all(|i| *s.add(i) == i as u8));
            assert!((16..64).all(|i| *s.add(i) == 0));
            // The open (uncommitted) copy is not waited for by wait_group.
            wait_group::<0>();
            assert!((16..48).all(|i| *s.add(i) == i as u8));
            assert_eq!(*s.add(48), 0);
            wait_all();
            assert!((48..53).all(|i| *s.add(i) == i as u8));
            assert!((53..64).all(|i| *s.add(i) == 0));
        }
    })
    .unwrap();
}

#[test]
fn the_simulator_refuses_what_it_cannot_run_faithfully() {
    let err = |threads, shared, body: &(dyn Fn() + Sync)| run(threads, shared, body).unwrap_err();
    // SAFETY: breaks a contract on purpose; the simulator checks it and stops the thread.
    let e = err(32, 256, &|| unsafe {
        let _ = ldmatrix::<1>(smem().add(1));
    });
    assert!(
        e.contains("ldmatrix.sync.aligned.m8n8.x1.shared.b16 in kernel `tensor_test`")
            && e.contains("not 16-byte aligned"),
        "{e}"
    );
    #[repr(align(16))]
    struct Aligned([u16; 64]);
    let global = Aligned([0; 64]);
    let g = P(global.0.as_ptr().cast_mut());
    // SAFETY: breaks a contract on purpose; the simulator checks it and stops the thread.
    let e = err(32, 256, &|| unsafe {
        let _ = ldmatrix_trans::<4>(g.at(8 * (warp::lane_id() as usize % 4)));
    });
    assert!(
        e.contains("not inside the block's dynamic shared memory"),
        "{e}"
    );
    // SAFETY: breaks a contract on purpose; the simulator checks it and stops the thread.
    let e = err(32, 0, &|| unsafe {
        let a = FragA::<M16N8K8, Tf32>::from_regs([1.1f32.to_bits(); 4]);
        let _ = mma_sync(&a, &FragB::zero(), &FragC::zero());
    });
    assert!(
        e.contains("m16n8k8.row.col.f32.tf32.tf32.f32") && e.contains("half::to_tf32"),
        "{e}"
    );
    // SAFETY: breaks a contract on purpose; the simulator checks it and stops the thread.
    let e = err(48, 0, &|| unsafe {
        let _ = mma_sync(
            &FragA::<M16N8K16, bf16>::zero(),
            &FragB::zero(),
            &FragC::zero(),
        );
    });
    assert!(e.contains("needs all 32 lanes"), "{e}");
    // SAFETY: breaks a contract on purpose; the simulator checks it and stops the thread.
    let e = err(32, 256, &|| unsafe {
        if warp::lane_id() < 16 {
            let _ = ldmatrix::<2>(smem());
        } else {
            stmatrix::<2>(smem(), [0; 2]);
        }
    });
    assert!(
        e.contains("must execute the same warp-collective instruction"),
        "{e}"
    );
    // SAFETY: breaks a contract on purpose; the simulator checks it and stops the thread.
    let e = err(32, 64, &|| unsafe {
        cp_async_ca::<8>(thread::dynamic_shared::<u8>().0.add(4), g.at(0).cast());
    });
    assert!(
        e.contains("cp.async.ca.shared.global in kernel `tensor_test`") && e.contains("aligned"),
        "{e}"
    );
    // SAFETY: breaks a contract on purpose; the simulator checks it and stops the thread.
    let e = err(32, 64, &|| unsafe {
        let s = thread::dynamic_shared::<u8>().0;
        cp_async_cg(g.at(0).cast(), s);
    });
    assert!(
        e.contains("is not inside the block's dynamic shared memory"),
        "{e}"
    );
}
