#!/usr/bin/env python3
"""rshmem's Python layer on GPUs, in one run under torchrun: rshmem's all-reduce beside torch
symmetric memory's one-shot/two-shot all-reduce and NCCL (NCCL only where the ranks have GPUs of
their own), rshmem's GEMM (on symmetric and on ordinary torch tensors) beside torch.matmul
(cuBLAS), the grouped GEMM beside torch._grouped_mm, the FP8 GEMM beside torch._scaled_mm, the
fused MoE layer, and the Python layer's per-call overhead against the same calls from Rust
(ops/examples/call_overhead.rs, run by this script when --rust names its binary). NOT YET RUN
ON A GPU (written 2026-12-05 without one).

  device run: torchrun --nproc-per-node 2 .gpu/scripts/python_bench.py [--rust .gpu/bin/call_overhead]
              [--sizes 8192,1048576,16777216] [--gemm 256,1024,4096] [--calls 200] [--iters 20]

Timing: CUDA events around k back-to-back calls (k = 20), median of --iters repetitions, a host
barrier before each; per call. Overhead: host wall time per call of --calls back-to-back calls
(queueing, the GPU runs behind; median of 5 rounds) of a 4 KiB bf16 all-reduce (op max, idempotent) and a 128^3 bf16
GEMM, from Python (rshmem.all_reduce, rshmem.gemm on torch's current stream) and from Rust
(call_overhead), and their difference: the issue's goal is <= 2 us. Rank 0 prints tables and
writes $OUT/python_bench.json when $OUT is set.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import rshmem  # noqa: E402
from rshmem import _gemm, _native, _ops  # noqa: E402  (the overhead's breakdown)


def timed(fn, iters, inner=20):
    """Median µs per call of `fn` over `iters` repetitions of `inner` calls."""
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        rshmem.barrier_all()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e3 / inner)
    return statistics.median(out)


def host_per_call(fn, calls, rounds=5):
    """Host µs per call (the loop's wall time) and with the round's final synchronize, medians of
    `rounds` rounds of `calls` back-to-back calls: few enough that the GPU's launch queue never
    fills (then the host would wait for the GPU, and the loop would time the GPU)."""
    for _ in range(20):
        fn()
    host, total = [], []
    for _ in range(rounds):
        torch.cuda.synchronize()
        rshmem.barrier_all()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        host.append((time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
        total.append((time.perf_counter() - t0) * 1e6 / calls)
    return statistics.median(host), statistics.median(total)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8192,1048576,16777216")
    ap.add_argument("--gemm", default="256,1024,4096")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rust", default=None, help="ops/examples/call_overhead's binary")
    ap.add_argument("--overhead-only", action="store_true", help="only the per-call overhead rows")
    args = ap.parse_args()
    dist.init_process_group("cpu:gloo,cuda:nccl")
    rshmem.init()
    me, n = rshmem.my_pe(), rshmem.n_pes()
    own_gpus = torch.cuda.device_count() >= n
    rows = []

    # The ops beside their peers (skipped by --overhead-only).
    if not args.overhead_only:
        # All-reduce, bf16.
        symm = None
        try:
            import torch.distributed._symmetric_memory as symm_mem

            symm = symm_mem
        except ImportError:
            pass
        for size in (int(s) for s in args.sizes.split(",")):
            count = size // 2
            x = rshmem.empty(count, torch.bfloat16)
            x.fill_(1)
            row = {"op": "all_reduce", "bytes": size, "rshmem_us": timed(lambda: rshmem.all_reduce(x, op="max"), args.iters)}
            if own_gpus:
                t = torch.ones(count, dtype=torch.bfloat16, device="cuda")
                row["nccl_us"] = timed(lambda: dist.all_reduce(t, op=dist.ReduceOp.MAX), args.iters)
            if symm is not None and own_gpus:
                buf = symm.empty(count, dtype=torch.bfloat16, device="cuda")
                hdl = symm.rendezvous(buf, dist.group.WORLD.group_name)
                buf.fill_(1)
                del hdl
                name = dist.group.WORLD.group_name
                row["symm_one_shot_us"] = timed(lambda: torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", name), args.iters)
                row["symm_two_shot_us"] = timed(lambda: torch.ops.symm_mem.two_shot_all_reduce_(buf, "sum", name), args.iters)
            rows.append(row)
            del x

        # GEMM, bf16 in, bf16 out, B n x k.
        for s in (int(v) for v in args.gemm.split(",")):
            a, b = rshmem.empty((s, s), torch.bfloat16), rshmem.empty((s, s), torch.bfloat16)
            c = rshmem.empty((s, s), torch.bfloat16)
            a.normal_()
            b.normal_()
            us = timed(lambda: rshmem.gemm(a, b, c), args.iters)
            ref = timed(lambda: torch.matmul(a, b.T), args.iters)
            torch.testing.assert_close(c.float(), (a.float() @ b.float().T), rtol=2e-2, atol=2e-2 * s ** 0.5)
            rows.append({"op": "gemm", "m=n=k": s, "rshmem_us": us, "torch_matmul_us": ref,
                         "rshmem_tflops": 2 * s ** 3 / us / 1e6, "torch_tflops": 2 * s ** 3 / ref / 1e6})
            del a, b, c

        # GEMM on ordinary torch tensors (torch's allocator): the same kernel, found by address.
        s = 4096
        a, b = torch.randn(s, s, device="cuda").to(torch.bfloat16), torch.randn(s, s, device="cuda").to(torch.bfloat16)
        c = torch.empty(s, s, device="cuda", dtype=torch.bfloat16)
        us = timed(lambda: rshmem.gemm(a, b, c), args.iters)
        torch.testing.assert_close(c.float(), a.float() @ b.float().T, rtol=2e-2, atol=2e-2 * s ** 0.5)
        rows.append({"op": "gemm_torch_tensors", "m=n=k": s, "rshmem_us": us, "rshmem_tflops": 2 * s ** 3 / us / 1e6})
        del a, b, c

        # Grouped GEMM: 8 groups of 512 rows, 4096 x 4096 weights, against torch._grouped_mm.
        groups, rows_g, gn, gk = 8, 512, 4096, 4096
        a, b = rshmem.empty((groups * rows_g, gk), torch.bfloat16), rshmem.empty((groups, gn, gk), torch.bfloat16)
        c, offs = rshmem.empty((groups * rows_g, gn), torch.bfloat16), rshmem.empty(groups, torch.int32)
        a.normal_()
        b.normal_()
        offs.copy_(torch.arange(1, groups + 1, dtype=torch.int32, device="cuda") * rows_g)
        row = {"op": "grouped_gemm", "shape": f"{groups}x{rows_g}, {gn}x{gk}",
               "rshmem_us": timed(lambda: rshmem.grouped_gemm(a, b, c, offsets=offs), args.iters)}
        if hasattr(torch, "_grouped_mm"):
            row["torch_grouped_mm_us"] = timed(lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs), args.iters)
        rows.append(row)
        del a, b, c, offs

        # FP8 per tensor, e4m3 -> bf16, against torch._scaled_mm.
        f8 = torch.float8_e4m3fn
        for s in (int(v) for v in args.gemm.split(",")):
            a, b = rshmem.empty((s, s), f8), rshmem.empty((s, s), f8)
            a.copy_(torch.randn(s, s, device="cuda").to(f8))
            b.copy_(torch.randn(s, s, device="cuda").to(f8))
            sa, sb = rshmem.empty(1, torch.float32), rshmem.empty(1, torch.float32)
            sa.fill_(1)
            sb.fill_(1)
            c = rshmem.empty((s, s), torch.bfloat16)
            row = {"op": "gemm_fp8_tensor", "m=n=k": s, "rshmem_us": timed(lambda: rshmem.gemm_fp8(a, b, c, sa, sb), args.iters)}
            if hasattr(torch, "_scaled_mm"):
                row["torch_scaled_mm_us"] = timed(
                    lambda: torch._scaled_mm(a, b.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=True),
                    args.iters)
            rows.append(row)
            del a, b, c, sa, sb

        # The fused MoE layer, decode-sized: 8 experts per rank, top-2, 4096 -> 1408 -> 4096.
        experts, top_k, hidden, inter, tokens = 8 * n, 2, 4096, 1408, 128
        local = experts // n
        bufs = rshmem.moe_layer_buffers(experts, top_k, hidden, inter, max_tokens=tokens)
        w1, w2 = rshmem.empty((local, 2 * inter, hidden), torch.bfloat16), rshmem.empty((local, hidden, inter), torch.bfloat16)
        w1.normal_(std=hidden ** -0.5)
        w2.normal_(std=inter ** -0.5)
        bound = rshmem.moe_layer_weights(bufs, w1, w2)
        x, out = rshmem.empty((tokens, hidden), torch.bfloat16), rshmem.empty((tokens, hidden), torch.bfloat16)
        idx, tw = rshmem.empty((tokens, top_k), torch.int32), rshmem.empty((tokens, top_k), torch.float32)
        x.normal_()
        idx.copy_(torch.stack([torch.randperm(experts)[:top_k] for _ in range(tokens)]).int().cuda())
        tw.fill_(0.5)
        rows.append({"op": "moe_layer", "shape": f"{experts} experts top-{top_k} {hidden}->{inter}, {tokens} tokens/rank",
                     "rshmem_us": timed(lambda: rshmem.moe_layer(bufs, bound, x, idx, tw, out), args.iters)})
        del bufs, w1, w2, bound, x, out, idx, tw

    # Per-call overhead: Python against Rust.
    x = rshmem.empty(2048, torch.bfloat16)
    x.fill_(1)
    a, b = rshmem.empty((128, 128), torch.bfloat16), rshmem.empty((128, 128), torch.bfloat16)
    c = rshmem.empty((128, 128), torch.float32)
    ta, tb = torch.randn(128, 128, device="cuda").to(torch.bfloat16), torch.randn(128, 128, device="cuda").to(torch.bfloat16)
    tc = torch.empty(128, 128, device="cuda")
    tx = torch.zeros(2048, device="cuda", dtype=torch.bfloat16)
    pe = _ops._runtime.current()
    handle = _ops._runtime.stream_handle(pe, None)
    xa, aa, ba, ca = (_ops.tensor_arg(t, "t", "bench") for t in (x, a, b, c))
    side = torch.cuda.Stream()
    # The native calls alone, their arguments prepared once: what the extension adds
    # (argument conversion, GIL release, the heap lookup) on top of the Rust call.
    native = {
        "all_reduce_native_only": lambda: _native.all_reduce(pe, xa, None, 2048, "max", None, handle),
        "gemm_native_only": lambda: _native.gemm(pe, aa, ba, ca, (128, 128, 128), "nk", "auto", 0, handle),
        # The tensors themselves, read by the extension (what rshmem.all_reduce / gemm pass).
        "all_reduce_native_reads": lambda: _native.all_reduce(pe, x, None, None, "max", None, handle),
        "gemm_native_reads": lambda: _native.gemm(pe, a, b, c, None, "nk", "auto", 0, handle),
    }
    if not hasattr(_native, "set_tensor_type"):
        # A wheel from before the native reading (2026-12-07), for same-run before/after rows.
        native = {
            "all_reduce_native_only": native["all_reduce_native_only"],
            "gemm_native_only": lambda: _native.gemm(pe, aa, ba, ca, 128, 128, 128, "nk", "auto", 0, handle),
        }
    print(f"torch's current stream: {handle:#x} (0: the legacy default stream)")
    overhead = {
        "all_reduce_4KiB": host_per_call(lambda: rshmem.all_reduce(x, op="max"), args.calls),
        "gemm_128": host_per_call(lambda: rshmem.gemm(a, b, c), args.calls),
        # Ordinary tensors: each operand's pointer check (cuPointerGetAttributes, first and
        # last byte) is part of the call.
        "gemm_128_torch_tensors": host_per_call(lambda: rshmem.gemm(ta, tb, tc), args.calls),
        # Where Python's part goes: the current stream's handle alone, and the all-reduce's
        # argument preparation without the native call.
        "current_stream_only": host_per_call(lambda: torch.cuda.current_stream().cuda_stream, args.calls),
        # What torch's own smallest op costs the host here: the scale of a microsecond on this CPU.
        "torch_add_4KiB": host_per_call(lambda: tx.add_(1), args.calls),
        "all_reduce_prep_only": host_per_call(
            lambda: (_ops._runtime.current(), _ops.tensor_arg(x, "x", "all_reduce"),
                     _ops._runtime.stream_handle(_ops._runtime.current(), None)), args.calls),
        **{op: host_per_call(fn, args.calls) for op, fn in native.items()},
        # The same calls on a stream of torch's pool (non-blocking, as rshmem's own), beside the
        # rows above on torch's default, the legacy stream (call_overhead's `*_legacy` rows are
        # Rust's like for like): on an H100 on 2026-12-06 the stream made no difference.
        "all_reduce_4KiB_side_stream": host_per_call(lambda: rshmem.all_reduce(x, op="max", stream=side), args.calls),
        "gemm_128_side_stream": host_per_call(lambda: rshmem.gemm(a, b, c, stream=side), args.calls),
        "all_reduce_native_only_side_stream": host_per_call(
            lambda: _native.all_reduce(pe, xa, None, 2048, "max", None, side.cuda_stream), args.calls),
        "gemm_prep_only": host_per_call(
            lambda: (_ops._runtime.current(), _gemm.gemm_shape(a, b, "nk", "gemm"), _ops.tensor_arg(a, "a", "gemm"),
                     _ops.tensor_arg(b, "b", "gemm"), _ops.tensor_arg(c, "out", "gemm"),
                     _ops._runtime.stream_handle(_ops._runtime.current(), None)), args.calls),
    }
    # The native call's own steps (the extension's counters, docs/python.md): GIL release,
    # stream, the Ops call, GIL back, and the argument lookup, µs per call.
    steps = {}
    for op, fn in native.items():
        torch.cuda.synchronize()
        _native.profile_take()
        _native.profile(True)
        host_per_call(fn, args.calls)
        _native.profile(False)
        steps[op] = {k: (ns / 1e3 / calls if calls else None) for k, (calls, ns) in _native.profile_take().items()}
    del x, a, b, c, ta, tb, tc, tx
    rshmem.barrier_all()
    import gc

    gc.collect()
    rshmem.finalize()

    if me == 0:
        rust = {}
        if args.rust:
            # After finalize: the Rust program starts its own PEs (one per rank here).
            out = subprocess.run([args.rust, "--calls", str(args.calls)], capture_output=True, text=True,
                                 env=dict(os.environ, RSHMEM_NPES=str(n)))
            for line in out.stdout.splitlines():
                line = line.split("] ", 1)[-1]  # the launcher's "[PE 0] " prefix
                if line.startswith("{"):
                    r = json.loads(line)
                    rust[r["op"]] = r
            if out.returncode:
                print("call_overhead failed:", out.stderr[-2000:])
        print("\n== per call, µs (CUDA events, median)")
        for r in rows:
            print(json.dumps(r))
        print("\n== host µs per call: Python / Rust / difference (goal: difference <= 2 µs)")
        for op, (host, total) in overhead.items():
            # A side-stream row against Rust on its own (non-blocking) stream; a default-stream
            # row against Rust on the legacy stream where torch's default is that one.
            base = op.removesuffix("_side_stream")
            if base == op and handle == 0 and base + "_legacy" in rust:
                base += "_legacy"
            rr = rust.get(base, {}).get("host_us")
            diff = f"{host - rr:.2f}" if rr is not None else "-"
            print(f"{op:34s} vs {base:22s} python {host:8.2f}  rust {rr if rr is not None else '-':>8}  diff {diff}  "
                  f"(python incl. sync {total:.2f})")
        print("\n== inside the native call, µs per call (its counters; the rest of a native_only row is "
              "the Python call and PyO3's argument conversion)")
        for op, st in steps.items():
            print(f"{op:24s} " + "  ".join(f"{k} {v:.2f}" for k, v in st.items() if v is not None)
                  + f"  sum {sum(v for v in st.values() if v is not None):.2f}")
        if os.environ.get("OUT"):
            with open(os.path.join(os.environ["OUT"], "python_bench.json"), "w") as f:
                json.dump({"rows": rows, "python_overhead": overhead, "rust_overhead": rust, "native_steps": steps,
                           "ranks": n, "own_gpus": own_gpus, "device": torch.cuda.get_device_name()}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
