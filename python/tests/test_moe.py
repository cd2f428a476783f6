"""MoE dispatch and combine, normal and low-latency: a round trip through identity experts
gives each token back times the sum of its valid weights (f32, rounded once)."""

import numpy as np
import pytest

import rshmem
from conftest import data, fill, read, run
from rshmem.bits import bf16_to_f32, f32_to_bf16

EXPERTS, TOP_K, HIDDEN, TOKENS = 6, 2, 32, 5


def routing(pe, npes):
    rng = np.random.default_rng(pe + 17)
    idx = np.stack([rng.choice(EXPERTS, TOP_K, replace=False) for _ in range(TOKENS)]).astype(np.int32)
    idx[0, 1] = -1  # an entry routed nowhere
    w = rng.uniform(0.1, 1.0, (TOKENS, TOP_K)).astype(np.float32)
    return idx, w


def expected(pe, npes):
    idx, w = routing(pe, npes)
    x = bf16_to_f32(f32_to_bf16(data(pe, TOKENS * HIDDEN, seed=11) / 8)).reshape(TOKENS, HIDDEN)
    total = np.where(idx >= 0, w, 0).sum(1, dtype=np.float32)
    return bf16_to_f32(f32_to_bf16(x * total[:, None])).astype(np.float64)


def inputs(npes):
    me = rshmem.my_pe()
    x = rshmem.empty((TOKENS, HIDDEN), "bf16")
    idx = rshmem.empty((TOKENS, TOP_K), "i32")
    w = rshmem.empty((TOKENS, TOP_K), "f32")
    fill(x, data(me, TOKENS * HIDDEN, seed=11) / 8)
    idx[...], w[...] = routing(me, npes)
    return x, idx, w


@pytest.mark.parametrize("npes", [1, 2, 3])
def test_normal_dispatch_and_combine_round_trip(npes):
    def pe_main():
        x, idx, w = inputs(npes)
        bufs = rshmem.moe_buffers(EXPERTS, TOP_K, HIDDEN, max_tokens=TOKENS, align=4)
        layout = rshmem.moe_dispatch(bufs, x, idx, w)
        assert layout.rows % 4 == 0 and len(layout.expert_rows) == EXPERTS // npes
        recv = bufs.recv_x
        assert recv.shape[1] == HIDDEN and recv.rshmem_dtype == "bf16"
        out = rshmem.empty((TOKENS, HIDDEN), "bf16")
        rshmem.moe_combine(bufs, layout, recv, out)  # identity experts: their input back
        return read(out), sum(layout.expert_rows)

    results = run(pe_main, npes)
    for pe, (got, _) in enumerate(results):
        np.testing.assert_allclose(got, expected(pe, npes), rtol=1e-2, atol=1e-2)
    # Every valid (token, expert) entry arrived once at its expert.
    entries = sum(int((routing(pe, npes)[0] >= 0).sum()) for pe in range(npes))
    assert sum(rows for _, rows in results) == entries


@pytest.mark.parametrize("npes", [1, 2])
def test_fp8_dispatch_delivers_the_bytes_and_scales_as_sent(npes):
    def pe_main():
        me = rshmem.my_pe()
        _, idx, w = inputs(npes)
        idx[...] = np.where(idx >= 0, idx, 0)
        x = rshmem.empty((TOKENS, HIDDEN), "fp8_e4m3")
        scales = rshmem.empty((TOKENS, 1), "f32")
        x[...] = (np.arange(TOKENS)[:, None] * 7 + me * 40 + np.arange(HIDDEN)) % 120
        scales[...] = me * 100 + np.arange(TOKENS)[:, None] + 1.0
        bufs = rshmem.moe_buffers(EXPERTS, TOP_K, HIDDEN, max_tokens=TOKENS, fp8=True)
        layout = rshmem.moe_dispatch(bufs, x, idx, w, x_scales=scales)
        rows = sum(layout.expert_rows)
        got_x = np.asarray(bufs.recv_x_fp8).reshape(-1, HIDDEN)
        got_s = np.asarray(bufs.recv_x_scales).reshape(-1)
        # Each received row is one some PE sent: its scale says which token of which PE.
        seen = set()
        for off, count in zip(layout.expert_offsets, layout.expert_rows):
            for r in range(off, off + count):
                src, t = divmod(int(got_s[r]) - 1, 100)
                want = (t * 7 + src * 40 + np.arange(HIDDEN)) % 120
                assert got_x[r].tolist() == want.tolist()
                seen.add(r)
        assert len(seen) == rows
        return rows

    run(pe_main, npes)


@pytest.mark.parametrize("npes", [1, 2])
def test_low_latency_dispatch_and_combine_round_trip(npes):
    def pe_main():
        x, idx, w = inputs(npes)
        ll = rshmem.moe_buffers(EXPERTS, TOP_K, HIDDEN, max_tokens=TOKENS, low_latency=True)
        out = rshmem.empty((TOKENS, HIDDEN), "bf16")
        for _ in range(2):  # two rounds on the same buffers
            rshmem.moe_ll_dispatch(ll, x, idx)
            rshmem.moe_ll_combine(ll, ll.recv_x, idx, w, out)
        counts = np.asarray(ll.recv_count).copy()
        return read(out), int(counts.sum())

    results = run(pe_main, npes)
    for pe, (got, _) in enumerate(results):
        np.testing.assert_allclose(got, expected(pe, npes), rtol=1e-2, atol=1e-2)
    entries = sum(int((routing(pe, npes)[0] >= 0).sum()) for pe in range(npes))
    assert sum(c for _, c in results) == entries


def test_moe_argument_errors():
    def pe_main():
        x, idx, w = inputs(1)
        bufs = rshmem.moe_buffers(EXPERTS, TOP_K, HIDDEN, max_tokens=TOKENS)
        with pytest.raises(rshmem.ArgumentError, match="topk_idx.*i32|i32.*topk_idx"):
            rshmem.moe_dispatch(bufs, x, w, w)
        with pytest.raises(rshmem.ArgumentError, match="normal-mode buffers: use rshmem.moe_dispatch"):
            rshmem.moe_ll_dispatch(bufs, x, idx)
        with pytest.raises(rshmem.ArgumentError, match="written by the dispatch only"):
            rshmem.all_reduce(bufs.recv_x)
        bad = rshmem.empty((TOKENS, TOP_K), "i32")
        bad[...] = EXPERTS + 3
        with pytest.raises(rshmem.ArgumentError, match="expert"):
            rshmem.moe_dispatch(bufs, x, bad, w)

    run(pe_main, 1)
