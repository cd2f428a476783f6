"""The GEMM and the fused tensor-parallel ops against numpy (f64 of the rounded inputs)."""

import numpy as np
import pytest

import rshmem
from conftest import data, fill, read, run


def rounded(v, dtype):
    from rshmem.bits import bf16_to_f32, f32_to_bf16

    v = np.asarray(v, np.float32)
    if dtype == "bf16":
        return bf16_to_f32(f32_to_bf16(v)).astype(np.float64)
    return v.astype(np.float16).astype(np.float64)


@pytest.mark.parametrize("dtype,out_dtype", [("bf16", "f32"), ("f16", "f16"), ("bf16", "bf16")])
@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_gemm_matches_numpy(dtype, out_dtype, layout):
    m, n, k = 24, 16, 32

    def pe_main():
        a = rshmem.empty((m, k), dtype)
        b = rshmem.empty((n, k) if layout == "nk" else (k, n), dtype)
        c = rshmem.empty((m, n), out_dtype)
        fill(a, data(0, m * k, seed=5) / 16)
        fill(b, data(1, n * k, seed=6) / 16)
        rshmem.gemm(a, b, c, b_layout=layout)
        return read(c)

    a = rounded(data(0, m * k, seed=5) / 16, dtype).reshape(m, k)
    b = rounded(data(1, n * k, seed=6) / 16, dtype).reshape((n, k) if layout == "nk" else (k, n))
    want = a @ (b.T if layout == "nk" else b)
    (got,) = run(pe_main, 1)
    tol = 1e-4 if out_dtype == "f32" else 3e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_gemm_shape_and_type_errors():
    def pe_main():
        a, b = rshmem.empty((8, 16), "bf16"), rshmem.empty((8, 24), "bf16")
        c = rshmem.empty((8, 8), "f32")
        with pytest.raises(rshmem.ArgumentError, match="K differs"):
            rshmem.gemm(a, b, c)
        with pytest.raises(rshmem.ArgumentError, match="bf16 or f16 inputs"):
            rshmem.gemm(rshmem.empty((8, 16), "f32"), rshmem.empty((8, 16), "f32"), c)
        with pytest.raises(rshmem.ArgumentError, match="writes f32 or bf16"):
            rshmem.gemm(a, rshmem.empty((8, 16), "bf16"), rshmem.empty((8, 8), "i32"))
        with pytest.raises(rshmem.ArgumentError, match="k"):  # rshmem's own check: k % 8
            rshmem.gemm(rshmem.empty((8, 12), "bf16"), rshmem.empty((8, 12), "bf16"), c)

    run(pe_main, 1)


def test_all_gather_gemm_and_gemm_reduce_scatter(npes):
    m, n, k = 16 * npes, 16, 32

    def pe_main():
        me = rshmem.my_pe()
        a, b = rshmem.empty((m, k), "bf16"), rshmem.empty((n, k), "bf16")
        c = rshmem.empty((m, n), "bf16")
        rows = m // npes
        fill(a[me * rows:(me + 1) * rows], data(me, rows * k, seed=7) / 16)
        fill(b, data(50, n * k, seed=8) / 16)
        rshmem.all_gather_gemm(a, b, c)
        gathered = read(c)
        # K sharded: each PE its own A and B of k columns, its rows of the sum.
        a2, b2 = rshmem.empty((m, k), "bf16"), rshmem.empty((n, k), "bf16")
        c2 = rshmem.empty((rows, n), "bf16")
        fill(a2, data(me, m * k, seed=9) / 16)
        fill(b2, data(me, n * k, seed=10) / 16)
        rshmem.gemm_reduce_scatter(a2, b2, c2)
        return gathered, read(c2)

    rows = m // npes
    a = np.concatenate([rounded(data(pe, rows * k, seed=7) / 16, "bf16").reshape(rows, k) for pe in range(npes)])
    b = rounded(data(50, n * k, seed=8) / 16, "bf16").reshape(n, k)
    want_ag = a @ b.T
    want_rs = sum(rounded(data(pe, m * k, seed=9) / 16, "bf16").reshape(m, k)
                  @ rounded(data(pe, n * k, seed=10) / 16, "bf16").reshape(n, k).T for pe in range(npes))
    for pe, (ag, rs) in enumerate(run(pe_main, npes)):
        np.testing.assert_allclose(ag, want_ag, rtol=2e-2, atol=2e-2 * np.abs(want_ag).max())
        mine = want_rs[pe * rows:(pe + 1) * rows]
        np.testing.assert_allclose(rs, mine, rtol=3e-2, atol=3e-2 * np.abs(want_rs).max())
