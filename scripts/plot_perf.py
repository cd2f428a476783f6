#!/usr/bin/env python3
"""Plots the joined perftest results (Rust vs CUDA C++ NVSHMEM) that scripts/gpu-check.sh writes.

    python3 scripts/plot_perf.py PERF_CSV OUT_DIR

PERF_CSV has the header `row,param,unit,rust,cpp,ratio` (one line per case; `rust` or `cpp` may
be empty where one side did not run). Writes into OUT_DIR:

    perf_bandwidth.png   put/get bandwidth against size, one colour per CTA count
    perf_latency.png     latency rows against size or as single points, log scale
    perf_ratio.png       Rust speed relative to C++ for every case (>1: Rust faster)

docs/perf.md shows them (copied to docs/).
"""
import csv
import math
import os
import re
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append(
                {
                    "row": r["row"],
                    "param": int(r["param"]),
                    "unit": r["unit"],
                    "rust": float(r["rust"]) if r["rust"] else None,
                    "cpp": float(r["cpp"]) if r["cpp"] else None,
                }
            )
    return rows


def series(rows, keep):
    """{row: [(param, rust, cpp)]} for the rows `keep` accepts, sorted by param."""
    out = defaultdict(list)
    for r in rows:
        if keep(r):
            out[r["row"]].append((r["param"], r["rust"], r["cpp"]))
    return {k: sorted(v) for k, v in out.items()}


def size_label(b):
    if b >= 1 << 20:
        return "%d MiB" % (b >> 20)
    if b >= 1 << 10:
        return "%d KiB" % (b >> 10)
    return "%d B" % b


def plot_lines(ax, data, ylabel, logy):
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, pts) in enumerate(sorted(data.items())):
        c = colours[i % len(colours)]
        xs = [p for p, _, _ in pts]
        for idx, style, side in ((1, "-o", "Rust"), (2, "--x", "C++")):
            ys = [(x, v[idx]) for x, v in zip(xs, pts) if v[idx] is not None]
            if ys:
                ax.plot([x for x, _ in ys], [y for _, y in ys], style, color=c, label="%s %s" % (name, side))
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ticks = sorted({p for pts in data.values() for p, _, _ in pts})
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    out = sys.argv[2]
    # perf_<N>pe.csv, as gpu-check.sh names it.
    npes = re.search(r"_(\d+)pe\.csv$", sys.argv[1])
    gpus = "%s GPUs" % npes.group(1) if npes else "GPUs"
    os.makedirs(out, exist_ok=True)

    bw = series(rows, lambda r: r["unit"] == "GB/s")
    if bw:
        fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
        for ax, kind in zip(axes, ("put_bw", "get_bw")):
            plot_lines(ax, {k: v for k, v in bw.items() if k.startswith(kind)}, "GB/s", False)
            ax.set_title("%s, PE 0 <-> PE 1 (solid: Rust, dashed: CUDA C++)" % kind)
            ax.set_xlabel("bytes per launch iteration")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "perf_bandwidth.png"), dpi=120)

    # Latency: rows over several sizes as lines; single-size rows as a bar pair each.
    lat = series(rows, lambda r: r["unit"] == "us")
    sized = {k: v for k, v in lat.items() if len(v) > 1}
    single = {k: v[0] for k, v in lat.items() if len(v) == 1}
    if lat:
        fig, axes = plt.subplots(1, 2, figsize=(13, 5))
        if sized:
            plot_lines(axes[0], sized, "us per iteration", True)
            axes[0].set_title("latency over sizes (solid: Rust, dashed: CUDA C++)")
            axes[0].set_xlabel("bytes (per PE for collectives)")
        names = sorted(single)
        x = range(len(names))
        for off, idx, side in ((-0.2, 1, "Rust"), (0.2, 2, "CUDA C++")):
            axes[1].bar([i + off for i in x], [single[n][idx] or 0 for n in names], 0.4, label=side)
        axes[1].set_xticks(list(x))
        axes[1].set_xticklabels(names, rotation=30, ha="right")
        axes[1].set_ylabel("us per iteration")
        axes[1].set_title("single-thread latency")
        axes[1].legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "perf_latency.png"), dpi=120)

    # Rust's relative speed per case: rates rust/cpp, times cpp/rust.
    both = [r for r in rows if r["rust"] and r["cpp"]]
    if both:
        speed = [
            (r["cpp"] / r["rust"]) if r["unit"] == "us" else (r["rust"] / r["cpp"]) for r in both
        ]
        labels = ["%s %s" % (r["row"], size_label(r["param"]) if r["unit"] != "Mops/s" else r["param"]) for r in both]
        fig, ax = plt.subplots(figsize=(8, max(4, 0.18 * len(both))))
        ax.barh(range(len(both)), speed, color=["tab:green" if s >= 1 else "tab:red" for s in speed])
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_yticks(range(len(both)))
        ax.set_yticklabels(labels, fontsize=6)
        ax.invert_yaxis()
        lo = min(speed + [1.0])
        hi = max(speed + [1.0])
        ax.set_xlim(max(0.0, math.floor(lo * 10) / 10 - 0.1), math.ceil(hi * 10) / 10 + 0.1)
        ax.set_xlabel("Rust speed relative to CUDA C++ (>1: Rust faster)")
        ax.set_title("rshmem perftest: Rust vs CUDA C++ NVSHMEM, %s" % gpus)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "perf_ratio.png"), dpi=120)


if __name__ == "__main__":
    main()
