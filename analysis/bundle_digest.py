"""Digests of what a bundle gives the analysis: its per-flow rows, its runs listing, and its scorecard. ``mpcc bundle
--convert`` records them for the bundle it converts (``bundle.json`` ``converted``) after checking the new bundle
against the old one with ``pandas.testing.assert_frame_equal`` and the scorecard JSON; tests/test_bundle_conversion.py
recomputes them on the committed bundles, so a later change of the format or of its reader that altered a row or a
verdict would show.

A digest is the sha256 (hex) of a canonical JSON text: column names and dtypes, then the values row by row (floats
with 17 significant digits, so equal digests mean equal bits; NaN and missing values as null).
"""
from __future__ import annotations

import hashlib
import json
import math

import pandas as pd

SCORECARD_N_BOOT = 999    # bootstrap resamples of the recorded scorecard (seed 0, alpha 0.05): fast, deterministic
#: the scorecard columns the recorded digests cover (analysis.claims.core.COLUMNS when the bundles were converted,
#: 2026-11-26). A column added to the scorecard later (e.g. ``unit``) is presentation, outside the digest; a change of
#: any value of these columns (a verdict, an interval, a note) still shows.
SCORECARD_COLUMNS = ("paper", "claim_id", "section", "experiment", "statement", "paper_value", "ours", "ci_low",
                     "ci_high", "n", "test", "p_value", "effect_size", "verdict", "note", "tier", "substitute_for",
                     "explanation_kind", "explanation_text", "explanation_evidence")


#: the scorecard columns the data decide (values, intervals, verdicts, notes): the explanations are left out, since
#: their texts follow the explanation code and other bundles (the fidelity ablation, the paper protocol's bundle
#: that a shorter dataset's explanation cites) and change without any change of the bundle or its reader
SCORECARD_CORE_COLUMNS = tuple(c for c in SCORECARD_COLUMNS if not c.startswith("explanation_"))


def _cell(v):
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v):
            return None
        return "inf" if v == math.inf else "-inf" if v == -math.inf else float.__repr__(v)
    if isinstance(v, (pd.Timestamp,)):
        return v.isoformat()
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, sort_keys=True, default=str)
    return v


def frame_digest(df: pd.DataFrame) -> str:
    """sha256 of ``df``'s columns, dtypes and values (row order as given; the index ignored)."""
    h = hashlib.sha256()
    h.update(json.dumps([[str(c), str(t)] for c, t in df.dtypes.items()]).encode())
    for row in df.itertuples(index=False, name=None):
        h.update(json.dumps([_cell(v) for v in row], default=str).encode())
        h.update(b"\n")
    return h.hexdigest()


def rows_digest(df: pd.DataFrame) -> str:
    """Digest of ``load_campaign``'s rows, sorted by run and flow."""
    key = [c for c in ("run_id", "flow") if c in df.columns]
    return frame_digest(df.sort_values(key, kind="stable").reset_index(drop=True) if key else df)


# parameter columns a family's runs listing gained after bundles were digested (study 004's link_model, 2026-11-27):
# left out of the digest where no run of the listing has a value, so an older bundle's digest still holds
LATE_RUN_COLUMNS = ("link_model",)


def runs_digest(df: pd.DataFrame) -> str:
    """Digest of ``load_campaign``'s runs listing (``df.attrs["runs"]``), sorted by run; a column of
    :data:`LATE_RUN_COLUMNS` without any value is left out."""
    runs = df.attrs["runs"]
    late = [c for c in LATE_RUN_COLUMNS if c in runs and runs[c].isna().all()]
    return frame_digest(runs.drop(columns=late).sort_values("run_id", kind="stable").reset_index(drop=True))


def scorecard(df: pd.DataFrame) -> pd.DataFrame:
    """The claims table of ``df`` (``analysis.claims.evaluate``: alpha 0.05, SCORECARD_N_BOOT resamples, seed 0)."""
    from analysis.claims import evaluate
    return evaluate(df, alpha=0.05, n_boot=SCORECARD_N_BOOT, seed=0)


def digests(df: pd.DataFrame, scores: pd.DataFrame | None = None) -> dict:
    """{"rows_sha256", "runs_sha256", "scorecard_sha256", "scorecard_core_sha256", "scorecard_n_boot"} of a loaded
    campaign or bundle (the scorecard over :data:`SCORECARD_COLUMNS`, its core over :data:`SCORECARD_CORE_COLUMNS`);
    ``scores``: its :func:`scorecard` when the caller has it already (claims in their order)."""
    scores = scorecard(df) if scores is None else scores
    full = scores[[c for c in SCORECARD_COLUMNS if c in scores.columns]].reset_index(drop=True)
    core = scores[[c for c in SCORECARD_CORE_COLUMNS if c in scores.columns]].reset_index(drop=True)
    return {"rows_sha256": rows_digest(df), "runs_sha256": runs_digest(df),
            "scorecard_sha256": frame_digest(full), "scorecard_core_sha256": frame_digest(core),
            "scorecard_n_boot": SCORECARD_N_BOOT}
