#!/usr/bin/env python3
"""rshmem's fused tensor-parallel ops (Ops::all_gather_gemm, Ops::gemm_reduce_scatter: bf16 in,
f32 accumulation, bf16 out) beside NCCL + cuBLAS in sequence and torch's fused symmetric-memory
ops, on the GPUs of the GPU machine, each rshmem result checked against torch first.

Ops and shapes (per PE: M x N x K with K this PE's share for the reduce-scatter), n = PEs:

  ag  8192 x 8192 x 8192            (M = K = N = 8192, A sharded by rows)
  ag  8192 x 28672/n x 8192         (LLaMA-70B MLP up-projection at TP = n)
  ag  4096 x 49152/n x 12288        (Flux's all-gather shape)
  rs  8192 x 8192 x 8192/n          (8192^3 with K sharded)
  rs  8192 x 8192 x 28672/n         (LLaMA-70B MLP down-projection)
  rs  4096 x 12288 x 49152/n        (Flux's shapes, second layer)

For each, this script makes fresh random bf16 data with torch (A, and each PE's B: N x K, the
`out x in` layout of a weight), writes it raw into a temporary folder and runs the Rust binary
(ops/examples/tp_bench.rs, built here by scripts/gpu-prepare.sh into .gpu/bin/tp_bench) on the
GPU backend with n PEs. The binary runs the fused op once, writes each PE's C, then times it
and the same GEMM alone (Ops::gemm, no communication): CUDA events around each run, median of
--iters after 3 warm-ups. This script then

* checks every PE's C against torch in float32 (TF32 off): all-gather: max|c - ref| <=
  2^-7 max|ref| (bf16 output rounding is 2^-8 relative, f32 accumulation far less; a wrong tile
  or a missing chunk gives errors of order 1); reduce-scatter: max|c - ref| <= 2^-8 (max|ref| +
  sum_q max|P_q|) + 2^-8 max|ref| with P_q PE q's partial product (each partial travels as bf16,
  the sum is rounded once), so a missing partial fails;
* with one PE per GPU (>= 2 GPUs), times the baselines in a torch.distributed job on the same
  GPUs and shapes: NCCL all_gather_into_tensor then torch.matmul (cuBLAS), torch.matmul then
  NCCL reduce_scatter_tensor, and torch's fused ops torch.ops.symm_mem.fused_all_gather_matmul
  and fused_matmul_reduce_scatter (their results checked against the unfused ones first), and
  cuBLAS alone;
* prints a table (time, TFLOP/s, exposed communication = fused - GEMM alone, speed-up over
  NCCL + cuBLAS) and writes the rows to $OUT/tp_bench.json when $OUT is set
  (scripts/plot_tp_bench.py draws them).

With one GPU the PEs share it and smaller shapes run unless --shapes says otherwise. Where an
MPS daemon answers they run side by side, each on 1/n of the SMs, the fused ops waiting
outside their GEMMs (`Waits::Auto`, docs/mps.md): fused against the GEMM alone on the same
share is the fused machinery's cost on one GPU (local HBM, no NVLink: a lower bound, not a
peer comparison). Without MPS, or with --timeslice, they time-slice
(RSHMEM_GPU_OVERSUBSCRIBE=1): a smoke test of correctness whose timings mean nothing. NCCL
cannot run two ranks on one GPU, so only cuBLAS alone is timed beside it.

  device run: python3 .gpu/scripts/tp_bench.py [--npes N] [--bin PATH] [--shapes ag:MxNxK,rs:MxNxK,...]
"""
import argparse, ctypes, json, os, statistics, subprocess, sys, tempfile

# NVLink SHARP / multicast off (the device machines' rule), before torch or NVSHMEM start.
for var, val in (("NVSHMEM_DISABLE_NVLS", "1"), ("NCCL_NVLS_ENABLE", "0"),
                 ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ[var] = val

import torch

import rshmem_env  # scripts/rshmem_env.py, beside this one

BOUND_AG = 2.0 ** -7


def standard_shapes(n):
    return [("ag", 8192, 8192, 8192), ("ag", 8192, 28672 // n, 8192), ("ag", 4096, 49152 // n, 12288),
            ("rs", 8192, 8192, 8192 // n), ("rs", 8192, 8192, 28672 // n), ("rs", 4096, 12288, 49152 // n)]


def smoke_shapes(n):
    return [("ag", 1024, 1024, 1024), ("ag", 1000, 520, 256), ("rs", 1024, 1024, 1024 // n),
            ("rs", 1000, 520, 256)]


def raw_bytes(t):
    t = t.contiguous().cpu()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def write(path, t):
    with open(path, "wb") as f:
        f.write(raw_bytes(t))


def read_bf16(path, rows, cols):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.bfloat16).reshape(rows, cols)


def run_rshmem(binary, op, m, n, k, npes, ngpu, kernel, iters, tmp, waits="auto", under_mps=True):
    """Runs the fused op on npes PEs, checks every PE's C; returns PE 0's row (+ max over PEs)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(1234 + m + n + k)
    rand = lambda *shape: torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen)
    bs = [rand(n, k) for _ in range(npes)]
    for r, b in enumerate(bs):
        write(os.path.join(tmp, "b%d.bin" % r), b)
    if op == "ag":
        a = rand(m, k)
        write(os.path.join(tmp, "a.bin"), a)
    else:
        As = [rand(m, k) for _ in range(npes)]
        for r, a in enumerate(As):
            write(os.path.join(tmp, "a%d.bin" % r), a)
    cmd = [binary, "--dir", tmp, "--op", op, "--m", str(m), "--n", str(n), "--k", str(k),
           "--kernel", kernel, "--iters", str(iters), "--waits", waits]
    row = {"op": op, "m": m, "n": n, "k": k, "npes": npes}
    p = subprocess.run(cmd, env=rshmem_env.bench_env(npes, ngpu, "10G", under_mps=under_mps),
                       capture_output=True, text=True, timeout=900)  # heap: a, b, c, gathered a, workspace
    lines = []
    for line in p.stdout.splitlines():
        line = line.split("] ", 1)[1] if line.startswith("[PE ") else line
        if line.startswith("{"):
            lines.append(json.loads(line))
    if p.returncode != 0 or len(lines) != npes:
        row["error"] = (p.stderr.strip().splitlines() or ["rc=%d" % p.returncode])[-1]
        sys.stderr.write(p.stdout + p.stderr)
        return row
    pe0 = min(lines, key=lambda l: l["pe"])
    row.update(pe0)
    row["fused_median_ms_max_pe"] = max(l["fused_median_ms"] for l in lines)
    rows = m // npes
    worst = 0.0
    if op == "ag":
        for r in range(npes):
            c = read_bf16(os.path.join(tmp, "c%d.bin" % r), m, n).cuda().float()
            ref = a.float() @ bs[r].float().T
            worst = max(worst, ((c - ref).abs().max() / ref.abs().max()).item() / BOUND_AG)
    else:
        partials = [As[q].float() @ bs[q].float().T for q in range(npes)]
        full = sum(partials)
        for r in range(npes):
            c = read_bf16(os.path.join(tmp, "c%d.bin" % r), rows, n).cuda().float()
            ref = full[r * rows:(r + 1) * rows]
            scale = ref.abs().max().item()
            bound = 2.0 ** -8 * (2 * scale + sum(p[r * rows:(r + 1) * rows].abs().max().item()
                                                 for p in partials))
            worst = max(worst, (c - ref).abs().max().item() / bound)
        del partials, full
    row["error_of_bound"] = worst
    row["pass"] = worst <= 1.0
    return row


def cuda_median_ms(fn, warmup=3, iters=20, sync=None):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        if sync:
            sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def baseline_worker(rank, world, shapes, iters, out_path, init_file):
    """One rank of the torch baselines (one GPU each): NCCL + cuBLAS and torch's fused ops."""
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="file://" + init_file, rank=rank, world_size=world)
    group_name = dist.group.WORLD.group_name
    try:
        from torch.distributed._symmetric_memory import enable_symm_mem_for_group
        enable_symm_mem_for_group(group_name)
    except Exception as e:  # newer torch enables it on demand
        print("enable_symm_mem_for_group:", e, file=sys.stderr)
    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    barrier = lambda: dist.barrier()
    for op, m, n, k in shapes:
        res = {"op": op, "m": m, "n": n, "k": k}
        gen = torch.Generator(device="cuda").manual_seed(99 + rank)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        try:
            if op == "ag":
                shard = torch.randn(m // world, k, device="cuda", dtype=torch.bfloat16, generator=gen)
                full = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)

                def unfused():
                    dist.all_gather_into_tensor(full, shard)
                    return full @ b.T

                def fused():
                    return torch.ops.symm_mem.fused_all_gather_matmul(
                        shard, [b.T], gather_dim=0, group_name=group_name)[1][0]

                dist.all_gather_into_tensor(full, shard)
                alone = lambda: full @ b.T
            else:
                a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
                out = torch.empty(m // world, n, device="cuda", dtype=torch.bfloat16)

                def unfused():
                    dist.reduce_scatter_tensor(out, a @ b.T)
                    return out

                def fused():
                    return torch.ops.symm_mem.fused_matmul_reduce_scatter(
                        a, b.T, "sum", scatter_dim=0, group_name=group_name)

                alone = lambda: a @ b.T
            want = unfused().float().clone()
            try:
                got = fused().float()
                res["torch_fused_rel_err"] = ((got - want).abs().max() / want.abs().max()).item()
                res["torch_fused_ms"] = cuda_median_ms(fused, iters=iters, sync=barrier)
            except Exception as e:
                res["torch_fused_error"] = str(e).splitlines()[0][:200]
            res["nccl_cublas_ms"] = cuda_median_ms(unfused, iters=iters, sync=barrier)
            res["cublas_ms"] = cuda_median_ms(alone, iters=iters, sync=barrier)
        except Exception as e:
            res["error"] = str(e).splitlines()[0][:200]
        results.append(res)
        torch.cuda.empty_cache()
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(results, f)
    dist.destroy_process_group()


def run_baselines(world, shapes, iters, tmp):
    import torch.multiprocessing as mp
    out_path = os.path.join(tmp, "baselines.json")
    init_file = os.path.join(tmp, "dist_init")
    mp.spawn(baseline_worker, args=(world, shapes, iters, out_path, init_file), nprocs=world, join=True)
    with open(out_path) as f:
        return json.load(f)


def cublas_alone(shapes, iters):
    torch.backends.cuda.matmul.allow_tf32 = False
    out = []
    for op, m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        out.append({"op": op, "m": m, "n": n, "k": k, "cublas_ms": cuda_median_ms(lambda: a @ b.T, iters=iters)})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get("TP_BENCH", ".gpu/bin/tp_bench"))
    ap.add_argument("--npes", type=int, help="PEs (default: one per GPU, 2 on one GPU)")
    ap.add_argument("--kernel", default="auto", choices=["auto", "sm90", "sm80"])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--waits", default="auto", choices=["auto", "in-gemm", "outside"],
                    help="where the fused ops wait for the other PEs' data (rshmem_ops::Waits)")
    ap.add_argument("--shapes", help="op:MxNxK,... with op ag or rs and K per PE (default: the list)")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--timeslice", action="store_true",
                    help="PEs sharing a GPU time-slice even where an MPS daemon answers")
    args = ap.parse_args()
    under_mps = not args.timeslice
    ngpu = torch.cuda.device_count()
    npes = args.npes or max(ngpu, 2)
    smoke = npes > ngpu
    if args.shapes:
        shapes = []
        for s in args.shapes.split(","):
            op, dims = s.split(":")
            m, n, k = (int(x) for x in dims.split("x"))
            shapes.append((op, m, n, k))
    else:
        shapes = smoke_shapes(npes) if smoke else standard_shapes(npes)
    sharing = "" if not smoke else (
        "(sharing one GPU under MPS: same-GPU numbers, each PE on 1/n of the SMs)"
        if under_mps and rshmem_env.mps_running() else "(sharing one GPU: a smoke test, timings mean nothing)")
    print("GPU:", torch.cuda.get_device_name(), "x", ngpu, "| torch", torch.__version__, "| PEs:", npes, sharing)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for op, m, n, k in shapes:
            row = run_rshmem(args.bin, op, m, n, k, npes, ngpu, args.kernel, args.iters, tmp,
                             args.waits, under_mps)
            rows.append(row)
            print(json.dumps(row), flush=True)
            for f in os.listdir(tmp):
                os.remove(os.path.join(tmp, f))
        if not args.no_baselines:
            try:
                base = run_baselines(npes, shapes, args.iters, tmp) if not smoke else cublas_alone(shapes, args.iters)
            except Exception as e:
                print("baselines failed:", e, file=sys.stderr)
                base = []
            for row, b in zip(rows, base):
                # Keys: nccl_cublas_ms, cublas_ms, torch_fused_ms, torch_fused_rel_err,
                # torch_fused_error, error (the baseline's, kept as baseline_error).
                for key, val in b.items():
                    if key not in ("op", "m", "n", "k"):
                        row["baseline_error" if key == "error" else key] = val
    print()
    hdr = (f"{'op':>3} {'M x N x K (per PE)':>22} {'fused us':>9} {'gemm us':>8} {'exposed':>8} "
           f"{'TF/s':>6} {'nccl+cublas':>11} {'speed-up':>8} {'torch fused':>11} {'cublas':>8} {'err/bound':>9} {'pass':>5}")
    print(hdr)
    print("-" * len(hdr))
    fmt = lambda v, scale=1e3: ("%.0f" % (v * scale)) if isinstance(v, (int, float)) else "-"
    for r in rows:
        shape = "%dx%dx%d" % (r["m"], r["n"], r["k"])
        if "error" in r:
            print(f"{r['op']:>3} {shape:>22}  error: {r['error']}")
            continue
        nc = r.get("nccl_cublas_ms")
        speed = "%.2f" % (nc / r["fused_median_ms"]) if nc else "-"
        print(f"{r['op']:>3} {shape:>22} {fmt(r['fused_median_ms']):>9} {fmt(r['gemm_median_ms']):>8} "
              f"{fmt(r['exposed_ms']):>8} {r['fused_tflops']:>6.0f} {fmt(nc):>11} {speed:>8} "
              f"{fmt(r.get('torch_fused_ms')):>11} {fmt(r.get('cublas_ms')):>8} {r['error_of_bound']:>9.3f} {str(r['pass']):>5}")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "tp_bench.json"), "w") as f:
            json.dump(rows, f, indent=1)
    sys.exit(0 if rows and all(r.get("pass") for r in rows) else 1)


if __name__ == "__main__":
    main()
