#!/usr/bin/env python3
"""rshmem's Python package on GPUs, under torchrun: every op against torch references computed
on each rank from every rank's (deterministic) inputs — collectives (all PEs and a team), the
GEMMs (on symmetric and ordinary torch tensors, grouped, FP8 per-tensor and block-scaled), the
fused tensor-parallel ops, MoE dispatch/combine and the fused MoE layer — rshmem's graphs and
torch.cuda.graph (decode-sized GEMMs, which split K eagerly, included), your own kernels by
name, bad input. Ran on an H100 with 2 and 3 ranks (2026-12-05, docs/python.md); the
decode-GEMM part of the torch.cuda.graph check not yet.

  device run (one H200, 3 ranks sharing it under MPS; scripts/gpu-check.sh part `python`):
    source scripts/mps.sh && mps_start
    torchrun --nproc-per-node 3 .gpu/scripts/python_gpu_check.py [--kernels .gpu/kernels/...json]
    torchrun --nproc-per-node 3 .gpu/scripts/python_gpu_check.py --fail-rank 1   # must fail naming rank 1

Each check prints `ok NAME` or `FAIL NAME: why` on rank 0 (every rank checks; a rank's failure
is reported by it); the exit status is 1 if any check failed. NCCL is not used: it refuses
ranks that share a GPU, so the references are torch computations on each rank.
"""
import argparse
import os
import sys
import traceback

import torch
import torch.distributed as dist

import rshmem

FAILED = []


def check(name, fn):
    try:
        fn()
        if rshmem.my_pe() == 0:
            print(f"ok {name}", flush=True)
    except Exception:  # noqa: BLE001 - every failure is reported, the run goes on
        FAILED.append(name)
        print(f"FAIL {name} (rank {rshmem.my_pe()}):\n{traceback.format_exc()}", flush=True)


def inputs(rank, n, dtype, seed=0):
    g = torch.Generator().manual_seed(1000 * seed + rank)
    return (torch.randint(-50, 50, (n,), generator=g).float() + 0.25).to(dtype).cuda()


def close(got, want, tol):
    if want.numel() == 0:  # an empty group
        return
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol * max(1.0, want.abs().max().item()))


def collectives(npes, me):
    for dtype, tol in ((torch.float32, 0), (torch.bfloat16, 1e-2)):
        for count in (1000, 1 << 20):
            x, out = rshmem.empty(count, dtype), rshmem.empty(count, dtype)
            x.copy_(inputs(me, count, dtype))
            rshmem.all_reduce(x, out)
            torch.cuda.synchronize()
            want = sum(inputs(r, count, dtype).float() for r in range(npes))
            close(out, want, tol)
            rshmem.all_reduce(x)  # in place, on torch's current stream
            torch.cuda.synchronize()
            close(x, want, tol)
    count = 4096
    x, out = rshmem.empty(npes * count, torch.bfloat16), rshmem.empty(count, torch.bfloat16)
    x.copy_(inputs(me, npes * count, torch.bfloat16, seed=1))
    rshmem.reduce_scatter(x, out)
    torch.cuda.synchronize()
    want = sum(inputs(r, npes * count, torch.bfloat16, seed=1).float() for r in range(npes))
    close(out, want[me * count:(me + 1) * count], 1e-2)
    src, dst = rshmem.empty(count, torch.float32), rshmem.empty(npes * count, torch.float32)
    src.fill_(me + 1)
    rshmem.all_gather(src, dst)
    torch.cuda.synchronize()
    close(dst, torch.cat([torch.full((count,), r + 1.0) for r in range(npes)]).cuda(), 0)
    counts = [100 * (r + 1) for r in range(npes)]
    v = rshmem.empty(sum(counts), torch.int32)
    rshmem.all_gather_v(src[: counts[me]].view(torch.int32), v, counts)
    torch.cuda.synchronize()


def rmsnorm(npes, me):
    rows, hidden, eps = 16, 4096, 1e-5
    x, res, out = (rshmem.empty((rows, hidden), torch.bfloat16) for _ in range(3))
    w = rshmem.empty(hidden, torch.bfloat16)
    x.copy_(inputs(me, rows * hidden, torch.bfloat16, seed=2).view(rows, hidden) / 8)
    res.copy_(inputs(99, rows * hidden, torch.bfloat16, seed=3).view(rows, hidden) / 8)
    w.copy_(torch.linspace(0.5, 1.5, hidden, dtype=torch.bfloat16).cuda())
    ref_res = (res.float() + sum((inputs(r, rows * hidden, torch.bfloat16, seed=2).view(rows, hidden) / 8).float()
                                 for r in range(npes))).to(torch.bfloat16)
    rshmem.all_reduce_rmsnorm(x, res, w, out, eps=eps)
    torch.cuda.synchronize()
    r = ref_res.float()
    want = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps) * w.float()
    close(res, ref_res, 1e-2)
    close(out, want, 2e-2)


def gemms(npes, me):
    # The fused ops split A's rows (all-gather) and C's (reduce-scatter) over the ranks.
    m, n, k = 128 * npes, 384, 256
    a, b = rshmem.empty((m, k), torch.bfloat16), rshmem.empty((n, k), torch.bfloat16)
    c = rshmem.empty((m, n), torch.float32)
    a.copy_(torch.randn(m, k, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16).cuda())
    b.copy_(torch.randn(n, k, generator=torch.Generator().manual_seed(6)).to(torch.bfloat16).cuda())
    rshmem.gemm(a, b, c)
    torch.cuda.synchronize()
    close(c, a.float() @ b.float().T, 1e-3)
    # all-gather + GEMM: this rank's rows of a filled; every rank gets all of c.
    rows = m // npes
    full = torch.randn(m, k, generator=torch.Generator().manual_seed(7)).to(torch.bfloat16).cuda()
    ag = rshmem.empty((m, k), torch.bfloat16)
    ag[me * rows:(me + 1) * rows].copy_(full[me * rows:(me + 1) * rows])
    cb = rshmem.empty((m, n), torch.bfloat16)
    rshmem.all_gather_gemm(ag, b, cb)
    torch.cuda.synchronize()
    close(cb, full.float() @ b.float().T, 2e-2)
    # GEMM + reduce-scatter: K sharded, this rank's rows of the sum.
    a_r = (torch.randn(m, k, generator=torch.Generator().manual_seed(10 + me)) / 4).to(torch.bfloat16).cuda()
    a2 = rshmem.empty((m, k), torch.bfloat16)
    a2.copy_(a_r)
    c2 = rshmem.empty((rows, n), torch.bfloat16)
    rshmem.gemm_reduce_scatter(a2, b, c2)
    torch.cuda.synchronize()
    total = sum((torch.randn(m, k, generator=torch.Generator().manual_seed(10 + r)) / 4).to(torch.bfloat16).cuda().float()
                for r in range(npes)) @ b.float().T
    close(c2, total[me * rows:(me + 1) * rows], 3e-2)


def gemm_ordinary(npes, me):
    """rshmem.gemm on torch tensors from torch's allocator (not symmetric): the GEMM reaches no
    peer. Against torch; a CPU tensor is refused naming host memory."""
    m, n, k = 333, 200, 256
    g = torch.Generator().manual_seed(30 + me)
    a = torch.randn(m, k, generator=g).to(torch.bfloat16).cuda()
    b = torch.randn(n, k, generator=g).to(torch.bfloat16).cuda()
    c = torch.empty(m, n, dtype=torch.float32, device="cuda")
    rshmem.gemm(a, b, c)
    torch.cuda.synchronize()
    close(c, a.float() @ b.float().T, 1e-3)
    # A symmetric A with ordinary B and C, B k x n, on a side stream.
    sa = rshmem.empty((m, k), torch.bfloat16)
    sa.copy_(a)
    bkn, c16 = b.T.contiguous(), torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        rshmem.gemm(sa, bkn, c16, b_layout="kn")
    s.synchronize()
    close(c16, a.float() @ b.float().T, 2e-2)
    try:
        rshmem.gemm(a.cpu(), b, c)
        raise AssertionError("a CPU tensor was accepted")
    except rshmem.ArgumentError as e:
        assert "host memory" in str(e), str(e)


def grouped(npes, me):
    """The grouped GEMM, offsets (against a loop of matmuls and torch._grouped_mm where torch
    has it) and masked layouts."""
    groups, n, k = 4, 256, 512
    ends = [100, 100, 400, 437]  # group 1 empty
    m = ends[-1]
    g = torch.Generator().manual_seed(40)
    a, b = rshmem.empty((m, k), torch.bfloat16), rshmem.empty((groups, n, k), torch.bfloat16)
    a.copy_(torch.randn(m, k, generator=g).to(torch.bfloat16).cuda())
    b.copy_((torch.randn(groups, n, k, generator=g) / 8).to(torch.bfloat16).cuda())
    offs = rshmem.empty(groups, torch.int32)
    offs.copy_(torch.tensor(ends, dtype=torch.int32).cuda())
    c = rshmem.empty((m, n), torch.bfloat16)
    rshmem.grouped_gemm(a, b, c, offsets=offs)
    torch.cuda.synchronize()
    start = 0
    for gi, end in enumerate(ends):
        close(c[start:end], a[start:end].float() @ b[gi].float().T, 2e-2)
        start = end
    if hasattr(torch, "_grouped_mm"):
        ref = torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)
        close(c, ref, 2e-2)
    max_m = 128
    am = rshmem.empty((groups, max_m, k), torch.bfloat16)
    am.copy_(torch.randn(groups, max_m, k, generator=g).to(torch.bfloat16).cuda())
    counts = rshmem.empty(groups, torch.int32)
    counts.copy_(torch.tensor([64, 0, 128, 5], dtype=torch.int32).cuda())
    cm = rshmem.empty((groups, max_m, n), torch.float32)
    cm.fill_(float("nan"))
    rshmem.grouped_gemm(am, b, cm, counts=counts)
    torch.cuda.synchronize()
    for gi, cnt in enumerate([64, 0, 128, 5]):
        close(cm[gi, :cnt], am[gi, :cnt].float() @ b[gi].float().T, 1e-3)
        assert torch.isnan(cm[gi, cnt:]).all(), f"group {gi}: rows past its count written"


def fp8(npes, me):
    """FP8 GEMMs: per-tensor scales (against the dequantised product, and torch._scaled_mm),
    block scales (DeepSeek-V3's 1 x 128 and 128 x 128), grouped with block scales."""
    f8 = torch.float8_e4m3fn
    m, n, k = 256, 512, 1024
    g = torch.Generator().manual_seed(50)
    a32, b32 = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
    # Per tensor.
    s_a, s_b = a32.abs().max() / 448, b32.abs().max() / 448
    qa, qb = (a32 / s_a).to(f8), (b32 / s_b).to(f8)
    a, b = rshmem.empty((m, k), f8), rshmem.empty((n, k), f8)
    a.copy_(qa.cuda())
    b.copy_(qb.cuda())
    sa, sb = rshmem.empty(1, torch.float32), rshmem.empty(1, torch.float32)
    sa.fill_(s_a.item())
    sb.fill_(s_b.item())
    c = rshmem.empty((m, n), torch.bfloat16)
    rshmem.gemm_fp8(a, b, c, sa, sb)
    torch.cuda.synchronize()
    want = (qa.float() * s_a) @ (qb.float() * s_b).T
    close(c, want.cuda(), 2e-2)
    if hasattr(torch, "_scaled_mm"):
        ref = torch._scaled_mm(a, b.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        close(c, ref, 2e-2)
    # Block scales.
    kb, nb = k // 128, n // 128
    sa_blk = (a32.view(m, kb, 128).abs().amax(-1) / 448).clamp(min=1e-12)  # m x kb
    qa = (a32.view(m, kb, 128) / sa_blk[..., None]).to(f8).view(m, k)
    sb_blk = (b32.view(nb, 128, kb, 128).abs().amax((1, 3)) / 448).clamp(min=1e-12)  # nb x kb
    qb = (b32.view(nb, 128, kb, 128) / sb_blk[:, None, :, None]).to(f8).view(n, k)
    a.copy_(qa.cuda())
    b.copy_(qb.cuda())
    sa2, sb2 = rshmem.empty((kb, m), torch.float32), rshmem.empty((nb, kb), torch.float32)
    sa2.copy_(sa_blk.T.contiguous().cuda())
    sb2.copy_(sb_blk.cuda())
    c32 = rshmem.empty((m, n), torch.float32)
    rshmem.gemm_fp8(a, b, c32, sa2, sb2, scaling="block")
    torch.cuda.synchronize()
    deq_a = (qa.float().view(m, kb, 128) * sa_blk[..., None]).view(m, k)
    deq_b = (qb.float().view(nb, 128, kb, 128) * sb_blk[:, None, :, None]).view(n, k)
    close(c32, (deq_a @ deq_b.T).cuda(), 1e-2)
    # Grouped, block scales: two groups of B (the same weights twice, scaled apart).
    bg = rshmem.empty((2, n, k), f8)
    bg[0].copy_(qb.cuda())
    bg[1].copy_(qb.cuda())
    sbg = rshmem.empty((2, nb, kb), torch.float32)
    sbg[0].copy_(sb_blk.cuda())
    sbg[1].copy_(2 * sb_blk.cuda())
    offs = rshmem.empty(2, torch.int32)
    offs.copy_(torch.tensor([100, m], dtype=torch.int32).cuda())
    cg = rshmem.empty((m, n), torch.float32)
    rshmem.grouped_gemm_fp8(a, bg, cg, sa2, sbg, offsets=offs)
    torch.cuda.synchronize()
    want = (deq_a @ deq_b.T).cuda()
    close(cg[:100], want[:100], 1e-2)
    close(cg[100:], 2 * want[100:], 1e-2)


def teams(npes, me):
    """Collectives over the team of the even ranks; the others are not members."""
    rshmem.prepare_collectives()  # collective over every PE: the stream's workspace
    even = rshmem.team_split_strided(0, 2, (npes + 1) // 2)
    x, out = rshmem.empty(4096, torch.float32), rshmem.empty(4096, torch.float32)
    x.fill_(me + 1)
    if even is not None:
        assert even.my_pe == me // 2
        rshmem.all_reduce(x, out, team=even)
        torch.cuda.synchronize()
        close(out, torch.full_like(out, float(sum(r + 1 for r in range(0, npes, 2)))), 0)
    del even
    rshmem.barrier_all()


def moe_layer(npes, me):
    """The fused MoE layer against torch (f32 with the activations rounded to bf16), eager and
    recorded into rshmem's graph and launched on new routings."""
    experts, top_k, hidden, inter, tokens = 4 * npes, 2, 1024, 512, 64
    local = experts // npes

    def weights(e):
        g = torch.Generator().manual_seed(60 + e)
        scale = hidden ** -0.5
        return tuple((torch.randn(*shape, generator=g) * scale).to(torch.bfloat16).cuda()
                     for shape in ((inter, hidden), (inter, hidden), (hidden, inter)))

    every = [weights(e) for e in range(experts)]
    mine = every[me * local:(me + 1) * local]
    bufs = rshmem.moe_layer_buffers(experts, top_k, hidden, inter, max_tokens=tokens)
    w1 = rshmem.empty((local, 2 * inter, hidden), torch.bfloat16)
    w1.copy_(rshmem.moe_interleave_gate_up(torch.stack([w[0] for w in mine]), torch.stack([w[1] for w in mine])))
    w2 = rshmem.empty((local, hidden, inter), torch.bfloat16)
    w2.copy_(torch.stack([w[2] for w in mine]))
    bound = rshmem.moe_layer_weights(bufs, w1, w2)
    x, out = rshmem.empty((tokens, hidden), torch.bfloat16), rshmem.empty((tokens, hidden), torch.bfloat16)
    idx, tw = rshmem.empty((tokens, top_k), torch.int32), rshmem.empty((tokens, top_k), torch.float32)

    def route(seed):
        g = torch.Generator().manual_seed(seed)
        x.copy_(torch.randn(tokens, hidden, generator=g).to(torch.bfloat16).cuda())
        idx.copy_(torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)]).int().cuda())
        idx[0, 1] = -1
        tw.copy_(torch.rand(tokens, top_k, generator=g).cuda())

    def reference():
        want = torch.zeros(tokens, hidden, device="cuda")
        for t in range(tokens):
            for kk in range(top_k):
                e = int(idx[t, kk])
                if e < 0:
                    continue
                gate, up, down = (w.float() for w in every[e])
                xt = x[t].float()
                act = (torch.nn.functional.silu(gate @ xt) * (up @ xt)).to(torch.bfloat16).float()
                want[t] += tw[t, kk] * (down @ act).to(torch.bfloat16).float()
        return want

    route(70 + me)
    rshmem.moe_layer(bufs, bound, x, idx, tw, out)
    torch.cuda.synchronize()
    close(out, reference(), 3e-2)
    assert bufs.skipped_entry() is None
    graph = rshmem.capture(lambda: rshmem.moe_layer(bufs, bound, x, idx, tw, out))
    route(80 + me)
    graph.launch()
    torch.cuda.synchronize()
    close(out, reference(), 3e-2)


def moe(npes, me):
    experts, top_k, hidden, tokens = 8 * npes, 2, 1024, 64
    g = torch.Generator().manual_seed(20 + me)
    x = rshmem.empty((tokens, hidden), torch.bfloat16)
    x.copy_(torch.randn(tokens, hidden, generator=g).to(torch.bfloat16).cuda())
    idx = rshmem.empty((tokens, top_k), torch.int32)
    idx.copy_(torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)]).int().cuda())
    w = rshmem.empty((tokens, top_k), torch.float32)
    w.copy_(torch.rand(tokens, top_k, generator=g).cuda())
    want = (x.float() * w.sum(1, keepdim=True)).to(torch.bfloat16)
    bufs = rshmem.moe_buffers(experts, top_k, hidden, max_tokens=tokens, align=16)
    layout = rshmem.moe_dispatch(bufs, x, idx, w)
    out = rshmem.empty((tokens, hidden), torch.bfloat16)
    rshmem.moe_combine(bufs, layout, bufs.recv_x, out)  # identity experts
    torch.cuda.synchronize()
    close(out, want, 2e-2)
    ll = rshmem.moe_buffers(experts, top_k, hidden, max_tokens=tokens, low_latency=True)
    for _ in range(3):
        rshmem.moe_ll_dispatch(ll, x, idx)
        rshmem.moe_ll_combine(ll, ll.recv_x, idx, w, out)
    torch.cuda.synchronize()
    close(out, want, 2e-2)


def graphs(npes, me):
    x = rshmem.empty(4096, torch.float32)
    x.fill_(1)
    rshmem.all_reduce(x)  # eager first: the stream's workspace
    graph = rshmem.capture(lambda: rshmem.all_reduce(x))
    for _ in range(3):
        graph.launch()
    torch.cuda.synchronize()
    close(x, torch.full_like(x, float(npes) ** 4), 0)


def capture_legacy(npes, me):
    """On the legacy default stream rshmem.capture refuses, saying what to do."""
    with torch.cuda.stream(torch.cuda.default_stream()):
        try:
            rshmem.capture(lambda: None)
        except ValueError as e:
            assert "legacy default stream" in str(e), e
        else:
            raise AssertionError("capture on the legacy default stream was not refused")


def torch_graph(npes, me):
    """torch.cuda.graph around rshmem ops: supported when each op ran eagerly first on the
    capture stream (docs/python.md); this check says whether it does on this torch."""
    s = torch.cuda.Stream()
    x = rshmem.empty(4096, torch.float32)
    with torch.cuda.stream(s):
        x.fill_(1)
        rshmem.all_reduce(x)
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        rshmem.all_reduce(x)
    for _ in range(2):
        g.replay()
    torch.cuda.synchronize()
    close(x, torch.full_like(x, float(npes) ** 3), 0)
    # Decode-sized GEMMs split K eagerly (through an ordering stream of rshmem's own); inside a
    # capture rshmem did not begin they must record the unsplit kernel (Stream::is_recorded).
    a = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16) / 8
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 8
    c = torch.empty(16, 4096, device="cuda", dtype=torch.bfloat16)
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    one = torch.ones(1, device="cuda", dtype=torch.float32)
    c8 = torch.empty(16, 4096, device="cuda", dtype=torch.float32)
    with torch.cuda.stream(s):
        rshmem.gemm(a, b, c)  # eager: split; fills the tensor-map slots the capture needs
        rshmem.gemm_fp8(a8, b8, c8, one, one)
    s.synchronize()
    ref, ref8 = a.float() @ b.float().T, a8.float() @ b8.float().T
    close(c, ref, 1e-2)
    close(c8, ref8, 2e-2)
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2, stream=s):
        rshmem.gemm(a, b, c)
        rshmem.gemm_fp8(a8, b8, c8, one, one)
    c.zero_()
    c8.zero_()
    g2.replay()
    torch.cuda.synchronize()
    close(c, ref, 1e-2)
    close(c8, ref8, 2e-2)


def own_kernels(path, npes, me):
    k = rshmem.load_kernels(path)
    buf = rshmem.empty(100, torch.int32)
    k.launch("hello_fill", 1, 128, buf, 100)
    ring = rshmem.empty(1, torch.int32)
    k.launch("ring", 1, 1, ring, cooperative=True)
    torch.cuda.synchronize()
    assert buf.tolist() == [me * 1000 + i for i in range(100)], buf.tolist()[:5]
    assert int(ring.item()) == (me - 1) % npes
    try:
        k.launch("hello_fill", 1, 128, rshmem.empty(4, torch.float32), 4)
        raise AssertionError("a f32 tensor for *mut i32 was accepted")
    except rshmem.ArgumentError:
        pass


def bad_input(npes, me):
    x = rshmem.empty(64, torch.float32)
    for call, want in (
        (lambda: rshmem.all_reduce(x, rshmem.empty(32, torch.float32)), "dst"),
        (lambda: rshmem.all_reduce(torch.zeros(64, device="cuda")), "symmetric heap"),
        (lambda: rshmem.all_reduce(x.view(8, 8)[:, 1]), "contiguous"),
        (lambda: rshmem.gemm(rshmem.empty((8, 12), torch.bfloat16), rshmem.empty((8, 12), torch.bfloat16),
                             rshmem.empty((8, 8), torch.float32)), "k"),
    ):
        try:
            call()
            raise AssertionError(f"accepted (expected an error about {want})")
        except rshmem.ArgumentError as e:
            assert want in str(e), str(e)
    rshmem.barrier_all()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default=os.path.join(os.path.dirname(__file__), "..", "kernels",
                                                      "rshmem-image-rshmem-example-kernels.json"))
    ap.add_argument("--fail-rank", type=int, default=None)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rshmem.init()
    npes, me = rshmem.n_pes(), rshmem.my_pe()
    if args.fail_rank is not None:
        x = rshmem.empty(1 << 20, torch.float32)
        if me == args.fail_rank:
            raise SystemExit(f"rank {me} fails on purpose")
        rshmem.all_reduce(x)  # the others wait for it: torchrun or rshmem's watchdog ends them
        torch.cuda.synchronize()
        return
    check("collectives", lambda: collectives(npes, me))
    check("all_reduce_rmsnorm", lambda: rmsnorm(npes, me))
    check("gemm, all_gather_gemm, gemm_reduce_scatter", lambda: gemms(npes, me))
    check("gemm on ordinary torch tensors", lambda: gemm_ordinary(npes, me))
    check("grouped gemm", lambda: grouped(npes, me))
    check("fp8 gemms", lambda: fp8(npes, me))
    check("collectives over a team", lambda: teams(npes, me))
    check("moe normal and low-latency", lambda: moe(npes, me))
    # rshmem.capture records the current stream, which must not be the legacy default one
    # (CUDA cannot capture it): these two run on a stream of their own, eager calls included
    # (each op's first eager call on a stream makes its workspace there).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        check("fused moe layer", lambda: moe_layer(npes, me))
        check("rshmem.capture graphs", lambda: graphs(npes, me))
        check("rshmem.capture refuses the legacy stream", lambda: capture_legacy(npes, me))
    torch.cuda.current_stream().wait_stream(side)
    check("own kernels by name", lambda: own_kernels(args.kernels, npes, me))
    check("bad input refused", lambda: bad_input(npes, me))
    # Last: a capture torch or CUDA refuses may leave the stream unusable.
    check("torch.cuda.graph around rshmem ops", lambda: torch_graph(npes, me))
    rshmem.barrier_all()
    import gc

    gc.collect()
    rshmem.finalize()
    print(f"rank {me}: {len(FAILED)} failed: {FAILED}", flush=True)
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
