"""Plots in the paper's style: one line (or bar group) per congestion control, our mean with CI error bars, and
the paper's published values drawn beside ours as hollow black-edged markers (labelled "paper"). Legends sit
outside the axes (right of them), never on the data; axis labels default to the column's name in words with its
unit (:func:`analysis.figures.readable.label`); category ticks print whole numbers without ".0"."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures.readable import label, tick
from analysis.figures.style import MARKERS, cc_palette, has_colour, order


def legend_outside(ax, handles=None, labels=None, **kw):
    """The axes' legend to the right of the plot area, frameless, so that it never covers data (figures are saved
    with ``bbox_inches="tight"``, which keeps it); ``handles``/``labels`` replace the axes' own (e.g. those of every
    panel of a figure). Returns the Legend, or None when nothing is labelled."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    opts = {"frameon": False, "loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0,
            "fontsize": 8}
    opts.update(kw)
    return ax.legend(handles, labels, **opts)


def _headroom(ax, values, log: bool):
    """Raise the y-axis top so that every value in ``values`` (the paper's markers, CI tops) lies inside it."""
    vals = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if not vals.size:
        return
    lo, hi = ax.get_ylim()
    top = float(vals.max())
    if log:
        want = top * 2.0 if top > 0 else hi
    else:
        want = top + 0.06 * max(top - lo, abs(top), 1e-9)
    if want > hi:
        ax.set_ylim(lo, want)


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
                    mfc="none", mec="k", ms=7, label=f"paper: {name}", clip_on=False)
    if hline is not None:
        ax.axhline(hline[0], color="grey", ls=":", lw=1, label=hline[1])
    ax.set_xlabel(xlabel or label(x))
    ax.set_ylabel(ylabel or label(y))
    if title:
        ax.set_title(title)
    if names or paper is not None:
        legend_outside(ax)
    return ax


def bar_ci(summary: pd.DataFrame, x: str, *, hue: str, y: str = "mean", lo: str = "ci_low", hi: str = "ci_high",
           ax=None, paper: pd.DataFrame | None = None, paper_y: str | None = None, x_order=None, hue_order=None,
           xlabel: str | None = None, ylabel: str | None = None, title: str | None = None, log: bool = False):
    """Grouped bars: one group per ``x`` value, one bar per ``hue`` value, CI error bars; the paper's value for the
    same (x, hue) is a hollow diamond on the bar ("paper"). Returns the Axes.

    Colour: the congestion control's own colour (``style.cc_palette``, the same in every notebook) when ``x`` is the
    cc; the bars of each ``hue`` value then differ by shade and hatching, and the legend shows those in grey (a
    legend entry never borrows one cc's colour). Otherwise each ``hue`` value has its colour (the cc's own when
    ``hue`` is the cc)."""
    ax = ax or plt.subplots()[1]
    xs = list(x_order) if x_order is not None else order(list(summary[x]) + ([] if paper is None else list(paper[x])))
    hues = list(hue_order) if hue_order is not None else order(
        list(summary[hue].dropna()) + ([] if paper is None else list(paper[hue].dropna())))
    width = 0.8 / max(len(hues), 1)
    by_x = x == "cc"
    grey = not by_x and not all(has_colour(h) for h in hues)
    pal = cc_palette(order(xs) if by_x else [] if grey else hues)
    shades = dict(zip(hues, [0.55 + 0.45 * i / max(len(hues) - 1, 1) for i in range(len(hues))]))

    def name_of(h):
        return f"{label(hue)} {tick(h)}" if not isinstance(h, str) else h

    def shaded(rgb, h):
        return tuple(min(1.0, c * shades[h] + (1 - shades[h]) * 0.9) for c in rgb)

    paper_labelled = False
    labelled = set()
    tops = []
    for j, h in enumerate(hues):
        hatch = "//" if (by_x or grey) and j % 2 else None
        for i, xv in enumerate(xs):
            pos = i - 0.4 + width * (j + 0.5)
            s = summary[(summary[x] == xv) & (summary[hue] == h)]
            if len(s):
                colour = (shaded(pal.get(xv, (0.5, 0.5, 0.5)), h) if by_x else
                          shaded((0.55, 0.55, 0.55), h) if grey else pal[h])
                ax.bar(pos, s[y].iloc[0], width * 0.95, color=colour, edgecolor="k", lw=0.5, hatch=hatch,
                       label=None if by_x or h in labelled else name_of(h))
                labelled.add(h)
                ax.errorbar([pos], s[y].iloc[0], yerr=_yerr(s, y, lo, hi), color="k", capsize=3, lw=1)
                tops += [s[y].iloc[0], s[hi].iloc[0] if hi in s else np.nan]
            if paper is not None:
                p = paper[(paper[x] == xv) & (paper[hue] == h)]
                if len(p):
                    ax.plot([pos], p[paper_y].iloc[0], marker="D", mfc="none", mec="k", ms=8, ls="none",
                            label=None if paper_labelled else "paper", clip_on=False, zorder=5)
                    paper_labelled = True
                    tops.append(float(p[paper_y].iloc[0]))
        if by_x and h in labelled:   # legend proxy: the hue's shade and hatch in grey
            ax.bar([np.nan], [np.nan], color=shaded((0.55, 0.55, 0.55), h), edgecolor="k", lw=0.5, hatch=hatch,
                   label=name_of(h))
    ax.set_xticks(range(len(xs)), [tick(v) for v in xs])
    if log:
        ax.set_yscale("symlog", linthresh=1)
    _headroom(ax, tops, log)
    ax.set_xlabel(xlabel or label(x))
    ax.set_ylabel(ylabel or label(y))
    if title:
        ax.set_title(title)
    legend_outside(ax)
    return ax


def lines_band(ax, summary: pd.DataFrame, x: str, *, hue: str, band: tuple[float, float], band_label: str,
               y: str = "mean", lo: str = "ci_low", hi: str = "ci_high", name_fmt: str = "{} (ours)"):
    """Our lines of ``y`` against ``x`` per ``hue`` (each congestion control in its own colour) with CI error bars,
    over a grey band ``band`` = (low, high) for a range the paper states (labelled ``band_label``). Returns ax."""
    ax.axhspan(band[0], band[1], color="0.85", zorder=0, label=band_label)
    names = order(summary[hue]) if len(summary) else []
    pal = cc_palette(names)
    for name in names:
        s = summary[summary[hue] == name].sort_values(x)
        ax.errorbar(s[x], s[y], yerr=_yerr(s, y, lo, hi), marker=MARKERS.get(name, "o"), capsize=3,
                    color=pal[name], label=name_fmt.format(name))
    return ax


def band_panels(summary: pd.DataFrame, panel: str, x: str, *, hue: str, band: tuple[float, float], band_label: str,
                xlabel: str, ylabel: str, title: str, panel_title: str = "{}", name_fmt: str = "{} (ours)",
                panel_order=None, ncols: int | None = None):
    """One panel per value of ``panel`` (``ncols`` to a row, default all in one; shared x and y axes), each
    :func:`lines_band`; one legend right of the first row with every series of every panel (a congestion control
    missing from the first panel is still named). Returns the Figure."""
    names = list(panel_order) if panel_order is not None else list(dict.fromkeys(summary[panel]))
    n = max(len(names), 1)
    ncols = min(ncols or n, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(4.0 * ncols, 7.5), 3.5 * nrows + 0.4), sharex=True,
                             sharey=True, squeeze=False)
    flat = list(axes.ravel())
    seen: dict = {}
    for ax, name in zip(flat, names):
        lines_band(ax, summary[summary[panel] == name], x, hue=hue, band=band, band_label=band_label,
                   name_fmt=name_fmt)
        ax.set_title(panel_title.format(name), fontsize=9)
        ax.set_xlabel(xlabel)
        ax.xaxis.set_tick_params(labelbottom=True)
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    for ax in flat[len(names):]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel(ylabel)
    ours = [lab for lab in seen if lab != band_label]
    rank = {name_fmt.format(c): k for k, c in enumerate(order(summary[hue]))} if len(summary) else {}
    ours.sort(key=lambda lab: rank.get(lab, len(rank)))
    labels = ([band_label] if band_label in seen else []) + ours
    legend_outside(axes[0][-1], [seen[lab] for lab in labels], labels)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
