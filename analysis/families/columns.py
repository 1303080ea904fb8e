"""Column typing shared by the study-family analysis modules (``analysis.families``): every family's rows go through
the same conversion, so the cache, bundles and concatenation see one dtype per column."""
from __future__ import annotations

import numpy as np
import pandas as pd

NAN = float("nan")


def number(x) -> float:
    """``x`` as a finite float, NaN for None, text or an infinite value."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return NAN
    return v if np.isfinite(v) else NAN


def typed_columns(df: pd.DataFrame, float_cols, int_cols, text_cols) -> pd.DataFrame:
    """A copy of ``df`` with float numbers, int columns (missing = -1) and text columns holding None for missing
    values (never NaN)."""
    df = df.copy()
    for c in float_cols:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    for c in int_cols:
        df[c] = pd.to_numeric(df[c], errors="coerce").fillna(-1).astype(int)
    for c in text_cols:
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df
