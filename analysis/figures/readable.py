"""Tables and axis labels a reader understands without the code (issue 31): column names in words with their units,
numbers in fixed notation rounded to three significant digits (never ``5.710e+00``), whole numbers without ``.0``
(a 25,000-byte buffer reads ``25000``, not ``25000.0``), and text columns (the scorecard's notes and explanations)
shown whole.

``label("goodput_mbps")`` -> ``"goodput (Mbit/s)"``; ``readable(df)`` -> a copy of ``df`` for display (strings);
``tick(50.0)`` -> ``"50"``. The CSV files under ``tables/`` keep the raw numbers and column names (they are data).
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd

#: the last word of a column name that is its unit -> the unit as printed
UNITS = {"mbps": "Mbit/s", "mbit": "Mbit/s", "kbps": "kbit/s", "ms": "ms", "s": "s", "us": "µs", "pct": "%",
         "pkts": "packets", "bytes": "bytes", "kib": "KiB", "mb": "MB"}
#: words spelled out or capitalised as a reader expects them
WORDS = {"ci": "CI", "rtt": "RTT", "owd": "one-way delay", "udp": "UDP", "tcp": "TCP", "cbr": "UDP CBR",
         "mptcp": "MPTCP", "bdp": "BDP", "jain": "Jain's index", "sack": "SACK", "dsack": "D-SACK", "1k": "1,000",
         "lte": "LTE", "wifi": "WiFi", "ss": "ss", "pkts": "packets", "100s": "100 s", "rd": "RFC 5236 RD",
         "n3": "3-reordering", "w": "W+", "vs": "vs", "sd": "SD", "tiphon": "TIPHON", "frac": "fraction of",
         "num": "number of", "max": "max", "min": "min", "westwood": "Westwood+", "westwood_e": "Westwood+e"}
#: whole names whose reading is not word by word
NAMES = {"cc": "congestion control", "n": "n", "rep": "repetition", "ci_low": "CI low", "ci_high": "CI high",
         "ci_method": "CI method", "path_mode": "paths", "cc_pair": "pair", "claim_id": "claim", "p_value": "p-value",
         "paper_value": "paper's value", "paper_in_ci": "paper's value in our CI", "queue_pkts": "queue (packets)",
         "cbr_mbps": "UDP CBR (Mbit/s)", "link_delay_ms": "link delay (ms)", "loss_pct": "loss rate (%)",
         "error_rate": "error rate", "bandwidth_mbit": "link rate (Mbit/s)", "n_runs": "runs", "n_reps": "repetitions",
         "flow": "flow", "mode": "mode", "test": "test", "ratio": "ours / paper", "diff": "ours − paper",
         "effect_size": "effect size", "substitute_for": "substitute for", "explanation_kind": "explanation kind",
         "explanation_text": "explanation", "explanation_evidence": "evidence", "tier": "tier", "note": "note",
         "verdict": "verdict", "statement": "statement", "section": "section", "experiment": "experiment",
         "paper": "paper", "ours": "ours", "mean": "mean", "quantity": "quantity", "metric": "metric"}


def label(name) -> str:
    """A column name in words with its unit in parentheses: ``throughput_kbps`` -> ``throughput (kbit/s)``,
    ``sack_blocks_per_100s`` -> ``SACK blocks per 100 s``; names that are not snake_case pass unchanged."""
    if not isinstance(name, str):
        return str(name)
    if name in NAMES:
        return NAMES[name]
    if " " in name or "_" not in name and name.lower() != name:
        return name
    tokens = name.split("_")
    unit = ""
    if len(tokens) > 1 and tokens[-1] in UNITS and "per" not in tokens:
        unit = UNITS[tokens.pop()]
    words = []
    i = 0
    while i < len(tokens):
        pair = "_".join(tokens[i:i + 2])
        if i + 1 < len(tokens) and pair in WORDS:
            words.append(WORDS[pair])
            i += 2
            continue
        t = tokens[i]
        if t in WORDS:
            words.append(WORDS[t])
        elif t in UNITS:   # a unit inside the name ("ours_delay_ms_westwood"): in parentheses where it stands
            words.append(UNITS[t] if "per" in tokens else f"({UNITS[t]})")
        else:
            words.append(t)
        i += 1
    text = " ".join(w for w in words if w)
    return f"{text} ({unit})" if unit else text


def number(x, sig: int = 3) -> str:
    """``x`` in fixed notation with at least ``sig`` significant digits and no more decimals than that needs;
    whole numbers without a decimal point; ``""`` for a missing value. ``5.7101`` -> ``5.71``, ``25000.0`` ->
    ``25000``, ``0.000123`` -> ``0.000123``, ``1234.5`` -> ``1234`` (no exponent, ever)."""
    if x is None or isinstance(x, str):
        return "" if x is None else x
    if x is pd.NA or x is pd.NaT:
        return ""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if not isinstance(x, numbers.Number):
        return "" if pd.isna(x) else str(x)
    x = float(x)
    if math.isnan(x):
        return ""
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    mag = math.floor(math.log10(abs(x)))
    if mag < -6:
        return "< 0.000001" if x > 0 else "> −0.000001"
    decimals = max(0, sig - 1 - mag)
    text = f"{x:.{decimals}f}"
    if mag < 0 and "." in text.rstrip("0").rstrip("."):   # below 1: no trailing zeros ("0.5", "0.00001")
        text = text.rstrip("0")
    return "0" if float(text) == 0 else text


def tick(x) -> str:
    """An axis tick label for a category value: ``50.0`` -> ``"50"``, ``0.01`` -> ``"0.01"``, text unchanged."""
    return number(x, sig=3) if isinstance(x, numbers.Number) and not isinstance(x, bool) else str(x)


def readable(df: pd.DataFrame, *, sig: int = 3, labels: dict | None = None) -> pd.DataFrame:
    """A copy of ``df`` for display: numeric cells formatted by :func:`number` (``sig`` significant digits),
    columns and index names put into words by :func:`label` (``labels`` overrides single names), numeric index
    values formatted too. Text is left whole (the notebooks set ``display.max_colwidth`` to None)."""
    extra = labels or {}

    def name(c):
        if isinstance(c, tuple):
            return tuple(name(x) for x in c)
        return extra.get(c, label(c)) if isinstance(c, str) else tick(c)

    out = df.copy()
    for c in out.columns:
        col = out[c]
        if pd.api.types.is_string_dtype(col) and col.dtype != object:
            out[c] = col.fillna("")
        elif pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col) or col.dtype == object:
            out[c] = pd.Series([number(v, sig) for v in col.to_numpy(dtype=object)], index=out.index, dtype=object)
    out.columns = pd.Index([name(c) for c in out.columns]) if not isinstance(out.columns, pd.MultiIndex) else \
        pd.MultiIndex.from_tuples([name(c) for c in out.columns], names=[name(n) if n else n for n in out.columns.names])
    if isinstance(out.index, pd.MultiIndex):
        out.index = pd.MultiIndex.from_tuples([tuple(tick(v) for v in t) for t in out.index],
                                              names=[name(n) if n else n for n in out.index.names])
    elif not isinstance(out.index, pd.RangeIndex):
        out.index = pd.Index([tick(v) for v in out.index], name=name(out.index.name) if out.index.name else None)
    if not isinstance(out.columns, pd.MultiIndex) and df.columns.name:
        out.columns.name = name(df.columns.name)
    return out
