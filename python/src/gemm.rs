//! The GEMM family from Python: `gemm`, the grouped GEMM (offsets or masked layout), and the
//! FP8 GEMMs (per-tensor or block scales; grouped with block scales), every operand on any
//! memory of the PE's device (symmetric tensors, torch tensors, numpy arrays on the
//! simulator: the GEMMs reach no peer). The shapes are read off the tensors (by `gemm` here,
//! by the Python layer for the others); rshmem checks everything before queueing.

use crate::args::{read, shape2, Sym, TensorArg};
use crate::dtype::{with_fp8_types, with_gemm_types, DType};
use crate::error::{arg, OrRaise};
use crate::ops::{on_stream, same};
use crate::profile::{self, Step};
use crate::Pe;
use pyo3::prelude::*;
use rshmem_host::{DeviceRange, Shmem};
use rshmem_ops::{
    BLayout, Fp8Scales, GemmOptions, GemmShape, GroupRows, GroupedShape, Kernel, SplitK,
};

pub(crate) fn b_layout(call: &str, layout: &str) -> PyResult<BLayout> {
    match layout {
        "nk" => Ok(BLayout::NK),
        "kn" => Ok(BLayout::KN),
        other => Err(arg(format!(
            "{call}: b_layout {other:?}: \"nk\" (B is n x k, C = A Bᵀ) or \"kn\" (B is k x n)"
        ))),
    }
}

pub(crate) fn kernel(call: &str, kernel: &str) -> PyResult<Kernel> {
    match kernel {
        "auto" => Ok(Kernel::Auto),
        "sm90" => Ok(Kernel::Sm90),
        "sm80" => Ok(Kernel::Sm80),
        other => Err(arg(format!(
            "{call}: kernel {other:?}: \"auto\", \"sm90\" or \"sm80\""
        ))),
    }
}

/// `(m, n, k)` of `a` (m x k) and `b` (n x k, or k x n), read off their shapes as the Python
/// layer's `gemm_shape` did.
fn gemm_shape(
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    layout: BLayout,
    call: &str,
) -> PyResult<(u32, u32, u32)> {
    let ((m, k), (rows, cols)) = (shape2(a, "a", call)?, shape2(b, "b", call)?);
    let (n, kb) = match layout {
        BLayout::NK => (rows, cols),
        BLayout::KN => (cols, rows),
    };
    if kb != k {
        let name = if layout == BLayout::NK { "nk" } else { "kn" };
        return Err(arg(format!(
            "{call}: a is {m} x {k} but b ({name}) is {rows} x {cols}: K differs"
        )));
    }
    let dim = |d: usize| {
        u32::try_from(d).map_err(|_| arg(format!("{call}: a dimension of {d} is above 2³²")))
    };
    Ok((dim(m)?, dim(n)?, dim(k)?))
}

/// `c = a · b` (b as `b_layout` says), bf16/f16 in, f32 or the input type out. The GEMM
/// reaches no peer, so its tensors may be anywhere in the PE's device memory.
#[pyfunction]
#[pyo3(signature = (pe, a, b, c, mnk=None, b_layout="nk", kernel="auto", split_k=0, stream=None))]
#[allow(clippy::too_many_arguments)]
fn gemm(
    py: Python<'_>,
    pe: &Pe,
    a: Bound<'_, PyAny>,
    b: Bound<'_, PyAny>,
    c: Bound<'_, PyAny>,
    mnk: Option<(u32, u32, u32)>,
    b_layout: &str,
    kernel: &str,
    split_k: u32,
    stream: Option<u64>,
) -> PyResult<()> {
    let start = profile::mark();
    const CALL: &str = "rshmem.gemm";
    let layout = self::b_layout(CALL, b_layout)?;
    let (m, n, k) = match mnk {
        Some(mnk) => mnk,
        None => gemm_shape(&a, &b, layout, CALL)?,
    };
    let shape = GemmShape::new(m, n, k, layout);
    let options = GemmOptions {
        kernel: self::kernel(CALL, kernel)?,
        split_k: split(split_k),
        ..GemmOptions::default()
    };
    let find =
        |what, t: &Bound<'_, PyAny>| Sym::find_local(&pe.core, CALL, what, &read(t, what, CALL)?);
    let (a, b, c) = (find("a", &a)?, find("b", &b)?, find("out", &c)?);
    let dtype = same(CALL, &a, &b)?;
    start.end(Step::Args);
    on_stream(py, pe, stream, |live, s| {
        let sh = live.shmem();
        with_gemm_types!(CALL, dtype, c.dtype, In, Out => live
            .ops
            .gemm_with(s, a.device::<In>(sh)?, b.device::<In>(sh)?, c.device_mut::<Out>(sh)?, shape, options)
            .or_raise())
    })
}

/// Which rows of a grouped GEMM are whose, as the Python layer read them off the tensors:
/// the sizes (u32 or i32, one per group), the rows of A and C (offsets) or per group
/// (masked), and whether the layout is the masked one.
#[derive(FromPyObject)]
struct Rows(TensorArg, u32, bool);

impl Rows {
    /// The sizes (u32 or i32 bits), as the GEMM's `GroupRows`.
    fn find(&self, pe: &Pe, call: &str) -> PyResult<Sym> {
        let sizes = Sym::find_local(&pe.core, call, "sizes", &self.0)?;
        if !matches!(sizes.dtype, DType::U32 | DType::I32) {
            return Err(arg(format!(
                "{call}: the group sizes are {}: they are u32 or i32 (torch._grouped_mm's \
                 offsets are int32)",
                sizes.dtype.name()
            )));
        }
        Ok(sizes)
    }

    fn group_rows<'a>(&self, sizes: DeviceRange<'a, u32>) -> GroupRows<'a> {
        match self.2 {
            false => GroupRows::Offsets {
                ends: sizes,
                m: self.1,
            },
            true => GroupRows::Masked {
                counts: sizes,
                max_m: self.1,
            },
        }
    }
}

/// `groups` GEMMs in one launch: each group's rows of `a` times its own B (the `g`-th of
/// `b`'s `groups` matrices) into the same rows of `c`.
#[pyfunction]
#[pyo3(signature = (pe, a, b, c, groups, n, k, rows, b_layout="nk", kernel="auto", stream=None))]
#[allow(clippy::too_many_arguments)]
fn grouped_gemm(
    py: Python<'_>,
    pe: &Pe,
    a: TensorArg,
    b: TensorArg,
    c: TensorArg,
    groups: u32,
    n: u32,
    k: u32,
    rows: Rows,
    b_layout: &str,
    kernel: &str,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.grouped_gemm";
    let shape = GroupedShape {
        groups,
        n,
        k,
        b_layout: self::b_layout(CALL, b_layout)?,
    };
    let options = GemmOptions::kernel(self::kernel(CALL, kernel)?);
    let find = |what, t: &TensorArg| Sym::find_local(&pe.core, CALL, what, t);
    let (a, b, c) = (find("a", &a)?, find("b", &b)?, find("out", &c)?);
    let sizes = rows.find(pe, CALL)?;
    let dtype = same(CALL, &a, &b)?;
    on_stream(py, pe, stream, |live, s| {
        let sh = live.shmem();
        let sizes = sizes.device::<u32>(sh)?;
        with_gemm_types!(CALL, dtype, c.dtype, In, Out => live
            .ops
            .grouped_gemm_with(s, a.device::<In>(sh)?, b.device::<In>(sh)?, c.device_mut::<Out>(sh)?, shape, rows.group_rows(sizes), options)
            .or_raise())
    })
}

/// The scales of an FP8 GEMM: f32 tensors, per tensor (one each) or block.
fn scales(
    call: &str,
    shmem: &Shmem,
    (sa, sb): (&Sym, &Sym),
    block: bool,
) -> PyResult<Fp8Scales<'static>> {
    sa.expect(call, DType::F32, "a scale")?;
    sb.expect(call, DType::F32, "a scale")?;
    let (a, b) = (sa.device::<f32>(shmem)?, sb.device::<f32>(shmem)?);
    Ok(match block {
        true => Fp8Scales::Block { a, b },
        false => Fp8Scales::Tensor { a, b },
    })
}

/// Python's `split_k`: 0 automatic, 1 none, else that many parts.
fn split(split_k: u32) -> SplitK {
    match split_k {
        0 => SplitK::Auto,
        1 => SplitK::Off,
        p => SplitK::Parts(p),
    }
}

/// `c = (a · bᵀ)` of FP8 operands with their scales (`block`: DeepSeek-V3's 1 x 128 and
/// 128 x 128 block scales; else one per tensor), f32 or bf16 out.
#[pyfunction]
#[pyo3(signature = (pe, a, b, c, m, n, k, scale_a, scale_b, block, split_k=0, stream=None))]
#[allow(clippy::too_many_arguments)]
fn gemm_fp8(
    py: Python<'_>,
    pe: &Pe,
    a: TensorArg,
    b: TensorArg,
    c: TensorArg,
    m: u32,
    n: u32,
    k: u32,
    scale_a: TensorArg,
    scale_b: TensorArg,
    block: bool,
    split_k: u32,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.gemm_fp8";
    let find = |what, t: &TensorArg| Sym::find_local(&pe.core, CALL, what, t);
    let (a, b, c) = (find("a", &a)?, find("b", &b)?, find("out", &c)?);
    let (sa, sb) = (find("scale_a", &scale_a)?, find("scale_b", &scale_b)?);
    let dtype = same(CALL, &a, &b)?;
    let shape = GemmShape::new(m, n, k, BLayout::NK);
    on_stream(py, pe, stream, |live, s| {
        let sh = live.shmem();
        let scales = scales(CALL, sh, (&sa, &sb), block)?;
        with_fp8_types!(CALL, dtype, c.dtype, In, Out => live
            .ops
            .gemm_fp8_with::<In, Out>(s, a.device::<In>(sh)?, b.device::<In>(sh)?, c.device_mut::<Out>(sh)?, shape, scales, split(split_k))
            .or_raise())
    })
}

/// The grouped FP8 GEMM, each group's B with its own scales (`block`: block scales; else one
/// per group's B and one for A).
#[pyfunction]
#[pyo3(signature = (pe, a, b, c, groups, n, k, rows, scale_a, scale_b, block=true, stream=None))]
#[allow(clippy::too_many_arguments)]
fn grouped_gemm_fp8(
    py: Python<'_>,
    pe: &Pe,
    a: TensorArg,
    b: TensorArg,
    c: TensorArg,
    groups: u32,
    n: u32,
    k: u32,
    rows: Rows,
    scale_a: TensorArg,
    scale_b: TensorArg,
    block: bool,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.grouped_gemm_fp8";
    let find = |what, t: &TensorArg| Sym::find_local(&pe.core, CALL, what, t);
    let (a, b, c) = (find("a", &a)?, find("b", &b)?, find("out", &c)?);
    let (sa, sb) = (find("scale_a", &scale_a)?, find("scale_b", &scale_b)?);
    let sizes = rows.find(pe, CALL)?;
    let dtype = same(CALL, &a, &b)?;
    let shape = GroupedShape {
        groups,
        n,
        k,
        b_layout: BLayout::NK,
    };
    on_stream(py, pe, stream, |live, s| {
        let sh = live.shmem();
        let (scales, sizes) = (
            scales(CALL, sh, (&sa, &sb), block)?,
            sizes.device::<u32>(sh)?,
        );
        with_fp8_types!(CALL, dtype, c.dtype, In, Out => live
            .ops
            .grouped_gemm_fp8::<In, Out>(s, a.device::<In>(sh)?, b.device::<In>(sh)?, c.device_mut::<Out>(sh)?, shape, rows.group_rows(sizes), scales)
            .or_raise())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gemm, m)?)?;
    m.add_function(wrap_pyfunction!(grouped_gemm, m)?)?;
    m.add_function(wrap_pyfunction!(gemm_fp8, m)?)?;
    m.add_function(wrap_pyfunction!(grouped_gemm_fp8, m)?)
}
