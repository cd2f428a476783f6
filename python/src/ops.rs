//! rshmem's ops from Python, each `(pe, tensors..., sizes..., stream)`: the tensors found
//! back on the symmetric heap ([`Sym`]), the element type dispatched once per family
//! ([`crate::dtype`]), and the `Ops` call made without the GIL on `stream` (a raw handle:
//! torch's current stream on GPUs; `None`: the PE's own). rshmem checks the arguments before
//! queueing anything; its errors arrive as `ArgumentError`/`RshmemError` with its message.
//! Collectives and fused ops take a team (`crate::team`; `None`: all PEs).

use crate::args::{read, Sym, TensorArg};
use crate::dtype::{with_bits, with_reducible, DType};
use crate::error::{arg, OrRaise};
use crate::gemm::{b_layout, kernel};
use crate::pe::Live;
use crate::profile::{self, Step};
use crate::team::{team_of, PyTeam};
use crate::Pe;
use pyo3::prelude::*;
use rshmem_host::{ReduceOp, Stream};
use rshmem_ops::{Algorithm, FusedOptions, GemmShape};

/// Runs `f` on `pe`'s live ops and `stream`, without the GIL.
pub fn on_stream<R: Send>(
    py: Python<'_>,
    pe: &Pe,
    stream: Option<u64>,
    f: impl FnOnce(&Live, &Stream<'static>) -> PyResult<R> + Send,
) -> PyResult<R> {
    let core = &pe.core;
    let released = profile::mark();
    let (out, done) = py.detach(|| {
        let start = released.end(Step::ReleaseGil);
        core.with_live(|live| {
            let stream = live.stream(stream)?;
            let start = start.end(Step::Stream);
            let out = f(live, &stream);
            Ok((out, start.end(Step::Op)))
        })
    })?;
    done.end(Step::TakeGil);
    out
}

fn reduce_op(call: &str, op: &str) -> PyResult<ReduceOp> {
    match op {
        "sum" => Ok(ReduceOp::Sum),
        "max" => Ok(ReduceOp::Max),
        "min" => Ok(ReduceOp::Min),
        other => Err(arg(format!(
            "{call}: op {other:?}: rshmem's collectives reduce with \"sum\", \"max\" or \"min\""
        ))),
    }
}

/// The element type both of `a` and `b` have, or an error naming them.
pub(crate) fn same(call: &str, a: &Sym, b: &Sym) -> PyResult<DType> {
    b.expect(
        call,
        a.dtype,
        "this op, whose other tensor is of that type,",
    )?;
    Ok(a.dtype)
}

/// A reduction over the world, `src` into `dst` or in place in `src` (`dst=None`): the
/// pyfunction `$name` calls `Ops::$out_of_place` or `Ops::$in_place` on bf16, f16, f32, i32 or
/// i64.
macro_rules! reduction {
    ($(#[$doc:meta])* $name:ident, $in_place:ident, $out_of_place:ident, per_member: $per:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (pe, src, dst, count, op, team=None, stream=None))]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            pe: &Pe,
            src: Bound<'_, PyAny>,
            dst: Option<Bound<'_, PyAny>>,
            count: Option<usize>,
            op: &str,
            team: Option<&PyTeam>,
            stream: Option<u64>,
        ) -> PyResult<()> {
            let start = profile::mark();
            const CALL: &str = concat!("rshmem.", stringify!($name));
            let op = reduce_op(CALL, op)?;
            let members = team.map_or(pe.core.npes, |t| t.n_pes);
            let team = team_of(&pe.core, team)?;
            let src = Sym::find(&pe.core, CALL, "x", &read(&src, "x", CALL)?)?;
            let dst = dst
                .map(|d| Sym::find(&pe.core, CALL, "out", &read(&d, "out", CALL)?))
                .transpose()?;
            // Count omitted: all of `x` (per member of the team where `x` holds a chunk each).
            let count = count.unwrap_or(src.bytes / src.dtype.size() / if $per { members } else { 1 });
            start.end(Step::Args);
            on_stream(py, pe, stream, |live, s| match &dst {
                None => with_reducible!(CALL, src.dtype, T => live
                    .ops
                    .$in_place(s, team, src.range_mut::<T>()?, count, op)
                    .or_raise()),
                Some(dst) => {
                    let dtype = same(CALL, &src, dst)?;
                    with_reducible!(CALL, dtype, T => live
                        .ops
                        .$out_of_place(s, team, src.range::<T>()?, dst.range_mut::<T>()?, count, op)
                        .or_raise())
                }
            })
        }
    };
}

reduction!(
    /// `dst = reduce(src)` over the world (`dst=None`: in place in `src`).
    all_reduce,
    all_reduce_in_place,
    all_reduce,
    per_member: false
);
reduction!(
    /// Reduce-scatter: `src` holds `n_pes × count`; this PE's `dst[0..count]` gets its chunk
    /// of the reduction (`dst=None`: in place, into this PE's own chunk of `src`).
    reduce_scatter,
    reduce_scatter_in_place,
    reduce_scatter,
    per_member: true
);

/// An all-gather over the world, any element type (moved as bits), `src` into `dst` or in
/// place (`src=None`: each member's part already in `dst`): the pyfunction `$name` calls
/// `Ops::$out_of_place` or `Ops::$in_place` with its size argument `$size` (passed as `$pass`).
macro_rules! gather {
    ($(#[$doc:meta])* $name:ident, $in_place:ident, $out_of_place:ident, $size:ident: $sty:ty => $pass:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (pe, src, dst, $size, team=None, stream=None))]
        fn $name(
            py: Python<'_>,
            pe: &Pe,
            src: Option<TensorArg>,
            dst: TensorArg,
            $size: $sty,
            team: Option<&PyTeam>,
            stream: Option<u64>,
        ) -> PyResult<()> {
            const CALL: &str = concat!("rshmem.", stringify!($name));
            let team = team_of(&pe.core, team)?;
            let src = src.map(|t| Sym::find(&pe.core, CALL, "src", &t)).transpose()?;
            let dst = Sym::find(&pe.core, CALL, "out", &dst)?;
            on_stream(py, pe, stream, |live, s| match &src {
                None => with_bits!(dst.dtype, T => live
                    .ops
                    .$in_place(s, team, dst.range_mut::<T>()?, $pass)
                    .or_raise()),
                Some(src) => {
                    let dtype = same(CALL, src, &dst)?;
                    with_bits!(dtype, T => live
                        .ops
                        .$out_of_place(s, team, src.range::<T>()?, dst.range_mut::<T>()?, $pass)
                        .or_raise())
                }
            })
        }
    };
}

gather!(
    /// All-gather: member `r`'s `src[0..count]` lands at `dst[r·count..]`.
    all_gather,
    all_gather_in_place,
    all_gather,
    count: usize => count
);
gather!(
    /// All-gather with a count per member (`counts`, the same list on every member).
    all_gather_v,
    all_gather_v_in_place,
    all_gather_v,
    counts: Vec<usize> => &counts
);

/// All-reduce of `x` + residual add + RMSNorm into `out` (bf16, f16 or f32).
#[pyfunction]
#[pyo3(signature = (pe, x, residual, weight, out, rows, hidden, eps, team=None, stream=None))]
#[allow(clippy::too_many_arguments)]
fn all_reduce_rmsnorm(
    py: Python<'_>,
    pe: &Pe,
    x: TensorArg,
    residual: TensorArg,
    weight: TensorArg,
    out: TensorArg,
    rows: usize,
    hidden: usize,
    eps: f32,
    team: Option<&PyTeam>,
    stream: Option<u64>,
) -> PyResult<()> {
    const CALL: &str = "rshmem.all_reduce_rmsnorm";
    let team = team_of(&pe.core, team)?;
    let find = |what, t: &TensorArg| Sym::find(&pe.core, CALL, what, t);
    let (x, residual, weight, out) = (
        find("x", &x)?,
        find("residual", &residual)?,
        find("weight", &weight)?,
        find("out", &out)?,
    );
    for t in [&residual, &weight, &out] {
        same(CALL, &x, t)?;
    }
    let dtype = x.dtype;
    on_stream(py, pe, stream, |live, s| {
        macro_rules! call {
            ($t:ty) => {
                live.ops
                    .all_reduce_rmsnorm(
                        s,
                        team,
                        x.range::<$t>()?,
                        residual.range_mut::<$t>()?,
                        weight.range::<$t>()?,
                        out.range_mut::<$t>()?,
                        rows,
                        hidden,
                        eps,
                    )
                    .or_raise()
            };
        }
        match dtype {
            DType::Bf16 => call!(rshmem_device::bf16),
            DType::F16 => call!(rshmem_device::f16),
            DType::F32 => call!(f32),
            other => Err(arg(format!(
                "{CALL}: tensors of {}: the fused RMSNorm takes bf16, f16 or f32",
                other.name()
            ))),
        }
    })
}

/// The fused tensor-parallel ops' shared shape: bf16 tensors, the shape and options.
fn fused_args(
    pe: &Pe,
    call: &'static str,
    tensors: [&TensorArg; 3],
    (m, n, k, layout, kern): (u32, u32, u32, &str, &str),
    team: Option<&PyTeam>,
) -> PyResult<([Sym; 3], GemmShape, FusedOptions)> {
    let names = ["a", "b", "out"];
    let mut found = Vec::with_capacity(3);
    for (what, t) in names.into_iter().zip(tensors) {
        let sym = Sym::find(&pe.core, call, what, t)?;
        sym.expect(call, DType::Bf16, "the fused tensor-parallel ops")?;
        found.push(sym);
    }
    let shape = GemmShape::new(m, n, k, b_layout(call, layout)?);
    let options = FusedOptions {
        team: team_of(&pe.core, team)?,
        kernel: kernel(call, kern)?,
        ..FusedOptions::default()
    };
    let [a, b, c]: [Sym; 3] = found.try_into().ok().expect("three tensors");
    Ok(([a, b, c], shape, options))
}

/// The fused GEMMs' entry points: the same arguments, A mutable where the call gathers into it.
macro_rules! fused_gemm {
    ($($(#[$doc:meta])* $name:ident => $method:ident, a: $a_range:ident;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (pe, a, b, c, m, n, k, b_layout="nk", kernel="auto", team=None, stream=None))]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            pe: &Pe,
            a: TensorArg,
            b: TensorArg,
            c: TensorArg,
            m: u32,
            n: u32,
            k: u32,
            b_layout: &str,
            kernel: &str,
            team: Option<&PyTeam>,
            stream: Option<u64>,
        ) -> PyResult<()> {
            const CALL: &str = concat!("rshmem.", stringify!($name));
            let ([a, b, c], shape, options) =
                fused_args(pe, CALL, [&a, &b, &c], (m, n, k, b_layout, kernel), team)?;
            on_stream(py, pe, stream, |live, s| {
                use rshmem_device::bf16;
                live.ops
                    .$method(
                        s,
                        a.$a_range::<bf16>()?,
                        b.range::<bf16>()?,
                        c.range_mut::<bf16>()?,
                        shape,
                        options,
                    )
                    .or_raise()
            })
        }
    )*};
}

fused_gemm! {
    /// `c = all_gather(a) · b`: `a` (m x k) sharded by rows, this PE's rows filled.
    all_gather_gemm => all_gather_gemm_with, a: range_mut;
    /// This PE's rows of `Σ_ranks a_r · b_r` (K sharded): `c` is `m / n_pes x n`.
    gemm_reduce_scatter => gemm_reduce_scatter_with, a: range;
}

/// Makes `stream`'s collective workspace now (collective over every PE): needed before the
/// first collective on a stream that is over a team not holding every PE.
#[pyfunction]
#[pyo3(signature = (pe, stream=None))]
fn prepare_collectives(py: Python<'_>, pe: &Pe, stream: Option<u64>) -> PyResult<()> {
    on_stream(py, pe, stream, |live, s| {
        live.ops.prepare_collectives(s).or_raise()
    })
}

/// Forces a collective algorithm (`"auto"`, `"lamport"`, `"one_shot"`, `"two_shot"`).
#[pyfunction]
fn set_algorithm(pe: &Pe, algorithm: &str) -> PyResult<()> {
    let algorithm = match algorithm {
        "auto" => Algorithm::Auto,
        "lamport" => Algorithm::Lamport,
        "one_shot" => Algorithm::OneShot,
        "two_shot" => Algorithm::TwoShot,
        other => {
            return Err(arg(format!(
            "rshmem.set_algorithm: {other:?}: \"auto\", \"lamport\", \"one_shot\" or \"two_shot\""
        )))
        }
    };
    pe.core.with_live(|live| {
        live.ops.set_algorithm(algorithm);
        Ok(())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(all_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(reduce_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(all_gather, m)?)?;
    m.add_function(wrap_pyfunction!(all_gather_v, m)?)?;
    m.add_function(wrap_pyfunction!(all_reduce_rmsnorm, m)?)?;
    m.add_function(wrap_pyfunction!(all_gather_gemm, m)?)?;
    m.add_function(wrap_pyfunction!(gemm_reduce_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(prepare_collectives, m)?)?;
    m.add_function(wrap_pyfunction!(set_algorithm, m)?)
}
