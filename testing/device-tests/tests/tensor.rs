//! Tensor cores and 16-bit floats on every backend: each primitive of `rshmem_device::mma` and
//! `rshmem_device::half` run by a kernel of `rshmem_device_tests::tensor` and checked against a host
//! reference written from the PTX ISA (fragment tables, `ldmatrix` figure, `cvt` rounding),
//! not from the simulator's code.
//!
//! `cargo test -p rshmem-device-tests --test tensor` runs the simulator instances; the GPU instances
//! (`gpu::*`, ignored without GPUs) need sm_90: `cargo test -p rshmem-device-tests --test tensor --
//! --ignored gpu::` on an H100/H200 (or `scripts/gpu-check.sh`).
//!
//! Bounds: products of bf16, f16 and tf32 values are exact in f32 and the ISA leaves the
//! rounding of the k-sum open, so an `mma` of values whose partial sums are all exact
//! (small integers) must match the f64 reference exactly, and one of arbitrary values must be
//! within `2^-19 · (|c| + Σ|a·b|)` of it (for the 4-stage GEMM, `2^-17 · Σ|a·b|`).

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::device::half::{bf16, f16, Half};
use rshmem::{LaunchConfig, Module, Shmem};
use rshmem_device_tests::tensor::{self as t, cvt, gemm, matrix, mma, IMAGE};

per_backend! {
    conversions_round_like_cvt => [1];
    half_kernel_arguments => [1];
    half_rma_around_the_ring => [2, 3];
    fragment_layouts => [1];
    mma_exact_sums => [1];
    mma_within_bound => [1];
    mma_infinities_and_nan => [1];
    ldmatrix_every_count => [1];
    stmatrix_every_count => [1];
    cp_async_groups => [1];
    gemm_one_warp => [1];
}

fn seed(shmem: &Shmem) -> u64 {
    common::agreed_seed(shmem).unwrap_or(1)
}

fn warp(shared: u32) -> LaunchConfig {
    LaunchConfig::new(1, 32).shared_mem(shared)
}

// ---------------------------------------------------------------------------------------
// Conversions: references by brute force over every value of the 16-bit formats.
// ---------------------------------------------------------------------------------------

/// Round-to-nearest-even of `x` among the finite non-negative values `values` (ascending, from
/// the `half` crate's exact widening), with `inf` the pattern of +∞: IEEE's definition.
fn nearest_even(values: &[(f64, u16)], inf: u16, x: f32) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let ax = f64::from(x.abs());
    let (max, _) = values[values.len() - 1];
    let top_ulp = max - values[values.len() - 2].0;
    if ax >= max + top_ulp / 2.0 {
        return sign | inf;
    }
    let i = values
        .partition_point(|&(v, _)| v < ax)
        .min(values.len() - 1);
    let (hi, hb) = values[i];
    if hi == ax || i == 0 {
        return sign | hb;
    }
    let (lo, lb) = values[i - 1];
    sign | match (ax - lo).partial_cmp(&(hi - ax)).unwrap() {
        std::cmp::Ordering::Less => lb,
        std::cmp::Ordering::Greater => hb,
        std::cmp::Ordering::Equal if lb % 2 == 0 => lb,
        std::cmp::Ordering::Equal => hb,
    }
}

/// `cvt.rna.tf32.f32`: the nearer of the two 10-bit-mantissa neighbours, ties away from zero;
/// a NaN with its 13 low bits cut (what an H200 returns: `scripts/cuda/cvt_nan_probe.cu`).
fn tf32_reference(x: f32) -> u32 {
    if x.is_nan() {
        return x.to_bits() & 0xFFFF_E000;
    }
    if x.is_infinite() {
        return x.to_bits();
    }
    let lo = x.to_bits() & !0x1FFF;
    let hi = lo + 0x2000;
    // Past the largest finite value, the next one "is" 2^128 (IEEE rounds as if the exponent
    // were unbounded, then overflows to ∞).
    let value = |b: u32| match b & 0x7FFF_FFFF {
        0x7F80_0000 => 2f64.powi(128).copysign(f64::from(x)),
        _ => f64::from(f32::from_bits(b)),
    };
    let (dl, dh) = (
        (f64::from(x) - value(lo)).abs(),
        (value(hi) - f64::from(x)).abs(),
    );
    if dl < dh {
        lo
    } else {
        hi
    }
}

/// 65536 f32 inputs: ±0, ±∞, NaNs, extremes, every bf16/f16 midpoint ± 1 ulp, the exact ties,
/// subnormals of both formats, and random bits.
fn probes(seed: u64) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7F80_0001),
        f32::from_bits(0xFFC0_1234),
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x0040_0000),
        65504.0,
        65519.996,
        65520.0,
        -65520.0,
        2f32.powi(-24),
        2f32.powi(-25),
        3.0 * 2f32.powi(-25),
        2f32.powi(-14),
        1.0 + 2f32.powi(-8),
        1.0 + 3.0 * 2f32.powi(-8),
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        -(1.0 + 2f32.powi(-11)),
    ];
    for h in (0..=0xFFFFu32).step_by(7) {
        let b = h << 16;
        v.extend([b + 0x8000, b + 0x7FFF, b + 0x8001].map(f32::from_bits));
        let f = f16::from_bits(h as u16).to_f32().to_bits();
        v.extend([f + 0x1000, f + 0xFFF, f + 0x1001].map(f32::from_bits));
    }
    v.extend(
        common::random_u32(65536, seed)
            .into_iter()
            .map(f32::from_bits),
    );
    v.truncate(65536);
    v
}

fn conversions_round_like_cvt(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let n = 65536usize;
    let x = probes(seed(shmem));
    let h: Vec<u16> = (0..=0xFFFF).collect();
    let xs = shmem.alloc_from(&x)?;
    let hs = shmem.alloc_from(&h)?;
    let mut b16 = shmem.alloc_zeroed::<u16>(n)?;
    let mut h16 = shmem.alloc_zeroed::<u16>(n)?;
    let mut t32 = shmem.alloc_zeroed::<u32>(n)?;
    let mut wb = shmem.alloc_zeroed::<u32>(n)?;
    let mut wh = shmem.alloc_zeroed::<u32>(n)?;
    // SAFETY: every buffer holds n elements.
    unsafe {
        module.launch::<cvt::convert>(
            LaunchConfig::new(2, 128),
            (
                n as u32,
                xs.as_ptr(),
                b16.as_mut_ptr(),
                h16.as_mut_ptr(),
                t32.as_mut_ptr(),
                hs.as_ptr(),
                wb.as_mut_ptr(),
                wh.as_mut_ptr(),
            ),
        )?
    };
    let bf_values: Vec<(f64, u16)> = (0..=0x7F7F)
        .map(|h| (f64::from(bf16::from_bits(h).to_f32()), h))
        .collect();
    let hf_values: Vec<(f64, u16)> = (0..=0x7BFF)
        .map(|h| (f64::from(f16::from_bits(h).to_f32()), h))
        .collect();
    let (b16, h16, t32, wb, wh) = (
        b16.to_vec()?,
        h16.to_vec()?,
        t32.to_vec()?,
        wb.to_vec()?,
        wh.to_vec()?,
    );
    for (i, &v) in x.iter().enumerate() {
        let (eb, eh) = if v.is_nan() {
            (0x7FFF, 0x7FFF)
        } else {
            (
                nearest_even(&bf_values, 0x7F80, v),
                nearest_even(&hf_values, 0x7C00, v),
            )
        };
        let what = format!("{v:e} ({:#010x})", v.to_bits());
        assert_eq!(b16[i], eb, "f32 → bf16 of {what}: {:#06x}", b16[i]);
        assert_eq!(h16[i], eh, "f32 → f16 of {what}: {:#06x}", h16[i]);
        assert_eq!(
            t32[i],
            tf32_reference(v),
            "f32 → tf32 of {what}: {:#010x}",
            t32[i]
        );
    }
    for hb in 0..=0xFFFFu16 {
        let i = usize::from(hb);
        assert_eq!(wb[i], u32::from(hb) << 16, "bf16 {hb:#06x} → f32");
        let f = f16::from_bits(hb).to_f32();
        let want = if f.is_nan() { 0x7FFF_FFFF } else { f.to_bits() };
        assert_eq!(wh[i], want, "f16 {hb:#06x} → f32: {:#010x}", wh[i]);
    }
    Ok(())
}

fn half_kernel_arguments(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let n = 100usize;
    let mut out = shmem.alloc_zeroed::<bf16>(n)?;
    let mut out16 = shmem.alloc_zeroed::<f16>(n)?;
    let (x, y) = (bf16::from_f32(0.7), f16::from_f32(-0.3));
    // SAFETY: both buffers hold n elements.
    unsafe {
        module.launch::<cvt::scale_half>(
            LaunchConfig::new(1, 128),
            (out.as_mut_ptr(), x, out16.as_mut_ptr(), y, n as u32),
        )?
    };
    let (out, out16) = (out.to_vec()?, out16.to_vec()?);
    for i in 0..n {
        // Finite products whose halfway cases the f64 reference settles exactly.
        let (bx, hy) = (
            f64::from(x.to_f32()) * i as f64,
            f64::from(y.to_f32()) * i as f64,
        );
        assert_eq!(out[i], bf16::from_f64(bx), "bf16 {i}");
        assert_eq!(out16[i], f16::from_f64(hy), "f16 {i}");
    }
    Ok(())
}

fn half_rma_around_the_ring(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let (me, npes) = (shmem.my_pe(), shmem.n_pes());
    let n = 40usize;
    let val = |pe: usize, i: usize| bf16::from_f32((pe * 1000 + i) as f32 * 0.25);
    let val16 = |pe: usize, i: usize| f16::from_f32(-((pe * 100 + i) as f32) * 0.5);
    let src = shmem.alloc_from(&(0..n).map(|i| val(me, i)).collect::<Vec<_>>())?;
    let src16 = shmem.alloc_from(&(0..n).map(|i| val16(me, i)).collect::<Vec<_>>())?;
    let mut dst = shmem.alloc_zeroed::<bf16>(n)?;
    let mut got = shmem.alloc_zeroed::<bf16>(n)?;
    let mut dst16 = shmem.alloc_zeroed::<f16>(n)?;
    shmem.barrier_all()?;
    // SAFETY: symmetric buffers of n elements on every PE; one cooperative block of 64 ≥ n.
    unsafe {
        module.launch::<cvt::rma_half>(
            LaunchConfig::new(1, 64).cooperative(),
            (
                dst.as_mut_ptr(),
                src.as_ptr(),
                got.as_mut_ptr(),
                dst16.as_mut_ptr(),
                src16.as_ptr(),
                n as u32,
            ),
        )?
    };
    shmem.barrier_all()?;
    let (left, right) = ((me + npes - 1) % npes, (me + 1) % npes);
    let (dst, got, dst16) = (dst.to_vec()?, got.to_vec()?, dst16.to_vec()?);
    for i in 0..n {
        assert_eq!(dst[i], val(left, i), "p: element {i}");
        assert_eq!(got[i], val(right, i), "g: element {i}");
        assert_eq!(dst16[i], val16(left, i), "put: element {i}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Fragments and mma.
// ---------------------------------------------------------------------------------------

/// The PTX ISA's tables, as its text states them (groupID = lane >> 2, threadID_in_group =
/// lane % 4): (row, col) of element i of lane `lane`, for A, B and C of shape `ty`.
fn isa_tables(ty: u32, lane: usize, i: usize) -> [(usize, usize); 3] {
    let (g, tig) = (lane >> 2, lane % 4);
    let c = (if i < 2 { g } else { g + 8 }, tig * 2 + (i & 1));
    if ty == t::TF32 {
        let a = (
            if i == 0 || i == 2 { g } else { g + 8 },
            if i < 2 { tig } else { tig + 4 },
        );
        let b = (if i == 0 { tig } else { tig + 4 }, g);
        [a, b, c]
    } else {
        let a = (
            if i < 2 || (4..6).contains(&i) {
                g
            } else {
                g + 8
            },
            tig * 2 + (i & 1) + if i < 4 { 0 } else { 8 },
        );
        let b = (tig * 2 + (i & 1) + if i < 2 { 0 } else { 8 }, g);
        [a, b, c]
    }
}

/// (M, N, K, A elements per lane, B elements per lane) of `ty`.
fn shape(ty: u32) -> (usize, usize, usize, usize, usize) {
    if ty == t::TF32 {
        (16, 8, 8, 4, 2)
    } else {
        (16, 8, 16, 8, 4)
    }
}

fn fragment_layouts(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    for ty in [t::BF16, t::F16, t::TF32] {
        let (m, n, k, ea, eb) = shape(ty);
        let mut a = shmem.alloc_from(&vec![u32::MAX; m * k])?;
        let mut b = shmem.alloc_from(&vec![u32::MAX; k * n])?;
        let mut c = shmem.alloc_from(&vec![u32::MAX; m * n])?;
        // SAFETY: the matrices of shape `ty`; one warp.
        unsafe {
            module.launch::<mma::frag_layout>(
                warp(0),
                (ty, a.as_mut_ptr(), b.as_mut_ptr(), c.as_mut_ptr()),
            )?
        };
        let (a, b, c) = (a.to_vec()?, b.to_vec()?, c.to_vec()?);
        let (mut wa, mut wb, mut wc) = (
            vec![u32::MAX; m * k],
            vec![u32::MAX; k * n],
            vec![u32::MAX; m * n],
        );
        for lane in 0..32 {
            for i in 0..ea {
                let (r, col) = isa_tables(ty, lane, i)[0];
                wa[r * k + col] = (lane * 256 + i) as u32;
            }
            for i in 0..eb {
                let (r, col) = isa_tables(ty, lane, i)[1];
                wb[r * n + col] = (lane * 256 + i) as u32;
            }
            for i in 0..4 {
                let (r, col) = isa_tables(ty, lane, i)[2];
                wc[r * n + col] = (lane * 256 + i) as u32;
            }
        }
        assert_eq!(a, wa, "A of type {ty}");
        assert_eq!(b, wb, "B of type {ty}");
        assert_eq!(c, wc, "C of type {ty}");
        assert!(
            wa.iter().chain(&wb).chain(&wc).all(|&x| x != u32::MAX),
            "tables cover every element"
        );
    }
    Ok(())
}

/// Values of `ty` as the kernel takes them (bits), and their exact f32 values.
fn operand(ty: u32, x: &[f32]) -> (Vec<u8>, Vec<f32>) {
    let mut bytes = Vec::new();
    let mut exact = Vec::new();
    for &v in x {
        match ty {
            t::BF16 => {
                let h = bf16::from_f32_rn(v);
                bytes.extend(h.to_bits().to_le_bytes());
                exact.push(h.to_f32());
            }
            t::F16 => {
                let h = f16::from_f32_rn(v);
                bytes.extend(h.to_bits().to_le_bytes());
                exact.push(h.to_f32());
            }
            _ => {
                let w = tf32_reference(v);
                bytes.extend(w.to_le_bytes());
                exact.push(f32::from_bits(w));
            }
        }
    }
    (bytes, exact)
}

/// What one `mma` gave, its f64 reference, and `|c| + Σ|a·b|` (the bound's scale), per element.
struct MmaRun {
    d: Vec<f32>,
    want: Vec<f64>,
    mag: Vec<f64>,
}

/// Runs `mma_one` of `ty` on A, B, C drawn by `draw`.
fn run_mma(
    shmem: &Shmem,
    module: &Module<'_>,
    ty: u32,
    draw: &mut dyn FnMut() -> f32,
) -> Result<MmaRun, rshmem::BoxError> {
    let (m, n, k, _, _) = shape(ty);
    let (ab, a) = operand(ty, &(0..m * k).map(|_| draw()).collect::<Vec<_>>());
    let (bb, b) = operand(ty, &(0..k * n).map(|_| draw()).collect::<Vec<_>>());
    let c: Vec<f32> = (0..m * n).map(|_| draw()).collect();
    let (abuf, bbuf, cbuf) = (
        shmem.alloc_from(&ab)?,
        shmem.alloc_from(&bb)?,
        shmem.alloc_from(&c)?,
    );
    let mut d = shmem.alloc_from(&vec![f32::NAN; m * n])?;
    // SAFETY: the matrices of shape `ty`; one warp.
    unsafe {
        module.launch::<mma::mma_one>(
            warp(0),
            (
                ty,
                abuf.as_ptr(),
                bbuf.as_ptr(),
                cbuf.as_ptr(),
                d.as_mut_ptr(),
            ),
        )?
    };
    let mut want = vec![0f64; m * n];
    let mut mag = vec![0f64; m * n];
    for r in 0..m {
        for col in 0..n {
            let terms = (0..k).map(|kk| f64::from(a[r * k + kk]) * f64::from(b[kk * n + col]));
            want[r * n + col] = f64::from(c[r * n + col]) + terms.clone().sum::<f64>();
            mag[r * n + col] = f64::from(c[r * n + col]).abs() + terms.map(f64::abs).sum::<f64>();
        }
    }
    Ok(MmaRun {
        d: d.to_vec()?,
        want,
        mag,
    })
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

fn mma_exact_sums(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let mut next = rng(seed(shmem));
    for ty in [t::BF16, t::F16, t::TF32] {
        // Integers in -8..=8: every product and partial sum is exact in f32.
        let MmaRun { d, want, .. } =
            run_mma(shmem, &module, ty, &mut || (next() % 17) as f32 - 8.0)?;
        for (i, (g, w)) in d.iter().zip(&want).enumerate() {
            assert_eq!(f64::from(*g), *w, "type {ty}, D element {i}");
        }
    }
    Ok(())
}

fn mma_within_bound(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let mut next = rng(seed(shmem) ^ 0x55);
    for ty in [t::BF16, t::F16, t::TF32] {
        let MmaRun { d, want, mag } = run_mma(shmem, &module, ty, &mut || {
            (next() % 2_000_001) as f32 / 1e6 - 1.0
        })?;
        for i in 0..d.len() {
            let err = (f64::from(d[i]) - want[i]).abs();
            assert!(
                err <= mag[i] * 2f64.powi(-19),
                "type {ty}, D element {i}: {} vs {} (error {err:e}, bound {:e})",
                d[i],
                want[i],
                mag[i] * 2f64.powi(-19)
            );
        }
    }
    Ok(())
}

fn mma_infinities_and_nan(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    for ty in [t::BF16, t::F16] {
        // A: all 1 but A(0, 0) = +∞ and A(2, 0) = -∞; B: all 1 but B(0, 1) = 0; C: all 0 but
        // C(1, 0) = NaN. So D(0, n) = +∞ and D(2, n) = -∞, except D(0, 1) and D(2, 1), which
        // hold ±∞ · 0 = NaN; D(1, 0) = NaN; every other D(r, n) is 16 (15 in column 1).
        let mut a = vec![1f32; 256];
        a[0] = f32::INFINITY;
        a[2 * 16] = f32::NEG_INFINITY;
        let mut b = vec![1f32; 128];
        b[1] = 0.0;
        let mut c = vec![0f32; 128];
        c[8] = f32::NAN;
        let (ab, _) = operand(ty, &a);
        let (bb, _) = operand(ty, &b);
        let (abuf, bbuf, cbuf) = (
            shmem.alloc_from(&ab)?,
            shmem.alloc_from(&bb)?,
            shmem.alloc_from(&c)?,
        );
        let mut d = shmem.alloc_from(&vec![0f32; 128])?;
        // SAFETY: the matrices of m16n8k16; one warp.
        unsafe {
            module.launch::<mma::mma_one>(
                warp(0),
                (
                    ty,
                    abuf.as_ptr(),
                    bbuf.as_ptr(),
                    cbuf.as_ptr(),
                    d.as_mut_ptr(),
                ),
            )?
        };
        let d = d.to_vec()?;
        for r in 0..16 {
            for n in 0..8 {
                let got = d[r * 8 + n];
                let at = format!("type {ty}, D({r}, {n}) = {got} ({:#010x})", got.to_bits());
                match (r, n) {
                    (0 | 2, 1) | (1, 0) => {
                        assert!(got.is_nan(), "{at}: want NaN");
                        if shmem.backend() == rshmem::Backend::Sim {
                            assert_eq!(got.to_bits(), 0x7FFF_FFFF, "{at}: the canonical NaN");
                        } else {
                            eprintln!("{at}: the GPU's NaN");
                        }
                    }
                    (0, _) => assert_eq!(got, f32::INFINITY, "{at}"),
                    (2, _) => assert_eq!(got, f32::NEG_INFINITY, "{at}"),
                    (_, 1) => assert_eq!(got, 15.0, "{at}"),
                    _ => assert_eq!(got, 16.0, "{at}"),
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// ldmatrix, stmatrix, cp.async.
// ---------------------------------------------------------------------------------------

/// What lane `lane` holds in register `m` after `ldmatrix` of matrices whose element (r, c) of
/// matrix m is `m * 64 + r * 8 + c`: row `lane / 4`, columns `2 (lane % 4)` and `+1`, of
/// matrix m or (`.trans`) of its transpose — the PTX ISA's ldmatrix fragment figure.
fn expected_ld(lane: usize, m: usize, trans: bool) -> u32 {
    let (r, c) = (lane / 4, 2 * (lane % 4));
    let at = |r: usize, c: usize| (m * 64 + r * 8 + c) as u32;
    if trans {
        at(c, r) | at(c + 1, r) << 16
    } else {
        at(r, c) | at(r, c + 1) << 16
    }
}

fn ldmatrix_every_count(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    for x in [1u32, 2, 4] {
        for trans in [0u32, 1] {
            let mut out = shmem.alloc_from(&vec![0xDEAD_BEEFu32; 128])?;
            // SAFETY: one warp with the shared memory the kernel needs; 128 words of output.
            unsafe {
                module.launch::<matrix::ldmatrix_test>(
                    warp(matrix::MATRIX_SHARED),
                    (x, trans, out.as_mut_ptr()),
                )?
            };
            let out = out.to_vec()?;
            for lane in 0..32 {
                for m in 0..4 {
                    let want = if m < x as usize {
                        expected_ld(lane, m, trans == 1)
                    } else {
                        0xDEAD_BEEF
                    };
                    assert_eq!(
                        out[4 * lane + m],
                        want,
                        "x{x} trans={trans}: lane {lane} register {m}"
                    );
                }
            }
        }
    }
    Ok(())
}

fn stmatrix_every_count(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let regs: Vec<u32> = (0..128).map(|i| expected_ld(i / 4, i % 4, false)).collect();
    let regs = shmem.alloc_from(&regs)?;
    for x in [1u32, 2, 4] {
        for trans in [0u32, 1] {
            let mut out = shmem.alloc_from(&vec![0xFFFFu16; 256])?;
            // SAFETY: one warp with the shared memory the kernel needs; 128 words in, 256 out.
            unsafe {
                module.launch::<matrix::stmatrix_test>(
                    warp(matrix::MATRIX_SHARED),
                    (x, trans, regs.as_ptr(), out.as_mut_ptr()),
                )?
            };
            let out = out.to_vec()?;
            for m in 0..4 {
                for r in 0..8 {
                    for c in 0..8 {
                        let want = match (m < x as usize, trans) {
                            (false, _) => 0,
                            (true, 0) => m * 64 + r * 8 + c,
                            (true, _) => m * 64 + c * 8 + r,
                        } as u16;
                        assert_eq!(
                            out[m * 64 + r * 8 + c],
                            want,
                            "x{x} trans={trans}: matrix {m} ({r}, {c})"
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

fn cp_async_groups(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let bytes = 32 * matrix::CP_LANE_BYTES;
    let src: Vec<u8> = common::random_u32(bytes, seed(shmem))
        .iter()
        .map(|&x| x as u8 | 1)
        .collect();
    let src = shmem.alloc_from(&src)?;
    let mut early = shmem.alloc_zeroed::<u8>(bytes)?;
    let mut late = shmem.alloc_zeroed::<u8>(bytes)?;
    // SAFETY: one warp, 32 · 80 bytes of shared memory and of each buffer (allocations are
    // 16-byte aligned).
    unsafe {
        module.launch::<matrix::cp_async_test>(
            warp(bytes as u32),
            (src.as_ptr(), early.as_mut_ptr(), late.as_mut_ptr()),
        )?
    };
    let (src, early, late) = (src.to_vec()?, early.to_vec()?, late.to_vec()?);
    for lane in 0..32 {
        let base = lane * matrix::CP_LANE_BYTES;
        for i in (0..4).chain(8..48) {
            assert_eq!(
                early[base + i],
                src[base + i],
                "group 0 after wait_group 1: lane {lane} byte {i}"
            );
        }
        // Bytes 4..8 are never copied (shared memory there is undefined on a GPU).
        for i in (0..4).chain(8..64) {
            assert_eq!(
                late[base + i],
                src[base + i],
                "after wait_all: lane {lane} byte {i}"
            );
        }
        let filled = lane % 17;
        for i in 64..80 {
            let want = if i - 64 < filled { src[base + i] } else { 0 };
            assert_eq!(
                late[base + i],
                want,
                "zero-fill of {filled} bytes: lane {lane} byte {i}"
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The one-warp GEMM.
// ---------------------------------------------------------------------------------------

fn gemm_case(
    shmem: &Shmem,
    module: &Module<'_>,
    draw: &mut dyn FnMut() -> f32,
    exact: bool,
) -> Outcome {
    let (m, n, k) = (64usize, 96usize, 64usize);
    let a: Vec<bf16> = (0..m * k).map(|_| bf16::from_f32_rn(draw())).collect();
    let b: Vec<bf16> = (0..k * n).map(|_| bf16::from_f32_rn(draw())).collect();
    let (abuf, bbuf) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
    let mut c = shmem.alloc_from(&vec![f32::NAN; m * n])?;
    let tile = gemm::TILE as u32;
    let config = LaunchConfig {
        grid: (n as u32 / tile, m as u32 / tile, 1),
        ..warp(gemm::GEMM_SHARED)
    };
    // SAFETY: m, n multiples of 32, k of 16; the buffers hold the matrices.
    unsafe {
        module.launch::<gemm::gemm_bf16>(
            config,
            (
                m as u32,
                n as u32,
                k as u32,
                abuf.as_ptr(),
                bbuf.as_ptr(),
                c.as_mut_ptr(),
            ),
        )?
    };
    let c = c.to_vec()?;
    for r in 0..m {
        for col in 0..n {
            let terms = (0..k)
                .map(|kk| f64::from(a[r * k + kk].to_f32()) * f64::from(b[kk * n + col].to_f32()));
            let (want, mag) = (terms.clone().sum::<f64>(), terms.map(f64::abs).sum::<f64>());
            let got = f64::from(c[r * n + col]);
            let bound = if exact { 0.0 } else { mag * 2f64.powi(-17) };
            assert!(
                (got - want).abs() <= bound,
                "C[{r}][{col}] = {got}, reference {want} (bound {bound:e})"
            );
        }
    }
    Ok(())
}

fn gemm_one_warp(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&IMAGE)?;
    let mut next = rng(seed(shmem) ^ 0x77);
    gemm_case(shmem, &module, &mut || (next() % 9) as f32 - 4.0, true)?;
    gemm_case(
        shmem,
        &module,
        &mut || (next() % 2_000_001) as f32 / 1e6 - 1.0,
        false,
    )
}
