"""The GEMM and the fused tensor-parallel ops against numpy (f64 of the rounded inputs)."""

import numpy as np
import pytest

import rshmem
from conftest import data, fill, read, run
from rshmem.bits import f32_to_bf16


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


def test_gemm_on_ordinary_arrays_and_mixes():
    """The GEMM reaches no peer: ordinary numpy arrays (host memory on the simulator) work as
    symmetric tensors do, alone or mixed with them, on every PE independently."""
    m, n, k, npes = 20, 16, 24, 2

    def pe_main():
        me = rshmem.my_pe()
        av, bv = data(me, m * k, seed=21) / 16, data(me, n * k, seed=22) / 16
        # f16 in, f32 out: all ordinary.
        a16, b16 = av.astype(np.float16).reshape(m, k), bv.astype(np.float16).reshape(n, k)
        c32 = np.full((m, n), np.nan, np.float32)
        rshmem.gemm(a16, b16, c32)
        # bf16 bits tagged with rshmem.typed: a symmetric, b and out ordinary.
        a = rshmem.empty((m, k), "bf16")
        fill(a, av)
        b = rshmem.typed(f32_to_bf16(bv).reshape(n, k), "bf16")
        c = rshmem.typed(np.zeros((m, n), np.uint16), "bf16")
        rshmem.gemm(a, b, c)
        # Out symmetric, inputs ordinary, B k x n.
        bkn = np.ascontiguousarray(b16.T)
        c2 = rshmem.empty((m, n), "f32")
        rshmem.gemm(a16, bkn, c2, b_layout="kn")
        return c32, read(c), read(c2)

    for pe, (c32, cbf, ckn) in enumerate(run(pe_main, npes)):
        av, bv = data(pe, m * k, seed=21) / 16, data(pe, n * k, seed=22) / 16
        want16 = rounded(av, "f16").reshape(m, k) @ rounded(bv, "f16").reshape(n, k).T
        np.testing.assert_allclose(c32, want16, rtol=1e-5, atol=1e-5 * np.abs(want16).max())
        np.testing.assert_allclose(ckn, want16, rtol=1e-5, atol=1e-5 * np.abs(want16).max())
        wantbf = rounded(av, "bf16").reshape(m, k) @ rounded(bv, "bf16").reshape(n, k).T
        np.testing.assert_allclose(cbf, wantbf, rtol=1e-2, atol=1e-2 * np.abs(wantbf).max())


def test_gemm_on_ordinary_arrays_refuses_what_it_cannot_take():
    def pe_main():
        a, b = np.zeros((8, 16), np.float16), np.zeros((8, 16), np.float16)
        c = np.zeros((8, 8), np.float32)
        with pytest.raises(rshmem.ArgumentError, match="`a` is not contiguous"):
            rshmem.gemm(np.zeros((8, 32), np.float16)[:, ::2], b, c)
        # An untagged uint16 array is u16, not bf16.
        with pytest.raises(rshmem.ArgumentError, match="A and B of u16"):
            rshmem.gemm(a.view(np.uint16), b.view(np.uint16), c)
        with pytest.raises(rshmem.ArgumentError, match="rshmem.typed: .*cannot hold bf16"):
            rshmem.typed(np.zeros(4, np.float32), "bf16")
        # A view starting in a symmetric tensor and running past its end.
        sym = rshmem.empty(64, "f16")
        past = np.lib.stride_tricks.as_strided(sym, shape=(8, 16), strides=(32, 2))
        with pytest.raises(rshmem.ArgumentError, match="runs past its end"):
            rshmem.gemm(past, b, c)
        # rshmem's own checks hold for ordinary memory: a misaligned start.
        raw = np.zeros(8 * 16 + 1, np.float16)[1:].reshape(8, 16)
        with pytest.raises(rshmem.ArgumentError, match="`a` starts.*16-byte aligned"):
            rshmem.gemm(raw, b, c)
        # Collectives still need symmetric memory.
        with pytest.raises(rshmem.ArgumentError, match="not on PE 0's symmetric heap"):
            rshmem.all_reduce(c)

    run(pe_main, 1)


def grouped_reference(a, b, ends, layout):
    """Each group's rows of `a` times its B; rows in no group NaN."""
    c = np.full((a.shape[0], b.shape[1] if layout == "nk" else b.shape[2]), np.nan)
    start = 0
    for g, end in enumerate(ends):
        bg = b[g].T if layout == "nk" else b[g]
        c[start:end] = a[start:end] @ bg
        start = end
    return c


@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_grouped_gemm_offsets_and_masked(layout):
    groups, n, k = 3, 16, 24
    ends = [5, 5, 13]  # group 1 empty; rows 13.. in no group
    m = 16

    def pe_main():
        a = rshmem.empty((m, k), "bf16")
        b = rshmem.empty((groups, n, k) if layout == "nk" else (groups, k, n), "bf16")
        fill(a, data(0, m * k, seed=31) / 8)
        fill(b, data(1, groups * n * k, seed=32) / 8)
        offs = rshmem.empty(groups, "i32")
        offs[...] = ends
        c = rshmem.empty((m, n), "f32")
        c[...] = np.nan
        rshmem.grouped_gemm(a, b, c, offsets=offs, b_layout=layout)
        # Masked: G x max_m rows, group g's first counts[g].
        max_m = 6
        am = rshmem.empty((groups, max_m, k), "bf16")
        fill(am, data(2, groups * max_m * k, seed=33) / 8)
        counts = rshmem.empty(groups, "u32")
        counts[...] = [6, 0, 2]
        cm = rshmem.empty((groups, max_m, n), "bf16")
        fill(cm, np.full(groups * max_m * n, 99.0))
        rshmem.grouped_gemm(am, b, cm, counts=counts, b_layout=layout)
        return c.copy(), read(cm)

    ((c, cm),) = run(pe_main, 1)
    a = rounded(data(0, m * k, seed=31) / 8, "bf16").reshape(m, k)
    bshape = (groups, n, k) if layout == "nk" else (groups, k, n)
    b = rounded(data(1, groups * n * k, seed=32) / 8, "bf16").reshape(bshape)
    want = grouped_reference(a, b, ends, layout)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(c[ok], want[ok], rtol=1e-5, atol=1e-5 * np.abs(want[ok]).max())
    am = rounded(data(2, groups * 6 * k, seed=33) / 8, "bf16").reshape(groups, 6, k)
    for g, count in enumerate([6, 0, 2]):
        bg = b[g].T if layout == "nk" else b[g]
        want_g = am[g, :count] @ bg
        np.testing.assert_allclose(cm[g, :count], want_g, rtol=1e-2, atol=1e-2 * np.abs(want_g).max(initial=0))
        assert (cm[g, count:] == 99).all(), f"group {g}: rows past its count were written"


def test_grouped_gemm_errors():
    def pe_main():
        a, b = rshmem.empty((8, 16), "bf16"), rshmem.empty((2, 8, 16), "bf16")
        c, offs = rshmem.empty((8, 8), "f32"), rshmem.empty(2, "i32")
        with pytest.raises(rshmem.ArgumentError, match="`offsets`.*or as `counts`.*one of the two"):
            rshmem.grouped_gemm(a, b, c)
        with pytest.raises(rshmem.ArgumentError, match="one of the two"):
            rshmem.grouped_gemm(a, b, c, offsets=offs, counts=offs)
        with pytest.raises(rshmem.ArgumentError, match="`b` has shape \\(8, 16\\); a 3-D tensor"):
            rshmem.grouped_gemm(a, rshmem.empty((8, 16), "bf16"), c, offsets=offs)
        with pytest.raises(rshmem.ArgumentError, match="K differs"):
            rshmem.grouped_gemm(a, rshmem.empty((2, 8, 24), "bf16"), c, offsets=offs)
        with pytest.raises(rshmem.ArgumentError, match="group sizes are f32"):
            rshmem.grouped_gemm(a, b, c, offsets=rshmem.empty(2, "f32"))
        with pytest.raises(rshmem.ArgumentError, match="not 3 groups"):
            rshmem.grouped_gemm(a, rshmem.empty((3, 8, 16), "bf16"), c, counts=rshmem.empty(3, "u32"))
        # rshmem's own: one size per group.
        with pytest.raises(rshmem.ArgumentError, match="group sizes have 1 elements, but 2"):
            rshmem.grouped_gemm(a, b, c, offsets=offs[:1])
        # Ordinary memory is taken, and checked as the GEMM checks it: a misaligned start.
        raw = np.zeros(8 * 16 + 1, np.float16)[1:].reshape(8, 16)
        with pytest.raises(rshmem.ArgumentError, match="`a` starts.*16-byte aligned"):
            rshmem.grouped_gemm(raw, rshmem.empty((2, 8, 16), "f16"), c, offsets=offs)

    run(pe_main, 1)


FP8_VALUES = np.array([-4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4], np.float32)


def fp8_operand(shape, seed, fmt):
    """Values exact in `fmt` whose products sum exactly in f32, and their codes."""
    rng = np.random.default_rng(seed)
    v = rng.choice(FP8_VALUES, size=shape)
    return v.astype(np.float64), rshmem.bits.f32_to_fp8(v, fmt)


@pytest.mark.parametrize("fmt,out_dtype", [("fp8_e4m3", "bf16"), ("fp8_e5m2", "f32")])
def test_gemm_fp8_per_tensor_and_block(fmt, out_dtype):
    m, n, k = 5, 130, 160  # two N blocks, a ragged second K block
    av, a_codes = fp8_operand((m, k), 41, fmt)
    bv, b_codes = fp8_operand((n, k), 42, fmt)
    kb, nb = -(-k // 128), -(-n // 128)
    sa_block = np.exp2(np.arange(kb * m) % 3 - 1).reshape(kb, m).astype(np.float32)
    sb_block = np.exp2(np.arange(nb * kb) % 2).reshape(nb, kb).astype(np.float32)

    def pe_main():
        a, b = rshmem.empty((m, k), fmt), rshmem.empty((n, k), fmt)
        a[...], b[...] = a_codes, b_codes
        sa, sb = rshmem.empty(1, "f32"), rshmem.empty(1, "f32")
        sa[...], sb[...] = 0.5, 4.0
        c = rshmem.empty((m, n), out_dtype)
        rshmem.gemm_fp8(a, b, c, sa, sb)
        tensor = read(c)
        sa2, sb2 = rshmem.empty((kb, m), "f32"), rshmem.empty((nb, kb), "f32")
        sa2[...], sb2[...] = sa_block, sb_block
        rshmem.gemm_fp8(a, b, c, sa2, sb2, scaling="block")
        return tensor, read(c)

    ((tensor, block),) = run(pe_main, 1)
    want_t = 2.0 * (av @ bv.T)
    want_b = np.zeros((m, n))
    for j in range(kb):
        part = av[:, j * 128:(j + 1) * 128] @ bv[:, j * 128:(j + 1) * 128].T
        want_b += part * sa_block[j][:, None] * np.repeat(sb_block[:, j], 128)[None, :n]
    tol = 0 if out_dtype == "f32" else 2.0 ** -8
    for got, want in ((tensor, want_t), (block, want_b)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("scaling", ["tensor", "block"])
def test_gemm_fp8_split_k(scaling):
    """K split in 3 parts (and automatically, and not at all) gives the exact sums: the values'
    products and sums are exact in f32 here, so every split agrees with numpy to the bit."""
    m, n, k = 3, 40, 640  # five K blocks of 128
    av, a_codes = fp8_operand((m, k), 43, "fp8_e4m3")
    bv, b_codes = fp8_operand((n, k), 44, "fp8_e4m3")
    kb, nb = k // 128, 1

    def pe_main():
        a, b = rshmem.empty((m, k), "fp8_e4m3"), rshmem.empty((n, k), "fp8_e4m3")
        a[...], b[...] = a_codes, b_codes
        if scaling == "tensor":
            sa, sb = rshmem.empty(1, "f32"), rshmem.empty(1, "f32")
            sa[...], sb[...] = 0.5, 2.0
        else:
            sa, sb = rshmem.empty((kb, m), "f32"), rshmem.empty((nb, kb), "f32")
            sa[...], sb[...] = 1.0, 1.0
        outs = []
        for split_k in (1, 3, 0):
            c = rshmem.empty((m, n), "f32")
            rshmem.gemm_fp8(a, b, c, sa, sb, scaling=scaling, split_k=split_k)
            outs.append(read(c))
        with pytest.raises(rshmem.ArgumentError, match=r"SplitK::Parts\(6\) for k = 640.*at most 5 parts"):
            rshmem.gemm_fp8(a, b, rshmem.empty((m, n), "f32"), sa, sb, scaling=scaling, split_k=6)
        return outs

    ((off, three, auto),) = run(pe_main, 1)
    want = av @ bv.T
    for got in (off, three, auto):
        np.testing.assert_array_equal(got, want)


def test_grouped_gemm_fp8_offsets():
    groups, n, k, m = 2, 16, 32, 7
    av, a_codes = fp8_operand((m, k), 51, "fp8_e4m3")
    bv, b_codes = fp8_operand((groups, n, k), 52, "fp8_e4m3")

    def pe_main():
        a, b = rshmem.empty((m, k), "fp8_e4m3"), rshmem.empty((groups, n, k), "fp8_e4m3")
        a[...], b[...] = a_codes, b_codes
        sa, sb = rshmem.empty((1, m), "f32"), rshmem.empty((groups, 1, 1), "f32")
        sa[...], sb[...] = 1.0, [[[2.0]], [[0.5]]]
        offs = rshmem.empty(groups, "u32")
        offs[...] = [3, 7]
        c = rshmem.empty((m, n), "f32")
        rshmem.grouped_gemm_fp8(a, b, c, sa, sb, offsets=offs)
        with pytest.raises(rshmem.ArgumentError, match="B's block scales have 1 elements, but groups x"):
            rshmem.grouped_gemm_fp8(a, b, c, sa, sb[:1], offsets=offs)
        return c.copy()

    (c,) = run(pe_main, 1)
    want = np.concatenate([2.0 * av[:3] @ bv[0].T, 0.5 * av[3:] @ bv[1].T])
    np.testing.assert_array_equal(c, want)


def test_grouped_gemm_fp8_per_tensor_scales():
    """One scale for a, one per group's b (as MoE layers quantise experts): inferred from
    the scales' sizes, or named."""
    groups, n, k, m = 3, 24, 48, 9
    av, a_codes = fp8_operand((m, k), 53, "fp8_e5m2")
    bv, b_codes = fp8_operand((groups, n, k), 54, "fp8_e5m2")

    def pe_main():
        a, b = rshmem.empty((m, k), "fp8_e5m2"), rshmem.empty((groups, n, k), "fp8_e5m2")
        a[...], b[...] = a_codes, b_codes
        sa, sb = rshmem.empty(1, "f32"), rshmem.empty(groups, "f32")
        sa[...], sb[...] = 0.5, [4.0, 1.0, 0.25]
        counts = rshmem.empty(groups, "u32")
        counts[...] = [2, 0, 3]
        c = rshmem.zeros((groups, 3, n), "f32")
        rshmem.grouped_gemm_fp8(a[:groups * 3], b, c.reshape(groups * 3, n), sa, sb, counts=counts)
        named = rshmem.zeros((groups * 3, n), "f32")
        rshmem.grouped_gemm_fp8(a[:groups * 3], b, named, sa, sb, counts=counts, scaling="tensor")
        with pytest.raises(rshmem.ArgumentError, match="B's per-tensor scales have 2 elements, but the 3 groups"):
            rshmem.grouped_gemm_fp8(a[:groups * 3], b, named, sa, sb[:2], counts=counts, scaling="tensor")
        return c.copy(), named.copy()

    ((c, named),) = run(pe_main, 1)
    want = np.zeros((groups, 3, n))
    for g, (count, s) in enumerate(zip([2, 0, 3], [4.0, 1.0, 0.25])):
        want[g, :count] = 0.5 * s * (av[g * 3:g * 3 + count] @ bv[g].T)
    np.testing.assert_array_equal(c, want)
    np.testing.assert_array_equal(named.reshape(groups, 3, n), want)


def test_grouped_and_fp8_gemms_on_ordinary_arrays():
    """The grouped and FP8 GEMMs reach no peer either: every operand (rows, weights, sizes,
    scales, out) may be an ordinary numpy array (host memory on the simulator), and the
    results are those of symmetric tensors, bit for bit."""
    groups, n, k, m = 2, 16, 32, 7
    av, a_codes = fp8_operand((m, k), 61, "fp8_e4m3")
    bv, b_codes = fp8_operand((groups, n, k), 62, "fp8_e4m3")
    a16 = data(0, m * k, seed=63) / 8
    b16 = data(1, groups * n * k, seed=64) / 8
    ends = [3, 7]

    def pe_main():
        out = {}
        # bf16 grouped GEMM: ordinary rows, weights, offsets and out; then symmetric ones.
        a = rshmem.typed(f32_to_bf16(a16).reshape(m, k), "bf16")
        b = rshmem.typed(f32_to_bf16(b16).reshape(groups, n, k), "bf16")
        c = np.full((m, n), np.nan, np.float32)
        rshmem.grouped_gemm(a, b, c, offsets=np.array(ends, np.int32))
        out["grouped"] = c
        sa_, sb_ = rshmem.empty((m, k), "bf16"), rshmem.empty((groups, n, k), "bf16")
        fill(sa_, a16)
        fill(sb_, b16)
        offs, cs = rshmem.empty(groups, "i32"), rshmem.empty((m, n), "f32")
        offs[...] = ends
        rshmem.grouped_gemm(sa_, sb_, cs, offsets=offs)
        out["grouped_sym"] = cs.copy()
        # FP8, per tensor and grouped with block scales: every operand ordinary.
        a8 = rshmem.typed(a_codes, "fp8_e4m3")
        b8 = rshmem.typed(b_codes[0], "fp8_e4m3")
        c8 = np.zeros((m, n), np.float32)
        rshmem.gemm_fp8(a8, b8, c8, np.array([0.5], np.float32), np.array([4.0], np.float32))
        out["fp8"] = c8
        g8 = np.zeros((m, n), np.float32)
        rshmem.grouped_gemm_fp8(a8, rshmem.typed(b_codes, "fp8_e4m3"), g8, np.ones((1, m), np.float32),
                                np.array([[[2.0]], [[0.5]]], np.float32), offsets=np.array(ends, np.uint32))
        out["grouped_fp8"] = g8
        return out

    (got,) = run(pe_main, 1)
    np.testing.assert_array_equal(got["grouped"], got["grouped_sym"])
    a = rounded(a16, "bf16").reshape(m, k)
    b = rounded(b16, "bf16").reshape(groups, n, k)
    want = grouped_reference(a, b, ends, "nk")
    np.testing.assert_allclose(got["grouped"], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    np.testing.assert_array_equal(got["fp8"], 2.0 * (av @ bv[0].T))
    np.testing.assert_array_equal(got["grouped_fp8"], np.concatenate([2.0 * av[:3] @ bv[0].T, 0.5 * av[3:] @ bv[1].T]))


def test_gemm_fp8_errors():
    def pe_main():
        a, b = rshmem.empty((4, 32), "fp8_e4m3"), rshmem.empty((8, 32), "fp8_e4m3")
        s, c = rshmem.empty(1, "f32"), rshmem.empty((4, 8), "f32")
        with pytest.raises(rshmem.ArgumentError, match="fp8_e4m3 or fp8_e5m2 inputs"):
            rshmem.gemm_fp8(rshmem.empty((4, 32), "bf16"), rshmem.empty((8, 32), "bf16"), c, s, s)
        with pytest.raises(rshmem.ArgumentError, match="writes f32 or bf16"):
            rshmem.gemm_fp8(a, b, rshmem.empty((4, 8), "f16"), s, s)
        with pytest.raises(rshmem.ArgumentError, match="scaling 'row'"):
            rshmem.gemm_fp8(a, b, c, s, s, scaling="row")
        with pytest.raises(rshmem.ArgumentError, match="`scale_a` is i32"):
            rshmem.gemm_fp8(a, b, c, rshmem.empty(1, "i32"), s)
        with pytest.raises(rshmem.ArgumentError, match="A's block scales have 1 elements, but"):
            rshmem.gemm_fp8(a, b, c, s, s, scaling="block")
        with pytest.raises(rshmem.ArgumentError, match="not a multiple of 16"):
            rshmem.gemm_fp8(rshmem.empty((4, 24), "fp8_e4m3"), rshmem.empty((8, 24), "fp8_e4m3"), c, s, s)
        with pytest.raises(rshmem.ArgumentError, match="`b` is fp8_e5m2, but this op"):
            rshmem.gemm_fp8(a, rshmem.empty((8, 32), "fp8_e5m2"), c, s, s)

    run(pe_main, 1)


class _Tensor:
    """A stand-in for torch.Tensor (which the simulator tests do without): a symmetric numpy
    array behind torch's four attributes, with dtypes only the native registration knows, so
    an op succeeds only if the extension read the tensor itself."""

    BF16, F32 = object(), object()

    def __init__(self, array, dtype):
        self.array, self.dtype, self.shape = array, dtype, array.shape

    def is_contiguous(self):
        return self.array.flags.c_contiguous

    def numel(self):
        return self.array.size

    def element_size(self):
        return self.array.itemsize

    def stride(self):
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def data_ptr(self):
        return self.array.__array_interface__["data"][0]

    @property
    def nbytes(self):
        return self.array.nbytes


def test_a_registered_tensor_type_is_read_natively():
    from rshmem import _native

    m, n, k = 8, 16, 32

    def operands():
        a, b, c = rshmem.empty((m, k), "bf16"), rshmem.empty((n, k), "bf16"), rshmem.empty((m, n), "f32")
        fill(a, data(0, m * k, seed=2) / 16)
        fill(b, data(1, n * k, seed=3) / 16)
        return a, b, c, _Tensor(a, _Tensor.BF16), _Tensor(b, _Tensor.BF16), _Tensor(c, _Tensor.F32)

    def pe_main():
        a, b, c, ta, tb, tc = operands()
        x = rshmem.empty(64, "f32")
        fill(x, data(rshmem.my_pe(), 64, seed=4))
        rshmem.gemm(a, b, c)
        want_c = read(c)
        c[...] = 0
        rshmem.gemm(ta, tb, tc)
        rshmem.all_reduce(_Tensor(x, _Tensor.F32))  # the count: all of x, read natively
        with pytest.raises(rshmem.ArgumentError, match="`a` has shape \\(256,\\); a 2-D tensor is needed"):
            rshmem.gemm(_Tensor(a.reshape(-1), _Tensor.BF16), tb, tc)
        # Not contiguous: the Python layer reads it, and says so.
        with pytest.raises(rshmem.ArgumentError, match="not contiguous"):
            rshmem.gemm(_Tensor(rshmem.empty((k, m), "bf16").T, _Tensor.BF16), tb, tc)
        return want_c, read(c), read(x)

    def capturing_main():
        # During a capture the Python layer reads every tensor (to keep it with the graph), and
        # knows no such dtype: the error shows the native reading stood aside.
        *_, ta, tb, tc = operands()
        _native.set_capturing(1)
        try:
            with pytest.raises(rshmem.ArgumentError, match="unknown element type"):
                rshmem.gemm(ta, tb, tc)
        finally:
            _native.set_capturing(-1)

    # Process-wide, as torch's registration is: around the simulated PEs (threads), not inside.
    _native.set_tensor_type(_Tensor, {_Tensor.BF16: "bf16", _Tensor.F32: "f32"})
    try:
        npes = 2
        got = run(pe_main, npes)
        run(capturing_main, 1)
    finally:
        _native.set_tensor_type(None, None)
    want_x = sum(data(p, 64, seed=4).astype(np.float64) for p in range(npes))
    for want_c, c, x in got:
        np.testing.assert_array_equal(c, want_c)
        np.testing.assert_array_equal(x, want_x)
