"""The claim families (one module per experiment of paper 000) and ``evaluate``."""
from __future__ import annotations

import pandas as pd

from analysis.claims import core, explain, link_delay, loss_rate, single_vs_multi, tcp_fairness, udp_fairness
from analysis.errors import AnalysisError

FAMILIES = (single_vs_multi, link_delay, loss_rate, tcp_fairness, udp_fairness)


def evaluate(df: pd.DataFrame, *, alpha: float = 0.05, n_boot: int = 9999, seed: int = 0) -> pd.DataFrame:
    """One row per claim of paper 000 sections 4-5 (columns ``core.COLUMNS``), judged on the campaign dataset
    ``df`` (``analysis.dataset.load_campaign``; its ``attrs["runs"]`` gives the reasons for "not run").

    Runs with a path skew are not mixed with runs without: if ``df`` holds several ``path_skew_ms`` values, only
    the skew-0 rows (the paper's setting) are used and every note says so. Runs of different switch queue models or
    UDP datagram sizes (the fidelity ablation's arms, ``analysis.ablation``) are never pooled: a dataset holding
    several raises AnalysisError (select one with ``analysis.ablation.select_arm``)."""
    if not 0 < float(alpha) < 1:
        raise AnalysisError(f"alpha must be in (0, 1), got {alpha}")
    if int(n_boot) < 100:
        raise AnalysisError(f"n_boot must be >= 100, got {n_boot}")
    fam = _family(df)
    if fam != "000":
        return _evaluate_family(df, fam, alpha=float(alpha), n_boot=int(n_boot), seed=int(seed))
    missing = [c for c in ("run_id", "flow", "experiment", "cc", "cc2") if c not in df.columns]
    if missing:
        raise AnalysisError(f"not a campaign dataset: missing columns {missing}")
    runs = df.attrs.get("runs")
    if runs is None:
        runs = pd.DataFrame(columns=["run_id", "status", "reason", "cc", "cc2"])
    extra = ""
    if "path_skew_ms" in df.columns and len(df):
        skews = sorted(set(df["path_skew_ms"].fillna(0).round(6)))
        if len(skews) > 1:
            df = df[df["path_skew_ms"].fillna(0) == 0]
            extra = f"only path_skew_ms=0 runs used (campaign also has {', '.join(f'{s:g}' for s in skews if s)})"
        elif skews and skews[0] != 0:
            extra = f"all runs have path_skew_ms={skews[0]:g} (the paper has no configured skew)"
    from analysis.ablation import arm_label, arm_set
    arms = arm_set(df)
    if len(arms) > 1:
        raise AnalysisError("dataset mixes switch queue models / UDP datagram sizes ("
                            + "; ".join(arm_label(*a) for a in arms) + "): score one arm at a time "
                            "(mpcc scorecard DIR --arm MODEL[,LEN]; analysis.ablation.select_arm)")
    from analysis import paper_bic
    df = df.copy(deep=False)
    df.attrs = {"runs": runs}
    df, bic_note = paper_bic.as_paper(df)   # a dataset of 4.15's BIC (bic415) is read with it as the paper's BIC
    runs = df.attrs.get("runs", runs)
    df = df.copy()
    df.attrs = {}  # pandas deep-copies attrs on every operation: keep the run listing out of the hot path
    ctx = core.Ctx(df=df, runs=runs, alpha=float(alpha), n_boot=int(n_boot), seed=int(seed))
    rows = []
    for fam in FAMILIES:
        rows.extend(fam.claims(ctx))
    if extra:
        for r in rows:
            r["note"] = f"{r['note']}; {extra}" if r["note"] else extra
    if bic_note:
        for r in rows:
            if paper_bic.about_bic(r["claim_id"], r["statement"]):
                r["note"] = f"{r['note']}; {bic_note}" if r["note"] else bic_note
    explain.attach(rows, ctx, "000")
    out = pd.DataFrame(rows, columns=[c for c in core.COLUMNS if c != "paper"])
    out.insert(0, "paper", "000")   # the study the claims come from (docs/claims.md names its paper)
    return out[core.COLUMNS]


def _family(df: pd.DataFrame) -> str:
    """The study family of a campaign dataset: its ``family`` column (dual-path, chain and streaming rows), else "000";
    an empty dataset of study 004 is recognised by its columns (``topology``, no ``path``), one of study 002 by its
    ``client`` column."""
    if "family" in df.columns and len(df):
        fams = sorted(set(df["family"].dropna().astype(str)))
        if len(fams) > 1:
            raise AnalysisError(f"dataset mixes study families {fams}: score one campaign at a time")
        if fams:
            return fams[0]
    if "family" in df.columns and "topology" in df.columns and "path" not in df.columns:
        return "004"
    if "family" in df.columns and "client" in df.columns:
        return "002"
    if "family" in df.columns and "path" in df.columns:
        runs = df.attrs.get("runs")
        campaign = str(df.attrs.get("campaign_dir", ""))
        for f in ("001", "003"):
            if f in campaign:
                return f
        return "001" if runs is not None and "buffer_bytes" in runs and runs["buffer_bytes"].notna().any() else "003"
    return "000"


def _evaluate_family(df: pd.DataFrame, family: str, *, alpha: float, n_boot: int, seed: int) -> pd.DataFrame:
    """Claims of study 001 or 003 (``analysis.claims.dualpath``), 002 (``analysis.claims.streaming``) or 004
    (``analysis.claims.westwood``) from ``data/reference/<family>/``."""
    from analysis import reference
    from analysis.claims import dualpath, streaming, westwood

    directory = reference.REFERENCE_DIR / family
    statements = reference.load_statements(directory)
    runs = df.attrs.get("runs")
    cdir = df.attrs.get("campaign_dir")
    df = df.copy()
    # only the directory stays (study 004 reads which runs were guarded from its meta.json, analysis.cc_guard)
    df.attrs = {"campaign_dir": cdir} if cdir else {}
    ctx = core.Ctx(df=df, runs=runs, alpha=alpha, n_boot=n_boot, seed=seed)
    if family == "004":
        rows = westwood.claims(ctx, statements, directory)
    elif family == "002":
        rows = streaming.claims(ctx, statements, directory)
    else:
        rows = dualpath.claims(ctx, family, statements)
    if (directory / "tiphon.csv").is_file():
        rows += dualpath.tiphon_claims(ctx, family, pd.read_csv(directory / "tiphon.csv", dtype={"section": str}))
    explain.attach(rows, ctx, family)
    out = pd.DataFrame(rows, columns=[c for c in core.COLUMNS if c != "paper"])
    out.insert(0, "paper", family)
    return out[core.COLUMNS]
