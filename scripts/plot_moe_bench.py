#!/usr/bin/env python3
"""Plots the MoE benchmark from the JSON scripts/moe_bench.py writes ($OUT/moe_bench.json):
per shape (tokens x hidden, top-k), dispatch + combine of each of rshmem's modes beside torch's
permute + unpermute, stacked bars in microseconds, the dispatch's HBM roofline as a tick.

    python3 scripts/plot_moe_bench.py moe_bench.json OUT.png [TITLE]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    data = json.load(open(sys.argv[1]))
    rows = [r for r in data["rows"] if r.get("check") == "ok" and "dispatch_us" in r]
    title = sys.argv[3] if len(sys.argv) > 3 else "MoE dispatch + combine, %s" % data.get("gpu", "")
    shapes = sorted({(r["tokens"], r["hidden"], r["top_k"]) for r in rows}, key=lambda s: (-s[0], -s[1]))
    series = []
    for r in rows:
        name = "torch permute" if r["impl"] == "torch" else "rshmem " + r["mode"]
        if name not in series:
            series.append(name)
    fig, ax = plt.subplots(figsize=(max(8, 2.2 * len(shapes)), 5))
    width = 0.8 / len(series)
    for i, name in enumerate(series):
        labelled = False
        for j, shape in enumerate(shapes):
            r = next((r for r in rows if (r["tokens"], r["hidden"], r["top_k"]) == shape
                      and ("torch permute" if r["impl"] == "torch" else "rshmem " + r["mode"]) == name), None)
            if r is None:
                continue
            x = j + (i - (len(series) - 1) / 2) * width
            color = "C%d" % i
            ax.bar(x, r["dispatch_us"], width, color=color, label=None if labelled else name)
            labelled = True
            ax.bar(x, r["combine_us"], width, bottom=r["dispatch_us"], color=color, alpha=0.45)
            if i == 0 and "roofline_dispatch_us" in r:
                ax.hlines(r["roofline_dispatch_us"], j - 0.4, j + 0.4, colors="k", linestyles=":")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(["%d tok x %d, top-%d" % s for s in shapes])
    ax.set_yscale("log")
    ax.set_ylabel("µs (dark: dispatch, light: combine on top)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
