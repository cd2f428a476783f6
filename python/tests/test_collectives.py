"""The collectives on 1-3 simulated PEs against numpy references."""

import numpy as np
import pytest

import rshmem
from conftest import data, fill, read, run

FLOATS = ["f32", "bf16", "f16"]
REDUCIBLE = FLOATS + ["i32", "i64"]


def values(pe, n, dtype, seed=0):
    v = data(pe, n, seed)
    return np.round(v) if dtype.startswith("i") else v


@pytest.mark.parametrize("dtype", REDUCIBLE)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_all_reduce_out_of_place_matches_numpy(npes, dtype, op):
    n = 37

    def pe_main():
        x, out = rshmem.empty(n, dtype), rshmem.empty(n, dtype)
        fill(x, values(rshmem.my_pe(), n, dtype))
        rshmem.all_reduce(x, out, op=op)
        return read(out)

    every = np.stack([values(pe, n, dtype) for pe in range(npes)]).astype(np.float64)
    want = {"sum": every.sum(0), "max": every.max(0), "min": every.min(0)}[op]
    tol = 0.5 if dtype in ("bf16", "f16") and op == "sum" else 0
    for got in run(pe_main, npes):
        np.testing.assert_allclose(got, want, atol=tol, rtol=1e-2 if tol else 0)


def test_all_reduce_in_place_and_a_count_below_the_length(npes):
    def pe_main():
        x = rshmem.empty(10, "i32")
        x[...] = rshmem.my_pe() + 1
        rshmem.all_reduce(x, count=6)
        return x.copy()

    total = npes * (npes + 1) // 2
    for pe, got in enumerate(run(pe_main, npes)):
        assert got.tolist() == [total] * 6 + [pe + 1] * 4


@pytest.mark.parametrize("dtype", ["f32", "i64", "bf16"])
def test_reduce_scatter_gives_each_pe_its_chunk(npes, dtype):
    count = 9

    def pe_main():
        x, out = rshmem.empty(npes * count, dtype), rshmem.empty(count, dtype)
        fill(x, values(rshmem.my_pe(), npes * count, dtype, seed=2))
        rshmem.reduce_scatter(x, out)
        return read(out)

    total = sum(values(pe, npes * count, dtype, seed=2) for pe in range(npes)).astype(np.float64)
    for pe, got in enumerate(run(pe_main, npes)):
        np.testing.assert_allclose(got, total[pe * count:(pe + 1) * count], atol=0.5 if dtype == "bf16" else 0)


def test_reduce_scatter_in_place_writes_the_own_chunk(npes):
    def pe_main():
        x = rshmem.empty(npes * 4, "f32")
        x[...] = np.arange(npes * 4) * (rshmem.my_pe() + 1)
        return rshmem.reduce_scatter(x).copy()

    scale = npes * (npes + 1) // 2
    for pe, got in enumerate(run(pe_main, npes)):
        assert got.tolist() == (np.arange(pe * 4, pe * 4 + 4) * scale).tolist()


@pytest.mark.parametrize("dtype", ["f32", "bf16", "u8", "i64", "fp8_e4m3"])
def test_all_gather_any_type(npes, dtype):
    count = 5

    def pe_main():
        x, out = rshmem.empty(count, dtype), rshmem.empty(npes * count, dtype)
        x[...] = np.arange(count) + 10 * rshmem.my_pe() + 1
        rshmem.all_gather(x, out)
        return np.asarray(out).copy()

    want = np.concatenate([np.arange(count) + 10 * pe + 1 for pe in range(npes)])
    for got in run(pe_main, npes):
        assert got.astype(np.int64).tolist() == want.tolist()


def test_all_gather_in_place(npes):
    def pe_main():
        buf = rshmem.empty((npes, 3), "i32")
        buf[rshmem.my_pe()] = rshmem.my_pe() + 1
        rshmem.all_gather(buf)
        return buf.copy()

    for got in run(pe_main, npes):
        assert got.tolist() == [[pe + 1] * 3 for pe in range(npes)]


def test_all_gather_v_packs_each_pes_count(npes):
    counts = [pe + 2 for pe in range(npes)]

    def pe_main():
        me = rshmem.my_pe()
        x, out = rshmem.empty(max(counts), "f32"), rshmem.empty(sum(counts), "f32")
        x[...] = me + 1
        rshmem.all_gather_v(x[:counts[me]], out, counts)
        return out.copy()

    want = sum(([pe + 1.0] * c for pe, c in enumerate(counts)), [])
    for got in run(pe_main, npes):
        assert got.tolist() == want


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_all_reduce_rmsnorm_matches_numpy(npes, dtype):
    rows, hidden, eps = 3, 64, 1e-5

    def pe_main():
        x, res = (rshmem.empty((rows, hidden), dtype) for _ in range(2))
        w = rshmem.empty(hidden, dtype)
        out = rshmem.empty((rows, hidden), dtype)
        fill(x, data(rshmem.my_pe(), rows * hidden, seed=3) / 8)
        fill(res, data(99, rows * hidden, seed=4) / 8)  # the same residual on every PE
        fill(w, np.linspace(0.5, 1.5, hidden))
        rshmem.all_reduce_rmsnorm(x, res, w, out, eps=eps)
        return read(res), read(out)

    xs = [read_ref(data(pe, rows * hidden, seed=3) / 8, dtype) for pe in range(npes)]
    res = read_ref(data(99, rows * hidden, seed=4) / 8, dtype) + sum(xs)
    res = read_ref(res, dtype).reshape(rows, hidden)
    w = read_ref(np.linspace(0.5, 1.5, hidden), dtype)
    want = res / np.sqrt((res ** 2).mean(1, keepdims=True) + eps) * w
    tol = 2e-2 if dtype == "bf16" else 1e-5
    for got_res, got_out in run(pe_main, npes):
        np.testing.assert_allclose(got_res, res, rtol=tol, atol=tol)
        np.testing.assert_allclose(got_out, want, rtol=tol, atol=tol)


def read_ref(v, dtype):
    """`v` rounded to `dtype` as f64."""
    if dtype == "bf16":
        from rshmem.bits import bf16_to_f32, f32_to_bf16

        return bf16_to_f32(f32_to_bf16(np.asarray(v, np.float32))).astype(np.float64)
    return np.asarray(v, np.float32).astype(np.float64)


def test_bad_collective_arguments_are_refused_before_anything_runs():
    def pe_main():
        x, out = rshmem.empty(8, "f32"), rshmem.empty(4, "f32")
        with pytest.raises(rshmem.ArgumentError, match="`dst` holds 4 elements, but an all-reduce of 8"):
            rshmem.all_reduce(x, out)
        with pytest.raises(rshmem.ArgumentError, match="is i32, but"):
            rshmem.all_reduce(x, rshmem.empty(8, "i32"))
        with pytest.raises(rshmem.ArgumentError, match="cannot be reduced"):
            rshmem.all_reduce(rshmem.empty(8, "u8"))
        with pytest.raises(rshmem.ArgumentError, match='"sum", "max" or "min"'):
            rshmem.all_reduce(x, op="prod")
        with pytest.raises(rshmem.ArgumentError, match="all_gather_v"):
            rshmem.all_gather_v(x, out, [1])  # one count for two PEs
        rshmem.barrier_all()

    run(pe_main, 2)


def test_the_native_step_counters_count_each_call_once(npes):
    """`_native.profile`: the per-step host time of the native calls (docs/python.md), counted
    only while on, once per step per call, cleared when taken."""
    from rshmem import _native

    calls = 3

    def pe_main():
        x = rshmem.empty(8, "f32")
        rshmem.all_reduce(x)
        rshmem.barrier_all()
        if rshmem.my_pe() == 0:
            _native.profile_take()
            _native.profile(True)
        rshmem.barrier_all()
        for _ in range(calls):
            rshmem.all_reduce(x)
        rshmem.barrier_all()
        if rshmem.my_pe() == 0:
            _native.profile(False)
            return _native.profile_take()
        return None

    taken = run(pe_main, npes)[0]
    assert set(taken) == {"args", "release_gil", "stream", "op", "take_gil"}
    for step, (count, ns) in taken.items():
        assert count == npes * calls, (step, taken)
    assert taken["op"][1] > 0
    assert _native.profile_take()["op"] == (0, 0)
