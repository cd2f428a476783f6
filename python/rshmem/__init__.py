"""rshmem from Python: symmetric tensors on NVSHMEM's heap, rshmem's ops (GEMM, collectives,
fused tensor-parallel ops, MoE dispatch/combine) queued on torch's current stream, and your
own Rust kernels by name — under torchrun (`rshmem.init()`) or on the CPU simulator
(`rshmem.sim.run(fn, npes)`). Importing it loads nothing GPU-side. See docs/python.md."""

from ._native import ArgumentError, RshmemError
from ._runtime import backend, barrier_all, current, finalize, init, my_pe, n_pes, synchronize
from ._tensors import SymArray, empty, zeros
from ._ops import (
    Graph,
    all_gather,
    all_gather_gemm,
    all_gather_v,
    all_reduce,
    all_reduce_rmsnorm,
    capture,
    gemm,
    gemm_reduce_scatter,
    reduce_scatter,
    set_algorithm,
)
from ._moe import MoeBuffers, moe_buffers, moe_combine, moe_dispatch, moe_ll_combine, moe_ll_dispatch
from ._kernels import Kernels, load_kernels
from . import bits, sim

__all__ = [
    "ArgumentError", "RshmemError", "backend", "barrier_all", "current", "finalize", "init", "my_pe",
    "n_pes", "synchronize", "SymArray", "empty", "zeros", "Graph", "all_gather", "all_gather_gemm",
    "all_gather_v", "all_reduce", "all_reduce_rmsnorm", "capture", "gemm", "gemm_reduce_scatter",
    "reduce_scatter", "set_algorithm", "MoeBuffers", "moe_buffers", "moe_combine", "moe_dispatch",
    "moe_ll_combine", "moe_ll_dispatch", "Kernels", "load_kernels", "bits", "sim",
]
