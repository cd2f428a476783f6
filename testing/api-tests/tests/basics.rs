//! GPU basics (warp operations, scoped atomics, dynamic shared memory, peer atomics) with
//! fresh random data, checked against host references on every backend.

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{Backend, DeviceInfo, GpuSharing, LaunchConfig, Shmem};
use rshmem_api_tests::{basics, IMAGE};

per_backend! {
    warp_operations => [2];
    special_functions_within_their_bounds => [2];
    scoped_atomics => [2];
    shared_memory_reverse => [2];
    peer_system_atomics => [2, 3];
    printf_and_device_assert => [2];
    device_info_says_how_the_gpu_is_shared => [1, 2, 3];
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn warp_operations(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let warps = 3usize;
    let n = warps * 32;
    let input: Vec<u32> = common::random_u32(n, seed() ^ shmem.my_pe() as u64)
        .iter()
        .map(|x| x % 1000 + 1)
        .collect();
    let inp = shmem.alloc_from(&input)?;
    let mut out = shmem.alloc_from(&vec![0xFFFF_FFFFu32; n * basics::WARP_OPS_OUT])?;
    // SAFETY: `inp` holds n u32s, `out` n * WARP_OPS_OUT.
    unsafe {
        module.launch::<basics::warp_ops>(
            LaunchConfig::new(warps as u32, 32),
            (inp.as_ptr(), out.as_mut_ptr()),
        )?
    };
    let got = out.to_vec()?;
    for w in 0..warps {
        let v = &input[w * 32..w * 32 + 32];
        let ballot = (0..32)
            .filter(|&l| v[l] % 2 == 1)
            .fold(0u32, |a, l| a | 1 << l);
        let sum = v.iter().fold(0u32, |a, &x| a.wrapping_add(x));
        for lane in 0..32 {
            let o = &got[(w * 32 + lane) * basics::WARP_OPS_OUT..][..basics::WARP_OPS_OUT];
            let up = if lane >= 1 { v[lane - 1] } else { v[lane] };
            let down = if lane + 2 < 32 { v[lane + 2] } else { v[lane] };
            let below = v[..lane].iter().fold(0u32, |a, &x| a.wrapping_add(x));
            let same = (0..32)
                .filter(|&l| v[l] % 5 == v[lane] % 5)
                .fold(0u32, |a, l| a | 1 << l);
            let expected = [
                v[3],
                up,
                down,
                v[lane ^ 5],
                ballot,
                1,
                v.contains(&7) as u32,
                sum,
                below,
                sum,
                same,
            ];
            assert_eq!(o, expected, "warp {w} lane {lane}");
        }
    }
    shmem.barrier_all()?;
    Ok(())
}

/// `rshmem_device::math`'s documented bounds (`ex2` within `2⁻²²` relative where the result
/// is a normal f32, `rcp` within one ulp), on fresh random inputs and the edges.
fn special_functions_within_their_bounds(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let mut x: Vec<f32> = common::random_u32(4096, seed() ^ shmem.my_pe() as u64)
        .iter()
        .map(|&r| (r as f64 / u32::MAX as f64 * 260.0 - 130.0) as f32)
        .collect();
    x.extend([
        0.0, -0.0, 1.0, -1.0, 0.5, 127.5, -125.9, 200.0, -200.0, 1e-30, -3e38,
    ]);
    let n = x.len();
    let inp = shmem.alloc_from(&x)?;
    let mut out = shmem.alloc_from(&vec![f32::NAN; 2 * n])?;
    // SAFETY: `inp` holds n f32s, `out` 2n.
    unsafe {
        module.launch::<basics::special_functions>(
            LaunchConfig::for_num_elems(n as u32, 128),
            (inp.as_ptr(), out.as_mut_ptr(), n as u32),
        )?
    };
    let got = out.to_vec()?;
    for (i, &v) in x.iter().enumerate() {
        let (e, r) = (got[2 * i] as f64, got[2 * i + 1] as f64);
        let want_e = (v as f64).exp2();
        if want_e > f32::MAX as f64 {
            assert_eq!(e, f64::INFINITY, "exp2_approx({v})");
        } else if want_e >= f32::MIN_POSITIVE as f64 {
            assert!(
                (e - want_e).abs() <= want_e * 2f64.powi(-22),
                "exp2_approx({v}) = {e}, want {want_e}"
            );
        } else {
            // Subnormal results: flushed to zero on a GPU, exact on the simulator.
            assert!(e <= f32::MIN_POSITIVE as f64, "exp2_approx({v}) = {e}");
        }
        let want_r = 1.0 / v as f64;
        if v == 0.0 {
            assert!(
                r.is_infinite() && r.is_sign_negative() == v.is_sign_negative(),
                "rcp_approx({v}) = {r}"
            );
        } else if want_r.abs() < f32::MIN_POSITIVE as f64 {
            assert!(r.abs() <= f32::MIN_POSITIVE as f64, "rcp_approx({v}) = {r}");
        } else {
            assert!(
                (r - want_r).abs() <= want_r.abs() * 2f64.powi(-23),
                "rcp_approx({v}) = {r}, want {want_r}"
            );
        }
    }
    shmem.barrier_all()?;
    Ok(())
}

fn scoped_atomics(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let n = 300u32; // not a multiple of the block size
    let input: Vec<u64> = common::random_u32(n as usize, seed())
        .iter()
        .map(|&x| x as u64 * 977)
        .collect();
    let inp = shmem.alloc_from(&input)?;
    let mut sums = shmem.alloc_zeroed::<u64>(4)?;
    // SAFETY: `inp` holds n u64s, `sums` 4.
    unsafe {
        module.launch::<basics::scoped_atomics>(
            LaunchConfig::for_num_elems(n, 128),
            (inp.as_ptr(), sums.as_mut_ptr(), n),
        )?
    };
    let total: u64 = input.iter().sum();
    let max = *input.iter().max().unwrap();
    let xor = input.iter().fold(0, |a, x| a ^ x);
    assert_eq!(sums.to_vec()?, vec![total, total, max, xor]);
    shmem.barrier_all()?;
    Ok(())
}

fn shared_memory_reverse(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (n, block) = (333u32, 64u32);
    let data: Vec<i32> = common::random_u32(n as usize, seed())
        .iter()
        .map(|&x| x as i32)
        .collect();
    let mut buf = shmem.alloc_from(&data)?;
    let cfg = LaunchConfig::for_num_elems(n, block).shared_mem(block * 4);
    // SAFETY: `buf` holds n i32s; each block has block_dim i32s of shared memory.
    unsafe { module.launch::<basics::shared_reverse>(cfg, (buf.as_mut_ptr(), n))? };
    let expected: Vec<i32> = data
        .chunks(block as usize)
        .flat_map(|c| c.iter().rev().copied())
        .collect();
    assert_eq!(buf.to_vec()?, expected);
    shmem.barrier_all()?;
    Ok(())
}

fn peer_system_atomics(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let mut counter = shmem.alloc_from(&[1000u64])?;
    shmem.barrier_all()?;
    // SAFETY: one symmetric u64; every PE launches (the kernel ends with a barrier).
    unsafe {
        module.launch::<basics::peer_atomic>(
            LaunchConfig::new(1, 1).cooperative(),
            (counter.as_mut_ptr(),),
        )?
    };
    let left = (me + n - 1) % n;
    assert_eq!(counter.to_vec()?[0], 1000 + left as u64 + 1);
    shmem.barrier_all()?;
    Ok(())
}

fn printf_and_device_assert(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let mut out = shmem.alloc_zeroed::<i32>(1)?;
    // SAFETY: `out` holds one i32.
    unsafe {
        module.launch::<basics::checked_div>(LaunchConfig::new(1, 32), (84, 2, out.as_mut_ptr()))?
    };
    assert_eq!(out.to_vec()?[0], 42);
    // A failed device assertion traps: the launch (or the next synchronisation) fails, naming
    // the kernel and the PE.
    // SAFETY: as above.
    let launched = unsafe {
        module.launch::<basics::checked_div>(LaunchConfig::new(1, 32), (1, 0, out.as_mut_ptr()))
    };
    common::expect_kernel_failure(shmem, launched, "checked_div");
    Ok(())
}

/// The simulator's facts; on GPUs, a PE alone on its GPU has it to itself, and PEs that
/// rshmem's launcher placed under MPS (it set their `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`) run
/// in NVSHMEM's full mode on their share of the SMs, the same on every PE.
fn device_info_says_how_the_gpu_is_shared(shmem: &Shmem) -> Outcome {
    let info = shmem.device_info();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    eprintln!("PE {me} of {n}: {info:?}");
    if shmem.backend() == Backend::Sim {
        assert_eq!(info, DeviceInfo::SIM);
        return Ok(());
    }
    assert!(info.multiprocessors >= 1 && info.sm >= 80, "{info:?}");
    if n == 1 {
        assert_eq!(info.sharing, GpuSharing::Exclusive);
    }
    if let Ok(p) = std::env::var("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") {
        if n > 1 && info.sharing != GpuSharing::Exclusive {
            assert_eq!(info.sharing, GpuSharing::Mps, "{p} % each under MPS");
        }
    }
    // Every PE of a GPU reports the same: gathered through symmetric memory.
    let mine = [info.multiprocessors, info.sharing as u32];
    let src = shmem.alloc_from(&mine)?;
    let all = shmem.alloc_zeroed::<u32>(2 * n)?;
    let stream = shmem.stream();
    for pe in 0..n {
        stream.put(all.range(2 * me..2 * me + 2)?, &src, pe)?;
    }
    stream.barrier_all()?;
    stream.synchronize()?;
    let got = all.to_vec()?;
    if info.sharing != GpuSharing::Exclusive {
        assert!(got.chunks(2).all(|c| c == mine), "PE {me}: {got:?}");
    }
    Ok(())
}
