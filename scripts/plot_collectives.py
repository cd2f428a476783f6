#!/usr/bin/env python3
"""Plots of scripts/collectives_bench.py's JSON: for each collective, latency (us per call,
log-log) and bus bandwidth against size, one line per implementation (rshmem Auto and its
algorithms, NCCL, torch symmetric memory, NVSHMEM), plain (solid) and under CUDA graphs
(dashed).

    python3 scripts/plot_collectives.py OUT.png collectives_bench.json

A smoke run (PEs sharing one GPU) is titled as such: its numbers mean nothing.
"""
import json, sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

OPS = ["all_reduce", "reduce_scatter", "all_gather"]
LINES = [("rshmem", "Auto", "rshmem auto"), ("rshmem", "Lamport", "rshmem lamport"),
         ("rshmem", "OneShot", "rshmem one-shot"), ("rshmem", "TwoShot", "rshmem two-shot"),
         ("nccl", None, "NCCL"), ("symm", "one_shot", "torch symm one-shot"),
         ("symm", "two_shot", "torch symm two-shot"), ("nvshmem", "on_stream", "NVSHMEM (f32)")]


def main():
    out, path = sys.argv[1], sys.argv[2]
    run = json.load(open(path))
    rows = run["rows"]
    fig, axes = plt.subplots(2, len(OPS), figsize=(6 * len(OPS), 9))
    for col, op in enumerate(OPS):
        for idx, (imp, algo, label) in enumerate(LINES):
            color = plt.get_cmap("tab10")(idx)
            sel = sorted((r for r in rows if r.get("op") == op and r.get("impl") == imp
                          and (algo is None or r.get("algo") == algo) and "us" in r),
                         key=lambda r: r["bytes"])
            if not sel:
                continue
            xs = [r["bytes"] for r in sel]
            for key, bw, style in (("us", "busbw", "-"), ("us_graph", "busbw_graph", "--")):
                pts = [(x, r[key], r[bw]) for x, r in zip(xs, sel) if key in r]
                if not pts:
                    continue
                lab = label + (" (graph)" if key == "us_graph" else "")
                axes[0][col].plot([p[0] for p in pts], [p[1] for p in pts], style, marker=".",
                                  color=color, label=lab)
                axes[1][col].plot([p[0] for p in pts], [p[2] for p in pts], style, marker=".",
                                  color=color, label=lab)
        axes[0][col].set(xscale="log", yscale="log", title=op, xlabel="bytes", ylabel="us per call")
        axes[1][col].set(xscale="log", xlabel="bytes", ylabel="bus GB/s")
        for ax in (axes[0][col], axes[1][col]):
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=6)
    title = "%s x %d, %d PEs" % (run.get("gpu", "?"), run.get("ngpu", 0), run.get("npes", 0))
    if run.get("smoke"):
        title += " - SMOKE TEST, PEs share one GPU: numbers mean nothing"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
