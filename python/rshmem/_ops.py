"""rshmem's collectives and fused tensor-parallel ops on symmetric tensors, queued on `stream`
(torch's current stream on GPUs when None; the PE's own on the simulator), over all PEs or
`team` (from `rshmem.team_split_strided` / `team_split_2d`). Sizes come from the tensors;
rshmem checks everything before queueing and raises `ArgumentError` with its message. Every op
takes contiguous tensors on the symmetric heap (views and slices of them included); the GEMMs
are in `_gemm`."""

from . import _native, _runtime, _tensors
from ._native import ArgumentError
from ._gemm import gemm_shape
from ._tensors import numel, tensor_arg


def _call(name):
    return f"rshmem.{name}"


def _size(pe, team):
    """`(my_pe, n_pes)` in `team` (all PEs for None)."""
    return (pe.my_pe, pe.n_pes) if team is None else (team.my_pe, team.n_pes)


def all_reduce(x, out=None, op="sum", count=None, team=None, stream=None):
    """`out = Σ_PEs x` (or max/min) over `team`'s PEs; in place in `x` when `out` is None.
    Returns the result."""
    # The tensors and the count (all of `x` when None) are read natively: this is the call
    # whose per-call overhead docs/python.md measures.
    pe = _runtime.current()
    _native.all_reduce(pe, x, out, count, op, team, _runtime.stream_handle(pe, stream))
    return x if out is None else out


def reduce_scatter(x, out=None, op="sum", count=None, team=None, stream=None):
    """`x` holds one chunk of `count` per member of `team`; this PE's `out` gets the reduction
    of every member's chunk `my_pe` (its number in the team; in place: into that chunk of
    `x`). Returns the result."""
    pe = _runtime.current()
    me, size = _size(pe, team)
    n = numel(x) // size if count is None else count
    _native.reduce_scatter(pe, x, out, n, op, team, _runtime.stream_handle(pe, stream))
    if out is None:
        return x.reshape(-1)[me * n:(me + 1) * n]
    return out


def all_gather(x, out=None, count=None, team=None, stream=None):
    """Member `r`'s `x` lands at `out[r·count:(r+1)·count]` on every member of `team`; in
    place (`out` None): `x` is the whole buffer, each member's part already in its chunk.
    Returns the result."""
    pe, call = _runtime.current(), _call("all_gather")
    if out is None:
        n = numel(x) // _size(pe, team)[1] if count is None else count
        _native.all_gather(pe, None, tensor_arg(x, "x", call), n, team, _runtime.stream_handle(pe, stream))
        return x
    n = numel(x) if count is None else count
    _native.all_gather(pe, tensor_arg(x, "x", call), tensor_arg(out, "out", call), n, team,
                       _runtime.stream_handle(pe, stream))
    return out


def all_gather_v(x, out, counts, team=None, stream=None):
    """All-gather with `counts[r]` elements from member `r` (the same list everywhere), packed
    in member order; in place when `x` is None (each part already in `out`). Returns `out`."""
    pe, call = _runtime.current(), _call("all_gather_v")
    _native.all_gather_v(pe, None if x is None else tensor_arg(x, "x", call), tensor_arg(out, "out", call),
                         [int(c) for c in counts], team, _runtime.stream_handle(pe, stream))
    return out


def all_reduce_rmsnorm(x, residual, weight, out, eps=1e-6, team=None, stream=None):
    """`residual += Σ_PEs x`, then `out = residual / rms(residual) · weight` per row of
    `hidden = weight.size` (fused; bf16, f16 or f32). Returns `out`."""
    pe, call = _runtime.current(), _call("all_reduce_rmsnorm")
    hidden = numel(weight)
    if hidden == 0 or numel(x) % hidden:
        raise ArgumentError(f"{call}: `x` has {numel(x)} elements, not whole rows of {hidden} (weight's)")
    _native.all_reduce_rmsnorm(pe, tensor_arg(x, "x", call), tensor_arg(residual, "residual", call),
                               tensor_arg(weight, "weight", call), tensor_arg(out, "out", call),
                               numel(x) // hidden, hidden, float(eps), team, _runtime.stream_handle(pe, stream))
    return out


def all_gather_gemm(a, b, out, b_layout="nk", kernel="auto", team=None, stream=None):
    """`out = all_gather(a) · b`: `a` is the whole m x k, this PE's rows (its `m / size` of
    `team`) filled; the call copies in the others' while the GEMM runs. bf16. Returns `out`."""
    pe, call = _runtime.current(), _call("all_gather_gemm")
    m, n, k = gemm_shape(a, b, b_layout, call)
    _native.all_gather_gemm(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call),
                            tensor_arg(out, "out", call), m, n, k, b_layout, kernel, team,
                            _runtime.stream_handle(pe, stream))
    return out


def gemm_reduce_scatter(a, b, out, b_layout="nk", kernel="auto", team=None, stream=None):
    """This PE's `m / size` rows of `Σ_members a_r · b_r` (K sharded: `a` m x k_shard) into
    `out`. bf16. Returns `out`."""
    pe, call = _runtime.current(), _call("gemm_reduce_scatter")
    m, n, k = gemm_shape(a, b, b_layout, call)
    _native.gemm_reduce_scatter(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call),
                                tensor_arg(out, "out", call), m, n, k, b_layout, kernel, team,
                                _runtime.stream_handle(pe, stream))
    return out


def prepare_collectives(stream=None):
    """Makes `stream`'s collective workspace now, a symmetric allocation: collective over every
    PE. Needed before the first collective on a stream when that collective is over a team
    that does not hold every PE (the error says so); harmless otherwise."""
    pe = _runtime.current()
    _native.prepare_collectives(pe, _runtime.stream_handle(pe, stream))


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
    handle = _runtime.stream_handle(pe, stream)
    if handle == 0:
        raise ValueError(
            "rshmem.capture: the stream is the legacy default stream (torch's current stream "
            "unless one is set), which CUDA cannot capture; run the ops on a stream of their "
            "own, eagerly once and then captured: `s = torch.cuda.Stream()`, then both inside "
            "`with torch.cuda.stream(s):`"
        )
    keep = []
    _runtime._local.capture_keep = keep
    _tensors.capturing(+1)
    try:
        native = _native.capture(pe, fn, handle)
    finally:
        _tensors.capturing(-1)
        _runtime._local.capture_keep = None
    return Graph(native, keep)
