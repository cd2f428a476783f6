"""rshmem from Python: symmetric tensors on NVSHMEM's heap, rshmem's ops (GEMMs: plain, grouped,
FP8; collectives, fused tensor-parallel ops, MoE dispatch/combine and the fused MoE layer) queued
on torch's current stream over all PEs or a team, and your own Rust kernels by name — under
torchrun (`rshmem.init()`) or on the CPU simulator (`rshmem.sim.run(fn, npes)`). Importing it
loads nothing GPU-side. See docs/python.md."""

from ._native import ArgumentError, RshmemError
from ._runtime import backend, barrier_all, current, finalize, init, my_pe, n_pes, synchronize
from ._tensors import SymArray, TypedArray, empty, typed, zeros
from ._ops import (
    Graph,
    all_gather,
    all_gather_gemm,
    all_gather_v,
    all_reduce,
    all_reduce_rmsnorm,
    capture,
    gemm_reduce_scatter,
    prepare_collectives,
    reduce_scatter,
    set_algorithm,
)
from ._gemm import gemm, gemm_fp8, grouped_gemm, grouped_gemm_fp8
from ._moe import (
    MoeBuffers,
    MoeLayerWeights,
    moe_buffers,
    moe_combine,
    moe_dispatch,
    moe_interleave_gate_up,
    moe_layer,
    moe_layer_buffers,
    moe_layer_weights,
    moe_ll_combine,
    moe_ll_dispatch,
)
from ._team import Team, team_split_2d, team_split_strided
from ._kernels import Kernels, load_kernels
from . import bits, sim

__all__ = [
    "ArgumentError", "RshmemError", "backend", "barrier_all", "current", "finalize", "init", "my_pe",
    "n_pes", "synchronize", "SymArray", "TypedArray", "empty", "typed", "zeros", "Graph", "all_gather", "all_gather_gemm",
    "all_gather_v", "all_reduce", "all_reduce_rmsnorm", "capture", "gemm", "gemm_fp8",
    "gemm_reduce_scatter", "grouped_gemm", "grouped_gemm_fp8", "prepare_collectives", "reduce_scatter", "set_algorithm",
    "MoeBuffers", "MoeLayerWeights", "moe_buffers", "moe_combine", "moe_dispatch",
    "moe_interleave_gate_up", "moe_layer", "moe_layer_buffers", "moe_layer_weights", "moe_ll_combine",
    "moe_ll_dispatch", "Team", "team_split_2d", "team_split_strided", "Kernels", "load_kernels", "bits",
    "sim",
]
