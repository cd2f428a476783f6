//! `Ops::gemm` and `Ops::grouped_gemm` on every backend against a host reference: odd M and
//! N, a K edge that is not a multiple of 64, bf16 and f16 inputs, f32 and 16-bit outputs,
//! poisoned outputs (every element of C written, nothing past it; a grouped GEMM's rows in no
//! group untouched); empty groups, both row layouts, garbage sizes; the errors of bad shapes
//! and short buffers; the tensor-map cache; GEMMs in graphs. Inputs are small integers, exact in bf16 and f16, whose products sum
//! exactly in f32, so results compare exactly (as values: -0 = 0; a 16-bit output is the reference rounded to
//! nearest even, as the kernel rounds). GPU instances of the sm90 cases need an sm_90 GPU.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::Error;
use rshmem::{bf16, f16, Backend, DeviceRange, DeviceRangeMut, Pod, Shmem, SymBuffer};
use rshmem_ops::{
    BLayout, GemmIn, GemmOptions, GemmOut, GemmPlan, GemmShape, GemmTile, GroupRows, GroupedShape,
    Kernel, Ops, SplitK, MAP_SLOTS,
};

per_backend! {
    sm90_odd_shapes_exact => [1];
    sm90_f16_and_16bit_outputs => [1];
    kn_both_kernels => [1];
    errors_name_the_problem => [1];
    map_slots_are_reused => [1];
    gemms_in_graphs => [1];
    sub_ranges_of_larger_buffers => [1];
    grouped_offsets_every_kernel_and_layout => [1];
    grouped_masked_and_garbage_sizes => [1];
    grouped_sizes_are_read_when_the_graph_runs => [1];
    grouped_errors_name_the_problem => [1];
    split_k_exact_every_layout_and_output => [1];
    split_k_is_deterministic => [1];
    split_k_on_two_streams_and_in_graphs => [1];
    split_k_errors_name_the_problem => [1];
    split_tail_exact_and_the_plan => [1];
    tiles_odd_shapes_both_layouts => [1];
    tiles_grouped_and_the_plan => [1];
    memory_that_is_not_symmetric => [1];
}

/// Host conversions of the test's element types.
trait Elem: Pod {
    fn of(v: f32) -> Self;
    fn get(self) -> f32;
    fn poison() -> Self;
}

impl Elem for f32 {
    fn of(v: f32) -> Self {
        v
    }
    fn get(self) -> f32 {
        self
    }
    fn poison() -> Self {
        f32::NAN
    }
}

impl Elem for bf16 {
    fn of(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn get(self) -> f32 {
        self.to_f32()
    }
    fn poison() -> Self {
        bf16::NAN
    }
}

impl Elem for f16 {
    fn of(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn get(self) -> f32 {
        self.to_f32()
    }
    fn poison() -> Self {
        f16::NAN
    }
}

/// Small integers in `-r..=r`, from the position and a salt.
fn small(i: u32, j: u32, salt: u32, r: u32) -> f32 {
    ((i * 7 + j * 13 + salt * 3 + i * j) % (2 * r + 1)) as f32 - r as f32
}

/// Poison after C, so that a store past its end shows.
const TAIL: usize = 37;

/// Runs `shape` through `ops` with `kernel` and compares with the host, exactly. Returns the
/// GEMM's error, if it refused.
fn run_gemm<In: GemmIn + Elem, Out: GemmOut<In> + Elem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    shape: GemmShape,
    kernel: Kernel,
) -> Result<(), rshmem::Error> {
    run_gemm_at::<In, Out>(shmem, ops, shape, GemmOptions::kernel(kernel), [0; 3])
}

/// [`run_gemm`] on A, B and C that start `at` elements into larger buffers (ranges of them):
/// A and B after elements of another value, C after poison that must stay.
fn run_gemm_at<In: GemmIn + Elem, Out: GemmOut<In> + Elem>(
    shmem: &Shmem,
    ops: &Ops<'_>,
    shape: GemmShape,
    options: GemmOptions,
    [at_a, at_b, at_c]: [usize; 3],
) -> Result<(), rshmem::Error> {
    let GemmShape { m, n, k, b_layout } = shape;
    let a: Vec<f32> = (0..m * k).map(|i| small(i / k, i % k, 1, 2)).collect();
    // b_at(col, kk): B's element of column `col` of C at reduction index `kk`.
    let b_host: Vec<f32> = match b_layout {
        BLayout::NK => (0..n * k).map(|i| small(i / k, i % k, 5, 3)).collect(),
        BLayout::KN => (0..k * n).map(|i| small(i % n, i / n, 5, 3)).collect(),
    };
    let b_at = |col: u32, kk: u32| match b_layout {
        BLayout::NK => b_host[(col * k + kk) as usize],
        BLayout::KN => b_host[(kk * n + col) as usize],
    };
    // Elements before a matrix: 5, which a GEMM that ignored the offset would read.
    let after = |at: usize, m: &[f32]| -> Vec<In> {
        let five = std::iter::repeat_n(In::of(5.0), at);
        five.chain(m.iter().map(|&v| In::of(v))).collect()
    };
    let ga: SymBuffer<'_, In> = shmem.alloc_from(&after(at_a, &a))?;
    let gb: SymBuffer<'_, In> = shmem.alloc_from(&after(at_b, &b_host))?;
    let mut gc = shmem.alloc_from(&vec![Out::poison(); at_c + shape.c_len() + TAIL])?;
    ops.gemm_with(
        &shmem.stream(),
        ga.range(at_a..)?,
        gb.range(at_b..)?,
        gc.range_mut(at_c..)?,
        shape,
        options,
    )?;
    let c = gc.to_vec()?;
    assert!(
        c[..at_c].iter().all(|v| v.get().is_nan()),
        "{shape:?} {options:?}: a store before C's start (element {at_c})"
    );
    let c = &c[at_c..];
    for row in 0..m {
        for col in 0..n {
            let want: f32 = (0..k)
                .map(|kk| a[(row * k + kk) as usize] * b_at(col, kk))
                .sum();
            let got = c[(row * n + col) as usize].get();
            assert!(
                got == Out::of(want).get(),
                "{shape:?} {options:?}: C[{row}][{col}] = {got}, want {want}"
            );
        }
    }
    assert!(
        c[shape.c_len()..].iter().all(|v| v.get().is_nan()),
        "{shape:?}: a store past C's end"
    );
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

const SM90: Kernel = Kernel::Sm90;

/// Whether the sm90 kernel runs here (the simulator, or an sm_90 GPU).
fn has_sm90(ops: &Ops<'_>) -> bool {
    ops.device_info().sm == 90
}

fn sm90_odd_shapes_exact(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    for (m, n, k) in [(1, 1, 8), (37, 45, 24), (130, 257, 72)] {
        let shape = GemmShape::new(m, n, k, BLayout::NK);
        run_gemm::<bf16, f32>(shmem, &ops, shape, SM90)?;
    }
    Ok(())
}

fn sm90_f16_and_16bit_outputs(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    // Sums up to 2 * 3 * 136 = 816: above 256, so bf16 outputs are rounded.
    let shape = GemmShape::new(67, 45, 136, BLayout::NK);
    run_gemm::<bf16, bf16>(shmem, &ops, shape, SM90)?;
    run_gemm::<f16, f32>(shmem, &ops, shape, SM90)?;
    run_gemm::<f16, f16>(shmem, &ops, shape, Kernel::Auto)?;
    Ok(())
}

/// B K x N on both kernels (Auto picks sm90 on the simulator), at two shapes.
fn kn_both_kernels(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let shape = GemmShape::new(37, 40, 24, BLayout::KN);
    let kernels: &[Kernel] = if has_sm90(&ops) {
        &[Kernel::Auto, SM90, Kernel::Sm80]
    } else {
        &[Kernel::Auto, Kernel::Sm80]
    };
    for &kernel in kernels {
        run_gemm::<bf16, f32>(shmem, &ops, shape, kernel)?;
        run_gemm::<bf16, bf16>(shmem, &ops, shape, kernel)?;
    }
    run_gemm::<bf16, f32>(
        shmem,
        &ops,
        GemmShape::new(19, 40, 16, BLayout::KN),
        Kernel::Auto,
    )?;
    Ok(())
}

fn errors_name_the_problem(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let a = shmem.alloc_zeroed::<bf16>(100)?;
    let b = shmem.alloc_zeroed::<bf16>(256)?;
    let mut c = shmem.alloc_zeroed::<f32>(64)?;
    let stream = shmem.stream();
    let err = |shape: GemmShape, kernel: Kernel, c: &mut SymBuffer<'_, f32>| {
        let e = ops
            .gemm_with(&stream, &a, &b, c, shape, GemmOptions::kernel(kernel))
            .expect_err("must refuse");
        e.to_string()
    };
    let nk = |m, n, k| GemmShape::new(m, n, k, BLayout::NK);
    let e = err(nk(8, 8, 16), SM90, &mut c);
    assert!(
        e.contains("`a` has 100 elements") && e.contains("8 x 16 = 128"),
        "{e}"
    );
    let e = err(nk(4, 32, 16), SM90, &mut c);
    assert!(
        e.contains("`b` has 256 elements") && e.contains("32 x 16 = 512"),
        "{e}"
    );
    let e = err(nk(4, 17, 8), SM90, &mut c);
    assert!(
        e.contains("`c` has 64 elements") && e.contains("4 x 17 = 68"),
        "{e}"
    );
    let e = err(nk(4, 4, 12), SM90, &mut c);
    assert!(e.contains("k = 12") && e.contains("multiple of 8"), "{e}");
    let e = err(nk(0, 4, 8), Kernel::Auto, &mut c);
    assert!(e.contains("> 0") && e.contains("0 x 4 x 8"), "{e}");
    if has_sm90(&ops) {
        let e = err(GemmShape::new(4, 4, 8, BLayout::KN), SM90, &mut c);
        assert!(e.contains("KN") && e.contains("multiple of 8"), "{e}");
    } else {
        let e = err(nk(4, 4, 8), SM90, &mut c);
        assert!(e.contains("sm_90"), "{e}");
    }
    // Nothing was launched, and C is untouched.
    assert!(c.to_vec()?.iter().all(|&v| v == 0.0));
    assert_eq!(ops.map_slots_in_use(), 0);
    Ok(())
}

fn map_slots_are_reused(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    let shape = GemmShape::new(3, 5, 8, BLayout::NK);
    let a = shmem.alloc_from(&vec![bf16::ONE; shape.a_len()])?;
    let b = shmem.alloc_from(&vec![bf16::from_f32(2.0); shape.b_len()])?;
    let mut c = shmem.alloc_zeroed::<f32>(shape.c_len())?;
    let mut c16 = shmem.alloc_zeroed::<bf16>(shape.c_len())?;
    let stream = shmem.stream();
    assert_eq!(ops.map_slots_in_use(), 0);
    ops.gemm(&stream, &a, &b, &mut c, shape)?;
    assert_eq!(ops.map_slots_in_use(), 1);
    // Same operands (C is no part of the maps): the same slot.
    ops.gemm(&stream, &a, &b, &mut c, shape)?;
    ops.gemm(&stream, &a, &b, &mut c16, shape)?;
    assert_eq!(ops.map_slots_in_use(), 1);
    // Other operands (B as A, or another shape over the same memory): a new slot each.
    ops.gemm(
        &stream,
        &a,
        &a,
        &mut c,
        GemmShape::new(3, 3, 8, BLayout::NK),
    )?;
    ops.gemm(
        &stream,
        &a,
        &b,
        &mut c,
        GemmShape::new(2, 5, 8, BLayout::NK),
    )?;
    assert_eq!(ops.map_slots_in_use(), 3);
    assert!(c16.to_vec()?.iter().all(|&v| v == bf16::from_f32(16.0)));
    let c = c.to_vec()?;
    assert!(c[..10].iter().all(|&v| v == 16.0) && c[10..].iter().all(|&v| v == 0.0 || v == 16.0));
    Ok(())
}

/// `C = A · B` on the host for B N x K, row-major.
fn reference(a: &[f32], b: &[f32], shape: GemmShape) -> Vec<f32> {
    let GemmShape { m, n, k, .. } = shape;
    (0..m * n)
        .map(|i| {
            let (row, col) = (i / n, i % n);
            (0..k)
                .map(|kk| a[(row * k + kk) as usize] * b[(col * k + kk) as usize])
                .sum()
        })
        .collect()
}

/// GEMMs recorded in graphs and launched on fresh operands: the sm80 path records as it is;
/// the sm90 path refuses to record a GEMM on operands no tensor-map slot describes (filling
/// one is a host copy), records one on operands seen before, and keeps that slot for the
/// graph — with every slot read by a live graph, a GEMM on new operands is refused until a
/// graph is dropped (on GPUs).
fn gemms_in_graphs(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.new_stream()?;
    let shape = GemmShape::new(13, 24, 16, BLayout::NK);
    // Room for the pinning part's shapes too (up to 33 x 8 x 8).
    let mut a = shmem.alloc_zeroed::<bf16>(shape.a_len().max(33 * 8))?;
    let mut b = shmem.alloc_zeroed::<bf16>(shape.b_len())?;
    let mut c = shmem.alloc_zeroed::<f32>(shape.c_len().max(33 * 8))?;
    let sm90 = has_sm90(&ops);
    let options = |kernel| GemmOptions::kernel(kernel);
    if sm90 {
        let graph = stream.capture(|| {
            let refused = ops
                .gemm_with(&stream, &a, &b, &mut c, shape, options(SM90))
                .unwrap_err();
            match refused {
                Error::Capture { call, message } => {
                    assert_eq!(call, "Ops::gemm");
                    assert!(message.contains("run the call once"), "{message}");
                }
                other => panic!("expected a refusal to record, got {other}"),
            }
            Ok(())
        })?;
        assert_eq!((graph.operations(), ops.map_slots_in_use()), (0, 0));
        // Seen once (filling a slot), it can be recorded.
        ops.gemm_with(&stream, &a, &b, &mut c, shape, options(SM90))?;
    }
    let kernels: &[Kernel] = if sm90 {
        &[Kernel::Sm80, SM90]
    } else {
        &[Kernel::Sm80]
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    for &kernel in kernels {
        let graph =
            stream.capture(|| ops.gemm_with(&stream, &a, &b, &mut c, shape, options(kernel)))?;
        assert_eq!(graph.operations(), 1);
        assert_eq!(ops.map_slots_pinned(), usize::from(kernel == SM90));
        for round in 0..2u64 {
            // Fresh small integers: exact in bf16, their sums exact in f32.
            let fresh = |len: usize, salt: u64| -> Vec<f32> {
                common::random_u32(len, seed ^ salt << 32 ^ round << 48)
                    .iter()
                    .map(|&r| (r % 7) as f32 - 3.0)
                    .collect()
            };
            let (ha, hb) = (fresh(a.len(), 1), fresh(b.len(), 2));
            a.copy_from_host(&ha.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())?;
            b.copy_from_host(&hb.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())?;
            c.copy_from_host(&vec![f32::NAN; c.len()])?;
            // SAFETY: the operands are alive and as long as the shape needs.
            unsafe { graph.launch(&stream)? };
            let got = c.to_vec()?;
            assert_eq!(
                got[..shape.c_len()],
                reference(&ha, &hb, shape),
                "{kernel:?} round {round}"
            );
        }
        drop(graph);
        assert_eq!(ops.map_slots_pinned(), 0);
    }
    // Filling every slot takes 32 sm90 GEMMs, seconds on the simulator, where the unit test of
    // the slot choice (`maps.rs`) covers it.
    if !sm90 || shmem.backend() == rshmem::Backend::Sim {
        return Ok(());
    }
    // Every slot read by a live graph: one graph per shape m x 8 x 8 over the same buffers.
    let small = |m: u32| GemmShape::new(m, 8, 8, BLayout::NK);
    let mut graphs = Vec::new();
    for m in 1..=MAP_SLOTS as u32 {
        ops.gemm_with(&stream, &a, &b, &mut c, small(m), options(SM90))?;
        graphs.push(
            stream.capture(|| ops.gemm_with(&stream, &a, &b, &mut c, small(m), options(SM90)))?,
        );
    }
    assert_eq!(ops.map_slots_pinned(), MAP_SLOTS);
    let new = small(MAP_SLOTS as u32 + 1);
    let refused = ops
        .gemm_with(&stream, &a, &b, &mut c, new, options(SM90))
        .unwrap_err()
        .to_string();
    assert!(refused.contains("live graphs"), "{refused}");
    // The pinned slots still describe their operands.
    let (ha, hb) = (vec![1.0f32; a.len()], vec![2.0f32; b.len()]);
    a.copy_from_host(&vec![bf16::ONE; a.len()])?;
    b.copy_from_host(&vec![bf16::from_f32(2.0); b.len()])?;
    c.copy_from_host(&vec![0.0; c.len()])?;
    // SAFETY: the operands are alive and long enough for every shape here.
    unsafe { graphs[20].launch(&stream)? };
    assert_eq!(
        c.to_vec()?[..small(21).c_len()],
        reference(&ha, &hb, small(21))
    );
    // A dropped graph frees its slot for new operands.
    graphs.swap_remove(3);
    ops.gemm_with(&stream, &a, &b, &mut c, new, options(SM90))?;
    assert_eq!(c.to_vec()?[..new.c_len()], reference(&ha, &hb, new));
    assert_eq!(ops.map_slots_pinned(), MAP_SLOTS - 1);
    Ok(())
}

/// A GEMM reading A and B and writing C at offsets inside larger buffers, on both kernels and
/// both layouts; an operand that starts misaligned for the kernels is refused by name, by
/// `Ops::gemm` and the launch helpers alike.
fn sub_ranges_of_larger_buffers(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let mut kernels = vec![Kernel::Sm80];
    if has_sm90(&ops) {
        kernels.push(SM90);
    }
    for &kernel in &kernels {
        // A 48 bytes in, B 16, C 24 (f32) or 12 (bf16): each as aligned as the kernels need.
        let nk = GemmShape::new(67, 45, 40, BLayout::NK);
        run_gemm_at::<bf16, f32>(shmem, &ops, nk, GemmOptions::kernel(kernel), [24, 8, 6])?;
        run_gemm_at::<bf16, bf16>(shmem, &ops, nk, GemmOptions::kernel(kernel), [8, 40, 6])?;
        let kn = GemmShape::new(33, 24, 16, BLayout::KN);
        run_gemm_at::<bf16, f32>(shmem, &ops, kn, GemmOptions::kernel(kernel), [16, 8, 2])?;
    }
    let shape = GemmShape::new(16, 8, 16, BLayout::NK);
    let a = shmem.alloc_zeroed::<bf16>(shape.a_len() + 8)?;
    let b = shmem.alloc_zeroed::<bf16>(shape.b_len() + 8)?;
    let mut c = shmem.alloc_from(&vec![f32::NAN; shape.c_len() + 8])?;
    let stream = shmem.stream();
    for &kernel in &kernels {
        let o = GemmOptions::kernel(kernel);
        let r = ops.gemm_with(&stream, a.range(1..)?, &b, &mut c, shape, o);
        expect(
            r,
            &[
                "Ops::gemm",
                "`a` starts",
                "16-byte aligned",
                "multiple of 8 elements",
            ],
        )?;
        let r = ops.gemm_with(&stream, &a, b.range(4..)?, &mut c, shape, o);
        expect(r, &["`b` starts", "8 bytes past a multiple of 16"])?;
        let r = ops.gemm_with(&stream, &a, &b, c.range_mut(1..)?, shape, o);
        expect(
            r,
            &["`c` starts", "8-byte aligned", "multiple of 2 elements"],
        )?;
    }
    if !c.to_vec()?.iter().all(|v| v.is_nan()) {
        return Err("a refused GEMM wrote C".into());
    }
    let r = rshmem_ops::Sm80Launch::new(shmem, &a, b.range(2..)?, shape).map(|_| ());
    expect(r, &["Sm80Launch::new", "`b` starts"])?;
    if has_sm90(&ops) {
        let r = rshmem_ops::Sm90Launch::new(shmem, a.range(3..)?, &b, shape).map(|_| ());
        expect(r, &["Sm90Launch::new", "`a` starts"])?;
    }
    Ok(())
}

/// The kernels that run here: sm80 everywhere, sm90 where it can.
fn every_kernel(ops: &Ops<'_>) -> Vec<Kernel> {
    if has_sm90(ops) {
        vec![SM90, Kernel::Sm80]
    } else {
        vec![Kernel::Sm80]
    }
}

/// A grouped GEMM's operands on the host: A (m x k), every group's B (its own values), and
/// the spans of rows the test expects each group to have: `(group, first row, end)`.
struct GroupedCase {
    shape: GroupedShape,
    /// Ends (offsets) or counts (masked), as the device reads them.
    sizes: Vec<u32>,
    /// 0 for offsets, else max_m.
    masked: u32,
    m: u32,
    spans: Vec<(u32, u32, u32)>,
}

impl GroupedCase {
    /// B's element of group `g`, column `col` of C, reduction index `kk`.
    fn b(&self, g: u32, col: u32, kk: u32) -> f32 {
        small(col, kk, 5 + 2 * g, 3)
    }

    /// B laid out as the device reads it: groups one after the other.
    fn b_host(&self) -> Vec<f32> {
        let GroupedShape {
            groups,
            n,
            k,
            b_layout,
        } = self.shape;
        let mut out = Vec::with_capacity(self.shape.b_len());
        for g in 0..groups {
            match b_layout {
                BLayout::NK => out.extend((0..n * k).map(|i| self.b(g, i / k, i % k))),
                BLayout::KN => out.extend((0..k * n).map(|i| self.b(g, i % n, i / n))),
            }
        }
        out
    }

    fn a(&self, row: u32, kk: u32) -> f32 {
        small(row, kk, 1, 2)
    }

    /// Runs the case on `kernel` into a poisoned C; `Ok(c)` (C as f32, then its tail).
    fn run<In: GemmIn + Elem, Out: GemmOut<In> + Elem>(
        &self,
        shmem: &Shmem,
        ops: &Ops<'_>,
        kernel: Kernel,
    ) -> Result<Vec<f32>, rshmem::Error> {
        self.run_with::<In, Out>(shmem, ops, GemmOptions::kernel(kernel))
    }

    /// [`GroupedCase::run`] with `options`.
    fn run_with<In: GemmIn + Elem, Out: GemmOut<In> + Elem>(
        &self,
        shmem: &Shmem,
        ops: &Ops<'_>,
        options: GemmOptions,
    ) -> Result<Vec<f32>, rshmem::Error> {
        let (m, k, n) = (self.m, self.shape.k, self.shape.n);
        let a: Vec<In> = (0..m * k).map(|i| In::of(self.a(i / k, i % k))).collect();
        let b: Vec<In> = self.b_host().into_iter().map(In::of).collect();
        let ga = shmem.alloc_from(&a)?;
        let gb = shmem.alloc_from(&b)?;
        let sizes = shmem.alloc_from(&self.sizes)?;
        let mut gc = shmem.alloc_from(&vec![Out::poison(); (m * n) as usize + TAIL])?;
        let rows = self.rows(&sizes);
        ops.grouped_gemm_with(
            &shmem.stream(),
            &ga,
            &gb,
            &mut gc,
            self.shape,
            rows,
            options,
        )?;
        Ok(gc.to_vec()?.into_iter().map(Elem::get).collect())
    }

    fn rows<'a>(&self, sizes: &'a SymBuffer<'_, u32>) -> GroupRows<'a> {
        match self.masked {
            0 => GroupRows::Offsets {
                ends: sizes.into(),
                m: self.m,
            },
            max_m => GroupRows::Masked {
                counts: sizes.into(),
                max_m,
            },
        }
    }

    /// Compares `c` with the reference: each span's rows its group's product (rounded as
    /// `Out`), every other row of C and the tail still poison.
    fn check<Out: Elem>(&self, c: &[f32], what: &str) -> Outcome {
        let (n, k) = (self.shape.n, self.shape.k);
        let mut owner = vec![None; self.m as usize];
        for &(g, r0, end) in &self.spans {
            for r in r0..end {
                owner[r as usize] = Some(g);
            }
        }
        for row in 0..self.m {
            for col in 0..n {
                let got = c[(row * n + col) as usize];
                match owner[row as usize] {
                    Some(g) => {
                        let want: f32 = (0..k).map(|kk| self.a(row, kk) * self.b(g, col, kk)).sum();
                        let want = Out::of(want).get();
                        if got != want {
                            return Err(format!(
                                "{what}: C[{row}][{col}] (group {g}) = {got}, want {want}"
                            )
                            .into());
                        }
                    }
                    None if !got.is_nan() => {
                        return Err(format!(
                            "{what}: C[{row}][{col}], in no group, was written ({got})"
                        )
                        .into())
                    }
                    None => {}
                }
            }
        }
        if !c[(self.m * n) as usize..].iter().all(|v| v.is_nan()) {
            return Err(format!("{what}: a store past C's end").into());
        }
        Ok(())
    }
}

/// Offsets (`torch._grouped_mm`'s layout): an empty first group, one over more than a tile of
/// rows, a one-row group, a ragged one, rows after the last group left alone; both layouts of
/// B, every kernel, bf16 and f16 in, f32 and 16-bit out.
fn grouped_offsets_every_kernel_and_layout(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    for (layout, n) in [(BLayout::NK, 40), (BLayout::KN, 24)] {
        let case = GroupedCase {
            shape: GroupedShape {
                groups: 5,
                n,
                k: 72,
                b_layout: layout,
            },
            sizes: vec![0, 130, 131, 131, 198],
            masked: 0,
            m: 201,
            spans: vec![(1, 0, 130), (2, 130, 131), (4, 131, 198)],
        };
        for kernel in every_kernel(&ops) {
            let what = format!("offsets, B {layout:?}, {kernel:?}");
            case.check::<f32>(&case.run::<bf16, f32>(shmem, &ops, kernel)?, &what)?;
            case.check::<f16>(&case.run::<f16, f16>(shmem, &ops, kernel)?, &what)?;
        }
    }
    Ok(())
}

/// The masked layout (a low-latency dispatch's): counts below, at and above each group's room
/// (clamped to it), an empty group; offsets that go back or past m (clamped: no row twice, none
/// outside A and C); all groups empty (nothing written).
fn grouped_masked_and_garbage_sizes(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let shape = |groups| GroupedShape {
        groups,
        n: 136,
        k: 16,
        b_layout: BLayout::NK,
    };
    let cases = [
        GroupedCase {
            shape: shape(4),
            sizes: vec![70, 0, 1000, 33],
            masked: 70,
            m: 280,
            spans: vec![(0, 0, 70), (2, 140, 210), (3, 210, 243)],
        },
        GroupedCase {
            shape: shape(3),
            sizes: vec![50, 20, 9999],
            masked: 0,
            m: 80,
            spans: vec![(0, 0, 50), (2, 50, 80)],
        },
        GroupedCase {
            shape: shape(2),
            sizes: vec![0, 0],
            masked: 0,
            m: 9,
            spans: vec![],
        },
    ];
    for case in &cases {
        for kernel in every_kernel(&ops) {
            let what = format!(
                "sizes {:?} (masked {}), {kernel:?}",
                case.sizes, case.masked
            );
            case.check::<bf16>(&case.run::<bf16, bf16>(shmem, &ops, kernel)?, &what)?;
        }
    }
    Ok(())
}

/// The sizes are data the GEMM reads when it runs: a graph recorded once computes each
/// launch's layout, written to the sizes buffer between launches.
fn grouped_sizes_are_read_when_the_graph_runs(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.new_stream()?;
    let mut case = GroupedCase {
        shape: GroupedShape {
            groups: 3,
            n: 24,
            k: 16,
            b_layout: BLayout::NK,
        },
        sizes: vec![10, 10, 30],
        masked: 0,
        m: 30,
        spans: vec![],
    };
    let (m, n, k) = (case.m, case.shape.n, case.shape.k);
    let a: Vec<bf16> = (0..m * k)
        .map(|i| bf16::from_f32(case.a(i / k, i % k)))
        .collect();
    let b: Vec<bf16> = case.b_host().into_iter().map(bf16::from_f32).collect();
    let (ga, gb) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
    let mut sizes = shmem.alloc_from(&case.sizes)?;
    let mut gc = shmem.alloc_from(&vec![f32::NAN; (m * n) as usize + TAIL])?;
    for kernel in every_kernel(&ops) {
        let options = GemmOptions::kernel(kernel);
        // Seen once before the capture (the sm90 path's tensor maps).
        let rows = case.rows(&sizes);
        ops.grouped_gemm_with(&stream, &ga, &gb, &mut gc, case.shape, rows, options)?;
        let graph = stream.capture(|| {
            ops.grouped_gemm_with(&stream, &ga, &gb, &mut gc, case.shape, rows, options)
        })?;
        for (ends, spans) in [
            (vec![10, 10, 30], vec![(0, 0, 10), (2, 10, 30)]),
            (vec![0, 29, 30], vec![(1, 0, 29), (2, 29, 30)]),
        ] {
            sizes.copy_from_host(&ends)?;
            gc.copy_from_host(&vec![f32::NAN; gc.len()])?;
            // SAFETY: the operands are alive and as long as the shape needs.
            unsafe { graph.launch(&stream)? };
            (case.sizes, case.spans) = (ends, spans);
            case.check::<f32>(&gc.to_vec()?, &format!("graph, {kernel:?}"))?;
        }
    }
    Ok(())
}

fn grouped_errors_name_the_problem(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let a = shmem.alloc_zeroed::<bf16>(64 * 16)?;
    let b = shmem.alloc_zeroed::<bf16>(3 * 8 * 16)?;
    let mut c = shmem.alloc_from(&vec![f32::NAN; 64 * 8])?;
    let sizes = shmem.alloc_from(&[4u32, 8, 64])?;
    let shape = GroupedShape {
        groups: 3,
        n: 8,
        k: 16,
        b_layout: BLayout::NK,
    };
    let offsets = |m| GroupRows::Offsets {
        ends: (&sizes).into(),
        m,
    };
    let mut run = |shape, rows| ops.grouped_gemm(&stream, &a, &b, &mut c, shape, rows);
    expect(
        run(GroupedShape { groups: 0, ..shape }, offsets(64)),
        &["Ops::grouped_gemm", "groups must be > 0"],
    )?;
    expect(
        run(GroupedShape { groups: 4, ..shape }, offsets(64)),
        &["`b` has 384", "4 x 8 x 16 = 512"],
    )?;
    let few = GroupRows::Offsets {
        ends: sizes.range(..2)?.into(),
        m: 64,
    };
    expect(
        run(shape, few),
        &["group sizes have 2", "3 (one per group)"],
    )?;
    expect(run(shape, offsets(65)), &["`a` has 1024", "65 x 16"])?;
    expect(
        run(GroupedShape { k: 12, ..shape }, offsets(64)),
        &["k = 12", "multiple of 8"],
    )?;
    let masked = |max_m| GroupRows::Masked {
        counts: (&sizes).into(),
        max_m,
    };
    expect(run(shape, masked(0)), &["max_m = 0"])?;
    expect(run(shape, masked(22)), &["`a` has 1024", "m x k = 66 x 16"])?;
    // m = 0 (every group empty) is no work, not an error.
    run(shape, offsets(0))?;
    if !c.to_vec()?.iter().all(|v| v.is_nan()) {
        return Err("a refused grouped GEMM wrote C".into());
    }
    Ok(())
}

/// `kernel` with K split as `split_k` says.
fn split(kernel: Kernel, split_k: SplitK) -> GemmOptions {
    GemmOptions::kernel(kernel).split_k(split_k)
}

/// Split-K, exactly: parts of 1 k-step up to many, a K edge inside the last part, odd M and N
/// (one tile, several), both layouts, f32 and 16-bit outputs, bf16 and f16 inputs, poisoned C;
/// and Auto, which splits a one-tile shape on the simulator's 2 SMs.
fn split_k_exact_every_layout_and_output(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    for (m, n, k, parts) in [
        (1, 33u32, 136, 3),
        (37, 45, 200, 4),
        (130, 257, 264, 2),
        (5, 8, 64, 1),
    ] {
        for layout in [BLayout::NK, BLayout::KN] {
            // B K x N needs n a multiple of 8.
            let n: u32 = if layout == BLayout::KN {
                n.next_multiple_of(8)
            } else {
                n
            };
            let shape = GemmShape::new(m, n, k, layout);
            let o = split(SM90, SplitK::Parts(parts));
            run_gemm_at::<bf16, f32>(shmem, &ops, shape, o, [0; 3])?;
            run_gemm_at::<f16, f16>(shmem, &ops, shape, o, [8, 16, 2])?;
        }
    }
    // Sums up to 2 * 3 * 1024: bf16 rounds them, once, after the parts are added.
    let shape = GemmShape::new(19, 24, 1024, BLayout::NK);
    run_gemm_at::<bf16, bf16>(shmem, &ops, shape, split(SM90, SplitK::Parts(16)), [0; 3])?;
    let sms = ops.device_info().multiprocessors;
    let bytes = rshmem_ops::gemm::split_k::workspace_bytes(shmem.backend());
    let auto = rshmem_ops::gemm::split_k::parts(SplitK::Auto, sms, 19, 24, 1024, bytes);
    if shmem.backend() == rshmem::Backend::Sim && auto < 2 {
        return Err(format!("Auto did not split a one-tile 19 x 24 x 1024 on {sms} SMs").into());
    }
    run_gemm_at::<bf16, f32>(
        shmem,
        &ops,
        shape,
        split(Kernel::Auto, SplitK::Auto),
        [0; 3],
    )?;
    Ok(())
}

/// A split tail (`rshmem_ops::gemm::plan::split_tail`): one tile more than the SMs (rows of
/// one 128 x 256 tile column), so the last wave would be one tile; its rows run split after
/// the full wave's. The plan, then exact results through it (both layouts, an f32 and a 16-bit
/// output, matrices inside larger buffers); under `SplitK::Off` no tail; after an eager call,
/// a graph capture of it (which records the unsplit kernel).
fn split_tail_exact_and_the_plan(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    let sms = ops.device_info().multiprocessors;
    // n = 136: one wide tile column but two narrow ones, so the narrow tile does not win.
    let (m, n, k) = (sms * 128 + 44, 136, 2048);
    let tail_parts = match shmem.backend() {
        Backend::Sim => 2,
        Backend::Gpu => 8,
    };
    let want = |split, split_from| GemmPlan {
        kernel: SM90,
        tile: GemmTile::N256,
        split,
        split_from,
    };
    for layout in [BLayout::NK, BLayout::KN] {
        let shape = GemmShape::new(m, n, k, layout);
        let auto = GemmOptions::kernel(SM90);
        let got = ops.gemm_plan(shape, auto)?;
        if got != want(tail_parts, sms * 128) {
            return Err(format!("{shape:?} on {sms} SMs: plan {got:?}").into());
        }
        // One run per layout (each is a few seconds on the simulator).
        match layout {
            BLayout::NK => run_gemm_at::<bf16, f32>(shmem, &ops, shape, auto, [0; 3])?,
            BLayout::KN => run_gemm_at::<bf16, bf16>(shmem, &ops, shape, auto, [8, 16, 2])?,
        }
        let off = split(SM90, SplitK::Off);
        let got = ops.gemm_plan(shape, off)?;
        if got.split != 1 || got.split_from != 0 {
            return Err(format!("{shape:?} under SplitK::Off: plan {got:?}").into());
        }
    }
    // Seen once eagerly (with its tail), the call records into a graph: the unsplit kernel,
    // reading the maps the eager call's head filled; the graph's C is the reference.
    let (shape, auto) = (
        GemmShape::new(m, n, k, BLayout::NK),
        GemmOptions::kernel(SM90),
    );
    let stream = shmem.new_stream()?;
    let host = |len: usize, salt| -> Vec<f32> {
        (0..len as u32)
            .map(|i| small(i / k, i % k, salt, 2))
            .collect()
    };
    let (ha, hb) = (host(shape.a_len(), 1), host(shape.b_len(), 5));
    let to_bf16 = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
    let (a, b) = (
        shmem.alloc_from(&to_bf16(&ha))?,
        shmem.alloc_from(&to_bf16(&hb))?,
    );
    let mut c = shmem.alloc_zeroed::<f32>(shape.c_len())?;
    ops.gemm_with(&stream, &a, &b, &mut c, shape, auto)?;
    let graph = stream.capture(|| ops.gemm_with(&stream, &a, &b, &mut c, shape, auto))?;
    assert_eq!(
        graph.operations(),
        1,
        "the recorded call is one unsplit launch"
    );
    c.copy_from_host(&vec![f32::NAN; c.len()])?;
    // SAFETY: the operands are alive and as long as the shape needs.
    unsafe { graph.launch(&stream)? };
    assert_eq!(
        c.to_vec()?,
        reference(&ha, &hb, shape),
        "the recorded tail shape"
    );
    Ok(())
}

/// Fractional random values (their sums round): a split GEMM gives the same bits run after
/// run, and stays within f32 rounding of an f64 reference, as the unsplit one does.
fn split_k_is_deterministic(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    let shape = GemmShape::new(9, 40, 768, BLayout::NK);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ std::process::id() as u64;
    let mut rand = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        bf16::from_f32((seed >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0)
    };
    let a: Vec<bf16> = (0..shape.a_len()).map(|_| rand()).collect();
    let b: Vec<bf16> = (0..shape.b_len()).map(|_| rand()).collect();
    let (ga, gb) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
    let mut c = shmem.alloc_from(&vec![f32::NAN; shape.c_len()])?;
    let stream = shmem.stream();
    let mut run = |o: GemmOptions| -> Result<Vec<f32>, Error> {
        ops.gemm_with(&stream, &ga, &gb, &mut c, shape, o)?;
        c.to_vec()
    };
    let plain = run(split(SM90, SplitK::Off))?;
    let first = run(split(SM90, SplitK::Parts(5)))?;
    for _ in 0..3 {
        if run(split(SM90, SplitK::Parts(5)))? != first {
            return Err("a split GEMM gave other bits on a second run".into());
        }
    }
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    for (i, (&p, &s)) in plain.iter().zip(&first).enumerate() {
        let (row, col) = (i / n, i % n);
        let want: f64 = (0..k)
            .map(|kk| f64::from(a[row * k + kk].to_f32()) * f64::from(b[col * k + kk].to_f32()))
            .sum();
        // |terms| < 1, k of them: f32 sums err by at most k ulps of k.
        let bound = k as f64 * k as f64 * f64::from(f32::EPSILON);
        for (what, got) in [("unsplit", p), ("split", s)] {
            if (f64::from(got) - want).abs() > bound {
                return Err(format!("{what} C[{row}][{col}] = {got}, want {want} (m {m})").into());
            }
        }
    }
    Ok(())
}

/// Split GEMMs on two streams, queued alternately (they share the workspace: each waits for
/// the previous), each right; Auto in a capture records the unsplit kernel, whose launches
/// give the right C; forced parts in a capture are refused.
fn split_k_on_two_streams_and_in_graphs(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    let shapes = [
        GemmShape::new(7, 24, 512, BLayout::NK),
        GemmShape::new(12, 16, 640, BLayout::NK),
    ];
    let streams = [shmem.new_stream()?, shmem.new_stream()?];
    let mut bufs = Vec::new();
    for (i, shape) in shapes.iter().enumerate() {
        let a: Vec<f32> = (0..shape.a_len() as u32)
            .map(|j| small(j, i as u32, 1, 2))
            .collect();
        let b: Vec<f32> = (0..shape.b_len() as u32)
            .map(|j| small(j, i as u32, 4, 3))
            .collect();
        let want = reference(&a, &b, *shape);
        let ga = shmem.alloc_from(&a.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())?;
        let gb = shmem.alloc_from(&b.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())?;
        let gc = shmem.alloc_from(&vec![f32::NAN; shape.c_len()])?;
        bufs.push((ga, gb, gc, want));
    }
    for round in 0..3 {
        for (i, (ga, gb, gc, _)) in bufs.iter_mut().enumerate() {
            let o = split(SM90, SplitK::Parts(3 + i as u32 + round));
            ops.gemm_with(&streams[i], &*ga, &*gb, gc, shapes[i], o)?;
        }
    }
    shmem.synchronize()?;
    for (i, (_, _, gc, want)) in bufs.iter().enumerate() {
        if gc.to_vec()? != *want {
            return Err(format!("split GEMM {i} on its own stream: wrong C").into());
        }
    }
    let stream = &streams[0];
    let (ga, gb, gc, want) = &mut bufs[0];
    let graph = stream.capture(|| {
        let refused = ops
            .gemm_with(
                stream,
                &*ga,
                &*gb,
                &mut *gc,
                shapes[0],
                split(SM90, SplitK::Parts(2)),
            )
            .unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("SplitK::Parts in a graph capture"),
            "{refused}"
        );
        ops.gemm_with(
            stream,
            &*ga,
            &*gb,
            &mut *gc,
            shapes[0],
            split(SM90, SplitK::Auto),
        )
    })?;
    gc.copy_from_host(&vec![f32::NAN; shapes[0].c_len()])?;
    // SAFETY: the graph's buffers live until it is dropped below.
    unsafe { graph.launch(stream)? };
    stream.synchronize()?;
    if gc.to_vec()? != *want {
        return Err("the GEMM recorded with SplitK::Auto gave a wrong C".into());
    }
    drop(graph);
    Ok(())
}

fn split_k_errors_name_the_problem(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    // Parts of 512 x 512 f32 (1 MiB each): one more than the workspace holds, each of one
    // k-step (64), so that the workspace is what refuses them on either backend.
    let bytes = rshmem_ops::gemm::split_k::workspace_bytes(shmem.backend());
    let p = (bytes >> 20) as u32 + 1;
    let k = 64 * p;
    let a = shmem.alloc_zeroed::<bf16>(512 * k as usize)?;
    let b = shmem.alloc_zeroed::<bf16>(512 * k as usize)?;
    let mut c = shmem.alloc_from(&vec![f32::NAN; 512 * 512])?;
    let stream = shmem.stream();
    let mut run = |shape, o| ops.gemm_with(&stream, &a, &b, &mut c, shape, o);
    if ops.device_info().sm >= 80 {
        expect(
            run(
                GemmShape::new(8, 8, 64, BLayout::NK),
                split(Kernel::Sm80, SplitK::Parts(2)),
            ),
            &["Ops::gemm", "only the sm90 kernel splits K"],
        )?;
    }
    if has_sm90(&ops) {
        expect(
            run(
                GemmShape::new(8, 8, 200, BLayout::NK),
                split(SM90, SplitK::Parts(5)),
            ),
            &["SplitK::Parts(5) for k = 200", "at most 4 parts"],
        )?;
        expect(
            run(
                GemmShape::new(512, 512, k, BLayout::NK),
                split(SM90, SplitK::Parts(p)),
            ),
            &["the split-K workspace holds", "512 x n 512"],
        )?;
    }
    if !c.to_vec()?.iter().all(|v| v.is_nan()) {
        return Err("a refused split GEMM wrote C".into());
    }
    Ok(())
}

/// Both sm90 tile configurations, forced (128 x 128: 7 stages, so the stage and phase wrap at
/// a count that is not a power of two across a block's tiles), on odd shapes of both layouts
/// of B, f32 and 16-bit outputs, ranges of larger buffers; exact.
fn tiles_odd_shapes_both_layouts(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    let sm90 = GemmOptions::kernel(SM90).split_k(SplitK::Off);
    // 130 x 264 x 200: 6 narrow tiles of 4 k-steps on the simulator's 2 SMs, 12 k-steps a
    // block through 7 stages; 3 wide tiles (the last 8 columns wide).
    for (m, n, k) in [(1, 1u32, 8), (37, 45, 24), (130, 264, 200)] {
        for layout in [BLayout::NK, BLayout::KN] {
            let n = match layout {
                BLayout::KN => n.next_multiple_of(8),
                BLayout::NK => n,
            };
            let shape = GemmShape::new(m, n, k, layout);
            for tile in [GemmTile::N128, GemmTile::N256] {
                run_gemm_at::<bf16, f32>(shmem, &ops, shape, sm90.tile(tile), [0; 3])?;
            }
            let narrow = sm90.tile(GemmTile::N128);
            run_gemm_at::<f16, f16>(shmem, &ops, shape, narrow, [8, 16, 2])?;
            run_gemm_at::<bf16, bf16>(shmem, &ops, shape, narrow, [0; 3])?;
        }
    }
    Ok(())
}

/// The grouped GEMM on both tiles (offsets with empty, ragged and multi-tile groups, both
/// layouts; masked counts below and above the room); `gemm_plan` is the cost model's choice,
/// or the split's; what cannot run together is refused, naming why.
fn tiles_grouped_and_the_plan(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    if !has_sm90(&ops) {
        return Ok(());
    }
    for (layout, n) in [(BLayout::NK, 140), (BLayout::KN, 136)] {
        let case = GroupedCase {
            shape: GroupedShape {
                groups: 4,
                n,
                k: 72,
                b_layout: layout,
            },
            sizes: vec![0, 130, 131, 198],
            masked: 0,
            m: 201,
            spans: vec![(1, 0, 130), (2, 130, 131), (3, 131, 198)],
        };
        for tile in [GemmTile::N128, GemmTile::N256] {
            let options = GemmOptions::kernel(SM90).tile(tile);
            let what = format!("offsets, B {layout:?}, {tile:?}");
            case.check::<f32>(&case.run_with::<bf16, f32>(shmem, &ops, options)?, &what)?;
        }
        let options = GemmOptions::kernel(SM90).tile(GemmTile::N128);
        let what = format!("offsets, B {layout:?}, f16, N128");
        case.check::<f16>(&case.run_with::<f16, f16>(shmem, &ops, options)?, &what)?;
    }
    let masked = GroupedCase {
        shape: GroupedShape {
            groups: 3,
            n: 130,
            k: 16,
            b_layout: BLayout::NK,
        },
        sizes: vec![70, 0, 1000],
        masked: 70,
        m: 210,
        spans: vec![(0, 0, 70), (2, 140, 210)],
    };
    let options = GemmOptions::kernel(SM90).tile(GemmTile::N128);
    let out = masked.run_with::<bf16, bf16>(shmem, &ops, options)?;
    masked.check::<bf16>(&out, "masked, N128")?;

    // The plan: Auto is the model's tile where K is not split, 128 x 256 where it is.
    let sms = ops.device_info().multiprocessors;
    let bytes = rshmem_ops::gemm::split_k::workspace_bytes(shmem.backend());
    for (m, n, k) in [
        (128, 256, 64),
        (128, 512, 64),
        (19, 24, 1024),
        (200, 600, 128),
    ] {
        let shape = GemmShape::new(m, n, k, BLayout::NK);
        let parts = rshmem_ops::gemm::split_k::parts(SplitK::Auto, sms, m, n, k, bytes);
        let want = GemmPlan {
            kernel: SM90,
            tile: match parts {
                1 => rshmem_ops::gemm::plan::choose_tile(sms, m, n, k),
                _ => GemmTile::N256,
            },
            split: parts,
            split_from: 0,
        };
        let got = ops.gemm_plan(shape, GemmOptions::kernel(SM90))?;
        if got != want {
            return Err(format!("{m} x {n} x {k}: plan {got:?}, want {want:?}").into());
        }
        // The plan ran: the same C as the forced tile's.
        run_gemm_at::<bf16, f32>(shmem, &ops, shape, GemmOptions::kernel(SM90), [0; 3])?;
    }
    if shmem.backend() == rshmem::Backend::Sim {
        // The simulator's 2 SMs: both tiles are the model's choice somewhere.
        let tile = |m, n, k| {
            ops.gemm_plan(
                GemmShape::new(m, n, k, BLayout::NK),
                GemmOptions::kernel(SM90),
            )
        };
        assert_eq!(tile(128, 256, 64)?.tile, GemmTile::N128);
        assert_eq!(tile(128, 512, 64)?.tile, GemmTile::N256);
        assert_eq!(tile(19, 24, 1024)?.split, 2);
    }
    let shape = GemmShape::new(19, 24, 1024, BLayout::NK);
    let forced = GemmOptions::kernel(SM90).tile(GemmTile::N128);
    let plan = ops.gemm_plan(shape, forced)?;
    if plan.tile != GemmTile::N128 || plan.split != 1 {
        return Err(format!("a forced N128 under SplitK::Auto: {plan:?}").into());
    }
    let r = ops
        .gemm_plan(shape, forced.split_k(SplitK::Parts(2)))
        .map(|_| ());
    expect(
        r,
        &[
            "GemmTile::N128 and SplitK::Parts(2)",
            "128 x 256 tiles only",
        ],
    )?;
    let r = ops.gemm_plan(
        shape,
        GemmOptions::kernel(Kernel::Sm80).tile(GemmTile::N256),
    );
    expect(
        r.map(|_| ()),
        &["GemmTile::N256 on the sm80 kernel", "128 x 128"],
    )?;
    Ok(())
}

/// `Ops::gemm` on memory that is not symmetric (`DeviceRange::from_raw_parts`): the raw
/// addresses of symmetric buffers (device memory of this PE's GPU: the pointer check accepts
/// them), and on the simulator plain host vectors; on GPUs a host vector is refused, naming
/// host memory. Exact against the host, C's neighbours untouched; the constructor's refusals.
fn memory_that_is_not_symmetric(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let shape = GemmShape::new(35, 24, 48, BLayout::NK);
    let GemmShape { m, n, k, .. } = shape;
    let a: Vec<bf16> = (0..m * k)
        .map(|i| bf16::of(small(i / k, i % k, 1, 2)))
        .collect();
    let b: Vec<bf16> = (0..n * k)
        .map(|i| bf16::of(small(i / k, i % k, 5, 3)))
        .collect();
    let want: Vec<f32> = (0..m * n)
        .map(|i| {
            let (row, col) = (i / n, i % n);
            (0..k)
                .map(|kk| a[(row * k + kk) as usize].get() * b[(col * k + kk) as usize].get())
                .sum()
        })
        .collect();
    let check = |c: &[f32], what: &str| -> Outcome {
        if c[..want.len()] != want[..] {
            return Err(format!("{what}: C differs from the host's").into());
        }
        if !c[want.len()..].iter().all(|v| v.is_nan()) {
            return Err(format!("{what}: a store past C's end").into());
        }
        Ok(())
    };
    let kernels = every_kernel(&ops);
    // Symmetric buffers, passed by raw address.
    let (ga, gb) = (shmem.alloc_from(&a)?, shmem.alloc_from(&b)?);
    let mut gc = shmem.alloc_from(&vec![f32::NAN; want.len() + TAIL])?;
    for &kernel in &kernels {
        gc.copy_from_host(&vec![f32::NAN; want.len() + TAIL])?;
        // SAFETY: the buffers outlive the GEMM (`to_vec` below waits for it) and nothing
        // else touches them meanwhile.
        let (ra, rb, rc) = unsafe {
            (
                DeviceRange::from_raw_parts(shmem, ga.as_ptr(), a.len())?,
                DeviceRange::from_raw_parts(shmem, gb.as_ptr(), b.len())?,
                DeviceRangeMut::from_raw_parts(shmem, gc.as_mut_ptr(), want.len())?,
            )
        };
        ops.gemm_with(&stream, ra, rb, rc, shape, GemmOptions::kernel(kernel))?;
        check(&gc.to_vec()?, &format!("symmetric by address, {kernel:?}"))?;
    }
    // Host memory: the simulator's kernels run on it; a GPU's pointer check refuses it.
    let mut c = vec![f32::NAN; want.len() + TAIL];
    // SAFETY: the vectors outlive the GEMM (launches are synchronous on the simulator; on
    // GPUs the constructor refuses host memory before anything is queued).
    let host = unsafe { DeviceRange::from_raw_parts(shmem, a.as_ptr(), a.len()) };
    match shmem.backend() {
        Backend::Sim => {
            for &kernel in &kernels {
                c.fill(f32::NAN);
                // SAFETY: as above.
                let (ra, rb, rc) = unsafe {
                    (
                        DeviceRange::from_raw_parts(shmem, a.as_ptr(), a.len())?,
                        DeviceRange::from_raw_parts(shmem, b.as_ptr(), b.len())?,
                        DeviceRangeMut::from_raw_parts(shmem, c.as_mut_ptr(), want.len())?,
                    )
                };
                ops.gemm_with(&stream, ra, rb, rc, shape, GemmOptions::kernel(kernel))?;
                shmem.synchronize()?;
                check(&c, &format!("host memory, {kernel:?}"))?;
            }
        }
        Backend::Gpu => expect(
            host.map(|_| ()),
            &[
                "DeviceRange::from_raw_parts",
                "host memory",
                "this PE's GPU is cuda:",
            ],
        )?,
    }
    // The grouped GEMM on raw ranges too (rows, both groups' B, the ends, C): B stacked
    // twice, so both groups' rows give the plain GEMM's C. Host vectors on the simulator,
    // symmetric buffers by address on GPUs.
    let bb: Vec<bf16> = b.iter().chain(&b).copied().collect();
    let ends = [20u32, m];
    let (gbb, gends) = (shmem.alloc_from(&bb)?, shmem.alloc_from(&ends)?);
    let sim = shmem.backend() == Backend::Sim;
    let (pa, pb, pe) = match sim {
        true => (a.as_ptr(), bb.as_ptr(), ends.as_ptr()),
        false => (ga.as_ptr(), gbb.as_ptr(), gends.as_ptr()),
    };
    let grouped = GroupedShape {
        groups: 2,
        n,
        k,
        b_layout: BLayout::NK,
    };
    for &kernel in &kernels {
        c.fill(f32::NAN);
        gc.copy_from_host(&vec![f32::NAN; want.len() + TAIL])?;
        let pc = match sim {
            true => c.as_mut_ptr(),
            false => gc.as_mut_ptr(),
        };
        // SAFETY: as above (`to_vec` or the simulator's synchronous launch ends the GEMM
        // before the memory is read or dropped).
        let (ra, rb, re, rc) = unsafe {
            (
                DeviceRange::from_raw_parts(shmem, pa, a.len())?,
                DeviceRange::from_raw_parts(shmem, pb, bb.len())?,
                DeviceRange::from_raw_parts(shmem, pe, ends.len())?,
                DeviceRangeMut::from_raw_parts(shmem, pc, want.len())?,
            )
        };
        let rows = GroupRows::Offsets { ends: re, m };
        ops.grouped_gemm_with(
            &stream,
            ra,
            rb,
            rc,
            grouped,
            rows,
            GemmOptions::kernel(kernel),
        )?;
        shmem.synchronize()?;
        let got = if sim { c.clone() } else { gc.to_vec()? };
        check(&got, &format!("grouped, raw ranges, {kernel:?}"))?;
    }
    // The constructor's own checks, everywhere.
    // SAFETY: each is refused before the memory is used.
    unsafe {
        let odd = (ga.as_ptr() as *const u8).add(1).cast::<bf16>();
        expect(
            DeviceRange::from_raw_parts(shmem, odd, 4).map(|_| ()),
            &["not aligned for", "bf16"],
        )?;
        expect(
            DeviceRange::<f32>::from_raw_parts(shmem, std::ptr::null(), 4).map(|_| ()),
            &["null"],
        )?;
        expect(
            DeviceRange::<f32>::from_raw_parts(shmem, gc.as_ptr(), usize::MAX).map(|_| ()),
            &["overflow"],
        )?;
        let empty = DeviceRange::<bf16>::from_raw_parts(shmem, std::ptr::null(), 0)?;
        // The GEMM's own checks hold for raw ranges: too short for the shape.
        let short = DeviceRange::from_raw_parts(shmem, ga.as_ptr(), a.len() - 1)?;
        let c = DeviceRangeMut::from_raw_parts(shmem, gc.as_mut_ptr(), want.len())?;
        expect(
            ops.gemm(&stream, short, &gb, c, shape),
            &["Ops::gemm", "`a`"],
        )?;
        let c = DeviceRangeMut::from_raw_parts(shmem, gc.as_mut_ptr(), want.len())?;
        expect(
            ops.gemm(&stream, empty, &gb, c, shape),
            &["Ops::gemm", "`a`"],
        )?;
    }
    Ok(())
}
