#!/usr/bin/env python3
"""The HBM read rate a plain streaming kernel reaches on this GPU, the measured roofline beside
the GEMM's decode rows: torch.sum over a bf16 tensor of the size of B (reads it once, writes one
value), and torch.mv (cuBLAS's GEMV, M = 1), medians of 20 with CUDA events after 3 warm-ups.

  device run: python3 .gpu/scripts/hbm_read.py [NxK,...]   (default 4096x4096,8192x8192,14336x4096)
"""
import sys
import torch
from gemm_bench import cuda_median_ms as median_ms  # scripts/ and .gpu/scripts/ hold both


shapes = sys.argv[1] if len(sys.argv) > 1 else "4096x4096,8192x8192,14336x4096"
print(f"{'B (N x K bf16)':>16} {'MiB':>6} {'sum us':>8} {'sum TB/s':>9} {'mv us':>8} {'mv TB/s':>8}")
for s in shapes.split(","):
    n, k = (int(x) for x in s.split("x"))
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(k, device="cuda", dtype=torch.bfloat16)
    nbytes = b.numel() * 2
    t_sum = median_ms(lambda: b.sum())
    t_mv = median_ms(lambda: torch.mv(b, x))
    print(f"{s:>16} {nbytes / 2**20:>6.0f} {1e3 * t_sum:>8.1f} {nbytes / t_sum / 1e9:>9.2f} "
          f"{1e3 * t_mv:>8.1f} {nbytes / t_mv / 1e9:>8.2f}")
