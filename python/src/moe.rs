//! rshmem's mixture-of-experts ops from Python: the buffers of a layer (`moe_buffers`: normal
//! mode or low latency; `moe_layer_buffers`: the fused layer's), whose receive buffers the
//! Python layer shows as tensors (zero-copy, accepted by every op like any symmetric tensor),
//! the calls on them (dispatch and combine; the fused layer with its bound weights,
//! `moe_layer_weights`), over all PEs or a team.

use crate::args::{Sym, TensorArg};
use crate::dtype::DType;
use crate::error::{arg, OrRaise};
use crate::ops::on_stream;
use crate::pe::{extend, PeCore, Region};
use crate::team::{team_of, PyTeam};
use crate::Pe;
use pyo3::prelude::*;
use rshmem_device::bf16;
use rshmem_host::{Pod, SymBuffer, SymRange, SymRangeMut};
use rshmem_ops::{
    MoeBuffers, MoeConfig, MoeLayerBuffers, MoeLayerConfig, MoeLayerWeights, MoeLayout,
    MoeLlBuffers, MoePayload,
};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A layer's buffers, of either mode, or the fused layer's.
enum Buffers {
    Normal(MoeBuffers<'static>),
    LowLatency(MoeLlBuffers<'static>),
    Layer(MoeLayerBuffers<'static>),
}

impl Buffers {
    /// What these buffers are and which calls take them (for the error of a call that does
    /// not).
    fn kind(&self) -> &'static str {
        match self {
            Buffers::Normal(_) => {
                "these are normal-mode buffers: use rshmem.moe_dispatch and rshmem.moe_combine"
            }
            Buffers::LowLatency(_) => {
                "these are low-latency buffers: use rshmem.moe_ll_dispatch and \
                 rshmem.moe_ll_combine"
            }
            Buffers::Layer(_) => "these are the fused layer's buffers: use rshmem.moe_layer",
        }
    }
}

/// The buffers with the PE they borrow (counted while alive).
struct Inner {
    /// Always `Some` until dropped (taken then, to free under the PE's state).
    bufs: Mutex<Option<Buffers>>,
    core: Arc<PeCore>,
}

impl Inner {
    fn lock(&self) -> MappedGuard<'_> {
        MappedGuard(self.bufs.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The locked buffers.
struct MappedGuard<'a>(MutexGuard<'a, Option<Buffers>>);

impl std::ops::Deref for MappedGuard<'_> {
    type Target = Buffers;
    fn deref(&self) -> &Buffers {
        self.0.as_ref().expect("MoE buffers alive")
    }
}

impl std::ops::DerefMut for MappedGuard<'_> {
    fn deref_mut(&mut self) -> &mut Buffers {
        self.0.as_mut().expect("MoE buffers alive")
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.core.end_object(&mut self.bufs);
    }
}

/// Which receive buffer a tensor shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recv {
    X,
    XFp8,
    Scales,
    Src,
    Weights,
    Count,
    /// The fused layer's SwiGLU output.
    Act,
    /// The fused layer's rows back from the experts.
    Combine,
}

/// One receive buffer as symmetric memory the ops accept (read-only: the dispatch writes it).
struct RecvRegion {
    inner: Arc<Inner>,
    which: Recv,
}

/// The whole of `buf` as bytes, with `dtype`.
fn whole<T: Pod>(buf: &SymBuffer<'_, T>, dtype: DType) -> PyResult<(SymRange<'static, u8>, DType)> {
    let bytes = SymRange::from(buf).cast::<u8>().or_raise()?;
    // SAFETY: the caller holds the region (so the buffers) while it uses the range.
    Ok((unsafe { extend(bytes) }, dtype))
}

impl RecvRegion {
    /// The buffer's bytes and element type: the one table of which buffer is which.
    fn whole(&self) -> PyResult<(SymRange<'static, u8>, DType)> {
        let bufs = self.inner.lock();
        match (&*bufs, self.which) {
            (Buffers::Normal(b), Recv::X) => whole(b.recv_x().or_raise()?, DType::Bf16),
            (Buffers::Normal(b), Recv::XFp8) => whole(b.recv_x_fp8().or_raise()?.0, DType::Fp8E4m3),
            (Buffers::Normal(b), Recv::Scales) => whole(b.recv_x_fp8().or_raise()?.1, DType::F32),
            (Buffers::Normal(b), Recv::Src) => whole(b.recv_src(), DType::U32),
            (Buffers::Normal(b), Recv::Weights) => whole(b.recv_weights(), DType::F32),
            (Buffers::LowLatency(b), Recv::X) => whole(b.recv_x().or_raise()?, DType::Bf16),
            (Buffers::LowLatency(b), Recv::Src) => whole(b.recv_src(), DType::U32),
            (Buffers::LowLatency(b), Recv::Count) => whole(b.recv_count(), DType::U32),
            (Buffers::Layer(b), Recv::X) => whole(b.recv_x(), DType::Bf16),
            (Buffers::Layer(b), Recv::Src) => whole(b.recv_src(), DType::U32),
            (Buffers::Layer(b), Recv::Count) => whole(b.recv_count(), DType::U32),
            (Buffers::Layer(b), Recv::Act) => whole(b.activations(), DType::Bf16),
            (Buffers::Layer(b), Recv::Combine) => whole(b.combine_rows(), DType::Bf16),
            (_, which) => Err(arg(format!("these MoE buffers have no {which:?} buffer"))),
        }
    }

    /// `(address, bytes, dtype)` of the buffer.
    fn describe(&self) -> PyResult<(u64, usize, DType)> {
        let (bytes, dtype) = self.whole()?;
        Ok((bytes.as_ptr() as u64, bytes.len(), dtype))
    }
}

impl Region for RecvRegion {
    fn bytes(&self, at: usize, len: usize) -> PyResult<SymRange<'static, u8>> {
        let (bytes, _) = self.whole()?;
        // SAFETY: as in `whole`.
        Ok(unsafe { extend(bytes.range(at..at + len).or_raise()?) })
    }

    fn bytes_mut(&self, _at: usize, _len: usize) -> PyResult<SymRangeMut<'static, u8>> {
        Err(arg(format!(
            "the MoE receive buffer {:?} is written by the dispatch only: pass it where an op \
             reads (a GEMM's A), or copy it into a tensor of your own",
            self.which
        )))
    }
}

/// A layer's MoE buffers (`rshmem.moe_buffers`, `moe_layer_buffers`).
#[pyclass(module = "rshmem._native", frozen)]
pub struct MoeBufs {
    inner: Arc<Inner>,
    /// The receive buffers registered as symmetric regions (alive as long as this object).
    regions: Vec<Arc<RecvRegion>>,
    low_latency: bool,
}

impl MoeBufs {
    fn new(core: &Arc<PeCore>, bufs: Buffers) -> PyResult<MoeBufs> {
        core.retain();
        let low_latency = matches!(bufs, Buffers::LowLatency(_));
        let inner = Arc::new(Inner {
            bufs: Mutex::new(Some(bufs)),
            core: core.clone(),
        });
        let which: &[Recv] = match &*inner.lock() {
            Buffers::LowLatency(_) => &[Recv::X, Recv::Src, Recv::Count],
            Buffers::Normal(b) if b.config().payload == MoePayload::Fp8E4m3 => {
                &[Recv::XFp8, Recv::Scales, Recv::Src, Recv::Weights]
            }
            Buffers::Normal(_) => &[Recv::X, Recv::Src, Recv::Weights],
            Buffers::Layer(_) => &[Recv::X, Recv::Src, Recv::Count, Recv::Act, Recv::Combine],
        };
        let mut regions = Vec::new();
        for &w in which {
            let region = Arc::new(RecvRegion {
                inner: inner.clone(),
                which: w,
            });
            let (addr, bytes, _) = region.describe()?;
            let weak: Weak<dyn Region> = Arc::downgrade(&region) as Weak<dyn Region>;
            core.register(addr, bytes, weak);
            regions.push(region);
        }
        Ok(MoeBufs {
            inner,
            regions,
            low_latency,
        })
    }
}

impl Drop for MoeBufs {
    fn drop(&mut self) {
        for region in &self.regions {
            if let Ok((addr, _, _)) = region.describe() {
                self.inner.core.unregister(addr);
            }
        }
    }
}

#[pymethods]
impl MoeBufs {
    /// `{name: (address, bytes, dtype)}` of the receive buffers (`x` or `x_fp8` and
    /// `x_scales`, `src`, `weights`; low latency: `x`, `src`, `count`; the fused layer's: `x`,
    /// `src`, `count`, `activations`, `combine_rows`).
    fn recv(&self) -> PyResult<Vec<(String, u64, usize, String)>> {
        self.regions
            .iter()
            .map(|r| {
                let (addr, bytes, dtype) = r.describe()?;
                let name = match r.which {
                    Recv::X => "x",
                    Recv::XFp8 => "x_fp8",
                    Recv::Scales => "x_scales",
                    Recv::Src => "src",
                    Recv::Weights => "weights",
                    Recv::Count => "count",
                    Recv::Act => "activations",
                    Recv::Combine => "combine_rows",
                };
                Ok((name.to_string(), addr, bytes, dtype.name().to_string()))
            })
            .collect()
    }

    /// Rows each expert can receive (normal mode: all experts' rows in all).
    fn capacity(&self) -> usize {
        match &*self.inner.lock() {
            Buffers::Normal(b) => b.capacity(),
            Buffers::LowLatency(b) => b.rows_per_expert(),
            Buffers::Layer(b) => b.rows_per_expert(),
        }
    }

    /// The first `topk_idx` entry of the latest call that was skipped, as `(token, entry)`
    /// (low latency and the fused layer; waits for the PE's work).
    fn skipped_entry(&self, py: Python<'_>) -> PyResult<Option<(u32, u32)>> {
        let inner = self.inner.clone();
        py.detach(|| {
            inner.core.with_live(|_| match &*inner.lock() {
                Buffers::LowLatency(b) => b.skipped_entry().or_raise(),
                Buffers::Layer(b) => b.skipped_entry().or_raise(),
                Buffers::Normal(_) => Err(arg(
                    "skipped_entry: normal-mode buffers check every entry on the host (the \
                     dispatch refuses bad ones)",
                )),
            })
        })
    }

    /// Whether this PE's down GEMM puts its output rows for `rank` (the fused layer's).
    fn puts_to(&self, rank: u32) -> PyResult<bool> {
        match &*self.inner.lock() {
            Buffers::Layer(b) => Ok(b.puts_to(rank)),
            _ => Err(arg("puts_to: only the fused layer's buffers have it")),
        }
    }

    /// Whether these are low-latency buffers.
    #[getter]
    fn low_latency(&self) -> bool {
        self.low_latency
    }

    /// Bytes of symmetric memory they take.
    fn nbytes(&self) -> usize {
        match &*self.inner.lock() {
            Buffers::Normal(b) => b.bytes(),
            Buffers::LowLatency(b) => b.bytes(),
            Buffers::Layer(b) => b.bytes(),
        }
    }
}

/// What a normal-mode dispatch left: pass it to the combine.
#[pyclass(module = "rshmem._native", frozen, get_all)]
pub struct Layout {
    epoch: u64,
    tokens: u32,
    tokens_received: u32,
    expert_offsets: Vec<u32>,
    expert_rows: Vec<u32>,
    rows: u32,
}

impl Layout {
    fn to_rust(&self) -> MoeLayout {
        MoeLayout {
            epoch: self.epoch,
            tokens: self.tokens,
            tokens_received: self.tokens_received,
            expert_offsets: self.expert_offsets.clone(),
            expert_rows: self.expert_rows.clone(),
            rows: self.rows,
        }
    }
}

fn config(
    experts: u32,
    top_k: u32,
    hidden: u32,
    max_tokens: u32,
    align: u32,
    fp8: bool,
) -> MoeConfig {
    MoeConfig {
        experts,
        top_k,
        hidden,
        max_tokens,
        align,
        payload: if fp8 {
            MoePayload::Fp8E4m3
        } else {
            MoePayload::Bf16
        },
    }
}

/// The buffers of an MoE layer (collective).
#[pyfunction]
#[pyo3(signature = (pe, experts, top_k, hidden, max_tokens, align=1, fp8=false, low_latency=false, team=None))]
#[allow(clippy::too_many_arguments)]
fn moe_buffers(
    py: Python<'_>,
    pe: &Pe,
    experts: u32,
    top_k: u32,
    hidden: u32,
    max_tokens: u32,
    align: u32,
    fp8: bool,
    low_latency: bool,
    team: Option<&PyTeam>,
) -> PyResult<MoeBufs> {
    let cfg = config(experts, top_k, hidden, max_tokens, align, fp8);
    let core = pe.core.clone();
    let team = team_of(&core, team)?;
    let bufs = py.detach(|| {
        core.with_live(|live| {
            Ok(if low_latency {
                Buffers::LowLatency(live.ops.moe_ll_buffers(team, cfg).or_raise()?)
            } else {
                Buffers::Normal(live.ops.moe_buffers(team, cfg).or_raise()?)
            })
        })
    })?;
    MoeBufs::new(&pe.core, bufs)
}

/// Normal-mode dispatch (waits for the layout); `x_scales` given: FP8 rows.
#[pyfunction]
#[pyo3(signature = (pe, bufs, x, topk_idx, topk_weights, tokens, x_scales=None, stream=None))]
#[allow(clippy::too_many_arguments)]
fn moe_dispatch(
    py: Python<'_>,
    pe: &Pe,
    bufs: &MoeBufs,
    x: TensorArg,
    topk_idx: TensorArg,
    topk_weights: TensorArg,
    tokens: u32,
    x_scales: Option<TensorArg>,
    stream: Option<u64>,
) -> PyResult<Layout> {
    const CALL: &str = "rshmem.moe_dispatch";
    let find = |t, dtype, why| Sym::find_as(&pe.core, CALL, t, dtype, why);
    let x = Sym::find(&pe.core, CALL, "x", &x)?;
    let idx = find(("topk_idx", &topk_idx), DType::I32, "topk_idx")?;
    let w = find(("topk_weights", &topk_weights), DType::F32, "topk_weights")?;
    let scales = x_scales
        .as_ref()
        .map(|t| find(("x_scales", t), DType::F32, "x_scales"))
        .transpose()?;
    let inner = bufs.inner.clone();
    let layout = on_stream(py, pe, stream, |live, s| {
        // The ranges first: one may be a receive buffer, whose lookup locks the buffers too.
        let (idx, w) = (idx.range::<i32>()?, w.range::<f32>()?);
        let rows = match &scales {
            None => (x.range::<bf16>()?.cast::<u8>().or_raise()?, None),
            Some(sc) => (x.range::<u8>()?, Some(sc.range::<f32>()?)),
        };
        let mut guard = inner.lock();
        let Buffers::Normal(b) = &mut *guard else {
            return Err(arg(format!("{CALL}: {}", guard.kind())));
        };
        match rows {
            (x, None) => live
                .ops
                .moe_dispatch(s, b, x.cast::<bf16>().or_raise()?, idx, w, tokens)
                .or_raise(),
            (x, Some(sc)) => live
                .ops
                .moe_dispatch_fp8(s, b, x, sc, idx, w, tokens)
                .or_raise(),
        }
    })?;
    Ok(Layout {
        epoch: layout.epoch,
        tokens: layout.tokens,
        tokens_received: layout.tokens_received,
        expert_offsets: layout.expert_offsets,
        expert_rows: layout.expert_rows,
        rows: layout.rows,
    })
}

/// Normal-mode combine of `layout`'s rows (`expert_out`, row for row) into `out`.
#[pyfunction]
#[pyo3(signature = (pe, bufs, layout, expert_out, out, stream=None))]
fn moe_combine(
    py: Python<'_>,
    pe: &Pe,
    bufs: &MoeBufs,
    layout: &Layout,
    expert_out: TensorArg,
    out: TensorArg,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.moe_combine";
    let find = |t| Sym::find_as(&pe.core, CALL, t, DType::Bf16, "the combine");
    let (e, o) = (find(("expert_out", &expert_out))?, find(("out", &out))?);
    let (inner, layout) = (bufs.inner.clone(), layout.to_rust());
    on_stream(py, pe, stream, |live, s| {
        let (e, o) = (e.range::<bf16>()?, o.range_mut::<bf16>()?);
        let mut guard = inner.lock();
        let Buffers::Normal(b) = &mut *guard else {
            return Err(arg(format!("{CALL}: {}", guard.kind())));
        };
        live.ops.moe_combine(s, b, &layout, e, o).or_raise()
    })
}

/// Low-latency dispatch (kernels only, no host wait).
#[pyfunction]
#[pyo3(signature = (pe, bufs, x, topk_idx, tokens, stream=None))]
fn moe_ll_dispatch(
    py: Python<'_>,
    pe: &Pe,
    bufs: &MoeBufs,
    x: TensorArg,
    topk_idx: TensorArg,
    tokens: u32,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.moe_ll_dispatch";
    let x = Sym::find_as(&pe.core, CALL, ("x", &x), DType::Bf16, "the dispatch")?;
    let idx = Sym::find_as(
        &pe.core,
        CALL,
        ("topk_idx", &topk_idx),
        DType::I32,
        "topk_idx",
    )?;
    let inner = bufs.inner.clone();
    on_stream(py, pe, stream, |live, s| {
        let (x, idx) = (x.range::<bf16>()?, idx.range::<i32>()?);
        let mut guard = inner.lock();
        let Buffers::LowLatency(b) = &mut *guard else {
            return Err(arg(format!("{CALL}: {}", guard.kind())));
        };
        live.ops.moe_ll_dispatch(s, b, x, idx, tokens).or_raise()
    })
}

/// The tensors of a call that sums weighted rows: its rows (`rows`: name, tensor) and `out`,
/// bf16, and the routing (`topk_idx` i32, `topk_weights` f32), found and their types checked
/// (`call`: the call's name and what needs the bf16).
fn weighted(
    pe: &Pe,
    (call, why): (&str, &str),
    rows: (&'static str, &TensorArg),
    topk_idx: &TensorArg,
    topk_weights: &TensorArg,
    out: &TensorArg,
) -> PyResult<(Sym, Sym, Sym, Sym)> {
    let find = |t, dtype, why| Sym::find_as(&pe.core, call, t, dtype, why);
    Ok((
        find(rows, DType::Bf16, why)?,
        find(("topk_idx", topk_idx), DType::I32, "topk_idx")?,
        find(("topk_weights", topk_weights), DType::F32, "topk_weights")?,
        find(("out", out), DType::Bf16, why)?,
    ))
}

/// Low-latency combine into `out`.
#[pyfunction]
#[pyo3(signature = (pe, bufs, expert_out, topk_idx, topk_weights, out, stream=None))]
#[allow(clippy::too_many_arguments)]
fn moe_ll_combine(
    py: Python<'_>,
    pe: &Pe,
    bufs: &MoeBufs,
    expert_out: TensorArg,
    topk_idx: TensorArg,
    topk_weights: TensorArg,
    out: TensorArg,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.moe_ll_combine";
    let rows = ("expert_out", &expert_out);
    let (e, idx, w, o) = weighted(
        pe,
        (CALL, "the combine"),
        rows,
        &topk_idx,
        &topk_weights,
        &out,
    )?;
    let inner = bufs.inner.clone();
    on_stream(py, pe, stream, |live, s| {
        let (e, idx) = (e.range::<bf16>()?, idx.range::<i32>()?);
        let (w, o) = (w.range::<f32>()?, o.range_mut::<bf16>()?);
        let mut guard = inner.lock();
        let Buffers::LowLatency(b) = &mut *guard else {
            return Err(arg(format!("{CALL}: {}", guard.kind())));
        };
        live.ops.moe_ll_combine(s, b, e, idx, w, o).or_raise()
    })
}

/// The buffers of a fused MoE layer (collective over the team).
#[pyfunction]
#[pyo3(signature = (pe, experts, top_k, hidden, intermediate, max_tokens, team=None))]
#[allow(clippy::too_many_arguments)]
fn moe_layer_buffers(
    py: Python<'_>,
    pe: &Pe,
    experts: u32,
    top_k: u32,
    hidden: u32,
    intermediate: u32,
    max_tokens: u32,
    team: Option<&PyTeam>,
) -> PyResult<MoeBufs> {
    let cfg = MoeLayerConfig {
        experts,
        top_k,
        hidden,
        intermediate,
        max_tokens,
    };
    let core = pe.core.clone();
    let team = team_of(&core, team)?;
    let bufs =
        py.detach(|| core.with_live(|live| live.ops.moe_layer_buffers(team, cfg).or_raise()))?;
    MoeBufs::new(&pe.core, Buffers::Layer(bufs))
}

/// One layer's expert weights bound to fused-layer buffers (their tensor maps); keeps the
/// weights' memory alive.
#[pyclass(module = "rshmem._native", frozen)]
pub struct MoeLayerW {
    /// Always `Some` until dropped (taken then, to free under the PE's state).
    weights: Mutex<Option<MoeLayerWeights<'static, 'static>>>,
    /// The weights' memory, held while the maps describe it.
    _memory: (Sym, Sym),
    core: Arc<PeCore>,
}

impl Drop for MoeLayerW {
    fn drop(&mut self) {
        self.core.end_object(&mut self.weights);
    }
}

/// Binds `gate_up` (local × 2·intermediate × hidden, gate and up rows interleaved by pairs)
/// and `down` (local × hidden × intermediate) to `bufs` (collective: the maps' allocation).
#[pyfunction]
fn moe_layer_weights(
    py: Python<'_>,
    pe: &Pe,
    bufs: &MoeBufs,
    gate_up: TensorArg,
    down: TensorArg,
) -> PyResult<MoeLayerW> {
    const CALL: &str = "rshmem.moe_layer_weights";
    let find = |t| Sym::find_as(&pe.core, CALL, t, DType::Bf16, "the fused layer");
    let (gate_up, down) = (find(("gate_up", &gate_up))?, find(("down", &down))?);
    let inner = bufs.inner.clone();
    let weights = py.detach(|| {
        pe.core.with_live(|live| {
            let (w1, w2) = (gate_up.range::<bf16>()?, down.range::<bf16>()?);
            let guard = inner.lock();
            let Buffers::Layer(b) = &*guard else {
                return Err(arg(format!("{CALL}: {}", guard.kind())));
            };
            live.ops.moe_layer_weights(b, w1, w2).or_raise()
        })
    })?;
    pe.core.retain();
    Ok(MoeLayerW {
        weights: Mutex::new(Some(weights)),
        _memory: (gate_up, down),
        core: pe.core.clone(),
    })
}

/// The fused MoE layer on this PE's `tokens` tokens into `out` (kernels only).
#[pyfunction]
#[pyo3(signature = (pe, bufs, weights, x, topk_idx, topk_weights, out, tokens, stream=None))]
#[allow(clippy::too_many_arguments)]
fn moe_layer(
    py: Python<'_>,
    pe: &Pe,
    bufs: &MoeBufs,
    weights: &MoeLayerW,
    x: TensorArg,
    topk_idx: TensorArg,
    topk_weights: TensorArg,
    out: TensorArg,
    tokens: u32,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.moe_layer";
    let (x, idx, w, o) = weighted(
        pe,
        (CALL, "the layer"),
        ("x", &x),
        &topk_idx,
        &topk_weights,
        &out,
    )?;
    let inner = bufs.inner.clone();
    on_stream(py, pe, stream, |live, s| {
        let (x, idx) = (x.range::<bf16>()?, idx.range::<i32>()?);
        let (w, o) = (w.range::<f32>()?, o.range_mut::<bf16>()?);
        let bound = weights.weights.lock().unwrap_or_else(|p| p.into_inner());
        let bound = bound.as_ref().expect("weights alive");
        let mut guard = inner.lock();
        let Buffers::Layer(b) = &mut *guard else {
            return Err(arg(format!("{CALL}: {}", guard.kind())));
        };
        live.ops
            .moe_layer(s, b, bound, x, idx, w, o, tokens)
            .or_raise()
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MoeLayerW>()?;
    m.add_function(wrap_pyfunction!(moe_layer_buffers, m)?)?;
    m.add_function(wrap_pyfunction!(moe_layer_weights, m)?)?;
    m.add_function(wrap_pyfunction!(moe_layer, m)?)?;
    m.add_class::<MoeBufs>()?;
    m.add_class::<Layout>()?;
    m.add_function(wrap_pyfunction!(moe_buffers, m)?)?;
    m.add_function(wrap_pyfunction!(moe_dispatch, m)?)?;
    m.add_function(wrap_pyfunction!(moe_combine, m)?)?;
    m.add_function(wrap_pyfunction!(moe_ll_dispatch, m)?)?;
    m.add_function(wrap_pyfunction!(moe_ll_combine, m)?)
}
