"""Study 001 (Nurcahyo, Sukarno, Putrada): single-path TCP on LTE, single-path TCP on WiFi and MPTCP over both, with
the eNB / WiFi-router buffer at 25000, 50000, 75000 or 116736 bytes, 45-s flows. The paper used the out-of-tree
"redundant" MPTCP scheduler; runs that ask for it (``mptcp_scheduler: redundant``) are SKIPPED on a kernel without
it and recorded on one that has it.

Campaign keys and run ids: ``mpcc.families.dualpath`` (shared with study 003); topology, the LTE/WiFi path models
and their provenance: ``testbed/families/001/topology.json``; capture tool: ``capture_tools/run_dualpath.sh``.
Experiment: ``buffer_sweep`` (``mode`` tcp_lte / tcp_wifi / mptcp x ``buffer_bytes``).
"""
from __future__ import annotations

from functools import partial

from mpcc.families import dualpath

FAMILY = "001"
TITLE = "Redundant MPTCP vs single-path TCP over LTE and WiFi under bufferbloat (study 001)"
BACKENDS = dualpath.BACKENDS
EXPERIMENTS = ("buffer_sweep",)
MODES = {"tcp_lte": ("tcp", 1), "tcp_wifi": ("tcp", 2), "mptcp": ("mptcp", None)}
DEFAULTS = {**dualpath.path_defaults(FAMILY, "buffer_bytes", "bytes"),
            "duration_s": 45, "ping_interval_s": 0.2, "cc": "cubic", "mptcp_scheduler": "default"}
SPEC = dualpath.FamilySpec(family=FAMILY, experiments=EXPERIMENTS, modes=MODES, buffer_key="buffer_bytes",
                           buffer_unit="bytes", defaults=DEFAULTS)
Run = dualpath.DualpathRun


# the family-module interface (mpcc.families): the shared dual-path implementation bound to this family's SPEC
expand = partial(dualpath.expand, SPEC)                  # (exp, defaults, reps, where) -> runs
check_defaults = partial(dualpath.check_defaults, SPEC)  # (defaults, where)
capture_tool = dualpath.capture_tool                     # (backend) -> Path
