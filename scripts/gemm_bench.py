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
              [--split off,auto,4] [--tile auto,256,128]

--split runs each shape once per listed split-K setting (GemmOptions::split_k: off, auto or a
part count), --tile once per listed sm90 tile (GemmOptions::tile: the cost model's, 128 x 256,
128 x 128), each row beside its own cuBLAS timing; the table's split and tile columns are
"asked:ran" (the parts the binary ran, 1 for none; the tile's columns). `--tile 256,128` on the
same shapes is what the tile model (ops/src/gemm/plan.rs) is fitted to.

--grouped runs the grouped GEMM (Ops::grouped_gemm, offsets layout, B N x K per group) on
GROUPED_CASES (and a fresh random imbalanced case) beside torch._grouped_mm (bf16, the same
offsets) and a loop of per-group torch.matmul, and beside one dense GEMM of the same M x N x K
(the same FLOPs) by rshmem and cuBLAS; each group of C is checked against f32 torch.matmul with
the same bound. Rows go to $OUT/gemm_bench_grouped.json.

--fp8 runs the FP8 GEMM (Ops::gemm_fp8, e4m3 in, bf16 out, B N x K) on FP8_SHAPES (or --shapes),
each shape twice: per-tensor scales beside torch._scaled_mm(use_fast_accum=True) (rshmem's
per-tensor kernel accumulates in the tensor cores too), and DeepSeek-V3 block scales (1 x 128 of
A, 128 x 128 of B) beside torch._scaled_mm with the same blockwise scales where this torch takes
them (else the row says why: older torch, or K not a multiple of 128), once per --split setting
(Ops::gemm_fp8_with: decode-sized M splits K under auto); then the grouped
block-scaled GEMM on GROUPED_CASES. Operands: fresh torch.randn bf16 quantised here (amax / 448
per block; torch's float8_e4m3fn conversion), written as bytes with their f32 scales; C is
checked against torch.matmul of the dequantised operands in float32 (max |c - ref| / max |ref|
<= 2^-7: bf16 output rounding dominates; per tensor, where both sum in the tensor cores, within
1.5x of torch._scaled_mm's own error when that is larger). Rows go to $OUT/gemm_bench_fp8.json.

--kn runs B K x N row-major through Kernel::Auto: the sm90 kernel with wgmma's MN-major B (every
listed N is a multiple of 8). The binary's path: --bin, else $GEMM_BENCH, else .gpu/bin/gemm_bench.
"""
import argparse, ctypes, json, os, statistics, subprocess, sys, tempfile

# NVLink SHARP / multicast off (the device machines' rule), before torch or NVSHMEM start.
for var, val in (("NVSHMEM_DISABLE_NVLS", "1"), ("NCCL_NVLS_ENABLE", "0"),
                 ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")):
    os.environ[var] = val

import torch

import rshmem_env  # scripts/rshmem_env.py, beside this one

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

# FP8 shapes (M, N, K): large, DeepSeek-V3's (4096 x 7168 x 16384, 4096 x 24576 x 1536), N and M
# not multiples of 128, K a multiple of 16 but not of 128, decode-sized M.
FP8_SHAPES = [
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (4096, 7168, 16384),
    (4096, 24576, 1536),
    (2000, 1000, 1024),
    (1999, 3001, 2064),
    (128, 8192, 8192),
    (16, 4096, 4096),
    (1, 8192, 8192),
    (256, 4096, 14336),
]

# Grouped cases: (name, rows per group, N, K). DeepSeek-V3's experts (hidden 7168, expert
# width 2048) on 16 local experts: gate+up is N 4096 x K 7168, down N 7168 x K 2048.
GROUPED_CASES = [
    ("balanced 8x512", [512] * 8, 4096, 4096),
    ("ds-v3 gate_up 16x256", [256] * 16, 4096, 7168),
    ("ds-v3 down 16x256", [256] * 16, 7168, 2048),
    ("ds-v3 gate_up 16x64 (decode)", [64] * 16, 4096, 7168),
    ("ragged 8 (one empty)", [0, 96, 1000, 16, 752, 512, 1200, 520], 4096, 4096),
]


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
    return rshmem_env.bench_env(1, 1, "4G")  # A, B and C of the largest shape: 384 MiB


def run_shape(binary, m, n, k, kn, kernel, split, tile, tmp):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn((k, n) if kn else (n, k), device="cuda", dtype=torch.bfloat16)
    with open(os.path.join(tmp, "a.bin"), "wb") as f:
        f.write(raw_bytes(a))
    with open(os.path.join(tmp, "b.bin"), "wb") as f:
        f.write(raw_bytes(b))
    cmd = [binary, "--dir", tmp, "--m", str(m), "--n", str(n), "--k", str(k), "--kernel", kernel]
    if kn:
        cmd.append("--kn")
    cmd += ["--split", split, "--tile", tile]
    row = {"m": m, "n": n, "k": k, "layout": "KN" if kn else "NK", "split_asked": split,
           "tile_asked": tile}
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


def run_binary(binary, tmp, m, n, k, kernel, ends=None):
    """The bench binary's JSON row, or {"error": ...}."""
    cmd = [binary, "--dir", tmp, "--m", str(m), "--n", str(n), "--k", str(k), "--kernel", kernel]
    if ends is not None:
        cmd += ["--ends", ",".join(str(e) for e in ends)]
    p = subprocess.run(cmd, env=bench_env(), capture_output=True, text=True, timeout=120)
    lines = [l.split("] ", 1)[-1] for l in p.stdout.splitlines()]
    lines = [l for l in lines if l.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.stderr.write(p.stdout + p.stderr)
        return {"error": (p.stderr.strip().splitlines() or ["rc=%d" % p.returncode])[-1]}
    return json.loads(lines[-1])


def write(tmp, name, t):
    with open(os.path.join(tmp, name), "wb") as f:
        f.write(raw_bytes(t))


def run_grouped(binary, name, sizes, n, k, kernel, tmp):
    g, m = len(sizes), sum(sizes)
    ends = [sum(sizes[: i + 1]) for i in range(g)]
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(g, n, k, device="cuda", dtype=torch.bfloat16)  # N x K per group
    write(tmp, "a.bin", a)
    write(tmp, "b.bin", b)
    row = {"case": name, "groups": g, "m": m, "n": n, "k": k, "sizes": sizes}
    r = run_binary(binary, tmp, m, n, k, kernel, ends)
    if "error" in r:
        row["error"] = r["error"]
        return row
    row["rust_ms"] = r["median_ms"]
    with open(os.path.join(tmp, "c.bin"), "rb") as f:
        c = torch.frombuffer(bytearray(f.read()), dtype=torch.bfloat16).reshape(m, n).cuda()
    torch.backends.cuda.matmul.allow_tf32 = False
    err, start = 0.0, 0
    for i, e in enumerate(ends):
        if e > start:
            ref = torch.matmul(a[start:e].float(), b[i].float().T)
            err = max(err, ((c[start:e].float() - ref).abs().max() / ref.abs().max()).item())
        start = e
    row["max_rel_err"], row["pass"] = err, err <= BOUND
    offs = torch.tensor(ends, device="cuda", dtype=torch.int32)
    bt = b.transpose(-2, -1)  # (G, K, N), each group's N x K as stored
    try:
        torch._grouped_mm(a, bt, offs=offs)
        row["torch_grouped_ms"] = cuda_median_ms(lambda: torch._grouped_mm(a, bt, offs=offs))
    except Exception as e:  # absent or refusing this shape: the loop below stands in
        row["torch_grouped_error"] = str(e).splitlines()[0][:200]
    spans = [(i, (ends[i - 1] if i else 0), e) for i, e in enumerate(ends)]

    def loop():
        for i, s0, e in spans:
            if e > s0:
                torch.matmul(a[s0:e], b[i].T)

    row["torch_loop_ms"] = cuda_median_ms(loop)
    # The dense GEMM of the same M x N x K (the same FLOPs), by cuBLAS and by rshmem.
    row["cublas_dense_ms"] = cuda_median_ms(lambda: torch.matmul(a, b[0].T))
    write(tmp, "b.bin", b[0])
    d = run_binary(binary, tmp, m, n, k, kernel)
    row["rust_dense_ms"] = d.get("median_ms")
    flops = 2.0 * m * n * k
    row["rust_tflops"] = flops / row["rust_ms"] / 1e9
    return row


def run_all(cases, run_one):
    """Each case through `run_one(case, tmp)` in one temporary directory, each row's JSON printed
    as it comes; the rows."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            row = run_one(case, tmp)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    return rows


def print_header(hdr):
    print(hdr)
    print("-" * len(hdr))


def finish(rows, name):
    """The rows to $OUT/name (where $OUT is set); exit status 0 if every row passed."""
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, name), "w") as f:
            json.dump(rows, f, indent=1)
    sys.exit(0 if all(r.get("pass") for r in rows) else 1)


def quantize(x, br, bc):
    """x (R x C, bf16) in e4m3 with one f32 scale per br x bc block (amax / 448, 1 for an all-zero
    block): (the float8 tensor, the scales as (ceil(R/br), ceil(C/bc)) f32, the dequantised f32)."""
    r, c = x.shape
    rb, cb = -(-r // br), -(-c // bc)
    xp = torch.zeros(rb * br, cb * bc, device=x.device, dtype=torch.float32)
    xp[:r, :c] = x.float()
    blocks = xp.reshape(rb, br, cb, bc)
    amax = blocks.abs().amax(dim=(1, 3))
    s = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
    q = (blocks / s[:, None, :, None]).reshape(rb * br, cb * bc)[:r, :c].to(torch.float8_e4m3fn)
    deq = (q.float().reshape(r, c) * s.repeat_interleave(br, 0)[:r].repeat_interleave(bc, 1)[:, :c])
    return q, s.contiguous(), deq


def scaled_mm_fn(a8, b8, sa, sb, block, k):
    """torch._scaled_mm of A (M x K) and B (N x K) in e4m3 with their scales (bf16 out), as a
    callable; raises ValueError where torch's blockwise recipe cannot take the shape."""
    if block:
        if k % 128:
            raise ValueError("torch's blockwise scales need K % 128 == 0")
        kb = k // 128
        kb4 = -(-kb // 4) * 4
        # cuBLASLt's layouts (1x128 x 128x128): A's [M, K/128] with strides (1, M); B's (of the
        # K x N operand) [round_up(K/128, 4), N/128] with strides (1, round_up(K/128, 4)).
        sa_t = sa.t().contiguous().t()
        sb_p = torch.ones(sb.shape[0], kb4, device=sb.device, dtype=torch.float32)
        sb_p[:, :kb] = sb
        sb_t = sb_p.t()
        return lambda: torch._scaled_mm(a8, b8.t(), scale_a=sa_t, scale_b=sb_t,
                                        out_dtype=torch.bfloat16)
    return lambda: torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                    use_fast_accum=True)


def scaled_mm_ms(calls):
    """The median ms of running every callable of `calls` in turn, or (None, why torch refused)."""
    try:
        for fn in calls:
            fn()
    except Exception as e:  # torch without this recipe, or refusing the shape
        return None, str(e).splitlines()[0][:200]
    return cuda_median_ms(lambda: [fn() for fn in calls]), None


def run_fp8(binary, m, n, k, block, tmp, sizes=None, split="auto"):
    """One FP8 row: rshmem's time and check, torch._scaled_mm's time (plain), or the grouped GEMM
    (block scales, `sizes` rows per group) beside a loop of per-group torch._scaled_mm."""
    g = len(sizes) if sizes else 1
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(g * n, k, device="cuda", dtype=torch.bfloat16)
    if block:
        a8, sa, da = quantize(a, 1, 128)
        parts = [quantize(b[i * n:(i + 1) * n], 128, 128) for i in range(g)]
        b8 = torch.cat([p[0] for p in parts])
        sb = torch.cat([p[1] for p in parts])
        db = torch.cat([p[2] for p in parts])
        sa_file = sa.t().contiguous()  # ceil(k/128) x m, M contiguous
    else:
        a8, sa, da = quantize(a, m, k)
        b8, sb, db = quantize(b, n, k)
        sa_file = sa
    write(tmp, "a.bin", a8.view(torch.uint8))
    write(tmp, "b.bin", b8.view(torch.uint8))
    write(tmp, "sa.bin", sa_file)
    write(tmp, "sb.bin", sb)
    row = {"m": m, "n": n, "k": k, "fp8": "block" if block else "tensor", "groups": g if sizes else 0,
           "split_asked": split}
    cmd = [binary, "--dir", tmp, "--m", str(m), "--n", str(n), "--k", str(k),
           "--fp8", "block" if block else "tensor", "--split", split]
    ends = None
    if sizes:
        ends = [sum(sizes[: i + 1]) for i in range(g)]
        cmd += ["--ends", ",".join(map(str, ends))]
    p = subprocess.run(cmd, env=bench_env(), capture_output=True, text=True, timeout=120)
    lines = [l.split("] ", 1)[-1] for l in p.stdout.splitlines()]
    lines = [l for l in lines if l.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.stderr.write(p.stdout + p.stderr)
        row["error"] = (p.stderr.strip().splitlines() or ["rc=%d" % p.returncode])[-1]
        return row
    row.update(json.loads(lines[-1]))
    with open(os.path.join(tmp, "c.bin"), "rb") as f:
        c = torch.frombuffer(bytearray(f.read()), dtype=torch.bfloat16).reshape(m, n).cuda()
    torch.backends.cuda.matmul.allow_tf32 = False
    err, start = 0.0, 0
    for i, e in enumerate(ends or [m]):
        if e > start:
            ref = torch.matmul(da[start:e], db[i * n:(i + 1) * n].T)
            err = max(err, ((c[start:e].float() - ref).abs().max() / ref.abs().max()).item())
        start = e
    row["max_rel_err"], row["pass"] = err, err <= BOUND
    nb = -(-n // 128)
    try:
        if sizes:
            spans = [(i, (ends[i - 1] if i else 0), e) for i, e in enumerate(ends)]
            calls = [scaled_mm_fn(a8[s0:e], b8[i * n:(i + 1) * n], sa[s0:e], sb[i * nb:(i + 1) * nb],
                                  True, k) for i, s0, e in spans if e > s0]
        else:
            calls = [scaled_mm_fn(a8, b8, sa, sb, block, k)]
        ms, why = scaled_mm_ms(calls)
        if not block and ms is not None:
            # Per tensor, both sum in the tensor cores (not IEEE f32), whose error grows with K
            # past 2^-7 (4096 x 7168 x 16384: 1.3e-2): the row passes within 1.5x of torch's
            # own error with use_fast_accum on the same operands.
            peer = calls[0]().float()
            ref = torch.matmul(da, db.T)
            row["torch_rel_err"] = ((peer - ref).abs().max() / ref.abs().max()).item()
            row["pass"] = err <= max(BOUND, 1.5 * row["torch_rel_err"])
    except ValueError as e:
        ms, why = None, str(e)
    if ms is None:
        row["torch_error"] = why
    else:
        row["torch_ms"] = ms
    return row


def fp8_main(args):
    shapes = FP8_SHAPES
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    # Each plain shape with every split setting (the grouped GEMM never splits).
    cases = [(s, blk, None, sp) for s in shapes for blk in (False, True) for sp in args.split.split(",")]
    cases += [((sum(sz), n, k), True, sz, "auto") for _, sz, n, k in GROUPED_CASES]
    rows = run_all(cases, lambda c, tmp: run_fp8(args.bin, *c[0], c[1], tmp, c[2], c[3]))
    print_header(f"{'shape (MxNxK)':>20} {'scales':>7} {'groups':>6} {'split':>9} {'rust us':>9} {'torch us':>9} "
                 f"{'rust TF/s':>10} {'torch/rust':>10} {'max rel err':>12} {'pass':>5}")
    for r in rows:
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        split = f"{r['split_asked']}:{r.get('split', '?')}"
        if "error" in r:
            print(f"{shape:>20} {r['fp8']:>7} {r['groups']:>6} {split:>9}  error: {r['error']}")
            continue
        t = r.get("torch_ms")
        print(f"{shape:>20} {r['fp8']:>7} {r['groups']:>6} {split:>9} {1e3 * r['median_ms']:>9.1f} "
              f"{(1e3 * t if t else float('nan')):>9.1f} {r['tflops']:>10.1f} "
              f"{(t / r['median_ms'] if t else float('nan')):>10.2f} {r['max_rel_err']:>12.2e} "
              f"{str(r['pass']):>5}" + (f"  torch: {r['torch_error']}" if "torch_error" in r else ""))
    print("torch/rust: torch._scaled_mm's time over rshmem's (per tensor with use_fast_accum=True; "
          "grouped: a loop of per-group _scaled_mm)")
    finish(rows, "gemm_bench_fp8.json")


def grouped_main(args):
    import random
    rng = random.Random()
    # A fresh imbalanced case each run: 8 groups, multiples of 16 rows, about 4096 in all.
    sizes = [16 * rng.randint(0, 64) for _ in range(8)]
    cases = GROUPED_CASES + [("random 8 " + ",".join(map(str, sizes)), sizes, 4096, 4096)]
    rows = run_all(cases, lambda c, tmp: run_grouped(args.bin, *c, args.kernel, tmp))
    print_header(f"{'case':>30} {'MxNxK':>16} {'rust us':>9} {'TF/s':>6} {'torch grp':>10} "
                 f"{'loop':>8} {'/grp':>5} {'dense cuBLAS':>12} {'/dense':>6} {'rust dense':>10} "
                 f"{'pass':>5}")
    for r in rows:
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        if "error" in r:
            print(f"{r['case']:>30} {shape:>16}  error: {r['error']}")
            continue
        tg = r.get("torch_grouped_ms")
        peer = tg if tg else r["torch_loop_ms"]
        rd = r.get("rust_dense_ms")
        print(f"{r['case']:>30} {shape:>16} {1e3 * r['rust_ms']:>9.1f} {r['rust_tflops']:>6.0f} "
              f"{(1e3 * tg if tg else float('nan')):>10.1f} {1e3 * r['torch_loop_ms']:>8.1f} "
              f"{peer / r['rust_ms']:>5.2f} {1e3 * r['cublas_dense_ms']:>12.1f} "
              f"{r['cublas_dense_ms'] / r['rust_ms']:>6.2f} {(1e3 * rd if rd else float('nan')):>10.1f} "
              f"{str(r['pass']):>5}")
    print("/grp: torch._grouped_mm's time (the loop's where it is absent) over rshmem's; "
          "/dense: cuBLAS's dense GEMM of the same FLOPs over rshmem's grouped")
    finish(rows, "gemm_bench_grouped.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kn", action="store_true", help="B is K x N (the sm80 kernel via Auto)")
    ap.add_argument("--bin", default=os.environ.get("GEMM_BENCH", ".gpu/bin/gemm_bench"))
    ap.add_argument("--kernel", default="auto", choices=["auto", "sm90", "sm80"])
    ap.add_argument("--shapes", help="MxNxK,... (default: the standard list)")
    ap.add_argument("--grouped", action="store_true", help="the grouped GEMM's cases")
    ap.add_argument("--fp8", action="store_true", help="the FP8 GEMM (per tensor, block, grouped)")
    ap.add_argument("--tile", default="auto",
                    help="sm90 tiles to run each shape with, e.g. 256,128 (default auto)")
    ap.add_argument("--split", default="auto",
                    help="split-K settings to run each shape with, e.g. off,auto,4 (default auto)")
    args = ap.parse_args()
    if args.grouped:
        print("GPU:", torch.cuda.get_device_name(), "| torch", torch.__version__)
        grouped_main(args)
    if args.fp8:
        print("GPU:", torch.cuda.get_device_name(), "| torch", torch.__version__)
        fp8_main(args)
    shapes = SHAPES
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    print("GPU:", torch.cuda.get_device_name(), "| torch", torch.__version__,
          "| bound: max|c-ref|/max|ref| <= 2^-7 =", BOUND)
    # Each shape with every split and tile setting in turn, each row with its own cuBLAS timing.
    cases = [(s, sp, t) for s in shapes for sp in args.split.split(",") for t in args.tile.split(",")]
    rows = run_all(cases, lambda c, tmp: run_shape(args.bin, *c[0], args.kn, args.kernel, c[1], c[2], tmp))
    print_header(f"{'shape (MxNxK)':>20} {'B':>3} {'split':>9} {'tile':>8} {'rust us':>9} {'cublas us':>9} "
                 f"{'rust TF/s':>10} {'cublas TF/s':>12} {'ratio':>6} {'max rel err':>12} {'pass':>5}")
    for r in rows:
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        if "error" in r:
            print(f"{shape:>20} {r['layout']:>3} {r['split_asked']:>9} {r['tile_asked']:>8}  error: {r['error']}")
            continue
        split = f"{r['split_asked']}:{r.get('split', '?')}"
        tile = f"{r['tile_asked']}:{r.get('tile', '?')}"
        print(f"{shape:>20} {r['layout']:>3} {split:>9} {tile:>8} {1e3 * r['median_ms']:>9.1f} "
              f"{1e3 * r['cublas_ms']:>9.1f} {r['tflops']:>10.1f} {r['cublas_tflops']:>12.1f} "
              f"{r['tflops'] / r['cublas_tflops']:>6.2f} {r['max_rel_err']:>12.2e} {str(r['pass']):>5}")
    tag = ("_kn" if args.kn else "") + ("" if args.kernel == "auto" else "_" + args.kernel)
    finish(rows, "gemm_bench%s.json" % tag)


if __name__ == "__main__":
    main()
