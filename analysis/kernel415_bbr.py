"""BBR on the paper's own kernel (``testbed/kernel415/run-vm.sh --ccs bbr``; docs/kernel-415.md, section "BBR on
Linux 4.15"): do study 000's BBR statements at link delay 10 ms (section 4.2) move when BBR is Linux 4.15's?

The arms and the path are those of ``analysis.kernel415`` (one qemu TCG VM booted on Ubuntu's 4.15.0-54, the
paper's kernel, and on Debian's 6.1 from the same image; the paper's switch with real netem; per-packet round robin
over two paths; 100-s runs): BBR's runs are in :data:`DATA` (data/kernel415-bbr), the loss-based flows' in
``analysis.kernel415.DATA`` (data/kernel415), same VM, plan and loss levels (0 and 1 %).

**Quantities** per kernel, flow 1, multipath, 10 ms (means over runs, (1 - alpha) t / Welch intervals):

* ``goodput_bbr_l1``: BBR's goodput at loss 1 % (Mbit/s; S08 about 19, S09 >= 95 % of 20) and ``wire_bbr_l1``, the
  bytes it put on the wire at router1, retransmissions included (``data_bytes`` x 8 / duration, Mbit/s): the
  paper's throughput is read from a capture at router1 (its section 2.2).
* ``rtt_bbr_l1``: BBR's mean RTT at loss 1 % (``rtt_mean_ms``, the capture's ACK-based RTT, ms; S12 about 24).
* ``gap0_<cc>``: the loss-based flow's mean RTT minus BBR's at loss 0 % (ms; S05: 26-58 over link delays 10-100 ms,
  S23 up to 58).
* ``gap1_<cc>``: BBR's mean RTT minus the loss-based flow's at loss 1 % (ms; S13 about 12).

:func:`effects` gives each quantity's 4.15 value minus 6.1's with a Welch interval (a difference of two
differences for the gaps), ``moved`` when it excludes 0, ``toward_paper`` when it moved nearer the paper's value
(``analysis.ablation.distance``).

``python -m analysis.kernel415_bbr [BBR_DIR [LOSS_BASED_DIR]]`` prints the tables.
"""
from __future__ import annotations

import argparse
import sys
from functools import lru_cache

import numpy as np
import pandas as pd

from analysis import kernel415, markdown_table
from analysis.ablation import NO_EST, Est, distance, est_diff, est_mean, excludes_zero
from analysis.errors import AnalysisError, cli_status

DATA = kernel415.ROOT / "data" / "kernel415-bbr"
ARM, KERNELS, BASELINE, PAPER_KERNEL = kernel415.ARM, kernel415.KERNELS, kernel415.BASELINE, kernel415.PAPER_KERNEL
ALPHA = kernel415.ALPHA
LOSS_BASED = ("reno", "bic", "cubic")
CAPACITY_MBPS = 20.0


def _q(name, claim, what, unit, target):
    return {"quantity": name, "claim": claim, "what": what, "unit": unit, "target": target}


def _target(rel, value=float("nan"), low=float("nan"), high=float("nan")) -> dict:
    """A paper statement as ``analysis.ablation.distance`` reads it."""
    return {"relation": rel, "value": value, "low": low, "high": high}


#: the quantities, their claims, words, units and the paper's statement (data/reference/statements.csv)
QUANTITIES = ([_q("goodput_bbr_l1", "S08/S09", "BBR's goodput at loss 1 %", "Mbit/s", _target("approx", 19.0)),
               _q("wire_bbr_l1", "S08/S09", "BBR's bytes on the wire at router1 at loss 1 %", "Mbit/s",
                  _target("approx", 19.0)),
               _q("rtt_bbr_l1", "S12", "BBR's mean RTT at loss 1 %", "ms", _target("approx", 24.0))]
              + [_q(f"gap0_{cc}", "S05/S23", f"{cc}'s mean RTT minus BBR's at loss 0 %", "ms",
                    _target("approx_between", low=26.0, high=58.0)) for cc in LOSS_BASED]
              + [_q(f"gap1_{cc}", "S13", f"BBR's mean RTT minus {cc}'s at loss 1 %", "ms", _target("approx", 12.0))
                 for cc in LOSS_BASED])


def load(bbr_root=None, loss_root=None) -> pd.DataFrame | None:
    """Flow-1 loss_rate rows of BBR's arms (default :data:`DATA`) and the loss-based flows' (default
    ``analysis.kernel415.DATA``) with their ``kernel``; None without any BBR arm."""
    bbr = kernel415.load(DATA if bbr_root is None else bbr_root)
    if bbr is None:
        return None
    other = kernel415.load(loss_root)
    parts = [bbr] + ([other[other["cc"] != "bbr"]] if other is not None else [])
    return pd.concat(parts, ignore_index=True)


def _sample(df, kernel, cc, loss, column) -> np.ndarray:
    d = df[(df[ARM] == kernel) & (df["cc"] == cc) & (df["loss_pct"] == loss)]
    if column == "wire_mbps":
        x = d["data_bytes"].astype(float) * 8 / d["duration_s"].astype(float) / 1e6
    else:
        x = d[column].astype(float)
    return x.to_numpy(float)


def estimate(df: pd.DataFrame, quantity: str, kernel: str) -> Est:
    """One quantity of :data:`QUANTITIES` on one kernel's runs (``Est``; NO_EST without runs)."""
    if quantity == "goodput_bbr_l1":
        return est_mean(_sample(df, kernel, "bbr", 1.0, "goodput_mbps"))
    if quantity == "wire_bbr_l1":
        return est_mean(_sample(df, kernel, "bbr", 1.0, "wire_mbps"))
    if quantity == "rtt_bbr_l1":
        return est_mean(_sample(df, kernel, "bbr", 1.0, "rtt_mean_ms"))
    kind, cc = quantity.split("_", 1)
    loss = 0.0 if kind == "gap0" else 1.0
    bbr, other = (est_mean(_sample(df, kernel, c, loss, "rtt_mean_ms")) for c in ("bbr", cc))
    if not (bbr.n and other.n):
        return NO_EST
    return est_diff(other, bbr) if kind == "gap0" else est_diff(bbr, other)


def table(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per quantity and kernel: mean, (1 - alpha) interval, n (runs; for a gap the smaller side)."""
    rows = []
    for q in QUANTITIES:
        for k in KERNELS:
            e = estimate(df, q["quantity"], k)
            if not e.n:
                continue
            lo, hi = e.interval(alpha)
            rows.append({"quantity": q["quantity"], "claim": q["claim"], "what": q["what"], "unit": q["unit"],
                         ARM: k, "mean": e.mean, "low": lo, "high": hi, "n": e.n})
    return pd.DataFrame(rows, columns=["quantity", "claim", "what", "unit", ARM, "mean", "low", "high", "n"])


def effects(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per quantity: 6.1's and 4.15's means, 4.15 minus 6.1 with its (1 - alpha) Welch interval, ``moved`` (the
    interval excludes 0) and ``toward_paper`` (True / False when moved: nearer / farther from the paper's
    statement; None when not moved)."""
    rows = []
    for q in QUANTITIES:
        base, old = estimate(df, q["quantity"], BASELINE), estimate(df, q["quantity"], PAPER_KERNEL)
        if not (base.n and old.n):
            continue
        e = est_diff(old, base)
        lo, hi = e.interval(alpha)
        moved = excludes_zero(lo, hi)
        nearer = distance(old.mean, q["target"]) < distance(base.mean, q["target"])
        rows.append({"quantity": q["quantity"], "claim": q["claim"], "what": q["what"], "unit": q["unit"],
                     "baseline": base.mean, "paper_kernel": old.mean, "diff": e.mean, "diff_low": lo, "diff_high": hi,
                     "moved": moved, "toward_paper": (bool(nearer) if moved else None)})
    return pd.DataFrame(rows, columns=["quantity", "claim", "what", "unit", "baseline", "paper_kernel", "diff",
                                       "diff_low", "diff_high", "moved", "toward_paper"])


def progress(root=None) -> tuple[int, int] | None:
    """(complete runs, planned runs) of BBR's arms (``analysis.kernel415.progress``), None without any."""
    return kernel415.progress(DATA if root is None else root)


def cite(quantity: str, root=None, loss_root=None) -> dict | None:
    """What the experiment measured for one quantity of :data:`QUANTITIES` once every planned run of BBR's arms is
    in (and the loss-based flows' too, for a gap): its :func:`effects` row as a dict with ``runs`` (BBR's) and
    ``kernels`` {kernel: (mean, low, high, n)}; None before that, or without rows for it."""
    prog = progress(root)
    if prog is None or prog[0] < prog[1]:
        return None
    if quantity.startswith("gap"):
        other = kernel415.progress(loss_root)
        if other is None or other[0] < other[1]:
            return None
    t, ef = _tables(str(DATA if root is None else root), str(kernel415.DATA if loss_root is None else loss_root), prog)
    row = ef[ef["quantity"] == quantity]
    if row.empty:
        return None
    part = t[t["quantity"] == quantity]
    return {"runs": prog[0], **row.iloc[0].to_dict(),
            "kernels": {getattr(r, ARM): (r.mean, r.low, r.high, r.n) for r in part.itertuples()}}


@lru_cache(maxsize=2)
def _tables(root: str, loss_root: str, prog: tuple[int, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`table`, :func:`effects`) of one state of the data (every cited claim uses them)."""
    df = load(root, loss_root)
    return table(df), effects(df)


# --------------------------------------------------------------------------------------------- report
_f, _md, _ci = markdown_table.num, markdown_table.table, markdown_table.mean_ci


def report(df: pd.DataFrame, alpha: float = ALPHA) -> str:
    """Each quantity per kernel, and 4.15 minus 6.1, as Markdown."""
    t, ef = table(df, alpha), effects(df, alpha)
    label = kernel415.KERNEL_LABEL
    out = [f"Study 000's BBR quantities at link delay 10 ms per kernel (mean [{100 * (1 - alpha):g} % interval], "
           "runs):\n",
           _md(["claim", "quantity", "kernel", "value", "runs"],
               [[r.claim, f"{r.what} ({r.unit})", label[getattr(r, ARM)], _ci(r.mean, r.low, r.high, 2), r.n]
                for r in t.itertuples()]),
           "\nLinux 4.15 minus Linux 6.1 (95 % Welch interval):\n",
           _md(["claim", "quantity", "6.1", "4.15", "difference", "moved", "toward the paper"],
               [[r.claim, f"{r.what} ({r.unit})", _f(r.baseline, 2), _f(r.paper_kernel, 2),
                 _ci(r.diff, r.diff_low, r.diff_high, 2), "yes" if r.moved else "no",
                 "—" if r.toward_paper is None else ("yes" if r.toward_paper else "no")] for r in ef.itertuples()])]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.kernel415_bbr",
                                 description="Study 000's BBR statements on Linux 4.15 (the paper's) and 6.1: tables.")
    ap.add_argument("bbr_dir", nargs="?", default=str(DATA),
                    help="BBR's arms: linux-X.Y bundles or raw campaign directories (default data/kernel415-bbr)")
    ap.add_argument("loss_dir", nargs="?", default=str(kernel415.DATA),
                    help="the loss-based flows' arms (default data/kernel415)")
    args = ap.parse_args(argv)

    def work():
        df = load(args.bbr_dir, args.loss_dir)
        if df is None:
            raise AnalysisError(f"{args.bbr_dir}: no linux-X.Y arm with a bundle.json or runs/ (record them with "
                                "testbed/kernel415/run-vm.sh --ccs bbr)")
        sys.stdout.write(report(df))
    return cli_status(work)


if __name__ == "__main__":
    sys.exit(main())

