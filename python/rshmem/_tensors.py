"""Symmetric tensors: `empty`/`zeros` allocate on the symmetric heap (collective) and return a
`torch.Tensor` over it on GPUs (`__cuda_array_interface__`, zero-copy) or a numpy array over
the simulated heap on the simulator (`__array_interface__`, zero-copy); each keeps its
allocation alive, freed when the last tensor or view over it goes. `tensor_arg` turns a tensor
passed to an op into what the native layer finds back on the heap."""

import math
import threading

import numpy as np

from . import _runtime
from . import _native
from ._native import ArgumentError

# rshmem's element types: (name, bytes, numpy storage dtype). bf16 and the FP8 types have no
# numpy dtype: numpy arrays of them hold the raw bits (uint16 / uint8), tagged with the type.
_TYPES = {
    "bf16": (2, np.uint16),
    "f16": (2, np.float16),
    "f32": (4, np.float32),
    "f64": (8, np.float64),
    "i8": (1, np.int8),
    "i16": (2, np.int16),
    "i32": (4, np.int32),
    "i64": (8, np.int64),
    "u8": (1, np.uint8),
    "u16": (2, np.uint16),
    "u32": (4, np.uint32),
    "u64": (8, np.uint64),
    "bool": (1, np.bool_),
    "fp8_e4m3": (1, np.uint8),
    "fp8_e5m2": (1, np.uint8),
}
_NUMPY_NAMES = {np.dtype(t): n for n, (_, t) in _TYPES.items() if n not in ("bf16", "fp8_e4m3", "fp8_e5m2")}


def _torch_types():
    """rshmem's name -> torch dtype, built once (an op's every tensor argument looks its dtype up:
    rebuilding the table per call cost microseconds)."""
    global _TORCH_TYPES, _TORCH_NAMES, _TORCH_TENSOR
    if _TORCH_TYPES is None:
        import torch

        table = {
            "bf16": torch.bfloat16,
            "f16": torch.float16,
            "f32": torch.float32,
            "f64": torch.float64,
            "i8": torch.int8,
            "i16": torch.int16,
            "i32": torch.int32,
            "i64": torch.int64,
            "u8": torch.uint8,
            "bool": torch.bool,
        }
        for name, attr in (("fp8_e4m3", "float8_e4m3fn"), ("fp8_e5m2", "float8_e5m2"),
                           ("u16", "uint16"), ("u32", "uint32"), ("u64", "uint64")):
            if hasattr(torch, attr):
                table[name] = getattr(torch, attr)
        _TORCH_NAMES = {t: n for n, t in table.items()}
        _TORCH_TENSOR = torch.Tensor
        _TORCH_TYPES = table
        # The ops read plain torch tensors natively from now on (`tensor_arg`'s first branch
        # without the Python function around it: docs/python.md, the per-call overhead).
        _native.set_tensor_type(torch.Tensor, _TORCH_NAMES)
    return _TORCH_TYPES


_TORCH_TYPES = None
_TORCH_NAMES = None
# `torch.Tensor` once torch's types are known (`_torch_types`); until then nothing is it.
_TORCH_TENSOR = None


def dtype_name(dtype):
    """rshmem's name of `dtype`: one of its names, a numpy dtype or a torch dtype."""
    if isinstance(dtype, str) and dtype in _TYPES:
        return dtype
    if type(dtype).__module__ == "torch":
        _torch_types()
        name = _TORCH_NAMES.get(dtype)
        if name is None:
            raise ArgumentError(f"rshmem has no element type for {dtype}")
        return name
    try:
        return _NUMPY_NAMES[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise ArgumentError(
            f"unknown element type {dtype!r}: rshmem's are {', '.join(_TYPES)} (or numpy / torch "
            "dtypes of them)"
        ) from None


class TypedArray(np.ndarray):
    """A numpy array tagged with rshmem's element type (`rshmem_dtype`), for the types numpy
    lacks: bf16 and FP8 arrays hold raw bits (uint16 / uint8). Views and slices keep the tag
    (a view of another item size drops it). `rshmem.typed` tags an array of your own."""

    def __array_finalize__(self, obj):
        keep = obj is not None and getattr(obj, "dtype", None) == self.dtype
        self.rshmem_dtype = getattr(obj, "rshmem_dtype", None) if keep else None


class SymArray(TypedArray):
    """A numpy array over symmetric memory (the simulator's heap), tagged with its element type
    (`rshmem_dtype`). Ops accept any contiguous view of one."""


def typed(array, dtype):
    """`array` (a numpy array of the type's size: uint16 bits for bf16, uint8 for FP8) as a
    view tagged with rshmem's element type `dtype`, so that ops read it as that type: an
    ordinary array of bf16 bits passed to `rshmem.gemm` on the simulator, for example."""
    name = dtype_name(dtype)
    size = _TYPES[name][0]
    array = np.asarray(array)
    if array.dtype.itemsize != size:
        raise ArgumentError(f"rshmem.typed: an array of {array.dtype} ({array.dtype.itemsize}-byte elements) "
                            f"cannot hold {name} ({size}-byte elements)")
    view = array.view(TypedArray)
    view.rshmem_dtype = name
    return view


class _HostView:
    """The simulated heap's bytes of one allocation, as numpy's array interface: the array's
    base, which keeps the allocation alive."""

    def __init__(self, alloc, shape, storage):
        self.alloc = alloc
        self.__array_interface__ = {
            "shape": shape,
            "typestr": np.dtype(storage).str,
            "data": (alloc.ptr, False),
            "version": 3,
        }


class _DeviceView:
    """One allocation's device memory as `__cuda_array_interface__`: what torch wraps (keeping
    this, and so the allocation, alive)."""

    def __init__(self, alloc, shape, typestr):
        self.alloc = alloc
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (alloc.ptr, False),
            "version": 2,
            "strides": None,
            "stream": None,
        }


def wrap(alloc, shape, name, pe):
    """A tensor of `shape` and element type `name` over allocation `alloc` of `pe`."""
    size, storage = _TYPES[name]
    if pe.backend == "sim":
        arr = np.asarray(_HostView(alloc, shape, storage)).view(SymArray)
        arr.rshmem_dtype = name
        return arr
    import torch

    # torch reads CAI of plain integer and float types: bf16 and FP8 go as their bits, viewed.
    bits = {1: "|u1", 2: "<i2", 4: "<i4", 8: "<i8"}[size]
    typestr = np.dtype(storage).str if name not in ("bf16", "fp8_e4m3", "fp8_e5m2", "u16", "u32", "u64") else bits
    t = torch.as_tensor(_DeviceView(alloc, shape, typestr), device=f"cuda:{torch.cuda.current_device()}")
    want = _torch_types()[name]
    return t if t.dtype == want else t.view(want)


def empty(shape, dtype="f32"):
    """A tensor of `shape` on the symmetric heap (zero-filled: symmetric memory is). Collective:
    every PE makes the same allocations in the same order."""
    pe = _runtime.current()
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ArgumentError(f"rshmem.empty: shape {shape} has a negative extent")
    name = dtype_name(dtype)
    nbytes = math.prod(shape) * _TYPES[name][0]
    return wrap(pe.alloc(nbytes), shape, name, pe)


def zeros(shape, dtype="f32"):
    """`empty`: symmetric memory starts zeroed."""
    return empty(shape, dtype)


def tensor_name(t):
    """rshmem's element type name of tensor `t`."""
    name = getattr(t, "rshmem_dtype", None)
    if name is not None:
        return name
    return dtype_name(t.dtype)


def numel(t):
    if type(t).__module__ == "torch":
        return t.numel()
    return int(t.numel()) if hasattr(t, "numel") and callable(t.numel) else int(t.size)


def tensor_arg(t, what, call):
    """`(address, bytes, element type)` of contiguous tensor `t` (argument `what` of `call`)."""
    # torch tensors first, with as few Python-level calls as possible: this runs for every
    # tensor of every op (docs/python.md, the per-call overhead). A plain `torch.Tensor` is
    # recognised by identity, subclasses (nn.Parameter, ...) by module below.
    if type(t) is _TORCH_TENSOR or (_TORCH_NAMES is not None and type(t).__module__ == "torch"):
        name = _TORCH_NAMES.get(t.dtype)
        if name is not None and t.is_contiguous():
            if _capturing:
                _keep(t)
            return (t.data_ptr(), t.nbytes, name)
    if isinstance(t, np.ndarray):
        if not t.flags.c_contiguous:
            raise ArgumentError(
                f"{call}: `{what}` is not contiguous (shape {t.shape}, strides {t.strides}): "
                "rshmem's ops take contiguous tensors (a contiguous slice of a symmetric tensor "
                "is fine)"
            )
        _keep(t)
        return (t.__array_interface__["data"][0], t.nbytes, tensor_name(t))
    if hasattr(t, "data_ptr"):
        if not t.is_contiguous():
            raise ArgumentError(
                f"{call}: `{what}` is not contiguous (shape {tuple(t.shape)}, strides "
                f"{t.stride()}): rshmem's ops take contiguous tensors"
            )
        _keep(t)
        return (t.data_ptr(), t.numel() * t.element_size(), tensor_name(t))
    raise ArgumentError(f"{call}: `{what}` is a {type(t).__name__}, not a tensor or numpy array")


# `rshmem.capture`s under way in this process (any thread, hence the lock): while none is,
# the ops' tensors need no keeping, and `tensor_arg` skips the thread-local lookup.
_capturing = 0
_capturing_lock = threading.Lock()


def capturing(delta):
    """Counts a capture in (`+1`) or out (`-1`), here and in the native layer (which then
    hands every tensor to `tensor_arg`, to be kept)."""
    global _capturing
    with _capturing_lock:
        _capturing += delta
        _native.set_capturing(delta)


def _keep(t):
    """During `rshmem.capture`, the tensors the recorded work uses stay alive with the graph."""
    keep = _runtime._local.capture_keep
    if keep is not None:
        keep.append(t)
