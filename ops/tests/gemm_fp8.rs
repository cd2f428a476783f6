//! `Ops::gemm_fp8` and `Ops::grouped_gemm_fp8` on every backend (the sm90 kernels: the
//! simulator, or an sm_90 GPU) against an f64 reference of the *dequantised* inputs: odd M and
//! N (not multiples of 128), K multiples of 16 but not of 128, e4m3 and e5m2, per-tensor and
//! block scales, f32 and bf16 outputs, the grouped GEMM with empty groups in both row layouts,
//! a graph that picks up new scales, split K (forced parts and `SplitK::Auto` on decode-sized
//! shapes, both scalings, bit-identical runs, graphs), and the errors. Inputs are fresh random bf16 values over
//! several binades, quantised by `rshmem_ops::fp8` (the host helper under test too); C is
//! poisoned, and what the GEMM must not write (rows in no group, elements past C) must stay
//! poisoned.
//!
//! **The bound.** Products of FP8 values are exact in f32; the scales are f32. With
//! `S = Σ_k |a_k b_k|` over the dequantised values (scales included) and `u = 2⁻²⁴`, a GEMM
//! that sums `n` terms in f32 (each addition and multiplication rounding once, in any order)
//! is within `γ(n) S`, `γ(n) = n u / (1 - n u)`, of the exact sum:
//!
//! * per tensor: the tensor cores sum all `k` products (`k - 1` additions), then the product
//!   of the two scales and its product with the sum round: `n = k + 2`;
//! * block: each block of 128 (`k_in = min(k, 128)` products, `k_in - 1` additions) is summed
//!   in the tensor cores, then its scale factor (`s_a s_b`, one rounding) multiplies it and
//!   the product is added to the f32 sums (two roundings), `⌈k / 128⌉` times:
//!   `n = k_in + ⌈k / 128⌉ + 2`, rounded up to `k_in + ⌈k / 128⌉ + 3`;
//! * split K in `p` parts: each part is one of the sums above over its own K (scaled, or
//!   promoted with its own blocks' scales), and the reduction adds the `p` parts in f32: `p - 1`
//!   more additions, so `n` grows by `p - 1` (per tensor: the tensor cores' sums are shorter,
//!   never longer);
//! * a bf16 C adds its own rounding, half an ulp: `2⁻⁸ (|ref| + bound)`.
//!
//! That is the simulator's arithmetic (and the GPU's for the promotions, in f32 registers).
//! The tensor cores' FP8 sums inside `wgmma` are not IEEE f32 on the GPU (DeepSeek-V3's report
//! measured about 14 bits kept on H800): GPU instances use `u = 2⁻¹³` for the sums done in the
//! tensor cores (the per-tensor one, and each block's), an assumption a GPU run checks; each
//! check prints its worst error as a fraction of the bound.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::device::fp8::{E4m3, E5m2};
use rshmem::{bf16, Backend, Error, Pod, Shmem, SymBuffer};
use rshmem_gemm::sm90::{Fp8Tile128, Fp8Tile256};
use rshmem_gemm::Problem;
use rshmem_ops::fp8::{self, Blocks, Quantized};
use rshmem_ops::gemm::split_k;
use rshmem_ops::{
    BLayout, Fp8In, Fp8Out, Fp8Scales, GemmShape, GroupRows, GroupedShape, Ops, SplitK,
};

per_backend! {
    block_scales_odd_shapes => [1];
    tensor_scales_odd_shapes => [1];
    grouped_block_scales_and_empty_groups => [1];
    grouped_tensor_scales_and_empty_groups => [1];
    tensor_scales_are_read_when_the_graph_runs => [1];
    errors_name_the_problem => [1];
    split_k_both_scalings => [1];
    split_k_in_graphs_and_its_errors => [1];
}

/// Output types, read back as f64, with their rounding on top of the f32 result.
trait Out: Pod {
    const ROUNDING: f64;
    fn poison() -> Self;
    fn value(self) -> f64;
}

impl Out for f32 {
    const ROUNDING: f64 = 0.0;
    fn poison() -> Self {
        f32::NAN
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Out for bf16 {
    const ROUNDING: f64 = 1.0 / 256.0;
    fn poison() -> Self {
        bf16::NAN
    }
    fn value(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// Fresh bf16 values: magnitudes over 2⁻⁶..2⁴, signs mixed, some zeros.
fn random(len: usize, seed: u64) -> Vec<bf16> {
    common::random_u32(len, seed)
        .into_iter()
        .map(|r| {
            if r % 11 == 0 {
                return bf16::ZERO;
            }
            let mag = 2f32.powi((r % 11) as i32 - 6) * (1.0 + (r >> 8) as u8 as f32 / 256.0);
            bf16::from_f32(if r >> 20 & 1 == 1 { -mag } else { mag })
        })
        .collect()
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// `γ(n)` for unit roundoff `u`.
fn gamma(n: u32, u: f64) -> f64 {
    let nu = f64::from(n) * u;
    nu / (1.0 - nu)
}

/// The unit roundoff of the tensor cores' FP8 sums on `backend` (the module docs).
fn tensor_core_unit(backend: Backend) -> f64 {
    match backend {
        Backend::Sim => 2f64.powi(-24),
        Backend::Gpu => 2f64.powi(-13),
    }
}

/// The scaling of a check.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scaling {
    Tensor,
    Block,
}

/// Quantised A (m x k) and B (`groups` x n x k) with the scaling's blocks.
struct Operands<F: Fp8In> {
    a: Quantized<F>,
    b: Vec<Quantized<F>>,
}

impl<F: Fp8In> Operands<F> {
    fn new(m: usize, n: usize, k: usize, groups: usize, scaling: Scaling, seed: u64) -> Self {
        let (ba, bb) = match scaling {
            Scaling::Tensor => (Blocks::tensor(m, k), Blocks::tensor(n, k)),
            Scaling::Block => (Blocks::PER_TOKEN, Blocks::PER_BLOCK),
        };
        let a = fp8::quantize_as::<F>(&random(m * k, seed), m, k, ba);
        // Group g's values scaled by 2^(g mod 3), so that the groups' per-tensor scales differ
        // (a kernel that used another group's scale, or the first one's, fails the check).
        let b = (0..groups)
            .map(|g| {
                let factor = bf16::from_f32((1u32 << (g % 3)) as f32);
                let values: Vec<bf16> = random(n * k, seed ^ (g as u64 + 1) << 40)
                    .into_iter()
                    .map(|v| v * factor)
                    .collect();
                fp8::quantize_as::<F>(&values, n, k, bb)
            })
            .collect();
        Self { a, b }
    }

    /// B's values, every group's one after the other.
    fn b_values(&self) -> Vec<F> {
        self.b.iter().flat_map(|q| q.values().to_vec()).collect()
    }

    /// B's block scales, every group's one after the other.
    fn b_scales(&self) -> Vec<f32> {
        self.b.iter().flat_map(|q| q.scales.clone()).collect()
    }
}

/// Checks C (m x n, row-major) against the f64 reference of the dequantised operands, group
/// `group_of(row)`'s B for each row (`None`: the row is in no group and must stay poisoned).
/// Returns the worst error as a fraction of its bound.
fn check_c<F: Fp8In, O: Out>(
    backend: Backend,
    ops: &Operands<F>,
    c: &[O],
    (m, n, k): (usize, usize, usize),
    (scaling, parts): (Scaling, u32),
    group_of: impl Fn(usize) -> Option<usize>,
    what: &str,
) -> Result<f64, String> {
    let (da, db): (Vec<f32>, Vec<Vec<f32>>) = (
        ops.a.dequantize(),
        ops.b.iter().map(|q| q.dequantize()).collect(),
    );
    let u = 2f64.powi(-24);
    let tc = tensor_core_unit(backend);
    let kb = k.div_ceil(128) as u32;
    let gam = match scaling {
        Scaling::Tensor => gamma(k as u32, tc) + gamma(parts + 1, u),
        Scaling::Block => gamma(k.min(128) as u32, tc) + gamma(kb + parts + 2, u),
    };
    let mut worst = 0.0f64;
    for row in 0..m {
        let Some(g) = group_of(row) else {
            for col in 0..n {
                if !c[row * n + col].value().is_nan() {
                    return Err(format!(
                        "{what}: C[{row}][{col}] (a row in no group) was written"
                    ));
                }
            }
            continue;
        };
        for col in 0..n {
            let (mut exact, mut abs) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = f64::from(da[row * k + kk]) * f64::from(db[g][col * k + kk]);
                exact += p;
                abs += p.abs();
            }
            let sum_bound = gam * abs;
            let bound = sum_bound + O::ROUNDING * (exact.abs() + sum_bound);
            let got = c[row * n + col].value();
            let err = (got - exact).abs();
            if err.is_nan() || err > bound {
                return Err(format!(
                    "{what}: C[{row}][{col}] = {got}, reference {exact}, error {err:.3e} above \
                     the bound {bound:.3e} (Σ|ab| = {abs:.3e})"
                ));
            }
            if bound > 0.0 {
                worst = worst.max(err / bound);
            }
        }
    }
    Ok(worst)
}

/// The parts `split` gives an FP8 GEMM of `m x n x k` with `scaling` on `ops`' device.
fn parts_of<F: Fp8In>(
    backend: Backend,
    ops: &Ops<'_>,
    (m, n, k): (usize, usize, usize),
    scaling: Scaling,
    split: SplitK,
) -> u32 {
    let sms = ops.device_info().multiprocessors;
    let bytes = split_k::workspace_bytes(backend);
    let p = Problem {
        m: m as u32,
        n: n as u32,
        k: k as u32,
    };
    match scaling {
        Scaling::Tensor => split_k::parts_of::<Fp8Tile256<F>>(split, sms, p, bytes),
        Scaling::Block => split_k::parts_of::<Fp8Tile128<F>>(split, sms, p, bytes),
    }
}

/// One plain FP8 GEMM of `F` into `O` (`gemm_fp8`, or `gemm_fp8_with` where `split` is
/// given), checked; C is followed by poison that must stay. Returns C.
fn run_plain<F: Fp8In, O: Out + Fp8Out<F>>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    (m, n, k): (usize, usize, usize),
    scaling: Scaling,
) -> Outcome {
    run_split::<F, O>(shmem, ops, (m, n, k), scaling, None, seed()).map(|_| ())
}

/// [`run_plain`] with K split as `split` says (`None`: `gemm_fp8`'s default), on operands of
/// `seed`.
fn run_split<F: Fp8In, O: Out + Fp8Out<F>>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    (m, n, k): (usize, usize, usize),
    scaling: Scaling,
    split: Option<SplitK>,
    seed: u64,
) -> Result<Vec<O>, Box<dyn std::error::Error + Send + Sync>> {
    let q = Operands::<F>::new(m, n, k, 1, scaling, seed);
    let (a, b, sa, sb) = q.on_heap(shmem, scaling)?;
    const TAIL: usize = 29;
    let mut c = shmem.alloc_from(&vec![O::poison(); m * n + TAIL])?;
    let scales = scales_of(scaling, &sa, &sb);
    let shape = GemmShape::new(m as u32, n as u32, k as u32, BLayout::NK);
    let stream = shmem.stream();
    match split {
        None => ops.gemm_fp8::<F, O>(&stream, &a, &b, &mut c, shape, scales)?,
        Some(s) => ops.gemm_fp8_with::<F, O>(&stream, &a, &b, &mut c, shape, scales, s)?,
    }
    let c = c.to_vec()?;
    let parts = parts_of::<F>(
        shmem.backend(),
        ops,
        (m, n, k),
        scaling,
        split.unwrap_or_default(),
    );
    let what = format!(
        "{m}x{n}x{k} {} -> {} {scaling:?}, {parts} part(s) of K",
        <F as fp8::Fp8>::NAME,
        std::any::type_name::<O>()
    );
    let worst = check_c(
        shmem.backend(),
        &q,
        &c,
        (m, n, k),
        (scaling, parts),
        |_| Some(0),
        &what,
    )?;
    assert!(
        c[m * n..].iter().all(|v| v.value().is_nan()),
        "{what}: a store past C"
    );
    println!("{what}: worst error {:.1}% of the bound", 100.0 * worst);
    Ok(c[..m * n].to_vec())
}

fn block_scales_odd_shapes(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    // K: one block and a partial one; three blocks and 16 more; one partial block.
    run_plain::<E4m3, f32>(shmem, &ops, (130, 200, 144), Scaling::Block)?;
    run_plain::<E4m3, bf16>(shmem, &ops, (67, 129, 400), Scaling::Block)?;
    run_plain::<E5m2, f32>(shmem, &ops, (1, 1, 16), Scaling::Block)?;
    run_plain::<E5m2, bf16>(shmem, &ops, (45, 70, 272), Scaling::Block)
}

fn tensor_scales_odd_shapes(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    run_plain::<E4m3, f32>(shmem, &ops, (129, 260, 160), Scaling::Tensor)?;
    run_plain::<E4m3, bf16>(shmem, &ops, (37, 45, 48), Scaling::Tensor)?;
    run_plain::<E5m2, f32>(shmem, &ops, (66, 33, 304), Scaling::Tensor)?;
    run_plain::<E5m2, bf16>(shmem, &ops, (1, 3, 16), Scaling::Tensor)
}

/// The operands and scales of `q` on the heap: `(a, b, scale_a, scale_b)`, the scales laid
/// out as `scaling` takes them (block: A's column-major).
type OnHeap<'s, F> = (
    SymBuffer<'s, F>,
    SymBuffer<'s, F>,
    SymBuffer<'s, f32>,
    SymBuffer<'s, f32>,
);

impl<F: Fp8In> Operands<F> {
    fn on_heap<'s>(&self, shmem: &'s Shmem, scaling: Scaling) -> rshmem::Result<OnHeap<'s, F>> {
        let sa = match scaling {
            Scaling::Tensor => self.a.scales.clone(),
            Scaling::Block => self.a.scales_column_major(),
        };
        Ok((
            shmem.alloc_from(self.a.values())?,
            shmem.alloc_from(&self.b_values())?,
            shmem.alloc_from(&sa)?,
            shmem.alloc_from(&self.b_scales())?,
        ))
    }
}

/// `Fp8Scales` of `scaling` over `sa` and `sb`.
fn scales_of<'a>(
    scaling: Scaling,
    sa: &'a SymBuffer<'_, f32>,
    sb: &'a SymBuffer<'_, f32>,
) -> Fp8Scales<'a> {
    let (a, b) = (sa.into(), sb.into());
    match scaling {
        Scaling::Tensor => Fp8Scales::Tensor { a, b },
        Scaling::Block => Fp8Scales::Block { a, b },
    }
}

/// The grouped FP8 GEMM with `scaling` (block: each group's B its own block scales; per
/// tensor: A's one scale, one per group's B): offsets with an empty first group, a one-row
/// group, a group over a tile and an empty one between; the masked layout with counts below,
/// at and above `max_m` (and zero).
fn grouped_empty_groups(shmem: &Shmem, scaling: Scaling) -> Outcome {
    let ops = Ops::new(shmem)?;
    let (n, k) = (136usize, 160usize);
    let stream = shmem.stream();
    // Offsets: groups of 0, 1, 130, 0 and 66 rows.
    let ends = [0u32, 1, 131, 131, 197];
    let m = 197usize;
    let q = Operands::<E4m3>::new(m, n, k, ends.len(), scaling, seed());
    let (a, b, sa, sb) = q.on_heap(shmem, scaling)?;
    let gends = shmem.alloc_from(&ends)?;
    let mut c = shmem.alloc_from(&vec![f32::NAN; m * n])?;
    let shape = GroupedShape {
        groups: ends.len() as u32,
        n: n as u32,
        k: k as u32,
        b_layout: BLayout::NK,
    };
    let rows = GroupRows::Offsets {
        ends: (&gends).into(),
        m: m as u32,
    };
    let scales = scales_of(scaling, &sa, &sb);
    ops.grouped_gemm_fp8::<E4m3, f32>(&stream, &a, &b, &mut c, shape, rows, scales)?;
    let group_of = |row: usize| ends.iter().position(|&e| row < e as usize);
    let what = format!("grouped offsets e4m3 -> f32 {scaling:?}");
    let worst = check_c(
        shmem.backend(),
        &q,
        &c.to_vec()?,
        (m, n, k),
        (scaling, 1),
        group_of,
        &what,
    )?;
    println!("{what}: worst error {:.1}% of the bound", 100.0 * worst);

    // Masked: 3 groups of room for 70 rows, counts 5, 70 and 200 (clamped to 70); then all 0.
    let (groups, max_m) = (3usize, 70usize);
    let m = groups * max_m;
    let q = Operands::<E5m2>::new(m, n, k, groups, scaling, seed());
    let (a, b, sa, sb) = q.on_heap(shmem, scaling)?;
    let shape = GroupedShape {
        groups: groups as u32,
        n: n as u32,
        k: k as u32,
        b_layout: BLayout::NK,
    };
    for counts in [[5u32, 70, 200], [0, 0, 0]] {
        let gcounts = shmem.alloc_from(&counts)?;
        let mut c = shmem.alloc_from(&vec![bf16::NAN; m * n])?;
        let rows = GroupRows::Masked {
            counts: (&gcounts).into(),
            max_m: max_m as u32,
        };
        let scales = scales_of(scaling, &sa, &sb);
        ops.grouped_gemm_fp8::<E5m2, bf16>(&stream, &a, &b, &mut c, shape, rows, scales)?;
        let group_of = |row: usize| {
            let g = row / max_m;
            (row % max_m < (counts[g] as usize).min(max_m)).then_some(g)
        };
        let what = format!("grouped masked {counts:?} e5m2 -> bf16 {scaling:?}");
        let worst = check_c(
            shmem.backend(),
            &q,
            &c.to_vec()?,
            (m, n, k),
            (scaling, 1),
            group_of,
            &what,
        )?;
        println!("{what}: worst error {:.1}% of the bound", 100.0 * worst);
    }
    Ok(())
}

fn grouped_block_scales_and_empty_groups(shmem: &Shmem) -> Outcome {
    grouped_empty_groups(shmem, Scaling::Block)
}

fn grouped_tensor_scales_and_empty_groups(shmem: &Shmem) -> Outcome {
    grouped_empty_groups(shmem, Scaling::Tensor)
}

/// A recorded per-tensor GEMM reads its scales when the graph runs: new values written
/// between launches scale the same products.
fn tensor_scales_are_read_when_the_graph_runs(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.new_stream()?;
    let (m, n, k) = (40usize, 24usize, 64usize);
    let q = Operands::<E4m3>::new(m, n, k, 1, Scaling::Tensor, seed());
    let a = shmem.alloc_from(q.a.values())?;
    let b = shmem.alloc_from(&q.b_values())?;
    let mut sa = shmem.alloc_from(&q.a.scales)?;
    let sb = shmem.alloc_from(&q.b_scales())?;
    let mut c = shmem.alloc_from(&vec![f32::NAN; m * n])?;
    let shape = GemmShape::new(m as u32, n as u32, k as u32, BLayout::NK);
    // Seen once (its tensor maps in a slot), then recorded.
    let scales = Fp8Scales::Tensor {
        a: (&sa).into(),
        b: (&sb).into(),
    };
    ops.gemm_fp8::<E4m3, f32>(&stream, &a, &b, &mut c, shape, scales)?;
    let graph =
        stream.capture(|| ops.gemm_fp8::<E4m3, f32>(&stream, &a, &b, &mut c, shape, scales))?;
    assert_eq!(graph.operations(), 1);
    let first = c.to_vec()?;
    for factor in [2.0f32, -0.5] {
        sa.copy_from_host(&[q.a.scales[0] * factor])?;
        c.copy_from_host(&vec![f32::NAN; m * n])?;
        // SAFETY: the operands, scales and C are alive and as long as the shape needs.
        unsafe { graph.launch(&stream)? };
        let got = c.to_vec()?;
        for (i, (&g, &f)) in got.iter().zip(&first).enumerate() {
            // A power-of-two factor scales exactly; the result is the same sum, rescaled.
            assert_eq!(g, f * factor, "factor {factor}: C[{}][{}]", i / n, i % n);
        }
    }
    Ok(())
}

/// `r` is an error whose message mentions every one of `words`.
fn expect(r: Result<(), Error>, words: &[&str]) -> Outcome {
    let msg = match r {
        Ok(()) => return Err(format!("expected an error mentioning {words:?}").into()),
        Err(e) => e.to_string(),
    };
    match words.iter().find(|w| !msg.contains(*w)) {
        Some(w) => Err(format!("the message {msg:?} does not mention {w:?}").into()),
        None => Ok(()),
    }
}

fn errors_name_the_problem(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let a = shmem.alloc_zeroed::<E4m3>(1 << 16)?;
    let b = shmem.alloc_zeroed::<E4m3>(1 << 16)?;
    let s = shmem.alloc_from(&[1.0f32; 64])?;
    let mut c = shmem.alloc_zeroed::<f32>(4096)?;
    let nk = |m, n, k| GemmShape::new(m, n, k, BLayout::NK);
    let tensor = Fp8Scales::Tensor {
        a: (&s).into(),
        b: (&s).into(),
    };
    let block = |a: usize, b: usize| Fp8Scales::Block {
        a: s.range(..a).unwrap().into(),
        b: s.range(..b).unwrap().into(),
    };
    let run = |c: &mut SymBuffer<'_, f32>, shape, scales| {
        ops.gemm_fp8::<E4m3, f32>(&stream, &a, &b, c, shape, scales)
    };
    expect(
        run(&mut c, nk(8, 8, 24), tensor),
        &[
            "Ops::gemm_fp8",
            "k = 24",
            "multiple of 16",
            "pad K with zeros to 32",
        ],
    )?;
    expect(
        run(&mut c, GemmShape::new(8, 8, 32, BLayout::KN), tensor),
        &["K x N", "N x K only", "transpose B"],
    )?;
    expect(
        run(&mut c, nk(300, 8, 256), tensor),
        &["`a` has 65536 elements", "300 x 256 = 76800"],
    )?;
    // m 20, n 130, k 272: 3 K blocks, 2 N blocks: A needs 60 scales, B 6.
    expect(
        run(&mut c, nk(20, 130, 272), block(59, 6)),
        &["A's block scales have 59", "3 x 20 = 60"],
    )?;
    expect(
        run(&mut c, nk(20, 130, 272), block(60, 5)),
        &["B's block scales have 5", "2 x 3 = 6"],
    )?;
    let empty = Fp8Scales::Tensor {
        a: s.range(..0)?.into(),
        b: (&s).into(),
    };
    expect(
        run(&mut c, nk(8, 8, 32), empty),
        &["A's per-tensor scale", "empty"],
    )?;
    // A range of A 8 bytes into its buffer: TMA needs 16.
    expect(
        ops.gemm_fp8::<E4m3, f32>(&stream, a.range(8..)?, &b, &mut c, nk(8, 8, 32), tensor),
        &["`a` starts", "16-byte aligned", "multiple of 16 elements"],
    )?;
    // Grouped: scales for every group.
    let ends = shmem.alloc_from(&[3u32, 10])?;
    let shape = GroupedShape {
        groups: 2,
        n: 120,
        k: 16,
        b_layout: BLayout::NK,
    };
    let rows = GroupRows::Offsets {
        ends: (&ends).into(),
        m: 10,
    };
    let grouped = |c: &mut SymBuffer<'_, f32>, scales| {
        ops.grouped_gemm_fp8::<E4m3, f32>(&stream, &a, &b, c, shape, rows, scales)
    };
    // Per tensor: one B scale for two groups.
    let one = Fp8Scales::Tensor {
        a: s.range(..1)?.into(),
        b: s.range(..1)?.into(),
    };
    expect(
        grouped(&mut c, one),
        &[
            "Ops::grouped_gemm_fp8",
            "B's per-tensor scales have 1 elements",
            "2 groups need one each",
        ],
    )?;
    expect(
        grouped(&mut c, block(10, 1)),
        &["B's block scales have 1", "groups x", "2 x 1 x 1 = 2"],
    )?;
    if shmem.backend() == Backend::Gpu && ops.device_info().sm != 90 {
        expect(run(&mut c, nk(8, 8, 32), tensor), &["FP8", "sm_90"])?;
    }
    Ok(())
}

/// Forced parts of K for both scalings, formats and outputs (parts of whole and partial
/// k-blocks), `SplitK::Auto` where the tiles are fewer than the SMs, and the same bits from a
/// second run of the same split.
fn split_k_both_scalings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    // (input, output, shape, scaling, parts): per tensor 9 k-steps of 128 in 3 parts and 5
    // (the last 16 of K) in 4; block scales 6 k-blocks in 5 parts and 8 in 8 (one each).
    macro_rules! forced {
        ($($f:ty, $o:ty, $shape:expr, $scaling:expr, $p:expr;)*) => {$(
            run_split::<$f, $o>(shmem, &ops, $shape, $scaling, Some(SplitK::Parts($p)), seed())?;
        )*};
    }
    forced! {
        E4m3, f32, (17, 300, 1040), Scaling::Tensor, 3;
        E5m2, bf16, (5, 70, 528), Scaling::Tensor, 4;
        E4m3, bf16, (9, 130, 656), Scaling::Block, 5;
        E5m2, f32, (3, 257, 1024), Scaling::Block, 8;
    }
    // Auto: one tile and 8 k-steps on the simulator's two SMs splits in two.
    let shape = (16, 100, 1024);
    for scaling in [Scaling::Tensor, Scaling::Block] {
        let auto = parts_of::<E4m3>(shmem.backend(), &ops, shape, scaling, SplitK::Auto);
        if shmem.backend() == Backend::Sim && auto < 2 {
            return Err(format!("Auto did not split {shape:?} ({scaling:?})").into());
        }
        let s = seed();
        let first = run_split::<E4m3, bf16>(shmem, &ops, shape, scaling, Some(SplitK::Auto), s)?;
        let again = run_split::<E4m3, bf16>(shmem, &ops, shape, scaling, Some(SplitK::Auto), s)?;
        let same = first
            .iter()
            .zip(&again)
            .all(|(x, y)| x.to_bits() == y.to_bits());
        if !same {
            return Err(format!("{shape:?} {scaling:?}: two runs of one split differ").into());
        }
    }
    Ok(())
}

/// In a capture `SplitK::Auto` records the unsplit kernel (one operation, the right C, the
/// workspace untouched by the graph) and forced parts are refused; parts beyond the k-steps
/// or the workspace are refused naming the limit.
fn split_k_in_graphs_and_its_errors(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.new_stream()?;
    let (m, n, k) = (8usize, 64usize, 1024usize);
    let q = Operands::<E4m3>::new(m, n, k, 1, Scaling::Block, seed());
    let a = shmem.alloc_from(q.a.values())?;
    let b = shmem.alloc_from(&q.b_values())?;
    let sa = shmem.alloc_from(&q.a.scales_column_major())?;
    let sb = shmem.alloc_from(&q.b_scales())?;
    let mut c = shmem.alloc_from(&vec![f32::NAN; m * n])?;
    let shape = GemmShape::new(m as u32, n as u32, k as u32, BLayout::NK);
    let scales = Fp8Scales::Block {
        a: (&sa).into(),
        b: (&sb).into(),
    };
    // Eager: split (on the simulator's two SMs, or a GPU's many, one tile of 8 k-steps).
    ops.gemm_fp8::<E4m3, f32>(&stream, &a, &b, &mut c, shape, scales)?;
    let parts = parts_of::<E4m3>(
        shmem.backend(),
        &ops,
        (m, n, k),
        Scaling::Block,
        SplitK::Auto,
    );
    assert!(parts > 1, "{parts} part(s)");
    let eager = c.to_vec()?;
    check_c(
        shmem.backend(),
        &q,
        &eager,
        (m, n, k),
        (Scaling::Block, parts),
        |_| Some(0),
        "eager",
    )?;
    let forced = stream.capture(|| {
        ops.gemm_fp8_with::<E4m3, f32>(&stream, &a, &b, &mut c, shape, scales, SplitK::Parts(2))
    });
    expect(forced.map(|_| ()), &["SplitK::Parts in a graph capture"])?;
    let graph =
        stream.capture(|| ops.gemm_fp8::<E4m3, f32>(&stream, &a, &b, &mut c, shape, scales))?;
    assert_eq!(graph.operations(), 1, "the unsplit kernel alone");
    c.copy_from_host(&vec![f32::NAN; m * n])?;
    // SAFETY: the operands, scales and C are alive and as long as the shape needs.
    unsafe { graph.launch(&stream)? };
    let worst = check_c(
        shmem.backend(),
        &q,
        &c.to_vec()?,
        (m, n, k),
        (Scaling::Block, 1),
        |_| Some(0),
        "the recorded unsplit GEMM",
    )?;
    println!("graph: worst error {:.1}% of the bound", 100.0 * worst);
    let s = shmem.stream();
    expect(
        ops.gemm_fp8_with::<E4m3, f32>(&s, &a, &b, &mut c, shape, scales, SplitK::Parts(9)),
        &[
            "Ops::gemm_fp8",
            "SplitK::Parts(9) for k = 1024",
            "at most 8 parts",
            "k-step of 128",
        ],
    )?;
    // 8 parts of 128 x 8192 f32 are 32 MiB: more than the workspace (16 MiB on GPUs, 2 MiB on
    // the simulator). Refused before anything runs, so the operands' values do not matter.
    let (bm, bn) = (128usize, 8192usize);
    let big = GemmShape::new(bm as u32, bn as u32, k as u32, BLayout::NK);
    let big_a = shmem.alloc_zeroed::<E4m3>(bm * k)?;
    let big_b = shmem.alloc_zeroed::<E4m3>(bn * k)?;
    let big_sa = shmem.alloc_zeroed::<f32>(8 * bm)?;
    let big_sb = shmem.alloc_zeroed::<f32>(64 * 8)?;
    let mut big_c = shmem.alloc_zeroed::<f32>(bm * bn)?;
    let big_scales = Fp8Scales::Block {
        a: (&big_sa).into(),
        b: (&big_sb).into(),
    };
    expect(
        ops.gemm_fp8_with::<E4m3, f32>(
            &s,
            &big_a,
            &big_b,
            &mut big_c,
            big,
            big_scales,
            SplitK::Parts(8),
        ),
        &[
            "SplitK::Parts(8) for m 128 x n 8192",
            "the split-K workspace holds",
        ],
    )?;
    Ok(())
}
