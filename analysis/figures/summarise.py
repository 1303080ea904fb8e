"""Per-configuration summaries of replicate runs, and the paper's numbers set beside ours.

``mean_ci``: for each group (e.g. cc × link_delay_ms) the mean over repetitions with a (1-alpha) bootstrap CI of the
mean (BCa, Efron 1987, falling back to percentile; :func:`analysis.stats.summary`). Units are those of ``value``
(Mbit/s for goodput, ms for RTT, counts for SACK blocks, dimensionless for Jain's index). A group with one run has
mean = that value and no CI (NaN); groups with no finite value are left out.
"""
import numpy as np
import pandas as pd

from analysis.stats import summary


def mean_ci(df: pd.DataFrame, by, value: str, *, alpha: float = 0.05, n_boot: int = 9999, seed: int = 0) -> pd.DataFrame:
    """Mean and bootstrap CI of column ``value`` per group of ``by`` columns.

    Returns one row per group: the ``by`` columns, n (finite values used), mean, sd (ddof=1), ci_low, ci_high,
    ci_method ("BCa" | "percentile" | "none" when all values are equal | "n<2").
    """
    by = [by] if isinstance(by, str) else list(by)
    cols = by + ["n", "mean", "sd", "ci_low", "ci_high", "ci_method"]
    if df.empty or value not in df:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, g in df.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        x = pd.to_numeric(g[value], errors="coerce").to_numpy(dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            continue
        if x.size == 1:
            rows.append(key + (1, float(x[0]), np.nan, np.nan, np.nan, "n<2"))
            continue
        s = summary(x, alpha=alpha, n_boot=n_boot, seed=seed)
        rows.append(key + (s["n"], s["mean"], s["sd"], s["boot_low"], s["boot_high"], s["boot_method"]))
    return pd.DataFrame(rows, columns=cols)


def paper_vs_ours(ours: pd.DataFrame, paper: pd.DataFrame, on, paper_value: str, *, ours_value: str = "mean",
                  label: str | None = None) -> pd.DataFrame:
    """Join the paper's value (column ``paper_value`` of ``paper``) to our summary on the ``on`` columns.

    Adds: ``paper`` (the paper's number), ``ours`` (our mean), ``diff`` = ours - paper, ``ratio`` = ours / paper,
    ``paper_in_ci`` (True when the paper's value lies inside our CI; NA when we have no CI). Rows the paper has but
    we lack keep ours = NaN, so gaps stay visible.
    """
    on = [on] if isinstance(on, str) else list(on)
    p = paper[on + [paper_value]].rename(columns={paper_value: "paper"})
    o = ours.rename(columns={ours_value: "ours"})
    keep = [c for c in ["n", "ours", "ci_low", "ci_high"] if c in o]
    out = p.merge(o[on + keep], on=on, how="outer")
    out["diff"] = out["ours"] - out["paper"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = out["ours"] / out["paper"].where(out["paper"] != 0)
    if "ci_low" in out:
        inside = (out["paper"] >= out["ci_low"]) & (out["paper"] <= out["ci_high"])
        out["paper_in_ci"] = inside.where(out["ci_low"].notna() & out["paper"].notna()).astype("boolean")
    if label:
        out.insert(0, "quantity", label)
    return out


def _g(x) -> str:
    return "nan" if x is None or pd.isna(x) else f"{x:.4g}"


def describe_differences(table: pd.DataFrame, keys, unit: str = "") -> list[str]:
    """One plain-English line per row of a :func:`paper_vs_ours` table: the paper's value, ours with its CI and n,
    the difference, and whether the paper's value lies inside our CI (or why there is nothing to compare)."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    lines = []
    for _, r in table.iterrows():
        what = ", ".join(str(r[k]) for k in keys)
        if "quantity" in r and isinstance(r["quantity"], str):
            what = f"{r['quantity']} — {what}"
        if pd.isna(r.get("ours")):
            lines.append(f"{what}: paper {_g(r['paper'])}{unit}; ours: no complete runs")
            continue
        if pd.isna(r.get("paper")):
            lines.append(f"{what}: ours {_g(r['ours'])}{unit} (n={int(r['n'])}); the paper gives no value")
            continue
        has_ci = pd.notna(r.get("ci_low"))
        ci = f" [{_g(r['ci_low'])}, {_g(r['ci_high'])}]" if has_ci else " (n<2: no CI)"
        inside = r.get("paper_in_ci")
        verdict = ("paper inside our CI" if inside is True else "paper OUTSIDE our CI" if inside is False
                   else "no CI to compare")
        ratio = f", {r['ratio']:.2f}x" if pd.notna(r.get("ratio")) else ""
        lines.append(f"{what}: paper {_g(r['paper'])}{unit}, ours {_g(r['ours'])}{unit}{ci} (n={int(r['n'])}); "
                     f"ours - paper = {r['diff']:+.3g}{unit}{ratio}: {verdict}")
    return lines
