#!/usr/bin/env python3
"""rshmem's Python package on GPUs, under torchrun: every op against torch references computed
on each rank from every rank's (deterministic) inputs, rshmem's graphs and torch.cuda.graph,
your own kernels by name, bad input. NOT YET RUN ON A GPU (written 2026-12-05 without one).

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
    m, n, k = 512, 384, 256
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
    check("moe normal and low-latency", lambda: moe(npes, me))
    check("rshmem.capture graphs", lambda: graphs(npes, me))
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
