"""Study 003 (Segara, Riza, Sihombing): MPTCP vs single-path TCP over two asymmetric paths (10 Mbit/s / 2 ms and
2 Mbit/s / 10 ms), switch queue 1000 packets (default) vs 50 packets (queue sizing), and a resilience test with an
80 Mbit/s UDP flood during minutes 5-10.

Campaign keys and run ids: ``mpcc.families.dualpath`` (shared with study 001); topology and per-path defaults:
``testbed/families/003/topology.json``; capture tool: ``capture_tools/run_dualpath.sh`` (netns).
Experiments: ``scenario`` (the paper's four scenarios: ``mode`` tcp_path1 / mptcp x ``queue_pkts`` 1000 / 50) and
``resilience`` (needs ``udp_flood_mbps``, ``udp_flood_start_s``, ``udp_flood_end_s``; the flood goes client ->
server over path 1).
"""
from __future__ import annotations

from functools import partial

from mpcc.families import dualpath

FAMILY = "003"
TITLE = "MPTCP with switch queue sizing over asymmetric paths (study 003)"
BACKENDS = dualpath.BACKENDS
EXPERIMENTS = ("scenario", "resilience")
MODES = {"tcp_path1": ("tcp", 1), "tcp_path2": ("tcp", 2), "mptcp": ("mptcp", None)}
DEFAULTS = {**dualpath.path_defaults(FAMILY, "queue_pkts", "pkts"),
            "duration_s": 900, "ping_interval_s": 1.0, "cc": "cubic", "mptcp_scheduler": "default"}
# ping_interval_s: the paper measures latency, loss and (by its equation over the delays) jitter with "Ping"
# (section III.D) and names no interval: ping's own default, one echo a second
SPEC = dualpath.FamilySpec(family=FAMILY, experiments=EXPERIMENTS, modes=MODES, buffer_key="queue_pkts",
                           buffer_unit="pkts", defaults=DEFAULTS, flood_experiments=("resilience",))
Run = dualpath.DualpathRun


# the family-module interface (mpcc.families): the shared dual-path implementation bound to this family's SPEC
expand = partial(dualpath.expand, SPEC)                  # (exp, defaults, reps, where) -> runs
check_defaults = partial(dualpath.check_defaults, SPEC)  # (defaults, where)
capture_tool = dualpath.capture_tool                     # (backend) -> Path
