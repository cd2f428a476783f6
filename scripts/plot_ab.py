#!/usr/bin/env python3
"""Plots an A/B of builds measured in one run: per row (a kernel or a call at a shape), one bar
per build at the median of its samples, the samples' range as an error bar.

    python3 scripts/plot_ab.py AB.json OUT.png

AB.json: {"title": str, "ylabel": str, "builds": [names in order], "rows": [{"label": str,
"samples": {build: [values]}}]}; a build missing from a row is left out of it.
"""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    data = json.load(open(sys.argv[1]))
    builds, rows = data["builds"], data["rows"]
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(rows)), 4.5))
    width = 0.8 / len(builds)
    for i, build in enumerate(builds):
        xs, meds, lo, hi = [], [], [], []
        for j, row in enumerate(rows):
            got = row["samples"].get(build)
            if not got:
                continue
            m = statistics.median(got)
            xs.append(j + (i - (len(builds) - 1) / 2) * width)
            meds.append(m)
            lo.append(m - min(got))
            hi.append(max(got) - m)
        ax.bar(xs, meds, width, yerr=[lo, hi], capsize=2, label=build, color="C%d" % i)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["label"] for r in rows], fontsize=8)
    ax.set_ylabel(data["ylabel"])
    ax.set_title(data["title"], fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
