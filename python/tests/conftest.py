"""Shared by the simulator tests: every test runs its PEs with `rshmem.sim.run`, so each PE's
code is a plain function; numpy computes the references."""

import numpy as np
import pytest

import rshmem
from rshmem.bits import bf16_to_f32, f32_to_bf16


def data(pe, n, seed=0):
    """Fresh, non-zero, distinct values per PE and call."""
    rng = np.random.default_rng(1000 * seed + pe)
    return rng.integers(-50, 50, size=n).astype(np.float32) + 0.25


def fill(t, values):
    """Writes f32 `values` into symmetric tensor `t` of any float type (bf16 as its bits)."""
    if getattr(t, "rshmem_dtype", None) == "bf16":
        f32_to_bf16(values, out=t)
    else:
        t[...] = np.asarray(values).reshape(t.shape).astype(t.dtype)


def read(t):
    """`t`'s values as f64 (bf16 decoded)."""
    if getattr(t, "rshmem_dtype", None) == "bf16":
        return bf16_to_f32(t).astype(np.float64)
    return np.asarray(t, dtype=np.float64)


@pytest.fixture(params=[1, 2, 3], ids=lambda n: f"{n}pe")
def npes(request):
    return request.param


def run(fn, npes, *args):
    return rshmem.sim.run(fn, npes, args)
