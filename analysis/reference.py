"""Load the published reference values of paper 000 (Sutawijaya, Basuki & Bachtiar) from data/reference/.

All numbers are transcribed from the paper's tables and text (see data/reference/README.md); nothing is read off
figures. Units: throughput in Mbit/s, SACK blocks as counts, Jain's index dimensionless.
"""
from pathlib import Path

import pandas as pd

from analysis.errors import AnalysisError

REFERENCE_DIR = Path(__file__).resolve().parent.parent / "data" / "reference"


def _load(name, directory=None):
    path = Path(directory or REFERENCE_DIR) / name
    if not path.is_file():
        raise AnalysisError(f"reference file not found: {path}")
    return pd.read_csv(path, dtype={"section": str})


def load_table2(directory=None):
    """Table 2: the six inter-CC fairness pairs (pair, cc on src1, cc2 on src2)."""
    return _load("table2.csv", directory)


def load_table3(directory=None):
    """Table 3: cc, path_mode (single|multipath), sack_blocks (count), throughput_mbps (Mbit/s)."""
    return _load("table3.csv", directory)


def load_table4(directory=None):
    """Table 4: pair, cc1, throughput1_mbps, cc2, throughput2_mbps (Mbit/s), jain (J=(Σx)²/(n·Σx²), n=2)."""
    return _load("table4.csv", directory)


def load_quotes(directory=None):
    """quotes.csv: quote_id, section, text (the Indonesian source sentence, verbatim minus italics markup)."""
    return _load("quotes.csv", directory)


def load_statements(directory=None, with_quotes=False):
    """statements.csv: one quantitative claim per row (id, section, experiment, quantity, relation,
    value/low/high, unit, ccs, condition, quote_id). With ``with_quotes`` the sentence text is joined in
    as ``quote``."""
    df = _load("statements.csv", directory)
    if with_quotes:
        q = load_quotes(directory).rename(columns={"text": "quote", "section": "quote_section"})
        df = df.merge(q, on="quote_id", how="left", validate="many_to_one")
    return df
