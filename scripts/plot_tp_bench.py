#!/usr/bin/env python3
"""Plots the fused tensor-parallel benchmark from the JSON scripts/tp_bench.py writes
($OUT/tp_bench.json): per op and shape, the time of rshmem's fused op, rshmem's GEMM alone,
NCCL + cuBLAS in sequence, torch's fused op and cuBLAS alone (bars, microseconds).

    python3 scripts/plot_tp_bench.py tp_bench.json OUT.png [TITLE]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SERIES = [
    ("fused_median_ms", "rshmem fused"),
    ("gemm_median_ms", "rshmem GEMM alone"),
    ("nccl_cublas_ms", "NCCL + cuBLAS"),
    ("torch_fused_ms", "torch fused (symm_mem)"),
    ("cublas_ms", "cuBLAS alone"),
]


def main():
    rows = [r for r in json.load(open(sys.argv[1])) if "error" not in r]
    title = sys.argv[3] if len(sys.argv) > 3 else "fused tensor-parallel ops"
    labels = ["%s %dx%dx%d" % (r["op"], r["m"], r["n"], r["k"]) for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(rows)), 5))
    width = 0.8 / len(SERIES)
    for i, (key, name) in enumerate(SERIES):
        xs = [j + (i - len(SERIES) / 2 + 0.5) * width for j in range(len(rows))]
        ys = [1e3 * r[key] if isinstance(r.get(key), (int, float)) else 0 for r in rows]
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel("time (us), median")
    npes = rows[0].get("npes", "?") if rows else "?"
    ax.set_title("%s, %s PEs (M x N x K per PE)" % (title, npes))
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
