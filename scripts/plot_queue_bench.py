#!/usr/bin/env python3
"""Plots the symmetric queue's throughput from queue_bench's CSV lines
(`QB,kind,element bytes,ctas,items,seconds,items/s,GB/s`, as scripts/gpu-check.sh logs them):
left, items/s against producing CTAs for each element size and queue kind, with the raw
remote fetch_add rate of the same run; right, GB/s of the 1 KiB (or largest) elements per
kind beside the raw puts of the same bytes (`put_warp`, `put_block`).

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
            _, kind, size, ctas, _items, _secs, rate, gbs = line.strip().split(",")
            rows.setdefault((kind, int(size)), []).append((int(ctas), (float(rate), float(gbs))))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5))
    styles = {
        "queue_thread": "-o",
        "queue_warp": "--s",
        "queue_coop_warp": "-D",
        "queue_coop_block": "-v",
        "put_warp": ":x",
        "put_block": ":+",
        "fetch_add": ":k^",
    }
    colors = {8: "C0", 64: "C1", 1024: "C2"}
    for (kind, size), pts in sorted(rows.items()):
        if kind.startswith("put_"):
            continue
        xs, ys = zip(*sorted(pts))
        label = "remote fetch_add" if kind == "fetch_add" else "%s, %d B" % (kind, size)
        kw = {} if kind == "fetch_add" else {"color": colors.get(size)}
        ax.plot(xs, [y[0] / 1e6 for y in ys], styles.get(kind, "-"), label=label, **kw)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("producing CTAs on PE 0 (as many consuming CTAs on PE 1)")
    ax.set_ylabel("million items (or fetch_adds) per second")
    ax.set_title(sys.argv[3] if len(sys.argv) > 3 else "symmetric queue throughput")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3, which="both")
    big = max((size for (_, size) in rows), default=0)
    for (kind, size), pts in sorted(rows.items()):
        if size != big or kind == "fetch_add":
            continue
        xs, ys = zip(*sorted(pts))
        bx.plot(xs, [y[1] for y in ys], styles.get(kind, "-"), label=kind)
    bx.set_xscale("log", base=2)
    bx.set_xlabel("CTAs on PE 0")
    bx.set_ylabel("GB/s of element data")
    bx.set_title("%d-byte elements: the queue beside a raw put of the same bytes" % big)
    bx.legend(fontsize=7)
    bx.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
