"""Mixture-of-experts ops: `MoeBuffers` (made once per layer, collective) and the calls on them,
normal mode (`moe_dispatch` waits for the layout, `moe_combine` uses it) and low latency
(`moe_ll_dispatch` / `moe_ll_combine`: kernels only, fixed receive rows per expert); the fused
layer (`moe_layer_buffers`, `moe_layer_weights`, `moe_layer`: dispatch, gate/up GEMM with
SwiGLU, down GEMM and combine in one call, kernels only). Over all PEs or a team."""

from . import _native, _runtime
from ._native import ArgumentError
from ._tensors import numel, tensor_arg, wrap

class _Recv:
    """A receive buffer's memory, owned by the buffers object (kept alive by the tensor)."""

    def __init__(self, bufs, ptr, nbytes):
        self.bufs = bufs
        self.ptr = ptr
        self.nbytes = nbytes


class MoeBuffers:
    """The symmetric buffers of one MoE layer's dispatches and combines. `recv_x` (or
    `recv_x_fp8`, `recv_x_scales`), `recv_src`, `recv_weights` (low latency: `recv_x`,
    `recv_src`, `recv_count`; the fused layer's: `recv_x`, `recv_src`, `recv_count`,
    `activations`, `combine_rows`) are tensors over them, zero-copy, that ops accept
    (read-only)."""

    def __init__(self, experts, top_k, hidden, max_tokens, align=1, fp8=False, low_latency=False,
                 team=None, _native_bufs=None, intermediate=None):
        pe = _runtime.current()
        self._pe = pe
        self._native = _native_bufs or _native.moe_buffers(pe, experts, top_k, hidden, max_tokens, align, fp8,
                                                           low_latency, team)
        self.config = dict(experts=experts, top_k=top_k, hidden=hidden, max_tokens=max_tokens,
                           align=align, fp8=fp8, low_latency=low_latency)
        if intermediate is not None:
            self.config["intermediate"] = intermediate
        self._recv = {name: (ptr, nbytes, dtype) for name, ptr, nbytes, dtype in self._native.recv()}

    def _tensor(self, name, cols):
        ptr, nbytes, dtype = self._recv[name]
        size = {"bf16": 2, "f32": 4, "u32": 4, "fp8_e4m3": 1}[dtype]
        count = nbytes // size
        shape = (count // cols, cols) if cols > 1 else (count,)
        return wrap(_Recv(self._native, ptr, nbytes), shape, dtype, self._pe)

    @property
    def recv_x(self):
        return self._tensor("x", self.config["hidden"])

    @property
    def recv_x_fp8(self):
        return self._tensor("x_fp8", self.config["hidden"])

    @property
    def recv_x_scales(self):
        """FP8 rows' scales, `⌈hidden / 128⌉ x capacity` f32 (row r's scale of K block kb at
        `[kb, r]`): the FP8 grouped GEMM's layout for A over all the rows (`m = capacity`)."""
        _, nbytes, _ = self._recv["x_scales"]
        return self._tensor("x_scales", nbytes // 4 // -(-self.config["hidden"] // 128))

    @property
    def recv_src(self):
        return self._tensor("src", 1)

    @property
    def recv_weights(self):
        return self._tensor("weights", 1)

    @property
    def recv_count(self):
        return self._tensor("count", 1)

    @property
    def activations(self):
        """The fused layer's SwiGLU output, row for row as `recv_x` (intermediate wide)."""
        return self._tensor("activations", self.config["intermediate"])

    @property
    def combine_rows(self):
        """The fused layer's expert rows back for this PE's entries: row `t·top_k + kk`."""
        return self._tensor("combine_rows", self.config["hidden"])

    def capacity(self):
        """Rows per expert (low latency, the fused layer), or in all (normal mode)."""
        return self._native.capacity()

    def skipped_entry(self):
        """The first `(token, entry)` of the latest call whose expert was neither valid nor -1
        (low latency and the fused layer; waits for the PE's work), or None."""
        return self._native.skipped_entry()

    def puts_to(self, rank):
        """Whether this PE's down GEMM puts its rows for `rank` after it (the fused layer)."""
        return self._native.puts_to(rank)

    def nbytes(self):
        return self._native.nbytes()


def moe_buffers(experts, top_k, hidden, max_tokens, align=1, fp8=False, low_latency=False, team=None):
    """The buffers of an MoE layer over all PEs or `team` (collective; see `MoeBuffers`)."""
    return MoeBuffers(experts, top_k, hidden, max_tokens, align, fp8, low_latency, team)


def moe_layer_buffers(experts, top_k, hidden, intermediate, max_tokens, team=None):
    """The buffers of a fused MoE layer (collective over all PEs or `team`): `experts` over
    the team (a multiple of its size), each a gated MLP hidden → intermediate → hidden; one
    set serves any number of layers of its shape, one call after another."""
    pe = _runtime.current()
    native = _native.moe_layer_buffers(pe, experts, top_k, hidden, intermediate, max_tokens, team)
    return MoeBuffers(experts, top_k, hidden, max_tokens, low_latency=False, _native_bufs=native,
                      intermediate=intermediate)


class MoeLayerWeights:
    """One layer's expert weights bound to fused-layer buffers (`moe_layer_weights`); keeps
    the weight tensors alive."""

    def __init__(self, native, keep):
        self._native = native
        self._keep = keep


def moe_interleave_gate_up(gate, up):
    """W₁ of the fused layer from the gate and up projections (each experts x intermediate x
    hidden, `out x in` as a Linear stores them; numpy arrays or torch tensors): rows
    interleaved by pairs, row `2j` of an expert its gate's row `j`, row `2j + 1` its up's."""
    if tuple(gate.shape) != tuple(up.shape) or len(gate.shape) != 3:
        raise ArgumentError(f"moe_interleave_gate_up: gate {tuple(gate.shape)} and up {tuple(up.shape)} "
                            "must both be experts x intermediate x hidden")
    e, i, h = gate.shape
    if type(gate).__module__.startswith("torch"):
        import torch

        return torch.stack((gate, up), dim=2).reshape(e, 2 * i, h)
    import numpy as np

    return np.stack((np.asarray(gate), np.asarray(up)), axis=2).reshape(e, 2 * i, h)


def moe_layer_weights(bufs, gate_up, down):
    """Binds one layer's weights to `bufs` (collective: their tensor maps are allocated):
    `gate_up` local x 2·intermediate x hidden bf16 (gate and up interleaved:
    `moe_interleave_gate_up`), `down` local x hidden x intermediate bf16, symmetric tensors
    (their contents may change between calls; their memory may not)."""
    pe, call = _runtime.current(), "rshmem.moe_layer_weights"
    native = _native.moe_layer_weights(pe, bufs._native, tensor_arg(gate_up, "gate_up", call),
                                       tensor_arg(down, "down", call))
    return MoeLayerWeights(native, (gate_up, down))


def moe_layer(bufs, weights, x, topk_idx, topk_weights, out, stream=None):
    """The fused MoE layer (kernels only, capturable): each token of `x` (tokens x hidden,
    bf16) goes to its `topk_idx` experts (tokens x top_k i32, -1 for none), each computes
    `down(silu(gate(x)) × up(x))` with `weights`, and `out` (tokens x hidden bf16) gets the
    `topk_weights`-weighted sum in f32, rounded once. Collective over the buffers' team.
    Returns `out`."""
    pe, call = _runtime.current(), "rshmem.moe_layer"
    tokens = numel(topk_idx) // bufs.config["top_k"]
    _native.moe_layer(pe, bufs._native, weights._native, tensor_arg(x, "x", call),
                      tensor_arg(topk_idx, "topk_idx", call), tensor_arg(topk_weights, "topk_weights", call),
                      tensor_arg(out, "out", call), tokens, _runtime.stream_handle(pe, stream))
    return out


def moe_dispatch(bufs, x, topk_idx, topk_weights, x_scales=None, stream=None):
    """Sends each token of `x` (tokens x hidden, bf16; or FP8 bytes with `x_scales`) to its
    experts' PEs and waits for this PE's layout: returns it (`expert_offsets`, `expert_rows`,
    `rows`, ...) for `moe_combine`. Collective."""
    pe, call = _runtime.current(), "rshmem.moe_dispatch"
    tokens = numel(topk_idx) // bufs.config["top_k"]
    return _native.moe_dispatch(pe, bufs._native, tensor_arg(x, "x", call), tensor_arg(topk_idx, "topk_idx", call),
                                tensor_arg(topk_weights, "topk_weights", call), tokens,
                                None if x_scales is None else tensor_arg(x_scales, "x_scales", call),
                                _runtime.stream_handle(pe, stream))


def moe_combine(bufs, layout, expert_out, out, stream=None):
    """Sends the experts' rows (`expert_out`, row for row as `recv_x`) back, weighted, and sums
    them per token into `out` (tokens x hidden, bf16). Collective. Returns `out`."""
    pe, call = _runtime.current(), "rshmem.moe_combine"
    _native.moe_combine(pe, bufs._native, layout, tensor_arg(expert_out, "expert_out", call),
                        tensor_arg(out, "out", call), _runtime.stream_handle(pe, stream))
    return out


def moe_ll_dispatch(bufs, x, topk_idx, stream=None):
    """Low-latency dispatch (kernels only, capturable): rows land in `recv_x`, expert `e`'s
    at rows `e · capacity()..`, their count in `recv_count[e]` (on the device)."""
    pe, call = _runtime.current(), "rshmem.moe_ll_dispatch"
    tokens = numel(topk_idx) // bufs.config["top_k"]
    _native.moe_ll_dispatch(pe, bufs._native, tensor_arg(x, "x", call), tensor_arg(topk_idx, "topk_idx", call),
                            tokens, _runtime.stream_handle(pe, stream))


def moe_ll_combine(bufs, expert_out, topk_idx, topk_weights, out, stream=None):
    """Low-latency combine into `out` (tokens x hidden, bf16). Returns `out`."""
    pe, call = _runtime.current(), "rshmem.moe_ll_combine"
    _native.moe_ll_combine(pe, bufs._native, tensor_arg(expert_out, "expert_out", call),
                           tensor_arg(topk_idx, "topk_idx", call), tensor_arg(topk_weights, "topk_weights", call),
                           tensor_arg(out, "out", call), _runtime.stream_handle(pe, stream))
    return out
