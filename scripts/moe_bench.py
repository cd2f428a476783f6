#!/usr/bin/env python3
"""rshmem's MoE dispatch and combine (ops/examples/moe_bench.rs) beside torch's local permute
and unpermute, on the GPU machine, in one run.

For each shape (hidden 7168, top-8 of 256 experts; hidden 4096, top-2 of 8) and token count
(128, 4096 per PE), the Rust binary checks a dispatch + combine round trip (identity experts)
and times both steps (normal mode; low-latency too at 128 tokens; each with bf16 rows and with
FP8 e4m3 rows + one f32 scale per 128 elements, `normal_fp8` and `low_latency_fp8`), printing
JSON rows. With one
GPU and one PE the rshmem rows are the local path (every expert on this PE: how close the
routing, packing and weighted sum run to HBM bandwidth). torch's peer at one rank: the
permute (`argsort` of the entries by expert, `index_select` of the rows) and the unpermute
(rows times weights, `index_add_` back per token), timed with CUDA events, median of 20 after
3 warm-ups. Across GPUs the torch peer would be NCCL all_to_all_single plus the same permute
(the multi-GPU issue; NCCL cannot put two ranks on one GPU).

Each row's roofline: the bytes the step must touch once in HBM (read the rows, write the
grouped rows: 2 x rows x hidden x 2 B for the dispatch, 2 x rows x (hidden + 4 ceil(hidden /
128)) B for FP8 rows) over 4.8 TB/s.

The fused layer (`--layer`, on by default): per shape, experts of the given intermediate size
(DeepSeek-V3's 2048 at hidden 7168; 14336 at hidden 4096, top-2 of 8), the binary checks three
tokens of each PE against an f64 reference of the whole layer, then times `Ops::moe_layer`
beside its two grouped GEMMs alone on the rows its dispatch left (CUDA events, medians). The
goal on one H200, one PE: the layer <= 1.1x the two GEMMs. Its buffers are the low-latency
layout's (every local expert holds npes x tokens rows), so the 4096-token DeepSeek-V3 row needs
~70 GB of symmetric heap: the script sizes NVSHMEM_SYMMETRIC_SIZE per row and skips a row that
cannot fit the GPU.

  device run: python3 .gpu/scripts/moe_bench.py [--bin PATH] [--npes N] [--iters 20] [--no-layer] [--no-fp8] [--tokens 128,4096]
"""
import argparse, json, os, statistics, subprocess, sys

for var, val in (("NVSHMEM_DISABLE_NVLS", "1"), ("NCCL_NVLS_ENABLE", "0"),
                 ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ[var] = val

import torch

import rshmem_env  # scripts/rshmem_env.py, beside this one

SHAPES = [(7168, 256, 8, 2048), (4096, 8, 2, 14336)]  # hidden, experts, top-k, intermediate
TOKENS = [128, 4096]
HBM = 4.8e12


def layer_bytes(npes, tokens, hidden, experts, inter):
    """Symmetric bytes per PE of the layer row: its buffers (rows of hidden and of
    intermediate per local expert, npes x tokens each), the bench's two GEMM outputs, the
    weights."""
    local = experts // npes
    rows = local * npes * tokens
    return 2 * (rows * (2 * hidden + 3 * inter) + local * 3 * inter * hidden)


def run_rshmem(binary, npes, tokens, hidden, experts, top_k, ll, iters, layer=0, fp8=False):
    heap = 24 << 30
    if layer:
        heap += int(layer_bytes(npes, tokens, hidden, experts, layer) * 1.1)
    env = rshmem_env.bench_env(npes, torch.cuda.device_count(), str(heap))
    cmd = [binary, "--tokens", str(tokens), "--hidden", str(hidden), "--experts", str(experts),
           "--top-k", str(top_k), "--iters", str(iters)] + (["--ll"] if ll else []) \
        + (["--fp8"] if fp8 else []) \
        + (["--layer", str(layer)] if layer else [])
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    rows = []
    for line in p.stdout.splitlines():
        line = line.split("] ", 1)[1] if line.startswith("[PE ") else line
        if line.startswith("{"):
            rows.append(json.loads(line))
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        rows.append({"impl": "rshmem", "error": (p.stderr.strip().splitlines() or ["?"])[-1][:300]})
    for r in rows:
        r.setdefault("impl", "rshmem")
    return rows


def median_us(fn, iters):
    for _ in range(3):
        fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def torch_row(tokens, hidden, experts, top_k, iters):
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16, generator=g)
    topk = torch.stack([torch.randperm(experts, device="cuda", generator=g)[:top_k] for _ in range(tokens)])
    w = torch.rand(tokens, top_k, device="cuda", generator=g)
    flat = topk.reshape(-1)

    def permute():
        order = torch.argsort(flat, stable=True)
        return x.index_select(0, order // top_k), order

    rows, order = permute()
    out = torch.zeros(tokens, hidden, device="cuda", dtype=torch.float32)

    def unpermute():
        out.zero_()
        out.index_add_(0, order // top_k, rows.float() * w.reshape(-1)[order].unsqueeze(1))
        return out.to(torch.bfloat16)

    # The check: identity experts give (sum of weights) x x.
    ref = (w.sum(1, keepdim=True) * x.float()).to(torch.bfloat16)
    ok = torch.allclose(unpermute().float(), ref.float(), rtol=2 ** -7, atol=1e-3)
    return {"impl": "torch", "mode": "permute", "tokens": tokens, "hidden": hidden, "experts": experts,
            "top_k": top_k, "dispatch_us": median_us(permute, iters), "combine_us": median_us(unpermute, iters),
            "check": "ok" if ok else "FAILED"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("MOE_BENCH", ".gpu/bin/moe_bench"))
    ap.add_argument("--npes", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-layer", action="store_true", help="skip the fused layer's rows")
    ap.add_argument("--no-fp8", action="store_true", help="skip the FP8 rows (normal and low-latency modes)")
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)),
                    help="token counts per PE, comma-separated (default %(default)s)")
    args = ap.parse_args()
    gpu_bytes = torch.cuda.get_device_properties(0).total_memory
    rows = []
    for hidden, experts, top_k, inter in SHAPES:
        for tokens in (int(t) for t in args.tokens.split(",")):
            layer = 0 if args.no_layer else inter
            need = layer_bytes(args.npes, tokens, hidden, experts, inter)
            if layer and need * args.npes > 0.85 * gpu_bytes:
                print(json.dumps({"impl": "rshmem", "mode": "layer", "tokens": tokens, "hidden": hidden,
                                  "skipped": "needs %.0f GB of symmetric heap per PE" % (need / 1e9)}))
                layer = 0
            got = run_rshmem(args.bin, args.npes, tokens, hidden, experts, top_k, tokens <= 256, args.iters,
                             layer, fp8=not args.no_fp8)
            base = torch_row(tokens, hidden, experts, top_k, args.iters)
            for r in got + [base]:
                entries = tokens * top_k
                row_bytes = hidden + 4 * -(-hidden // 128) if r.get("mode", "").endswith("_fp8") else 2 * hidden
                r["roofline_dispatch_us"] = 2 * entries * row_bytes / HBM * 1e6
                print(json.dumps(r), flush=True)
            rows += got + [base]
    print("\n%-8s %-16s %6s %6s %4s %12s %12s %12s" % ("impl", "mode", "tokens", "hidden", "k",
                                                        "dispatch us", "combine us", "roofline us"))
    for r in rows:
        if "error" in r:
            print("%-8s error: %s" % (r["impl"], r["error"]))
            continue
        if r.get("mode") == "layer":
            continue
        print("%-8s %-16s %6d %6d %4d %12.1f %12.1f %12.1f" % (r["impl"], r["mode"], r["tokens"], r["hidden"],
                                                             r["top_k"], r["dispatch_us"], r["combine_us"],
                                                             r["roofline_dispatch_us"]))
    layers = [r for r in rows if r.get("mode") == "layer"]
    if layers:
        print("\nfused layer (goal: <= 1.1x its two grouped GEMMs alone)")
        print("%6s %6s %6s %4s %8s %12s %12s %7s" % ("tokens", "hidden", "inter", "k", "experts", "layer us",
                                                     "GEMMs us", "ratio"))
        for r in layers:
            print("%6d %6d %6d %4d %8d %12.1f %12.1f %7.3f" % (r["tokens"], r["hidden"], r["intermediate"],
                                                               r["top_k"], r["experts"], r["layer_us"],
                                                               r["gemms_us"], r["ratio"]))
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "moe_bench.json"), "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "npes": args.npes, "rows": rows}, f, indent=1)
    failed = [r for r in rows if r.get("check") != "ok"]
    print("\nchecks: %s" % ("all ok" if not failed else "%d FAILED" % len(failed)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
