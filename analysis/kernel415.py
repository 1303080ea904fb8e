"""Study 000's loss experiment on the paper's own kernel (``testbed/kernel415/run-vm.sh``; docs/kernel-415.md): does
Linux 4.15, which the paper ran (its section 2.1: Ubuntu 16.04 with kernel 4.15), give the goodput drops of
statements S06 and S07 (section 4.2) where today's kernels do not?

**Arms** (column ``kernel``): ``4.15`` (Ubuntu's 4.15.0-54-generic, its own tcp_bic/tcp_cubic/tcp_reno and loss
detection: RACK with a static reordering window *and* the RFC 6675 DUPACK rule) and ``6.1`` (Debian 12's kernel,
booted from the same box image in the same VM: the baseline). Everything else is the testbed's own: the eight
namespaces of ``testbed/netns.sh`` inside one qemu TCG guest, the paper's switch (TBF 10 Mbit/s with real netem's
delay, loss and 100-packet limit), per-packet round robin, 100-s runs. Each arm is a campaign directory (raw) or a
bundle (``mpcc bundle --format columnar``) named ``linux-<kernel>`` under the experiment's directory
(:data:`DATA`: data/kernel415).

**Quantities and effects**: ``analysis.loss_drops`` (goodput per run; the claims' drops per arm judged by the claims'
rule; 4.15's drop minus 6.1's with a 95 % Welch interval). :func:`platform` sets the VM's 6.1 arm beside the host's
like-for-like runs (``data/recovery000``'s ``tcp_recovery`` 1 arm: the same switch and runs on this host's 6.18 in
namespaces) to show what the VM itself changes (TCG's CPU and timing, another kernel).

``python -m analysis.kernel415 [DIR]`` prints the tables (DIR: the bundles' directory or a raw results directory).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

import pandas as pd

from analysis import ablation, loss_drops, markdown_table
from analysis.ablation import est_diff
from analysis.errors import AnalysisError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "kernel415"
ARM = "kernel"
PAPER_KERNEL = "4.15"           # the paper's (section 2.1)
BASELINE = "6.1"                # Debian 12's, same image and VM
KERNELS = (BASELINE, PAPER_KERNEL)
KERNEL_LABEL = {PAPER_KERNEL: "Linux 4.15 (Ubuntu 4.15.0-54, the paper's)",
                BASELINE: "Linux 6.1 (Debian 12, same VM)"}
#: the host's like-for-like runs: the same switch and loss_rate runs in namespaces on this host's kernel
HOST_BUNDLE = ROOT / "data" / "recovery000"
ALPHA = loss_drops.ALPHA
_ARM_DIR = re.compile(r"^linux-(\d+\.\d+)$")


def arm_dirs(root=None) -> dict[str, Path]:
    """{kernel: directory} of the arms under ``root`` (default :data:`DATA`): ``linux-X.Y`` directories holding a
    bundle (bundle.json) or a raw campaign directory (runs/)."""
    r = Path(root) if root is not None else DATA
    out = {}
    if r.is_dir():
        for d in sorted(r.iterdir()):
            m = _ARM_DIR.match(d.name)
            if m and ((d / "bundle.json").is_file() or (d / "runs").is_dir()):
                out[m.group(1)] = d
    return out


def with_kernel(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Flow-1 loss_rate rows of each arm's ``load_campaign`` frame with a ``kernel`` column (the arm)."""
    parts = [loss_drops.loss_rate_rows(df).assign(kernel=k) for k, df in frames.items() if not df.empty]
    if not parts:
        return pd.DataFrame(columns=["run_id", "cc", "loss_pct", "goodput_mbps", ARM])
    return pd.concat(parts, ignore_index=True)


def load(root=None) -> pd.DataFrame | None:
    """Rows of every arm under ``root`` (default :data:`DATA`) with their ``kernel``, or None without any arm."""
    dirs = arm_dirs(root)
    if not dirs:
        return None
    from analysis.dataset import load_campaign
    return with_kernel({k: load_campaign(d, progress=False) for k, d in dirs.items()})


def progress(root=None) -> tuple[int, int] | None:
    """(complete runs, planned runs) over the bundled arms (``analysis.ablation.recording_progress``; a raw arm counts
    its COMPLETE markers against campaign.json's ``n_runs``), None without any arm."""
    dirs = arm_dirs(root)
    if not dirs:
        return None
    done = planned = 0
    for d in dirs.values():
        if (d / "bundle.json").is_file():
            got = ablation.recording_progress(d)
            done, planned = done + got[0], planned + got[1]
        else:
            n = sum(1 for _ in (d / "runs").glob("*/COMPLETE"))
            try:
                p = int(json.loads((d / "campaign.json").read_text())["n_runs"])
            except (OSError, ValueError, KeyError, TypeError):
                p = n
            done, planned = done + n, planned + max(p, n)
    return done, planned


def table(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Goodput per (cc, kernel, loss_pct) with its interval and retransmissions (``analysis.loss_drops.table``)."""
    return loss_drops.table(df, ARM, KERNELS, alpha)


def drops(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """The claims' drops per (claim, cc, kernel), judged by the claims' rule (``analysis.loss_drops.drops``)."""
    return loss_drops.drops(df, ARM, KERNELS, alpha)


def effects(df: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """The paper's kernel minus Debian's 6.1, per (claim, cc), in Mbit/s of drop (``analysis.loss_drops.effects``;
    ``kernel415_drop_mbps`` is 4.15's drop, ``baseline_drop_mbps`` 6.1's)."""
    return (loss_drops.effects(df, ARM, BASELINE, PAPER_KERNEL, alpha)
            .rename(columns={"other_drop_mbps": "kernel415_drop_mbps"}))


def platform(df: pd.DataFrame, host: pd.DataFrame | None, alpha: float = ALPHA) -> pd.DataFrame:
    """Per (claim, cc): the VM's 6.1 drop beside the host's (``host``: loss_rate rows of :data:`HOST_BUNDLE`, its
    ``__rec1``-or-untagged runs, this host's kernel in namespaces) and VM minus host with its (1 - alpha) interval."""
    cols = ["claim", "cc", "vm_drop_mbps", "host_drop_mbps", "diff", "diff_low", "diff_high", "vm_n", "host_n"]
    if host is None or host.empty:
        return pd.DataFrame(columns=cols)
    from analysis import recovery000
    h = recovery000.with_arm(host)
    h = h[h["tcp_recovery"] == recovery000.BASELINE].assign(kernel="host")
    both = pd.concat([df, h], ignore_index=True)
    rows = []
    for sid, (loss, _paper) in loss_drops.CLAIMS.items():
        for cc in loss_drops.CCS:
            vm, ho = loss_drops.drop(both, ARM, cc, BASELINE, loss), loss_drops.drop(both, ARM, cc, "host", loss)
            if not (vm.n and ho.n):
                continue
            e = est_diff(vm, ho)
            lo, hi = e.interval(alpha)
            rows.append({"claim": sid, "cc": cc, "vm_drop_mbps": vm.mean, "host_drop_mbps": ho.mean, "diff": e.mean,
                         "diff_low": lo, "diff_high": hi, "vm_n": vm.n, "host_n": ho.n})
    return pd.DataFrame(rows, columns=cols)


def cite(claim: str, cc: str, root=None) -> dict | None:
    """What the experiment measured for ``claim`` (S06, S07) and ``cc`` once every planned run of both arms is in:
    ``runs``, ``drop`` {kernel: (mean, low, high, verdict)} and the effect (diff, diff_low, diff_high, moved,
    toward_paper, paper_drop_mbps, loss_pct); None before that, or without rows for it."""
    prog = progress(root)
    if prog is None or prog[0] < prog[1]:
        return None
    dr, ef = _tables(str(Path(DATA if root is None else root).resolve()), prog)
    return loss_drops.citation(dr, ef, ARM, claim, cc, prog[0])


@lru_cache(maxsize=2)
def _tables(root: str, prog: tuple[int, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`drops`, :func:`effects`) of one state of the experiment's data (every cited claim uses them)."""
    df = load(root)
    return drops(df), effects(df)


# --------------------------------------------------------------------------------------------- report
_f, _md = markdown_table.num, markdown_table.table


def report(df: pd.DataFrame, host: pd.DataFrame | None = None, alpha: float = ALPHA) -> str:
    """Goodput per kernel and loss, the claims' drops per kernel, 4.15 minus 6.1, and the VM beside the host."""
    t, dr, ef, pf = table(df, alpha), drops(df, alpha), effects(df, alpha), platform(df, host, alpha)
    ci = markdown_table.mean_ci
    out = [f"Goodput of flow 1 (Mbit/s, mean [{100 * (1 - alpha):g} % t-interval] over runs) and retransmitted / "
           "spuriously retransmitted data segments per run:\n",
           _md(["cc", "kernel", "loss (%)", "runs", "goodput (Mbit/s)", "retransmissions", "spurious"],
               [[r.cc, KERNEL_LABEL[r.kernel], _f(r.loss_pct, 0), r.runs,
                 ci(r.goodput_mbps, r.goodput_low, r.goodput_high, 2), _f(r.retransmissions, 0),
                 _f(r.spurious_retransmissions, 0)] for r in t.itertuples()]),
           f"\nThe claims' drops, goodput(0 %) - goodput(loss), Welch interval, judged as the claim judges it "
           f"(the paper's value +- {loss_drops.TOL_MBPS:g} Mbit/s):\n",
           _md(["claim", "cc", "kernel", "paper (Mbit/s)", "drop (Mbit/s)", "verdict"],
               [[r.claim, r.cc, KERNEL_LABEL[r.kernel], _f(r.paper_drop_mbps, 0),
                 ci(r.drop_mbps, r.drop_low, r.drop_high, 2), r.verdict] for r in dr.itertuples()]),
           "\nLinux 4.15 minus Linux 6.1 (Mbit/s of drop, 95 % interval):\n",
           _md(["claim", "cc", "6.1", "4.15", "difference", "moved", "toward the paper"],
               [[r.claim, r.cc, _f(r.baseline_drop_mbps, 2), _f(r.kernel415_drop_mbps, 2),
                 ci(r.diff, r.diff_low, r.diff_high, 2), "yes" if r.moved else "no",
                 "—" if r.toward_paper is None else ("yes" if r.toward_paper else "no")] for r in ef.itertuples()])]
    if not pf.empty:
        out += ["\nThe VM's Linux 6.1 beside this host's runs of the same configuration (data/recovery000, "
                "tcp_recovery 1; Mbit/s of drop, 95 % interval): what the VM and its kernel change together\n",
                _md(["claim", "cc", "VM 6.1", "host", "VM - host"],
                    [[r.claim, r.cc, f"{_f(r.vm_drop_mbps, 2)} (n={r.vm_n})", f"{_f(r.host_drop_mbps, 2)} (n={r.host_n})",
                      ci(r.diff, r.diff_low, r.diff_high, 2)] for r in pf.itertuples()])]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.kernel415",
                                 description="Study 000's loss experiment on Linux 4.15 (the paper's) and 6.1: tables.")
    ap.add_argument("dir", nargs="?", default=str(DATA),
                    help="the arms' directory: linux-X.Y bundles or raw campaign directories (default data/kernel415)")
    args = ap.parse_args(argv)
    try:
        df = load(args.dir)
        if df is None:
            raise AnalysisError(f"{args.dir}: no linux-X.Y arm with a bundle.json or runs/ (record them with "
                                "testbed/kernel415/run-vm.sh)")
        host = None
        if (HOST_BUNDLE / "bundle.json").is_file():
            from analysis.dataset import load_campaign
            host = load_campaign(HOST_BUNDLE, progress=False)
        prog = progress(args.dir)
        sys.stdout.write(f"{prog[0]} of {prog[1]} planned runs complete"
                         f"{'' if prog[0] >= prog[1] else ' (recording in progress: not cited by the verdicts yet)'}\n\n")
        sys.stdout.write(report(df, host))
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
