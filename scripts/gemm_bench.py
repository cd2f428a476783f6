#!/usr/bin/env python3
"""rshmem's GEMM (rshmem_ops::Ops::gemm, bf16 in, bf16 out) beside cuBLAS (torch.matmul), on
one GPU of the GPU machine, with a correctness check of every rshmem result.

For each shape (M, N, K) this script makes fresh random bf16 A (M x K) and B (N x K; K x N
with --kn) with torch on the GPU, writes them raw (little-endian bf16) into a temporary
folder, and runs the Rust bench binary (ops/examples/gemm_bench.rs, built here by
scripts/gpu-prepare.sh into .gpu/bin/gemm_bench) on the GPU backend with one PE. The binary
runs the GEMM once, writes C, then times 20 runs (CUDA events, after 3 warm-ups) and prints a
JSON line. Then this script

* checks C against torch.matmul(A, B.T) (B @ for --kn) computed in float32 (TF32 off):
  max |c - ref| / max |ref| <= 2^-7. Rationale: bf16 output rounding is at most half an ulp,
  2^-8 relative to |c| <= max |ref|; f32 accumulation in any order adds far less (random
  inputs: ~sqrt(K) * 2^-24 relative to sum |a||b|); 2^-7 leaves a factor of two over the
  rounding and catches any wrong tile, edge or layout (those give errors of order 1).
  The measured max relative error is reported;
* times torch.matmul(A, B.T) (bf16 output, cuBLAS) with CUDA events, median of 20 after
  3 warm-ups;
* prints a table: shape, rust TFLOP/s, cublas TFLOP/s, ratio, max rel err, pass; and writes
  the rows as JSON to $OUT/gemm_bench.json when $OUT is set.

  device run: python3 .gpu/scripts/gemm_bench.py [--kn] [--bin PATH] [--shapes 4096x4096x4096,...]

--kn runs B K x N row-major through Kernel::Auto: the sm90 kernel with wgmma's MN-major B (every
listed N is a multiple of 8). The binary's path: --bin, else $GEMM_BENCH, else .gpu/bin/gemm_bench.
"""
import argparse, ctypes, json, os, statistics, subprocess, sys, tempfile

# NVLink SHARP / multicast off (the device machines' rule), before torch or NVSHMEM start.
for var, val in (("NVSHMEM_DISABLE_NVLS", "1"), ("NCCL_NVLS_ENABLE", "0"),
                 ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ[var] = val

import torch

# (M, N, K)
SHAPES = [
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (8192, 1024, 8192),
    (8192, 2048, 8192),
    (8192, 4096, 8192),
    (4096, 6144, 12288),
    (8192, 8192, 3584),
]
BOUND = 2.0 ** -7


def raw_bytes(t):
    """A tensor's bytes (no numpy needed)."""
    t = t.contiguous().cpu()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def cuda_median_ms(fn, warmup=3, iters=20):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def bench_env():
    env = dict(os.environ)
    env.update(RSHMEM_BACKEND="gpu", RSHMEM_NPES="1", RUST_LIB_BACKTRACE="0")
    env.setdefault("NVSHMEM_SYMMETRIC_SIZE", "4G")  # A, B and C of the largest shape: 384 MiB
    try:
        import nvidia.nvshmem as nvs
        home = list(nvs.__path__)[0]
        env.setdefault("NVSHMEM_HOME", home)
        env["LD_LIBRARY_PATH"] = home + "/lib:" + env.get("LD_LIBRARY_PATH", "")
    except ImportError:
        pass  # NVSHMEM found otherwise (NVSHMEM_HOME, the loader path)
    return env


def run_shape(binary, m, n, k, kn, kernel, tmp):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn((k, n) if kn else (n, k), device="cuda", dtype=torch.bfloat16)
    with open(os.path.join(tmp, "a.bin"), "wb") as f:
        f.write(raw_bytes(a))
    with open(os.path.join(tmp, "b.bin"), "wb") as f:
        f.write(raw_bytes(b))
    cmd = [binary, "--dir", tmp, "--m", str(m), "--n", str(n), "--k", str(k), "--kernel", kernel]
    if kn:
        cmd.append("--kn")
    row = {"m": m, "n": n, "k": k, "layout": "KN" if kn else "NK"}
    p = subprocess.run(cmd, env=bench_env(), capture_output=True, text=True, timeout=90)
    # The launcher prefixes each line a PE prints with "[PE k] ".
    lines = [l.split("] ", 1)[-1] for l in p.stdout.splitlines()]
    lines = [l for l in lines if l.startswith("{")]
    if p.returncode != 0 or not lines:
        row["error"] = (p.stderr.strip().splitlines() or ["rc=%d" % p.returncode])[-1]
        sys.stderr.write(p.stdout + p.stderr)
        return row
    row.update(json.loads(lines[-1]))
    with open(os.path.join(tmp, "c.bin"), "rb") as f:
        c = torch.frombuffer(bytearray(f.read()), dtype=torch.bfloat16).reshape(m, n).cuda()
    torch.backends.cuda.matmul.allow_tf32 = False
    bt = b.float() if kn else b.float().T
    ref = torch.matmul(a.float(), bt)
    row["max_rel_err"] = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    row["pass"] = row["max_rel_err"] <= BOUND
    del ref, c, bt
    ms = cuda_median_ms(lambda: torch.matmul(a, b if kn else b.T))
    row["cublas_ms"] = ms
    row["cublas_tflops"] = 2.0 * m * n * k / ms / 1e9
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kn", action="store_true", help="B is K x N (the sm80 kernel via Auto)")
    ap.add_argument("--bin", default=os.environ.get("GEMM_BENCH", ".gpu/bin/gemm_bench"))
    ap.add_argument("--kernel", default="auto", choices=["auto", "sm90", "sm80"])
    ap.add_argument("--shapes", help="MxNxK,... (default: the standard list)")
    args = ap.parse_args()
    shapes = SHAPES
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    print("GPU:", torch.cuda.get_device_name(), "| torch", torch.__version__,
          "| bound: max|c-ref|/max|ref| <= 2^-7 =", BOUND)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for m, n, k in shapes:
            row = run_shape(args.bin, m, n, k, args.kn, args.kernel, tmp)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    hdr = f"{'shape (MxNxK)':>20} {'B':>3} {'rust TF/s':>10} {'cublas TF/s':>12} {'ratio':>6} {'max rel err':>12} {'pass':>5}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        if "error" in r:
            print(f"{shape:>20} {r['layout']:>3}  error: {r['error']}")
            continue
        print(f"{shape:>20} {r['layout']:>3} {r['tflops']:>10.1f} {r['cublas_tflops']:>12.1f} "
              f"{r['tflops'] / r['cublas_tflops']:>6.2f} {r['max_rel_err']:>12.2e} {str(r['pass']):>5}")
    out = os.environ.get("OUT")
    if out:
        tag = ("_kn" if args.kn else "") + ("" if args.kernel == "auto" else "_" + args.kernel)
        with open(os.path.join(out, "gemm_bench%s.json" % tag), "w") as f:
            json.dump(rows, f, indent=1)
    ok = all(r.get("pass") for r in rows)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
