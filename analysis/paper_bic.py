"""Which BIC a study 000 dataset ran, and the dataset as study 000's claims and figures read it.

Two BICs run here (docs/kernel-415.md): ``bic``, the port of Linux 6.1's tcp_bic.c (``testbed/cc/bic.bpf.c``), which
every recording before the paper-faithful one ran, and ``bic415``, the same port with Linux 4.15's
``bictcp_cong_avoid`` (``testbed/cc/bic415.bpf.c``), the BIC of the paper's kernel (study 000, section 2.3: "the
default parameters of Linux Kernel 4.15"), validated in the VM against 4.15's own file built as a module.

Study 000's claims, references and figures name the paper's BIC ``bic``. A dataset whose BIC ran as ``bic415`` is
read with ``bic415`` renamed ``bic`` (cc and cc2) and a column ``bic_kernel`` ("4.15" on the rows whose run had
BIC, "6.1" likewise for ``bic``; empty for runs without BIC), so that every later stage can say which BIC it was.
A dataset holding both BICs (``data/bic000``, the comparison) is read one BIC at a time: :func:`select`.
"""
from __future__ import annotations

import re

import pandas as pd

from analysis.errors import AnalysisError

#: the kernel whose BIC each cc name is
KERNEL_OF = {"bic": "6.1", "bic415": "4.15"}
CC_OF = {v: k for k, v in KERNEL_OF.items()}
COLUMN = "bic_kernel"
NOTE = {"4.15": "BIC is Linux 4.15's, the paper's (cc bic415: testbed/cc/bic415.bpf.c, docs/kernel-415.md)",
        "6.1": "BIC is Linux 6.1's (cc bic: testbed/cc/bic.bpf.c), not the paper's 4.15 one (docs/kernel-415.md)"}


def kernels(df: pd.DataFrame) -> list[str]:
    """The BIC kernels whose cc appears in ``df``'s cc or cc2 columns, oldest first ("4.15", "6.1")."""
    ccs = set()
    for col in ("cc", "cc2"):
        if col in df.columns:
            ccs |= set(df[col].dropna().astype(str))
    return sorted((KERNEL_OF[c] for c in ccs if c in KERNEL_OF), key=lambda k: tuple(int(x) for x in k.split(".")))


def select(df: pd.DataFrame, kernel: str) -> pd.DataFrame:
    """The rows of runs whose BIC is ``kernel``'s (runs of the other BIC left out, runs without BIC kept), read as
    the paper's BIC: ``bic415`` renamed ``bic`` in cc and cc2, and the :data:`COLUMN` column. The run listing
    (``attrs["runs"]``) likewise; other attrs are dropped. AnalysisError for an unknown kernel."""
    if kernel not in CC_OF:
        raise AnalysisError(f"unknown BIC kernel {kernel!r}: one of {', '.join(sorted(CC_OF))}")
    other = CC_OF["6.1" if kernel == "4.15" else "4.15"]
    out = _without(df, other, kernel)
    runs = df.attrs.get("runs")
    if runs is not None:
        out.attrs = {"runs": _without(runs, other, kernel)}
    return out


def _without(frame: pd.DataFrame, other: str, kernel: str) -> pd.DataFrame:
    """``frame``'s rows whose cc and cc2 are not ``other``, bic415 renamed bic, with the bic_kernel column (a copy)."""
    keep = pd.Series(True, index=frame.index)
    has_bic = pd.Series(False, index=frame.index)
    for col in ("cc", "cc2"):
        if col in frame.columns:
            keep &= frame[col] != other
            has_bic |= frame[col] == CC_OF[kernel]
    out = frame.loc[keep].copy()
    out.attrs = {}
    for col in ("cc", "cc2"):
        if col in out.columns:
            out[col] = out[col].replace({"bic415": "bic"})
    out[COLUMN] = has_bic.loc[keep].map({True: kernel, False: ""}).astype(object)
    return out


def as_paper(df: pd.DataFrame, kernel: str | None = None) -> tuple[pd.DataFrame, str]:
    """(``df`` as study 000 reads it, a note saying which BIC it ran; "" without BIC). ``kernel`` None: the one BIC
    the dataset has; a dataset with both raises AnalysisError naming how to choose (``mpcc scorecard DIR --bic
    KERNEL``; ``python -m analysis.bic000`` compares them). A dataset already read (it has :data:`COLUMN`) is
    returned as it is."""
    have = kernels(df)
    if kernel is None:
        if COLUMN in df.columns:
            ks = sorted(set(df[COLUMN].dropna().astype(str)) - {""})
            return df, (NOTE[ks[0]] if len(ks) == 1 and ks[0] in NOTE else "")
        if not have:
            return df, ""
        if len(have) > 1:
            raise AnalysisError("dataset holds both BICs (bic: Linux 6.1's, bic415: Linux 4.15's, the paper's): score "
                                "one at a time (mpcc scorecard DIR --bic 4.15 or --bic 6.1; python -m analysis.bic000 "
                                "compares them)")
        kernel = have[0]
    elif kernel not in have:
        raise AnalysisError(f"no run with Linux {kernel}'s BIC ({CC_OF.get(kernel, '?')}) in this dataset "
                            f"(BICs: {', '.join(have) or 'none'})")
    return select(df, kernel), NOTE[kernel]


def about_bic(claim_id: str, statement: str) -> bool:
    """Whether a study 000 claim is about BIC: its id names it (``S06-bic``, ``T4-...-bic``) or its statement does."""
    return bool(_BIC_ID.search(str(claim_id)) or _BIC_WORD.search(str(statement)))


_BIC_ID = re.compile(r"(?i)[-+_]bic\b")
_BIC_WORD = re.compile(r"(?i)\bbic\b")
