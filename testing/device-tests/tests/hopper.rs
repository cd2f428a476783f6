//! The Hopper primitives (`rshmem_device::hopper`) on every backend, against host references:
//! the swizzle patterns TMA writes, element by element for each mode; TMA boxes at a matrix
//! edge (zero fill, 2-D and 3-D); TMA stores clipped at the edge and un-swizzled; an mbarrier
//! pipeline of 1..4 stages over many phases; `wgmma` for N = 8, 64, 128, 256 with A from
//! shared memory and from registers, bf16 and f16, in all four swizzle modes, and the same
//! from shared memory for e4m3 and e5m2 (`m64nNk32`); a tile GEMM with
//! edges in M, N and K. On the simulator, kernels that break the asynchronous contracts fail
//! or see poison. GPU instances need an sm_90 GPU (the image is sm_90a only).

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::device::fp8::{E4m3, E5m2, Fp8};
use rshmem::{Backend, LaunchConfig, Shmem, Swizzle, SymBuffer, TensorMap, TiledSpec, TmaType};
use rshmem_device_tests::hopper::{self as k, IMAGE};

per_backend! {
    wgmma_fp8_shapes_and_layouts => [1];
    tma_swizzle_patterns => [1];
    tma_box_at_edge_fills_zero => [1];
    tma_store_clips_and_unswizzles => [1];
    mbarrier_pipeline_phases => [1];
    wgmma_shapes_and_layouts => [1];
    tile_gemm => [1];
    wgmma_every_shape_issues => [1];
    simulator_exposes_async_bugs => [1];
}

const MODES: [Swizzle; 4] = [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128];

/// One map, in a symmetric buffer of its own.
fn map<'s>(
    shmem: &'s Shmem,
    spec: &TiledSpec<'_>,
) -> Result<SymBuffer<'s, TensorMap>, rshmem::Error> {
    shmem.alloc_from(&[TensorMap::tiled(shmem, spec)?])
}

fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// bf16 bits of a value exact in bf16.
fn bf16(v: f32) -> u16 {
    assert_eq!(v.to_bits() & 0xFFFF, 0, "{v} is not exact in bf16");
    (v.to_bits() >> 16) as u16
}

/// f16 bits of a small integer (exact in f16).
fn f16(v: f32) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let (sign, a) = ((v < 0.0) as u16, v.abs());
    assert!(a.fract() == 0.0 && a < 2048.0, "{v}");
    let e = a.log2().floor() as i32;
    let man = ((a / 2f32.powi(e) - 1.0) * 1024.0) as u16;
    sign << 15 | ((e + 15) as u16) << 10 | man
}

/// Each mode, a tensor of exactly one swizzle row (32 bf16 = 64 B without swizzle) by 24
/// rows, loaded whole: shared byte `swizzle(offset)` holds the element at `offset`.
fn tma_swizzle_patterns(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    for sw in MODES {
        let e = if sw == Swizzle::None {
            32
        } else {
            sw.row_bytes() / 2
        };
        let rows = 24u32;
        let data: Vec<u16> = (0..e * rows).map(|i| i as u16 ^ 0x5A00).collect();
        let src = shmem.alloc_from(&data)?;
        let m = map(
            shmem,
            &TiledSpec {
                ty: TmaType::Bf16,
                global: src.as_ptr().cast(),
                dims: &[e as u64, rows as u64],
                strides: &[e as u64 * 2],
                box_dims: &[e, rows],
                swizzle: sw,
            },
        )?;
        let bytes = e * rows * 2;
        let mut out = shmem.alloc_from(&vec![0u8; bytes as usize])?;
        let cfg = LaunchConfig::new(1, 128).shared_mem(bytes + 2048);
        // SAFETY: the map describes `src`; `out` holds `bytes`.
        unsafe {
            module.launch::<k::tma::tma_load_raw>(
                cfg,
                (
                    TensorMap::kernel_ptr(&m),
                    2,
                    0,
                    0,
                    0,
                    out.as_mut_ptr(),
                    bytes,
                ),
            )?
        };
        let raw = out.to_vec()?;
        for (i, &v) in data.iter().enumerate() {
            let p = sw.apply(2 * i as u32) as usize;
            let got = u16::from_le_bytes([raw[p], raw[p + 1]]);
            assert_eq!(
                got,
                v,
                "{sw:?}: element {i} (row {}, col {}) at shared byte {p}",
                i as u32 / e,
                i as u32 % e
            );
        }
    }
    Ok(())
}

/// The f32 value of element (x, y, z).
fn val(x: u64, y: u64, z: u64) -> f32 {
    (1 + x + 100 * y + 10_000 * z) as f32
}

fn tma_box_at_edge_fills_zero(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    // 2-D: 40 x 30, boxes of 16 x 16 past the far corner and before the near one.
    let (w, h) = (40u64, 30u64);
    let data: Vec<f32> = (0..w * h).map(|i| val(i % w, i / w, 0)).collect();
    let src = shmem.alloc_from(&data)?;
    let m = map(
        shmem,
        &TiledSpec {
            ty: TmaType::F32,
            global: src.as_ptr().cast(),
            dims: &[w, h],
            strides: &[w * 4],
            box_dims: &[16, 16],
            swizzle: Swizzle::None,
        },
    )?;
    for (x0, y0) in [(32i32, 24i32), (-8, -4), (0, 0)] {
        let mut out = shmem.alloc_from(&vec![f32::NAN; 256])?;
        // SAFETY: as in tma_swizzle_patterns.
        unsafe {
            module.launch::<k::tma::tma_load_raw>(
                LaunchConfig::new(1, 128).shared_mem(1024 + 2048),
                (
                    TensorMap::kernel_ptr(&m),
                    2,
                    x0,
                    y0,
                    0,
                    out.as_mut_ptr().cast(),
                    1024,
                ),
            )?
        };
        let got = out.to_vec()?;
        for (i, &g) in got.iter().enumerate() {
            let (x, y) = (x0 as i64 + (i % 16) as i64, y0 as i64 + (i / 16) as i64);
            let inside = (0..w as i64).contains(&x) && (0..h as i64).contains(&y);
            let want = if inside {
                val(x as u64, y as u64, 0)
            } else {
                0.0
            };
            assert_eq!(g, want, "2-D box at ({x0}, {y0}): element ({x}, {y})");
        }
    }
    // 3-D: 8 x 5 x 3, a box of 8 x 4 x 2 at (0, 3, 2): y and z both cross the edge.
    let (dx, dy, dz) = (8u64, 5u64, 3u64);
    let data: Vec<f32> = (0..dx * dy * dz)
        .map(|i| val(i % dx, i / dx % dy, i / (dx * dy)))
        .collect();
    let src = shmem.alloc_from(&data)?;
    let m = map(
        shmem,
        &TiledSpec {
            ty: TmaType::F32,
            global: src.as_ptr().cast(),
            dims: &[dx, dy, dz],
            strides: &[dx * 4, dx * dy * 4],
            box_dims: &[8, 4, 2],
            swizzle: Swizzle::None,
        },
    )?;
    let mut out = shmem.alloc_from(&vec![f32::NAN; 64])?;
    // SAFETY: as above.
    unsafe {
        module.launch::<k::tma::tma_load_raw>(
            LaunchConfig::new(1, 64).shared_mem(256 + 2048),
            (
                TensorMap::kernel_ptr(&m),
                3,
                0,
                3,
                2,
                out.as_mut_ptr().cast(),
                256,
            ),
        )?
    };
    for (i, &g) in out.to_vec()?.iter().enumerate() {
        let (x, y, z) = ((i % 8) as u64, 3 + (i / 8 % 4) as u64, 2 + (i / 32) as u64);
        let want = if y < dy && z < dz { val(x, y, z) } else { 0.0 };
        assert_eq!(g, want, "3-D box at (0, 3, 2): element ({x}, {y}, {z})");
    }
    Ok(())
}

/// A 16 x 16 f32 box stored at the far corner of a 40 x 30 tensor (clipped), with and
/// without the 64-byte swizzle (16 f32 = one 64-byte row): the source in shared memory is
/// laid out swizzled, the tensor receives it plain.
fn tma_store_clips_and_unswizzles(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (w, h) = (40u64, 30u64);
    for sw in [Swizzle::None, Swizzle::B64] {
        let mut dst = shmem.alloc_from(&vec![-1.0f32; (w * h) as usize])?;
        let m = map(
            shmem,
            &TiledSpec {
                ty: TmaType::F32,
                global: dst.as_mut_ptr().cast(),
                dims: &[w, h],
                strides: &[w * 4],
                box_dims: &[16, 16],
                swizzle: sw,
            },
        )?;
        let plain: Vec<f32> = (0..256).map(|i| 0.5 + i as f32).collect();
        let plain_bytes = bytes_of(&plain);
        let mut smem = vec![0u8; 1024];
        for chunk in 0..64u32 {
            let p = sw.apply(16 * chunk) as usize;
            smem[p..p + 16].copy_from_slice(&plain_bytes[16 * chunk as usize..][..16]);
        }
        let src = shmem.alloc_from(&smem)?;
        // SAFETY: the map describes `dst`; `src` holds 1024 bytes.
        unsafe {
            module.launch::<k::tma::tma_store_raw>(
                LaunchConfig::new(1, 128).shared_mem(1024 + 1024),
                (TensorMap::kernel_ptr(&m), 2, 32, 24, 0, src.as_ptr(), 1024),
            )?
        };
        let got = dst.to_vec()?;
        for y in 0..h {
            for x in 0..w {
                let want = if x >= 32 && y >= 24 {
                    plain[((y - 24) * 16 + x - 32) as usize]
                } else {
                    -1.0
                };
                assert_eq!(
                    got[(y * w + x) as usize],
                    want,
                    "{sw:?}: element ({x}, {y})"
                );
            }
        }
    }
    Ok(())
}

/// 12 tiles of 32 x 8 f32 through 1, 2, 3 and 4 stages: up to 12 phases per barrier.
fn mbarrier_pipeline_phases(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (tiles, rows, cols) = (12u32, 8u32, 32u32);
    let data: Vec<f32> = (0..tiles * rows * cols)
        .map(|i| ((i * 37) % 101) as f32)
        .collect();
    let src = shmem.alloc_from(&data)?;
    let m = map(
        shmem,
        &TiledSpec {
            ty: TmaType::F32,
            global: src.as_ptr().cast(),
            dims: &[cols as u64, (tiles * rows) as u64],
            strides: &[cols as u64 * 4],
            box_dims: &[cols, rows],
            swizzle: Swizzle::None,
        },
    )?;
    for stages in 1..=4u32 {
        let mut out = shmem.alloc_from(&vec![f32::NAN; (tiles * 128) as usize])?;
        let cfg = LaunchConfig::new(1, 128).shared_mem(stages * rows * cols * 4 + 2048);
        // SAFETY: the map describes `src`; `out` holds tiles * 128.
        unsafe {
            module.launch::<k::pipeline::pipeline_sum>(
                cfg,
                (
                    TensorMap::kernel_ptr(&m),
                    tiles,
                    stages,
                    rows,
                    cols,
                    out.as_mut_ptr(),
                ),
            )?
        };
        let got = out.to_vec()?;
        for t in 0..tiles {
            for c in 0..cols {
                let want: f32 = (0..rows)
                    .map(|r| data[((t * rows + r) * cols + c) as usize])
                    .sum();
                assert_eq!(
                    got[(t * 128 + c) as usize],
                    want,
                    "{stages} stages: tile {t}, column {c}"
                );
            }
        }
    }
    Ok(())
}

/// The arguments of the `wgmma_n{N}` kernels.
type WgmmaArgs = (
    *const rshmem::device::hopper::TensorMap,
    *const rshmem::device::hopper::TensorMap,
    *const u16,
    u32,
    u32,
    u32,
    u32,
    *mut f32,
);

/// Launches the `wgmma_n{N}` kernel of `n` (8, 64, 128 or 256).
///
/// # Safety
///
/// The kernels' contract (`testing/kernels/hopper/src/mma.rs`) for `args` and `cfg`.
unsafe fn launch_wgmma(
    module: &rshmem::Module<'_>,
    n: u32,
    cfg: LaunchConfig,
    args: WgmmaArgs,
) -> Result<(), rshmem::Error> {
    // SAFETY: forwarded contract.
    unsafe {
        match n {
            8 => module.launch::<k::mma::wgmma_n8>(cfg, args),
            64 => module.launch::<k::mma::wgmma_n64>(cfg, args),
            128 => module.launch::<k::mma::wgmma_n128>(cfg, args),
            _ => module.launch::<k::mma::wgmma_n256>(cfg, args),
        }
    }
}

/// Small integers, exact in bf16 and f16 and in every f32 sum below.
fn small(i: u32, j: u32, salt: u32) -> f32 {
    ((i * 7 + j * 3 + salt) % 9) as f32 - 4.0
}

fn wgmma_shapes_and_layouts(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let kk = 64u32;
    for n in [8u32, 64, 128, 256] {
        for (f16_in, to_bits) in [(0u32, bf16 as fn(f32) -> u16), (1, f16)] {
            let a: Vec<f32> = (0..64 * kk).map(|i| small(i / kk, i % kk, 1)).collect();
            let b: Vec<f32> = (0..n * kk).map(|i| small(i / kk, i % kk, 5 + n)).collect();
            let ga = shmem.alloc_from(&a.iter().map(|&v| to_bits(v)).collect::<Vec<u16>>())?;
            let gb = shmem.alloc_from(&b.iter().map(|&v| to_bits(v)).collect::<Vec<u16>>())?;
            let want: Vec<f32> = (0..64 * n)
                .map(|i| {
                    (0..kk)
                        .map(|q| a[(i / n * kk + q) as usize] * b[(i % n * kk + q) as usize])
                        .sum()
                })
                .collect();
            let ty = if f16_in == 1 {
                TmaType::F16
            } else {
                TmaType::Bf16
            };
            for (code, sw) in MODES.iter().enumerate() {
                let e = sw.row_bytes() / 2;
                let ma = map(
                    shmem,
                    &TiledSpec {
                        ty,
                        global: ga.as_ptr().cast(),
                        dims: &[kk as u64, 64],
                        strides: &[kk as u64 * 2],
                        box_dims: &[e, 64],
                        swizzle: *sw,
                    },
                )?;
                let mb = map(
                    shmem,
                    &TiledSpec {
                        ty,
                        global: gb.as_ptr().cast(),
                        dims: &[kk as u64, n as u64],
                        strides: &[kk as u64 * 2],
                        box_dims: &[e, n],
                        swizzle: *sw,
                    },
                )?;
                for a_regs in [0u32, 1] {
                    let mut out = shmem.alloc_from(&vec![f32::NAN; (64 * n) as usize])?;
                    let cfg = LaunchConfig::new(1, 128).shared_mem((64 + n) * kk * 2 + 2048);
                    let args = (
                        TensorMap::kernel_ptr(&ma),
                        TensorMap::kernel_ptr(&mb),
                        ga.as_ptr(),
                        kk,
                        code as u32,
                        a_regs,
                        f16_in,
                        out.as_mut_ptr(),
                    );
                    // SAFETY: maps of `ga` (64 x kk) and `gb` (n x kk); `out` holds 64 x n.
                    unsafe { launch_wgmma(&module, n, cfg, args)? };
                    let got = out.to_vec()?;
                    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g,
                            w,
                            "m64n{n}k16 {} A from {} {sw:?}: D[{}][{}]",
                            if f16_in == 1 { "f16" } else { "bf16" },
                            if a_regs == 1 {
                                "registers"
                            } else {
                                "shared memory"
                            },
                            i as u32 / n,
                            i as u32 % n
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

/// FP8 operands: quarters in -1..=1, every 7th row scaled by 2⁻⁶ (subnormal in e4m3), exact
/// in both formats. The scale is per row, not per element, because the tensor cores sum FP8
/// products in fewer bits than f32 (products aligned to the largest, low bits dropped: on an
/// H100, per-element scales made D[0][0] inexact): within one dot product every term shares
/// one scale, so each partial sum needs at most 11 significant bits and D is exact.
fn fp8_value(i: u32, j: u32, salt: u32) -> f32 {
    let v = small(i, j, salt) / 4.0;
    if i % 7 == 0 {
        v / 64.0
    } else {
        v
    }
}

/// `m64nNk32` with e4m3 and e5m2 operands from shared memory, K = 128 (4 instructions), for
/// each N and swizzle mode: D equals the f64 reference exactly.
fn wgmma_fp8_shapes_and_layouts(shmem: &Shmem) -> Outcome {
    fn run<F: Fp8>(shmem: &Shmem, ty: u32) -> Outcome {
        let module = shmem.load(&IMAGE)?;
        let kk = 128u32;
        let bytes = |v: &[f32]| -> Vec<u8> {
            v.iter()
                .map(|&x| {
                    let q = F::from_f32(x);
                    assert_eq!(q.to_f32(), x, "{x} is not exact in {}", F::NAME);
                    q.to_bits()
                })
                .collect()
        };
        for n in [8u32, 64, 128, 256] {
            let a: Vec<f32> = (0..64 * kk).map(|i| fp8_value(i / kk, i % kk, 1)).collect();
            let b: Vec<f32> = (0..n * kk)
                .map(|i| fp8_value(i / kk, i % kk, 5 + n))
                .collect();
            let (ga, gb) = (shmem.alloc_from(&bytes(&a))?, shmem.alloc_from(&bytes(&b))?);
            let want: Vec<f64> = (0..64 * n)
                .map(|i| {
                    (0..kk)
                        .map(|q| {
                            a[(i / n * kk + q) as usize] as f64
                                * b[(i % n * kk + q) as usize] as f64
                        })
                        .sum()
                })
                .collect();
            for (code, sw) in MODES.iter().enumerate() {
                // One box per span of K: the span in bytes is the span in elements.
                let e = sw.row_bytes();
                let map_of = |g: &SymBuffer<'_, u8>, rows: u32| {
                    let spec = TiledSpec {
                        ty: TmaType::U8,
                        global: g.as_ptr().cast(),
                        dims: &[kk as u64, rows as u64],
                        strides: &[kk as u64],
                        box_dims: &[e, rows],
                        swizzle: *sw,
                    };
                    map(shmem, &spec)
                };
                let (ma, mb) = (map_of(&ga, 64)?, map_of(&gb, n)?);
                let mut out = shmem.alloc_from(&vec![f32::NAN; (64 * n) as usize])?;
                let cfg = LaunchConfig::new(1, 128).shared_mem((64 + n) * kk + 2048);
                let args = (
                    TensorMap::kernel_ptr(&ma),
                    TensorMap::kernel_ptr(&mb),
                    std::ptr::null::<u16>(),
                    kk,
                    code as u32,
                    0,
                    ty,
                    out.as_mut_ptr(),
                );
                // SAFETY: maps of `ga` (64 x kk) and `gb` (n x kk) bytes; `out` holds 64 x n;
                // an 8-bit type never reads `a`.
                unsafe { launch_wgmma(&module, n, cfg, args)? };
                let got = out.to_vec()?;
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        g as f64,
                        w,
                        "m64n{n}k32 {} {sw:?}: D[{}][{}]",
                        F::NAME,
                        i as u32 / n,
                        i as u32 % n
                    );
                }
            }
        }
        Ok(())
    }
    run::<E4m3>(shmem, 2)?;
    run::<E5m2>(shmem, 3)
}

/// C = A B^T for M = 100, N = 256, K = 200 (edges in M and K; 2 x 2 tiles of 64 x 128).
fn tile_gemm(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (m, n, kk) = (100u32, 256u32, 200u32);
    let a: Vec<f32> = (0..m * kk)
        .map(|i| small(i / kk, i % kk, 2) / 2.0)
        .collect();
    let b: Vec<f32> = (0..n * kk).map(|i| small(i / kk, i % kk, 7)).collect();
    let ga = shmem.alloc_from(&a.iter().map(|&v| bf16(v)).collect::<Vec<u16>>())?;
    let gb = shmem.alloc_from(&b.iter().map(|&v| bf16(v)).collect::<Vec<u16>>())?;
    // K = 200 rows are 400 bytes: a multiple of 16, as TMA needs.
    let ma = map(
        shmem,
        &TiledSpec {
            ty: TmaType::Bf16,
            global: ga.as_ptr().cast(),
            dims: &[kk as u64, m as u64],
            strides: &[kk as u64 * 2],
            box_dims: &[k::gemm::BK, k::gemm::BM],
            swizzle: Swizzle::B128,
        },
    )?;
    let mb = map(
        shmem,
        &TiledSpec {
            ty: TmaType::Bf16,
            global: gb.as_ptr().cast(),
            dims: &[kk as u64, n as u64],
            strides: &[kk as u64 * 2],
            box_dims: &[k::gemm::BK, k::gemm::BN],
            swizzle: Swizzle::B128,
        },
    )?;
    let mut c = shmem.alloc_from(&vec![f32::NAN; (m * n) as usize])?;
    let blocks = m.div_ceil(k::gemm::BM) * n.div_ceil(k::gemm::BN);
    let cfg = LaunchConfig::new(blocks, 128).shared_mem(k::gemm::SHARED_BYTES);
    // SAFETY: maps of `ga` (m x kk) and `gb` (n x kk); `c` holds m x n.
    unsafe {
        module.launch::<k::gemm::gemm_bf16>(
            cfg,
            (
                TensorMap::kernel_ptr(&ma),
                TensorMap::kernel_ptr(&mb),
                c.as_mut_ptr(),
                m,
                n,
                kk,
            ),
        )?
    };
    let got = c.to_vec()?;
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..kk)
                .map(|q| a[(i * kk + q) as usize] * b[(j * kk + q) as usize])
                .sum();
            assert_eq!(got[(i * n + j) as usize], want, "C[{i}][{j}]");
        }
    }
    if shmem.backend() == Backend::Gpu {
        eprintln!("tile_gemm: {m} x {n} x {kk} matches the host reference on the GPU");
    }
    Ok(())
}

/// On the simulator: a box read before its mbarrier completes is poison (0xFF), and
/// accumulators taken before `wait_group`, an mma without `wgmma::fence` and an uncommitted
/// mma fail naming the rule; setmaxnreg needs whole warpgroups. (Undefined on a GPU: not run
/// there.)
fn simulator_exposes_async_bugs(shmem: &Shmem) -> Outcome {
    if shmem.backend() == Backend::Gpu {
        eprintln!("simulator_exposes_async_bugs: simulator only (the kernels race on a GPU)");
        return Ok(());
    }
    let module = shmem.load(&IMAGE)?;
    let data: Vec<u16> = (0..64 * 64)
        .map(|i| bf16(small(i / 64, i % 64, 0)))
        .collect();
    let src = shmem.alloc_from(&data)?;
    let ma = map(
        shmem,
        &TiledSpec {
            ty: TmaType::Bf16,
            global: src.as_ptr().cast(),
            dims: &[64, 64],
            strides: &[128],
            box_dims: &[64, 64],
            swizzle: Swizzle::B128,
        },
    )?;
    let mb = map(
        shmem,
        &TiledSpec {
            ty: TmaType::Bf16,
            global: src.as_ptr().cast(),
            dims: &[64, 64],
            strides: &[128],
            box_dims: &[64, 8],
            swizzle: Swizzle::B128,
        },
    )?;
    let mut out = shmem.alloc_from(&vec![0u8; 8192])?;
    // SAFETY: the map describes `src`; `out` holds 8192 bytes.
    unsafe {
        module.launch::<k::bugs::read_before_wait>(
            LaunchConfig::new(1, 128).shared_mem(8192 + 2048),
            (TensorMap::kernel_ptr(&ma), out.as_mut_ptr(), 8192),
        )?
    };
    assert!(
        out.to_vec()?.iter().all(|&b| b == 0xFF),
        "a box read before its barrier completed must be poison"
    );
    let mut d = shmem.alloc_from(&vec![0f32; 128])?;
    let cfg = LaunchConfig::new(1, 128).shared_mem(64 * 128 + 8 * 128 + 2048);
    for (which, needle) in [
        (1u32, "wgmma::wait_group first"),
        (2, "no wgmma::fence()"),
        (3, "never committed"),
    ] {
        // SAFETY: as above; `d` holds 128 f32.
        let launched = unsafe {
            module.launch::<k::bugs::wgmma_misuse>(
                cfg,
                (
                    TensorMap::kernel_ptr(&ma),
                    TensorMap::kernel_ptr(&mb),
                    which,
                    d.as_mut_ptr(),
                ),
            )
        };
        let msg = launched
            .and_then(|()| shmem.synchronize())
            .expect_err("the misuse must fail")
            .to_string();
        assert!(
            msg.contains("wgmma_misuse") && msg.contains(needle),
            "misuse {which}: {msg}"
        );
    }
    // SAFETY: as above.
    unsafe {
        module.launch::<k::bugs::wgmma_misuse>(
            cfg,
            (
                TensorMap::kernel_ptr(&ma),
                TensorMap::kernel_ptr(&mb),
                0,
                d.as_mut_ptr(),
            ),
        )?
    };
    let want: f32 = (0..16).map(|q| small(0, q, 0) * small(0, q, 0)).sum();
    assert_eq!(d.to_vec()?[0], want, "thread 0 holds D[0][0]");
    // setmaxnreg is a warpgroup meeting: whole warpgroups pass, a partial one fails.
    let mut ones = shmem.alloc_from(&[0u32; 256])?;
    // SAFETY: `ones` holds 256 u32.
    unsafe {
        module.launch::<k::bugs::setmaxnreg_meeting>(
            LaunchConfig::new(1, 256),
            (ones.as_mut_ptr(),),
        )?
    };
    assert!(ones.to_vec()?.iter().all(|&v| v == 1));
    // SAFETY: as above.
    let launched = unsafe {
        module.launch::<k::bugs::setmaxnreg_meeting>(LaunchConfig::new(1, 96), (ones.as_mut_ptr(),))
    };
    let msg = launched
        .and_then(|()| shmem.synchronize())
        .expect_err("a partial warpgroup must fail")
        .to_string();
    assert!(
        msg.contains("setmaxnreg") && msg.contains("128 threads of a warpgroup"),
        "{msg}"
    );
    Ok(())
}

/// Every N of the family, every type, both A sources (16-bit types), issues and completes
/// (zero operands).
fn wgmma_every_shape_issues(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let mut out = shmem.alloc_from(&[f32::NAN; 128])?;
    for n in (8..=256).step_by(8) {
        for (ty, a_regs) in [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0)] {
            let cfg = LaunchConfig::new(1, 128).shared_mem(256 * 32 + 64 * 32 + 1024);
            // SAFETY: `out` holds 128 f32.
            unsafe {
                module
                    .launch::<k::mma::wgmma_every_shape>(cfg, (n, ty, a_regs, out.as_mut_ptr()))?
            };
            assert!(
                out.to_vec()?.iter().all(|&v| v == 0.0),
                "m64n{n} (type {ty}, A in registers {a_regs})"
            );
        }
    }
    Ok(())
}
