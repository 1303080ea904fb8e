"""Which implementation of each congestion control a campaign's runs used, in words (issue 30: the scorecard and
notebook 12 say which PCC ran). Read from each run's ``meta.json`` ``cc_impl`` (the runner writes it: "kernel", or
"bpf" with the object's sha256 and its source's git blob, ``testbed/cc/ccctl.sh``).

One BPF name has meant two controllers: ``pcc_vivace`` was the Vivace-paper / PCC-Uspace controller until issue 30
(source blob :data:`USPACE_AS_PCC_VIVACE`), and has been the port of PCC-Kernel's vivace module since; the Uspace
controller is ``pcc_vivace_usp`` now (docs/pcc-vivace.md). The source blob a run recorded tells them apart."""
from __future__ import annotations

from collections import Counter

import pandas as pd

#: git blobs of testbed/cc/pcc_vivace.bpf.c while it was the Vivace-paper / PCC-Uspace controller
USPACE_AS_PCC_VIVACE = frozenset({"22ba95c780d71029215d690f231d0dd2b000d63b"})
KERNEL_PORTS = {"bic": "tcp_bic.c", "westwood": "tcp_westwood.c"}


def describe(cc: str, impl: dict) -> str:
    """One implementation record (``meta.json`` ``cc_impl[cc]``) in words."""
    kind = impl.get("implementation")
    if kind == "kernel":
        return "the kernel's own module"
    if kind != "bpf":
        return str(kind or "not recorded")
    blob = impl.get("source_git_blob")
    obj = f"object sha256 {str(impl.get('object_sha256') or '?')[:12]}…"
    if cc == "pcc_vivace":
        what = ("the Vivace-paper / PCC-Uspace controller (named pcc_vivace before issue 30, pcc_vivace_usp now)"
                if blob in USPACE_AS_PCC_VIVACE else "BPF port of PCC-Kernel's vivace module")
    elif cc == "pcc_vivace_usp":
        what = "the Vivace-paper / PCC-Uspace controller (BPF)"
    elif cc in KERNEL_PORTS:
        what = f"BPF port of Linux's {KERNEL_PORTS[cc]}"
    elif cc == "bic415":
        what = "BPF port of Linux 4.15's tcp_bic.c (study 000's kernel)"
    elif cc == "westwood_e":
        what = "Westwood+e of paper 004, equation 8 (BPF)"
    else:
        what = "BPF congestion control"
    return f"{what} ({impl.get('source', '?')}, {obj}" + (f", source blob {blob[:12]}…)" if blob else ")")


def implementations(metas) -> pd.DataFrame:
    """From (run_id, meta dict) pairs (``analysis.dataset.run_metas``): one row per (cc, described implementation)
    with the number of runs; columns cc, implementation, runs. Runs without ``cc_impl`` are left out."""
    c: Counter = Counter()
    for _, meta in metas:
        for cc, impl in (meta.get("cc_impl") or {}).items():
            if isinstance(impl, dict):
                c[(cc, describe(cc, impl))] += 1
    rows = [{"cc": cc, "implementation": what, "runs": n} for (cc, what), n in sorted(c.items())]
    return pd.DataFrame(rows, columns=["cc", "implementation", "runs"])


def line(table: pd.DataFrame) -> str:
    """The table as one line: "cubic: the kernel's own module (15 runs); pcc_vivace: ... (15 runs)"."""
    return "; ".join(f"{r.cc}: {r.implementation} ({r.runs} runs)" for r in table.itertuples()) or "not recorded"
