#!/usr/bin/env python3
"""Plots the symmetric queue's throughput from queue_bench's CSV lines
(`QB,kind,element bytes,ctas,items,seconds,items/s,GB/s`, as scripts/gpu-check.sh logs them):
items/s against producing CTAs for each element size and kind, with the raw remote
fetch_add rate of the same run.

    python3 scripts/plot_queue_bench.py queue_bench.log OUT.png [TITLE]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    rows = {}
    for line in open(sys.argv[1]):
        line = line.split("] ", 1)[1] if line.startswith("[PE ") else line
        if line.startswith("QB,"):
            _, kind, size, ctas, _items, _secs, rate, _gbs = line.strip().split(",")
            rows.setdefault((kind, int(size)), []).append((int(ctas), float(rate)))
    fig, ax = plt.subplots(figsize=(8, 5))
    styles = {"queue_thread": "-o", "queue_warp": "--s", "fetch_add": ":k^"}
    colors = {8: "C0", 64: "C1", 1024: "C2"}
    for (kind, size), pts in sorted(rows.items()):
        xs, ys = zip(*sorted(pts))
        label = "remote fetch_add" if kind == "fetch_add" else "%s, %d B" % (kind, size)
        kw = {} if kind == "fetch_add" else {"color": colors.get(size)}
        ax.plot(xs, [y / 1e6 for y in ys], styles[kind], label=label, **kw)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("producing CTAs on PE 0 (as many consuming CTAs on PE 1)")
    ax.set_ylabel("million items (or fetch_adds) per second")
    ax.set_title(sys.argv[3] if len(sys.argv) > 3 else "symmetric queue throughput")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
