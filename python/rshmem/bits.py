"""bf16 and FP8 as raw bits in numpy (which has neither): what the simulator's bf16 and FP8
tensors hold. FP8 is `fp8_e4m3` (e4m3 "fn": largest 448, no infinities, NaN 0x7f/0xff) or
`fp8_e5m2` (largest 57344, IEEE-like infinities)."""

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


# (exponent bits, mantissa bits, bias) of each FP8 format.
_FP8 = {"fp8_e4m3": (4, 3, 7), "fp8_e5m2": (5, 2, 15)}


def _fp8_table(fmt):
    """The f32 value of each of the 256 codes of `fmt`."""
    if fmt not in _FP8:
        raise ValueError(f"FP8 format {fmt!r}: fp8_e4m3 or fp8_e5m2")
    e_bits, m_bits, bias = _FP8[fmt]
    code = np.arange(256, dtype=np.uint32)
    sign = np.where(code >> 7, -1.0, 1.0)
    exp = (code >> m_bits) & ((1 << e_bits) - 1)
    man = code & ((1 << m_bits) - 1)
    normal = (1.0 + man / (1 << m_bits)) * np.exp2(exp.astype(np.float64) - bias)
    subnormal = man / (1 << m_bits) * 2.0 ** (1 - bias)
    value = sign * np.where(exp == 0, subnormal, normal)
    top = exp == (1 << e_bits) - 1
    if fmt == "fp8_e4m3":
        value = np.where(top & (man == 7), np.nan, value)
    else:
        value = np.where(top, np.where(man == 0, sign * np.inf, np.nan), value)
    return value.astype(np.float32)


def fp8_to_f32(bits, fmt="fp8_e4m3"):
    """The f32 values of FP8 codes (a uint8 array) of `fmt`."""
    return _fp8_table(fmt)[np.asarray(bits, dtype=np.uint8)]


def f32_to_fp8(values, fmt="fp8_e4m3", out=None):
    """FP8 codes of `values`: the nearest finite value of `fmt`, ties to the even code,
    saturating at the largest (NaN to NaN); into `out` (a uint8 array) if given."""
    table = _fp8_table(fmt)
    finite = np.flatnonzero(np.isfinite(table) & ((np.arange(256) & 0x80) == 0))
    mags, codes = table[finite].astype(np.float64), finite.astype(np.uint8)
    order = np.argsort(mags, kind="stable")
    mags, codes = mags[order], codes[order]
    v = np.asarray(values, dtype=np.float32).astype(np.float64)
    a = np.minimum(np.abs(v), mags[-1])
    hi = np.clip(np.searchsorted(mags, a), 1, len(mags) - 1)
    lo = hi - 1
    d_lo, d_hi = a - mags[lo], mags[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (codes[hi] % 2 == 0))
    code = np.where(pick_hi, codes[hi], codes[lo]).astype(np.uint8)
    code = np.where((v < 0) & (code != 0), code | 0x80, code).astype(np.uint8)
    nan = 0x7F if fmt == "fp8_e4m3" else 0x7E
    code = np.where(np.isnan(v), np.uint8(nan), code).astype(np.uint8)
    if out is None:
        return code
    out[...] = code.reshape(out.shape)
    return out
