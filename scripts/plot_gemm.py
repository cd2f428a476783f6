#!/usr/bin/env python3
"""Bar chart of rshmem's GEMM beside cuBLAS from scripts/gemm_bench.py's JSON rows.

    python3 scripts/plot_gemm.py OUT.png RUN.json [RUN.json ...]

Each JSON file is a list of rows (shape, layout, tflops, cublas_tflops) as gemm_bench.py writes
them to $OUT; one group of bars per shape and layout, rshmem beside the cuBLAS run of the same
row, the ratio written above.
"""
import json, sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main():
    out, files = sys.argv[1], sys.argv[2:]
    rows = [r for f in files for r in json.load(open(f)) if "tflops" in r]
    labels = ["%dx%dx%d\n%s %s" % (r["m"], r["n"], r["k"], r["layout"], r.get("kernel", ""))
              for r in rows]
    xs = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 0.75 * len(rows)), 5.5))
    ax.bar([x - 0.2 for x in xs], [r["tflops"] for r in rows], 0.4, label="rshmem (Rust)")
    ax.set_ylim(0, 900)
    ax.bar([x + 0.2 for x in xs], [r["cublas_tflops"] for r in rows], 0.4, label="cuBLAS (torch.matmul)")
    for x, r in zip(xs, rows):
        ax.text(x, max(r["tflops"], r["cublas_tflops"]) + 10, "%.2f" % (r["tflops"] / r["cublas_tflops"]),
                ha="center", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, fontsize=7, rotation=35, ha="right")
    ax.set_ylabel("TFLOP/s (bf16 in, f32 acc, bf16 out)")
    ax.set_title("GEMM M x N x K on one H200: rshmem vs cuBLAS, same run (ratio above)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main()
