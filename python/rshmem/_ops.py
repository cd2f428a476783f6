"""rshmem's ops on symmetric tensors, queued on `stream` (torch's current stream on GPUs when
None; the PE's own on the simulator). Sizes come from the tensors; rshmem checks everything
before queueing and raises `ArgumentError` with its message. Every op takes contiguous
tensors on the symmetric heap (views and slices of them included) and the world team."""

from . import _native, _runtime
from ._native import ArgumentError
from ._tensors import numel, tensor_arg


def _call(name):
    return f"rshmem.{name}"


def _shape2(t, what, call):
    shape = tuple(t.shape)
    if len(shape) != 2:
        raise ArgumentError(f"{call}: `{what}` has shape {shape}; a matrix (2-D) is needed")
    return shape


def all_reduce(x, out=None, op="sum", count=None, stream=None):
    """`out = Σ_PEs x` (or max/min); in place in `x` when `out` is None. Returns the result."""
    pe, call = _runtime.current(), _call("all_reduce")
    n = numel(x) if count is None else count
    _native.all_reduce(pe, tensor_arg(x, "x", call), None if out is None else tensor_arg(out, "out", call),
                       n, op, _runtime.stream_handle(pe, stream))
    return x if out is None else out


def reduce_scatter(x, out=None, op="sum", count=None, stream=None):
    """`x` holds `n_pes` chunks of `count`; this PE's `out` gets the reduction of every PE's
    chunk `my_pe` (in place: into that chunk of `x`). Returns the result."""
    pe, call = _runtime.current(), _call("reduce_scatter")
    n = numel(x) // pe.n_pes if count is None else count
    _native.reduce_scatter(pe, tensor_arg(x, "x", call), None if out is None else tensor_arg(out, "out", call),
                           n, op, _runtime.stream_handle(pe, stream))
    if out is None:
        return x.reshape(-1)[pe.my_pe * n:(pe.my_pe + 1) * n]
    return out


def all_gather(x, out=None, count=None, stream=None):
    """PE `r`'s `x` lands at `out[r·count:(r+1)·count]` on every PE; in place (`out` None):
    `x` is the whole buffer, each PE's part already in its chunk. Returns the result."""
    pe, call = _runtime.current(), _call("all_gather")
    if out is None:
        n = numel(x) // pe.n_pes if count is None else count
        _native.all_gather(pe, None, tensor_arg(x, "x", call), n, _runtime.stream_handle(pe, stream))
        return x
    n = numel(x) if count is None else count
    _native.all_gather(pe, tensor_arg(x, "x", call), tensor_arg(out, "out", call), n,
                       _runtime.stream_handle(pe, stream))
    return out


def all_gather_v(x, out, counts, stream=None):
    """All-gather with `counts[r]` elements from PE `r` (the same list everywhere), packed in
    PE order; in place when `x` is None (each PE's part already in `out`). Returns `out`."""
    pe, call = _runtime.current(), _call("all_gather_v")
    _native.all_gather_v(pe, None if x is None else tensor_arg(x, "x", call), tensor_arg(out, "out", call),
                         [int(c) for c in counts], _runtime.stream_handle(pe, stream))
    return out


def all_reduce_rmsnorm(x, residual, weight, out, eps=1e-6, stream=None):
    """`residual += Σ_PEs x`, then `out = residual / rms(residual) · weight` per row of
    `hidden = weight.size` (fused; bf16, f16 or f32). Returns `out`."""
    pe, call = _runtime.current(), _call("all_reduce_rmsnorm")
    hidden = numel(weight)
    if hidden == 0 or numel(x) % hidden:
        raise ArgumentError(f"{call}: `x` has {numel(x)} elements, not whole rows of {hidden} (weight's)")
    _native.all_reduce_rmsnorm(pe, tensor_arg(x, "x", call), tensor_arg(residual, "residual", call),
                               tensor_arg(weight, "weight", call), tensor_arg(out, "out", call),
                               numel(x) // hidden, hidden, float(eps), _runtime.stream_handle(pe, stream))
    return out


def _gemm_shape(a, b, b_layout, call):
    m, k = _shape2(a, "a", call)
    rows, cols = _shape2(b, "b", call)
    n, kb = (rows, cols) if b_layout == "nk" else (cols, rows)
    if kb != k:
        raise ArgumentError(f"{call}: a is {m} x {k} but b ({b_layout}) is {rows} x {cols}: K differs")
    return m, n, k


def gemm(a, b, out, b_layout="nk", kernel="auto", split_k=0, stream=None):
    """`out = a · bᵀ` (`b_layout="nk"`, b n x k) or `a · b` (`"kn"`); bf16/f16 in, f32 or the
    input type out. `split_k`: 0 automatic, 1 off, p parts. Returns `out`."""
    pe, call = _runtime.current(), _call("gemm")
    m, n, k = _gemm_shape(a, b, b_layout, call)
    _native.gemm(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call), tensor_arg(out, "out", call),
                 m, n, k, b_layout, kernel, split_k, _runtime.stream_handle(pe, stream))
    return out


def all_gather_gemm(a, b, out, b_layout="nk", kernel="auto", stream=None):
    """`out = all_gather(a) · b`: `a` is the whole m x k, this PE's rows (its `m / n_pes`)
    filled; the call copies in the others' while the GEMM runs. bf16. Returns `out`."""
    pe, call = _runtime.current(), _call("all_gather_gemm")
    m, n, k = _gemm_shape(a, b, b_layout, call)
    _native.all_gather_gemm(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call),
                            tensor_arg(out, "out", call), m, n, k, b_layout, kernel,
                            _runtime.stream_handle(pe, stream))
    return out


def gemm_reduce_scatter(a, b, out, b_layout="nk", kernel="auto", stream=None):
    """This PE's `m / n_pes` rows of `Σ_PEs a_r · b_r` (K sharded: `a` m x k_shard) into `out`.
    bf16. Returns `out`."""
    pe, call = _runtime.current(), _call("gemm_reduce_scatter")
    m, n, k = _gemm_shape(a, b, b_layout, call)
    _native.gemm_reduce_scatter(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call),
                                tensor_arg(out, "out", call), m, n, k, b_layout, kernel,
                                _runtime.stream_handle(pe, stream))
    return out


def set_algorithm(algorithm):
    """Forces the collectives' algorithm: "auto", "lamport", "one_shot" or "two_shot"."""
    _native.set_algorithm(_runtime.current(), algorithm)


class Graph:
    """Work recorded by `capture`, launched many times; keeps the tensors it uses alive."""

    def __init__(self, native, keep):
        self._native = native
        self._keep = keep

    def launch(self, stream=None):
        """Queues the recorded work (on the stream it was captured on, by default)."""
        pe = _runtime.current()
        self._native.launch(_runtime.stream_handle(pe, stream))

    @property
    def operations(self):
        return self._native.operations()


def capture(fn, stream=None):
    """Records what `fn()` queues on `stream` (torch's current stream on GPUs) into a `Graph`
    (rshmem's `Stream::capture`: CUDA stream capture on GPUs, a recording on the simulator).
    Each op in it must have run once eagerly on that stream before (its workspace and tensor
    maps are made then). Not torch.cuda.graph: see docs/python.md."""
    pe = _runtime.current()
    keep = []
    _runtime._local.capture_keep = keep
    try:
        native = _native.capture(pe, fn, _runtime.stream_handle(pe, stream))
    finally:
        _runtime._local.capture_keep = None
    return Graph(native, keep)
