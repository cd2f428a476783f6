#!/usr/bin/env python3
"""Plots put bandwidth, Rust beside the CUDA C++ peer, from the logs scripts/gpu-check.sh
writes (put_bw_rust.log: `[PE 0] BW,ctas,bytes,GB/s`; put_bw_cuda.log: `CUBW,ctas,bytes,GB/s`).

    python3 scripts/plot_put_bw.py RUST_LOG CUDA_LOG OUT.png [TITLE]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path, tag):
    rows = {}
    for line in open(path):
        line = line.split("] ", 1)[1] if line.startswith("[PE ") else line
        if line.startswith(tag + ","):
            _, ctas, size, gbs = line.strip().split(",")
            rows.setdefault(int(ctas), []).append((int(size), float(gbs)))
    return rows


def main():
    rust, cuda = load(sys.argv[1], "BW"), load(sys.argv[2], "CUBW")
    title = sys.argv[4] if len(sys.argv) > 4 else "put bandwidth PE 0 -> PE 1"
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, ctas in enumerate(sorted(set(rust) | set(cuda))):
        color = "C%d" % i
        for rows, style, who in ((rust, "-o", "Rust"), (cuda, "--x", "CUDA C++")):
            if ctas in rows:
                xs, ys = zip(*sorted(rows[ctas]))
                ax.plot(xs, ys, style, color=color, label="%s, %d CTAs" % (who, ctas))
    ax.axhline(394, color="grey", lw=0.8, ls=":", label="copy engine to peer (394 GB/s)")
    ax.axhline(450, color="black", lw=0.8, ls=":", label="NVLink line rate (450 GB/s)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per put (whole transfer)")
    ax.set_ylabel("GB/s")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=110)


if __name__ == "__main__":
    main()
