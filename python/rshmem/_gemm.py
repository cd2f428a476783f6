"""rshmem's GEMMs, queued on `stream` (torch's current stream on GPUs when None; the PE's own
on the simulator): `gemm` on any contiguous tensor of the PE's device (symmetric or not: the
GEMM reaches no peer), the grouped GEMM (`torch._grouped_mm`'s offsets, or the masked layout of
a low-latency MoE dispatch) and the FP8 GEMMs (per-tensor or block scales) on symmetric
tensors. Shapes come from the tensors; rshmem checks everything before queueing."""

from . import _native, _runtime
from ._native import ArgumentError
from ._tensors import numel, tensor_arg


def _shape(t, dims, what, call):
    shape = tuple(t.shape)
    if len(shape) not in dims:
        need = " or ".join(f"{d}-D" for d in dims)
        raise ArgumentError(f"{call}: `{what}` has shape {shape}; a {need} tensor is needed")
    return shape


def gemm_shape(a, b, b_layout, call):
    """`(m, n, k)` of `a` (m x k) and `b` (n x k for "nk", k x n for "kn")."""
    try:  # unpacks the shapes as they are (no copies): part of every GEMM call's cost
        (m, k), (rows, cols) = a.shape, b.shape
    except (TypeError, ValueError):
        m, k = _shape(a, (2,), "a", call)
        rows, cols = _shape(b, (2,), "b", call)
    n, kb = (rows, cols) if b_layout == "nk" else (cols, rows)
    if kb != k:
        raise ArgumentError(f"{call}: a is {m} x {k} but b ({b_layout}) is {rows} x {cols}: K differs")
    return m, n, k


def gemm(a, b, out, b_layout="nk", kernel="auto", split_k=0, stream=None):
    """`out = a · bᵀ` (`b_layout="nk"`, b n x k) or `a · b` (`"kn"`); bf16/f16 in, f32 or the
    input type out. Any contiguous tensors of this PE's device: symmetric ones, ordinary torch
    CUDA tensors (on the simulator: numpy arrays or CPU tensors). `split_k`: 0 automatic, 1
    off, p parts. Returns `out`."""
    # Shapes and tensors are read natively (`gemm_shape` and `tensor_arg` there): this is the
    # call whose per-call overhead docs/python.md measures.
    pe = _runtime.current()
    _native.gemm(pe, a, b, out, None, b_layout, kernel, split_k, _runtime.stream_handle(pe, stream))
    return out


def _grouped(a, b, offsets, counts, b_layout, call):
    """`(groups, n, k, rows)` of a grouped GEMM, `rows` the native `(sizes, m or max_m,
    masked)`: the offsets layout (`a` m x k) or the masked one (`a` G x max_m x k, or
    (G·max_m) x k)."""
    if (offsets is None) == (counts is None):
        raise ArgumentError(
            f"{call}: give the group sizes as `offsets` (cumulative row ends, as torch._grouped_mm's "
            "offs) or as `counts` (rows per group of G x max_m, the masked layout), one of the two")
    groups, rows, cols = _shape(b, (3,), "b", call)
    n, k = (rows, cols) if b_layout == "nk" else (cols, rows)
    a_shape = _shape(a, (2, 3), "a", call)
    if a_shape[-1] != k:
        raise ArgumentError(f"{call}: a's rows have {a_shape[-1]} elements but b ({b_layout}) is "
                            f"{groups} x {rows} x {cols}: K differs")
    total = numel(a) // k if k else 0
    if counts is not None:
        if len(a_shape) == 3:
            max_m = a_shape[1]
            if a_shape[0] != groups:
                raise ArgumentError(f"{call}: a has {a_shape[0]} groups of rows, b {groups}")
        elif total % groups:
            raise ArgumentError(f"{call}: a's {total} rows are not {groups} groups of max_m rows")
        else:
            max_m = total // groups
        sizes, masked = tensor_arg(counts, "counts", call), True
        return groups, n, k, (sizes, max_m, masked)
    if len(a_shape) != 2:
        raise ArgumentError(f"{call}: with `offsets`, a is m x k (2-D); it has shape {a_shape}")
    return groups, n, k, (tensor_arg(offsets, "offsets", call), total, False)


def grouped_gemm(a, b, out, offsets=None, counts=None, b_layout="nk", kernel="auto", stream=None):
    """G GEMMs sharing N and K in one launch: group `g`'s rows of `a` times `b[g]` (`b` is
    G x n x k for "nk", G x k x n for "kn") into the same rows of `out`. Rows per group, read
    on the device: `offsets` (G cumulative ends, i32 or u32, torch._grouped_mm's `offs`: group
    g has rows `offsets[g-1]:offsets[g]` of `a`, m x k), or `counts` (the masked layout: `a`
    is G x max_m x k, group g's first `counts[g]` rows). Rows in no group are not written.
    Any contiguous tensors of this PE's device, as for `gemm`. Returns `out`."""
    pe, call = _runtime.current(), "rshmem.grouped_gemm"
    groups, n, k, rows = _grouped(a, b, offsets, counts, b_layout, call)
    _native.grouped_gemm(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call), tensor_arg(out, "out", call),
                         groups, n, k, rows, b_layout, kernel, _runtime.stream_handle(pe, stream))
    return out


def _scaling(scale_a, scale_b, scaling, call):
    if scaling is None:
        return "tensor" if numel(scale_a) == 1 and numel(scale_b) == 1 else "block"
    if scaling not in ("tensor", "block"):
        raise ArgumentError(f"{call}: scaling {scaling!r}: \"tensor\" (one scale per operand) or "
                            "\"block\" (1 x 128 for a, 128 x 128 for b)")
    return scaling


def gemm_fp8(a, b, out, scale_a, scale_b, scaling=None, split_k=0, stream=None):
    """`out = (a · bᵀ)` scaled, a (m x k) and b (n x k) of fp8_e4m3 or fp8_e5m2, f32
    accumulation, out f32 or bf16; sm_90 kernels only. `scaling="tensor"`: one f32 each,
    `out = scale_a · scale_b · (a · bᵀ)`; `"block"` (DeepSeek-V3): `scale_a` ⌈k/128⌉ x m (M
    contiguous), `scale_b` ⌈n/128⌉ x ⌈k/128⌉. None: "tensor" when both scales hold one
    element, else "block". `split_k` as for `gemm` (0: K split automatically for decode-sized
    M). Any contiguous tensors of this PE's device, as for `gemm`. Returns `out`."""
    pe, call = _runtime.current(), "rshmem.gemm_fp8"
    m, n, k = gemm_shape(a, b, "nk", call)
    block = _scaling(scale_a, scale_b, scaling, call) == "block"
    _native.gemm_fp8(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call), tensor_arg(out, "out", call),
                     m, n, k, tensor_arg(scale_a, "scale_a", call), tensor_arg(scale_b, "scale_b", call),
                     block, int(split_k), _runtime.stream_handle(pe, stream))
    return out


def grouped_gemm_fp8(a, b, out, scale_a, scale_b, offsets=None, counts=None, scaling=None, stream=None):
    """The grouped FP8 GEMM: as `grouped_gemm` (b G x n x k), each group's B with its own
    scales. `scaling="block"`: ⌈n/128⌉ x ⌈k/128⌉ per group (`scale_b` G of them stacked),
    `scale_a` ⌈k/128⌉ x m over all of a's rows; `"tensor"`: `scale_b` one f32 per group,
    `scale_a` one f32 (`out = scale_a · scale_b[g] · (a · b[g]ᵀ)` on group g's rows). None:
    "tensor" when `scale_a` holds one element and `scale_b` one per group, else "block". Any
    contiguous tensors of this PE's device, as for `gemm`. Returns `out`."""
    pe, call = _runtime.current(), "rshmem.grouped_gemm_fp8"
    groups, n, k, rows = _grouped(a, b, offsets, counts, "nk", call)
    if scaling is None:
        scaling = "tensor" if numel(scale_a) == 1 and numel(scale_b) == groups else "block"
    block = _scaling(scale_a, scale_b, scaling, call) == "block"
    _native.grouped_gemm_fp8(pe, tensor_arg(a, "a", call), tensor_arg(b, "b", call),
                             tensor_arg(out, "out", call), groups, n, k, rows,
                             tensor_arg(scale_a, "scale_a", call), tensor_arg(scale_b, "scale_b", call),
                             block, _runtime.stream_handle(pe, stream))
    return out
