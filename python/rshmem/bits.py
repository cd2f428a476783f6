"""bf16 as raw bits in numpy (which has no bf16): what the simulator's bf16 tensors hold."""

import numpy as np


def bf16_to_f32(bits):
    """The f32 values of bf16 bit patterns (a uint16 array)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values, out=None):
    """bf16 bit patterns of `values`, rounded to nearest even (NaN stays NaN); into `out` (a
    uint16 array, e.g. a symmetric bf16 tensor) if given."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    rounded = np.where(np.isnan(values), np.uint16(0x7FC0), rounded)
    if out is None:
        return rounded
    out[...] = rounded.reshape(out.shape)
    return out
