"""Plots in the paper's style: one line (or bar group) per congestion control, our mean with CI error bars, and
the paper's published values drawn beside ours as hollow black-edged markers (labelled "paper")."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures.style import MARKERS, cc_palette, order


def _yerr(s: pd.DataFrame, y, lo, hi):
    low = (s[y] - s[lo]).clip(lower=0).fillna(0).to_numpy(dtype=float)
    high = (s[hi] - s[y]).clip(lower=0).fillna(0).to_numpy(dtype=float)
    return np.vstack([low, high])


def line_ci(summary: pd.DataFrame, x: str, *, hue: str = "cc", y: str = "mean", lo: str = "ci_low",
            hi: str = "ci_high", ax=None, paper: pd.DataFrame | None = None, paper_y: str | None = None,
            xlabel: str | None = None, ylabel: str | None = None, title: str | None = None, hline=None):
    """Lines of ``y`` against ``x`` per ``hue`` with CI error bars (from :func:`mean_ci`).

    ``paper``: optional DataFrame with columns ``x``, ``hue`` and ``paper_y`` drawn as hollow markers.
    ``hline``: (value, label) of a reference line, e.g. the 20 Mbit/s capacity. Returns the Axes."""
    ax = ax or plt.subplots()[1]
    names = order(summary[hue]) if len(summary) else []
    pal = cc_palette(names + ([] if paper is None else [n for n in order(paper[hue]) if n not in names]))
    for name in names:
        s = summary[summary[hue] == name].sort_values(x)
        ax.errorbar(s[x], s[y], yerr=_yerr(s, y, lo, hi), label=name, color=pal[name],
                    marker=MARKERS.get(name, "o"), capsize=3, lw=1.5, ms=5)
    if paper is not None and len(paper):
        for name in order(paper[hue]):
            p = paper[paper[hue] == name].sort_values(x)
            ax.plot(p[x], p[paper_y], ls="--", lw=1, color=pal.get(name, "k"), marker=MARKERS.get(name, "o"),
                    mfc="none", mec="k", ms=7, label=f"paper: {name}")
    if hline is not None:
        ax.axhline(hline[0], color="grey", ls=":", lw=1, label=hline[1])
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    if title:
        ax.set_title(title)
    if names or paper is not None:
        ax.legend(frameon=False, ncol=2)
    return ax


def bar_ci(summary: pd.DataFrame, x: str, *, hue: str, y: str = "mean", lo: str = "ci_low", hi: str = "ci_high",
           ax=None, paper: pd.DataFrame | None = None, paper_y: str | None = None, x_order=None, hue_order=None,
           xlabel: str | None = None, ylabel: str | None = None, title: str | None = None, log: bool = False):
    """Grouped bars: one group per ``x`` value, one bar per ``hue`` value, CI error bars; the paper's value for the
    same (x, hue) is a hollow diamond on the bar ("paper"). Returns the Axes."""
    ax = ax or plt.subplots()[1]
    xs = list(x_order) if x_order is not None else order(list(summary[x]) + ([] if paper is None else list(paper[x])))
    hues = list(hue_order) if hue_order is not None else sorted(
        set(summary[hue].dropna()) | (set() if paper is None else set(paper[hue].dropna())))
    width = 0.8 / max(len(hues), 1)
    shades = dict(zip(hues, [0.55 + 0.45 * i / max(len(hues) - 1, 1) for i in range(len(hues))]))
    pal = cc_palette(order(xs))
    paper_labelled = False
    labelled = set()
    for j, h in enumerate(hues):
        for i, xv in enumerate(xs):
            pos = i - 0.4 + width * (j + 0.5)
            s = summary[(summary[x] == xv) & (summary[hue] == h)]
            if len(s):
                colour = tuple(min(1.0, c * shades[h] + (1 - shades[h]) * 0.9) for c in pal.get(xv, (0.5, 0.5, 0.5)))
                ax.bar(pos, s[y].iloc[0], width * 0.95, color=colour, edgecolor="k", lw=0.5,
                       label=None if h in labelled else (f"{hue} {h}" if not isinstance(h, str) else h), hatch="//" if j % 2 else None)
                labelled.add(h)
                ax.errorbar([pos], s[y].iloc[0], yerr=_yerr(s, y, lo, hi), color="k", capsize=3, lw=1)
            if paper is not None:
                p = paper[(paper[x] == xv) & (paper[hue] == h)]
                if len(p):
                    ax.plot([pos], p[paper_y].iloc[0], marker="D", mfc="none", mec="k", ms=8, ls="none",
                            label=None if paper_labelled else "paper")
                    paper_labelled = True
    ax.set_xticks(range(len(xs)), xs)
    if log:
        ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    return ax
