"""Mixture-of-experts dispatch and combine: `MoeBuffers` (made once per layer, collective)
and the calls on them, normal mode (`dispatch` waits for the layout, `combine` uses it) and
low latency (`ll_dispatch` / `ll_combine`: kernels only, fixed receive rows per expert)."""

from . import _native, _runtime
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
    `recv_src`, `recv_count`) are tensors over them, zero-copy, that ops accept (read-only)."""

    def __init__(self, experts, top_k, hidden, max_tokens, align=1, fp8=False, low_latency=False):
        pe = _runtime.current()
        self._pe = pe
        self._native = _native.moe_buffers(pe, experts, top_k, hidden, max_tokens, align, fp8, low_latency)
        self.config = dict(experts=experts, top_k=top_k, hidden=hidden, max_tokens=max_tokens,
                           align=align, fp8=fp8, low_latency=low_latency)
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
        return self._tensor("x_scales", -(-self.config["hidden"] // 128))

    @property
    def recv_src(self):
        return self._tensor("src", 1)

    @property
    def recv_weights(self):
        return self._tensor("weights", 1)

    @property
    def recv_count(self):
        return self._tensor("count", 1)

    def capacity(self):
        return self._native.capacity()

    def nbytes(self):
        return self._native.nbytes()


def moe_buffers(experts, top_k, hidden, max_tokens, align=1, fp8=False, low_latency=False):
    """The buffers of an MoE layer (collective; see `MoeBuffers`)."""
    return MoeBuffers(experts, top_k, hidden, max_tokens, align, fp8, low_latency)


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
