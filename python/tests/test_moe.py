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
        # The FP8 grouped GEMM's layout for A: ⌈hidden/128⌉ x capacity.
        assert tuple(bufs.recv_x_scales.shape) == (-(-HIDDEN // 128), bufs.capacity())
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


L_TOP_K, L_HIDDEN, L_INTER, L_TOKENS = 2, 32, 16, 4


def layer_weights(e):
    """Expert `e`'s gate, up (intermediate x hidden) and down (hidden x intermediate),
    bf16-exact f32."""
    def w(shape, salt):
        return bf16_to_f32(f32_to_bf16(data(e, int(np.prod(shape)), seed=salt) / 256)).reshape(shape)
    return w((L_INTER, L_HIDDEN), 61), w((L_INTER, L_HIDDEN), 62), w((L_HIDDEN, L_INTER), 63)


def layer_routing(pe, experts):
    rng = np.random.default_rng(pe + 71)
    idx = np.stack([rng.choice(experts, L_TOP_K, replace=False) for _ in range(L_TOKENS)]).astype(np.int32)
    idx[1, 0] = -1
    w = rng.uniform(0.1, 1.0, (L_TOKENS, L_TOP_K)).astype(np.float32)
    return idx, w


def layer_x(pe):
    return bf16_to_f32(f32_to_bf16(data(pe, L_TOKENS * L_HIDDEN, seed=64) / 8)).reshape(L_TOKENS, L_HIDDEN)


def layer_reference(pe, experts):
    """Each token: Σ weight × bf16(down · bf16(silu(gate · x) × up · x)) over its valid
    entries, in f32, rounded once."""
    x, (idx, w) = layer_x(pe), layer_routing(pe, experts)
    out = np.zeros((L_TOKENS, L_HIDDEN), np.float32)
    for t in range(L_TOKENS):
        for kk in range(L_TOP_K):
            e = idx[t, kk]
            if e < 0:
                continue
            gate, up, down = (m.astype(np.float64) for m in layer_weights(e))
            g, u = gate @ x[t], up @ x[t]
            act = bf16_to_f32(f32_to_bf16((g / (1 + np.exp(-g)) * u).astype(np.float32)))
            row = bf16_to_f32(f32_to_bf16((down @ act).astype(np.float32)))
            out[t] += np.float32(w[t, kk]) * row
    return bf16_to_f32(f32_to_bf16(out)).astype(np.float64)


def test_fused_layer_matches_numpy():
    npes = 2
    experts = 2 * npes

    def pe_main():
        me = rshmem.my_pe()
        bufs = rshmem.moe_layer_buffers(experts, L_TOP_K, L_HIDDEN, L_INTER, max_tokens=L_TOKENS)
        local = experts // npes
        mine = [layer_weights(me * local + j) for j in range(local)]
        gate, up = np.stack([m[0] for m in mine]), np.stack([m[1] for m in mine])
        w1 = rshmem.empty((local, 2 * L_INTER, L_HIDDEN), "bf16")
        fill(w1, rshmem.moe_interleave_gate_up(gate, up))
        w2 = rshmem.empty((local, L_HIDDEN, L_INTER), "bf16")
        fill(w2, np.stack([m[2] for m in mine]))
        weights = rshmem.moe_layer_weights(bufs, w1, w2)
        x = rshmem.empty((L_TOKENS, L_HIDDEN), "bf16")
        fill(x, layer_x(me))
        idx, w = rshmem.empty((L_TOKENS, L_TOP_K), "i32"), rshmem.empty((L_TOKENS, L_TOP_K), "f32")
        idx[...], w[...] = layer_routing(me, experts)
        out = rshmem.empty((L_TOKENS, L_HIDDEN), "bf16")
        for _ in range(2):  # two calls on one buffer set
            rshmem.moe_layer(bufs, weights, x, idx, w, out)
        assert bufs.recv_x.shape[1] == L_HIDDEN and bufs.activations.shape[1] == L_INTER
        assert bufs.capacity() == npes * L_TOKENS and bufs.skipped_entry() is None
        return read(out), int(np.asarray(bufs.recv_count).sum())

    results = run(pe_main, npes)
    for pe, (got, _) in enumerate(results):
        want = layer_reference(pe, experts)
        np.testing.assert_allclose(got, want, rtol=2 ** -6, atol=2 ** -6 * np.abs(want).max())
    entries = sum(int((layer_routing(pe, experts)[0] >= 0).sum()) for pe in range(npes))
    assert sum(rows for _, rows in results) == entries


def test_fused_layer_errors():
    def pe_main():
        bufs = rshmem.moe_layer_buffers(2, L_TOP_K, L_HIDDEN, L_INTER, max_tokens=L_TOKENS)
        other = rshmem.moe_layer_buffers(2, L_TOP_K, L_HIDDEN, L_INTER, max_tokens=L_TOKENS)
        w1 = rshmem.empty((2, 2 * L_INTER, L_HIDDEN), "bf16")
        w2 = rshmem.empty((2, L_HIDDEN, L_INTER), "bf16")
        with pytest.raises(rshmem.ArgumentError, match="`gate_up` holds 1024 elements, but 2 local experts .* need 2048"):
            rshmem.moe_layer_weights(bufs, w1[:1], w2)
        with pytest.raises(rshmem.ArgumentError, match="`down` is f32, but the fused layer needs bf16"):
            rshmem.moe_layer_weights(bufs, w1, rshmem.empty((2, L_HIDDEN, L_INTER), "f32"))
        weights = rshmem.moe_layer_weights(other, w1, w2)
        x, out = rshmem.empty((L_TOKENS, L_HIDDEN), "bf16"), rshmem.empty((L_TOKENS, L_HIDDEN), "bf16")
        idx, w = rshmem.empty((L_TOKENS, L_TOP_K), "i32"), rshmem.empty((L_TOKENS, L_TOP_K), "f32")
        with pytest.raises(rshmem.ArgumentError, match="weights were bound to another MoeLayerBuffers"):
            rshmem.moe_layer(bufs, weights, x, idx, w, out)
        weights = rshmem.moe_layer_weights(bufs, w1, w2)
        big = rshmem.empty((L_TOKENS + 1, L_TOP_K), "i32")
        with pytest.raises(rshmem.ArgumentError, match="max_tokens"):
            rshmem.moe_layer(bufs, weights, x, big, w, out)
        with pytest.raises(rshmem.ArgumentError, match="`topk_idx` is f32"):
            rshmem.moe_layer(bufs, weights, x, w, w, out)
        with pytest.raises(rshmem.ArgumentError, match="fused layer's buffers: use rshmem.moe_layer"):
            rshmem.moe_dispatch(bufs, x, idx, w)
        normal = rshmem.moe_buffers(2, L_TOP_K, L_HIDDEN, max_tokens=L_TOKENS)
        with pytest.raises(rshmem.ArgumentError, match="normal-mode buffers: use rshmem.moe_dispatch"):
            rshmem.moe_layer_weights(normal, w1, w2)
        with pytest.raises(rshmem.ArgumentError, match="only the fused layer"):
            normal.puts_to(0)
        assert bufs.puts_to(0) is False
        with pytest.raises(rshmem.ArgumentError, match="must both be experts x intermediate x hidden"):
            rshmem.moe_interleave_gate_up(np.zeros((2, 3)), np.zeros((2, 3)))

    run(pe_main, 1)


def test_moe_buffers_over_a_team():
    """Normal-mode dispatch and combine within each row of a 2 x 2 split of 4 PEs: every PE
    makes the same allocations (they are collective over all PEs), each row routes among
    itself."""

    def pe_main():
        me = rshmem.my_pe()
        row, _ = rshmem.team_split_2d(2)
        x, idx, w = inputs(2)
        idx[...], w[...] = routing(row.my_pe, 2)
        out = rshmem.empty((TOKENS, HIDDEN), "bf16")
        bufs = rshmem.moe_buffers(EXPERTS, TOP_K, HIDDEN, max_tokens=TOKENS, team=row)
        layout = rshmem.moe_dispatch(bufs, x, idx, w)
        assert len(layout.expert_rows) == EXPERTS // 2
        rshmem.moe_combine(bufs, layout, bufs.recv_x, out)
        return read(out), sum(layout.expert_rows)

    results = run(pe_main, 4)
    for pe, (got, _) in enumerate(results):
        idx, w = routing(pe % 2, 2)
        x = bf16_to_f32(f32_to_bf16(data(pe, TOKENS * HIDDEN, seed=11) / 8)).reshape(TOKENS, HIDDEN)
        total = np.where(idx >= 0, w, 0).sum(1, dtype=np.float32)
        want = bf16_to_f32(f32_to_bf16(x * total[:, None])).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
    for r in (0, 2):  # each row's entries arrived within the row
        entries = sum(int((routing(pe % 2, 2)[0] >= 0).sum()) for pe in (r, r + 1))
        assert results[r][1] + results[r + 1][1] == entries
