#!/usr/bin/env python3
"""rshmem's collectives beside NCCL, torch symmetric memory and NVSHMEM, bf16, on the GPUs of
the GPU machine, in one run, each with and without CUDA graphs.

Rows (sizes are bytes of the whole buffer, as NCCL's tests count them: the all-reduce's
buffer, the reduce-scatter's input, the all-gather's output; default 8 B to 256 MiB):

  rshmem   Ops::all_reduce with Algorithm::Auto and each algorithm forced (Lamport,
           OneShot, TwoShot), Ops::reduce_scatter (Auto, OneShot, TwoShot), Ops::all_gather
           (ops/examples/collectives_bench.rs, built here by scripts/gpu-prepare.sh into
           .gpu/bin/collectives_bench; every result checked exactly on data whose sum is exact)
  nvshmem  NVSHMEM's on-stream collectives (Stream::reduce, reducescatter, fcollect; f32 at the
           same bytes: rshmem's host API has no bf16 NVSHMEM reductions), from the same binary
  nccl     torch.distributed all_reduce, reduce_scatter_tensor, all_gather_into_tensor
  symm     torch.ops.symm_mem.one_shot_all_reduce and two_shot_all_reduce_ (all-reduce only)

Timing, the same for every row: a barrier of every rank, then CUDA events around k
back-to-back calls (k = 20 up to 1 MiB, 5 up to 16 MiB, 2 above); per call the median of
--iters (>= 20) such repetitions over k. Under graphs the k calls are captured once into one
CUDA graph, replayed per repetition. Bus bandwidth is NCCL's (size / time x 2(n-1)/n for the
all-reduce, x (n-1)/n for the others).

With one GPU the rshmem PEs share it and NCCL cannot put two ranks on one GPU, so the torch
rows run on one rank. Without MPS (RSHMEM_GPU_OVERSUBSCRIBE=1: the PEs' kernels time-slice) that
is a smoke test of the whole pipeline WHOSE NUMBERS MEAN NOTHING; under MPS (a control daemon
answers: scripts/mps.sh) the PEs' kernels run at once, each on its share of the SMs, and the
rshmem rows are SAME-GPU numbers: local HBM for every peer, no NVLink, a lower bound on the
protocols' own cost (flags, barriers, Lamport), not a peer comparison. Both say so in the
output and the JSON ("sharing": "timeslice" / "mps").

Prints tables (latency per size and op, plain and under graphs; rshmem's best and Auto against
the best torch baseline) and writes every row to $OUT/collectives_bench.json when $OUT is set
(scripts/plot_collectives.py draws it).

  device run: python3 .gpu/scripts/collectives_bench.py [--npes N] [--bin PATH] [--sizes B,...]
              [--iters 20] [--no-graphs] [--no-baselines] [--ops all_reduce,...] [--no-nvshmem]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

# NVLink SHARP / multicast off (the device machines' rule), before torch or NVSHMEM start.
for var, val in (("NVSHMEM_DISABLE_NVLS", "1"), ("NCCL_NVLS_ENABLE", "0"),
                 ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ[var] = val

import torch

import rshmem_env  # scripts/rshmem_env.py, beside this one

SIZES = [8, 64, 512, 4 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20,
         64 << 20, 256 << 20]
OPS = ["all_reduce", "reduce_scatter", "all_gather"]


def inner(nbytes):
    return 20 if nbytes <= 1 << 20 else 5 if nbytes <= 16 << 20 else 2


def bus_factor(op, n):
    return 2.0 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def bench_env(npes, ngpu):
    # 256 MiB buffers in and out (x2 for the NVSHMEM rows), the workspace, NVSHMEM's own.
    return rshmem_env.bench_env(npes, ngpu, "3G")


def run_rshmem(binary, npes, ngpu, sizes, iters, graphs, timeout, extra=()):
    cmd = [binary, "--sizes", ",".join(map(str, sizes)), "--iters", str(iters), *extra]
    if not graphs:
        cmd.append("--no-graphs")
    p = subprocess.run(cmd, env=bench_env(npes, ngpu), capture_output=True, text=True,
                       timeout=timeout)
    rows = []
    for line in p.stdout.splitlines():
        # The launcher prefixes each line a PE prints with "[PE k] ".
        line = line.split("] ", 1)[1] if line.startswith("[PE ") else line
        if line.startswith("{"):
            rows.append(json.loads(line))
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        rows.append({"impl": "rshmem", "error": (p.stderr.strip().splitlines() or
                                                 ["rc=%d" % p.returncode])[-1]})
    return rows


def timed(fn, nbytes, iters, barrier, graphs):
    """(plain us, graph us or None) per call: see the module docs."""
    k = inner(nbytes)
    for _ in range(2):
        fn()
    torch.cuda.synchronize()

    def measure(body):
        times = []
        for _ in range(iters):
            barrier()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            body()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / k)
        return statistics.median(times)

    def many():
        for _ in range(k):
            fn()

    plain = measure(many)
    g_us = None
    if graphs:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            many()
        g_us = measure(g.replay)
        del g
    return plain, g_us


def baseline_worker(rank, world, sizes, iters, graphs, out_path, init_file):
    """One rank of the torch baselines (one GPU each): NCCL and torch symmetric memory."""
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="file://" + init_file, rank=rank, world_size=world)
    group = dist.group.WORLD
    try:
        from torch.distributed._symmetric_memory import enable_symm_mem_for_group
        enable_symm_mem_for_group(group.group_name)
    except Exception:
        pass  # newer torch enables it on demand
    barrier = lambda: dist.barrier()
    rows = []
    biggest = max(sizes)
    symm = None
    try:
        import torch.distributed._symmetric_memory as symm_mem
        symm = symm_mem.empty(biggest // 2, dtype=torch.bfloat16, device="cuda")
        symm_mem.rendezvous(symm, group.group_name)
    except Exception as e:
        symm_error = str(e).splitlines()[0][:200]
    for nbytes in sizes:
        numel = nbytes // 2
        per = numel // world
        for op in OPS:
            count = numel if op == "all_reduce" else per
            if count == 0:
                continue
            full = count if op == "all_reduce" else count * world
            size = full * 2
            cases = []
            if op == "all_reduce":
                t = torch.ones(full, dtype=torch.bfloat16, device="cuda")
                cases.append(("nccl", "all_reduce", lambda t=t: dist.all_reduce(t)))
                if symm is not None:
                    view = symm[:full]
                    view.fill_(1)
                    cases.append(("symm", "one_shot", lambda v=view: torch.ops.symm_mem.one_shot_all_reduce(
                        v, "sum", group.group_name)))
                    cases.append(("symm", "two_shot", lambda v=view: torch.ops.symm_mem.two_shot_all_reduce_(
                        v, "sum", group.group_name)))
            elif op == "reduce_scatter":
                inp = torch.ones(full, dtype=torch.bfloat16, device="cuda")
                out = torch.empty(count, dtype=torch.bfloat16, device="cuda")
                cases.append(("nccl", "reduce_scatter_tensor",
                              lambda i=inp, o=out: dist.reduce_scatter_tensor(o, i)))
            else:
                inp = torch.ones(count, dtype=torch.bfloat16, device="cuda")
                out = torch.empty(full, dtype=torch.bfloat16, device="cuda")
                cases.append(("nccl", "all_gather_into_tensor",
                              lambda i=inp, o=out: dist.all_gather_into_tensor(o, i)))
            for imp, algo, fn in cases:
                row = {"impl": imp, "op": op, "algo": algo, "dtype": "bf16", "bytes": size,
                       "npes": world}
                try:
                    us, g_us = timed(fn, size, iters, barrier, False)
                    row["us"] = us
                    row["busbw"] = size / us / 1e3 * bus_factor(op, world)
                except Exception as e:
                    row["error"] = str(e).splitlines()[0][:200]
                if graphs and "error" not in row:
                    try:
                        _, g_us = timed(fn, size, iters, barrier, True)
                        row["us_graph"] = g_us
                        row["busbw_graph"] = size / g_us / 1e3 * bus_factor(op, world)
                    except Exception as e:
                        row["graph_error"] = str(e).splitlines()[0][:200]
                rows.append(row)
        torch.cuda.empty_cache()
    if symm is None:
        rows.append({"impl": "symm", "error": symm_error})
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def run_baselines(world, sizes, iters, graphs, tmp):
    import torch.multiprocessing as mp
    out_path = os.path.join(tmp, "baselines.json")
    init_file = os.path.join(tmp, "dist_init")
    mp.spawn(baseline_worker, args=(world, sizes, iters, graphs, out_path, init_file),
             nprocs=world, join=True)
    with open(out_path) as f:
        return json.load(f)


def fmt_size(b):
    return "%d MiB" % (b >> 20) if b >= 1 << 20 else "%d KiB" % (b >> 10) if b >= 1 << 10 else "%d B" % b


def tables(rows, key, n):
    """Latency (us) per op and size: one column per implementation / algorithm."""
    cols = [("rshmem", "Auto"), ("rshmem", "Lamport"), ("rshmem", "OneShot"), ("rshmem", "TwoShot"),
            ("nccl", None), ("symm", "one_shot"), ("symm", "two_shot"), ("nvshmem", "on_stream")]
    names = ["auto", "lamport", "1shot", "2shot", "NCCL", "symm 1s", "symm 2s", "NVSHMEM"]
    for op in OPS:
        print("\n== %s, us per call (%s); best/torch = rshmem's best over the best of NCCL and "
              "torch symm_mem" % (op, "under CUDA graphs" if key == "us_graph" else "plain launches"))
        hdr = "%9s" % "size" + "".join("%9s" % n for n in names) + "%10s%12s%12s" % ("bus GB/s", "best/torch", "auto/torch")
        print(hdr)
        print("-" * len(hdr))
        sizes = sorted({r["bytes"] for r in rows if r.get("op") == op and "bytes" in r})
        for b in sizes:
            vals = []
            for imp, algo in cols:
                v = [r.get(key) for r in rows if r.get("op") == op and r.get("bytes") == b
                     and r.get("impl") == imp and (algo is None or r.get("algo") == algo)]
                vals.append(v[0] if v and isinstance(v[0], (int, float)) else None)
            rs = [v for v in vals[:4] if v]
            torch_best = min([v for v in vals[4:7] if v] or [None], key=lambda x: x or 0)
            line = "%9s" % fmt_size(b) + "".join("%9s" % ("%.1f" % v if v else "-") for v in vals)
            best = min(rs) if rs else None
            bw = b / best / 1e3 * bus_factor(op, n) if best else None
            line += "%10s" % ("%.0f" % bw if bw else "-")
            line += "%12s" % ("%.2f" % (best / torch_best) if best and torch_best else "-")
            line += "%12s" % ("%.2f" % (vals[0] / torch_best) if vals[0] and torch_best else "-")
            print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get("COLLECTIVES_BENCH", ".gpu/bin/collectives_bench"))
    ap.add_argument("--npes", type=int, help="PEs (default: one per GPU, 2 on one GPU)")
    ap.add_argument("--sizes", help="bytes, comma-separated (default 8 B .. 256 MiB)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-graphs", action="store_true")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--ops", help="rshmem's ops, comma-separated (the binary's --ops; default all)")
    ap.add_argument("--no-nvshmem", action="store_true", help="no NVSHMEM rows (the binary's)")
    ap.add_argument("--timeout", type=int, default=540)
    args = ap.parse_args()
    if args.iters < 20:
        print("note: --iters %d is below the 20 the benchmark's numbers are meant with" % args.iters)
    ngpu = torch.cuda.device_count()
    npes = args.npes or max(ngpu, 2)
    smoke = npes > ngpu
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else SIZES
    if smoke and not args.sizes:
        sizes = [8, 64 << 10, 1 << 20, 16 << 20]
    graphs = not args.no_graphs
    sharing = ("mps" if rshmem_env.mps_running() else "timeslice") if smoke else "none"
    if sharing == "mps":
        banner = ("SAME GPU UNDER MPS: %d PEs share %d GPU, each on 1/%d of its SMs; every peer is local "
                  "HBM, no NVLink: the rshmem rows are a lower bound on the protocols' cost, not a peer "
                  "comparison; torch runs on 1 rank." % (npes, ngpu, -(-npes // ngpu)))
    elif smoke:
        banner = ("SMOKE TEST: %d PEs share %d GPU; torch runs on 1 rank. THESE NUMBERS MEAN NOTHING "
                  "(kernels of different PEs time-slice)." % (npes, ngpu))
    else:
        banner = ""
    print("GPU:", torch.cuda.get_device_name(), "x", ngpu, "| torch", torch.__version__,
          "| PEs:", npes, "|", banner)
    extra = (["--ops", args.ops] if args.ops else []) + (["--no-nvshmem"] if args.no_nvshmem else [])
    rows = run_rshmem(args.bin, npes, ngpu, sizes, args.iters, graphs, args.timeout, extra)
    for r in rows:
        print(json.dumps(r), flush=True)
    if not args.no_baselines:
        world = 1 if smoke else npes
        with tempfile.TemporaryDirectory() as tmp:
            try:
                base = run_baselines(world, sizes, args.iters, graphs, tmp)
            except Exception as e:
                print("baselines failed:", e, file=sys.stderr)
                base = []
        for r in base:
            print(json.dumps(r), flush=True)
        rows += base
    failed = [r for r in rows if r.get("impl") in ("rshmem", "nvshmem") and r.get("check") not in ("ok", "refused")]
    tables(rows, "us", npes)
    if graphs:
        tables(rows, "us_graph", npes)
    if banner:
        print("\n" + banner)
    print("\nrshmem checks: %s" % ("all ok" if not failed else "%d FAILED" % len(failed)))
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "collectives_bench.json"), "w") as f:
            json.dump({"smoke": smoke, "sharing": sharing, "gpu": torch.cuda.get_device_name(), "ngpu": ngpu,
                       "npes": npes, "rows": rows}, f, indent=1)
    sys.exit(1 if failed or any("error" in r and r.get("impl") == "rshmem" for r in rows) else 0)


if __name__ == "__main__":
    main()
