//! A quick speed probe of the sm90 GEMM kernels alone (no cuBLAS beside it): for each shape,
//! fresh pseudo-random bf16 A and B, one checked run (256 sampled entries of C against an
//! f64 host reference), then the median of 20 timed runs. `gemm_probe [grid]`; GPU only.

use rshmem::{bf16, Backend, Job, LaunchConfig, Shmem, Swizzle, TensorMap, TiledSpec, TmaType};
use rshmem_ops_sm90_kernels::{self as k, sm90};

fn rng(seed: &mut u64) -> f32 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

fn main() -> Result<(), rshmem::BoxError> {
    let grid: u32 = std::env::args().nth(1).map_or(132, |g| g.parse().unwrap());
    Job::new().backend(Backend::Gpu).npes(1).run(move |shmem: &Shmem| -> Result<(), rshmem::BoxError> {
        let module = shmem.load(&rshmem_ops::SM90)?;
        let shapes: Vec<(u32, u32, u32)> = std::env::var("PROBE_SHAPES")
            .unwrap_or_else(|_| "8192,8192,8192;4096,4096,4096;2048,2048,2048;8192,1024,8192;8192,4096,8192;4096,6144,12288;8192,8192,3584".into())
            .split(';')
            .map(|s| {
                let v: Vec<u32> = s.split(',').map(|x| x.parse().unwrap()).collect();
                (v[0], v[1], v[2])
            })
            .collect();
        let variants = std::env::var("PROBE_VARIANTS").unwrap_or_else(|_| "nk,kn".into());
        println!("| m | n | k | B | ms | TFLOP/s | max rel err (256 samples) |");
        for &(m, n, kk) in &shapes {
            for variant in variants.split(',') {
                let kn = variant == "kn";
                eprintln!("probe: {m} x {n} x {kk} {variant}: data");
                let mut seed = (m as u64) << 32 | n as u64 ^ kk as u64 ^ kn as u64;
                let a: Vec<bf16> = (0..m as usize * kk as usize).map(|_| bf16::from_f32(rng(&mut seed))).collect();
                let b: Vec<bf16> = (0..n as usize * kk as usize).map(|_| bf16::from_f32(rng(&mut seed))).collect();
                let (ga, gb) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
                let mut c = shmem.alloc_from(&vec![bf16::from_bits(0xFFFF); m as usize * n as usize])?;
                let spec = |p: *const bf16, rows: u32, cols: u32, bx: [u32; 2]| {
                    TensorMap::tiled(shmem, &TiledSpec {
                        ty: TmaType::Bf16,
                        global: p.cast(),
                        dims: &[cols as u64, rows as u64],
                        strides: &[cols as u64 * 2],
                        box_dims: &bx,
                        swizzle: Swizzle::B128,
                    })
                };
                let maps = shmem.alloc_from(&[
                    spec(ga.as_ptr(), m, kk, sm90::A_BOX)?,
                    if kn { spec(gb.as_ptr(), kk, n, sm90::B_BOX_KN)? } else { spec(gb.as_ptr(), n, kk, sm90::B_BOX_NK)? },
                ])?;
                let pa = TensorMap::kernel_ptr(&maps);
                // SAFETY: two maps side by side.
                let pb = unsafe { pa.add(1) };
                let tiles = m.div_ceil(sm90::BM) * n.div_ceil(sm90::BN);
                let cfg = LaunchConfig::new(tiles.min(grid), sm90::THREADS).shared_mem(sm90::SHARED_BYTES);
                let cp = c.as_mut_ptr();
                let mut go = || -> rshmem::Result<()> {
                    // SAFETY: maps of ga/gb as the kernels expect; c holds m x n.
                    unsafe {
                        if kn {
                            module.launch::<k::gemm90_bf16_bf16_kn>(cfg, (pa, pb, cp, n, m, n, kk))
                        } else if variant == "nosmr" {
                            module.launch::<k::diag_gemm90_nosmr>(cfg, (pa, pb, cp, n, m, n, kk))
                        } else {
                            module.launch::<k::gemm90_bf16_bf16_nk>(cfg, (pa, pb, cp, n, m, n, kk))
                        }
                    }
                };
                eprintln!("probe: launch");
                go()?;
                let got = c.to_vec()?;
                eprintln!("probe: first run done");
                let mut worst = 0f64;
                let mut s2 = 7u64;
                for _ in 0..256 {
                    let r = (rng(&mut s2).abs() * m as f32) as usize % m as usize;
                    let col = (rng(&mut s2).abs() * n as f32) as usize % n as usize;
                    let (mut want, mut mag) = (0f64, 0f64);
                    for q in 0..kk as usize {
                        let av = a[r * kk as usize + q].to_f64();
                        let bv = if kn { b[q * n as usize + col] } else { b[col * kk as usize + q] }.to_f64();
                        want += av * bv;
                        mag += (av * bv).abs();
                    }
                    let g = got[r * n as usize + col].to_f64();
                    worst = worst.max((g - want).abs() / mag.max(1e-30));
                }
                let mut times = Vec::new();
                for i in 0..23 {
                    let t = shmem.time(&mut go)?;
                    if i >= 3 {
                        times.push(t.as_secs_f64());
                    }
                }
                times.sort_by(|x, y| x.partial_cmp(y).unwrap());
                let med = times[times.len() / 2];
                let tflops = 2.0 * m as f64 * n as f64 * kk as f64 / med / 1e12;
                println!("| {m} | {n} | {kk} | {} | {:.3} | {tflops:.0} | {worst:.2e} |", if kn { "KxN" } else { "NxK" }, med * 1e3);
            }
        }
        Ok(())
    })?;
    Ok(())
}
