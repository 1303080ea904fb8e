"""Which runs of an experiment we have: complete, skipped (with the SKIPPED reason, e.g. a cc the kernel lacks) or
incomplete. Reads ``df.attrs["runs"]`` (contract of :func:`analysis.dataset.load_campaign`)."""
import pandas as pd


def run_coverage(df: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Counts of runs per status and reason for ``experiment`` (the runs table's experiment column, else run_id prefix ``<experiment>__``).

    Returns columns status, reason, runs (count)."""
    runs = df.attrs.get("runs")
    if runs is None or len(runs) == 0:
        return pd.DataFrame(columns=["status", "reason", "runs"])
    if "experiment" in runs and runs["experiment"].notna().any():
        r = runs[runs["experiment"] == experiment].copy()
    else:
        r = runs[runs["run_id"].astype(str).str.startswith(f"{experiment}__")].copy()
    r["reason"] = r["reason"].fillna("").astype(str)
    out = r.groupby(["status", "reason"]).size().reset_index(name="runs")
    return out.sort_values(["status", "reason"]).reset_index(drop=True)


def apply_filters(df: pd.DataFrame, filters: dict | None) -> pd.DataFrame:
    """Keep rows where each column in ``filters`` equals the value (or is in the list of values)."""
    if not filters:
        return df
    mask = pd.Series(True, index=df.index)
    for col, val in filters.items():
        if col not in df:
            raise KeyError(f"filter on unknown column {col!r}")
        vals = val if isinstance(val, (list, tuple, set)) else [val]
        mask &= df[col].isin(vals)
    return df[mask]


def experiment_rows(df: pd.DataFrame, experiment: str, filters: dict | None = None, *, say=print) -> pd.DataFrame:
    """Rows of ``experiment`` after ``filters`` (a copy without ``attrs``); tells (via ``say``) how many complete/skipped/incomplete runs there
    are, and says so plainly when none are complete, so a notebook prints a line instead of failing. Study 000's
    BIC is read as ``analysis.paper_bic.as_paper`` reads it (4.15's bic415 as the paper's bic), and which BIC it
    was is said."""
    from analysis import paper_bic
    rows = df[df["experiment"] == experiment] if "experiment" in df else df.iloc[0:0]
    rows, bic_note = paper_bic.as_paper(rows)   # 4.15's BIC (bic415) shown as the paper's BIC, and said so
    rows = apply_filters(rows, filters)
    cov = run_coverage(df, experiment)
    counts = cov.groupby("status")["runs"].sum().to_dict() if len(cov) else {}
    say(f"{experiment}: {counts.get('complete', 0)} complete, {counts.get('skipped', 0)} skipped, "
        f"{counts.get('incomplete', 0)} incomplete runs in the campaign; {rows['run_id'].nunique()} complete runs "
        f"after filters")
    if bic_note:
        say(f"  {bic_note}")
    for _, r in cov[cov["status"] == "skipped"].iterrows():
        say(f"  skipped ({r['runs']} runs): {r['reason']}")
    rows = rows.copy()
    rows.attrs = {}  # the runs table in attrs would make pd.concat of such slices fail (DataFrame == DataFrame)
    if rows.empty:
        say(f"No complete runs of {experiment} in this campaign: nothing to plot for this experiment.")
    return rows
