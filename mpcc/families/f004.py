"""Study 004 (Sukiswo, "Perbaikan TCP Westwood+"): TCP Westwood+ (``westwood``) vs Westwood+e (``westwood_e``, eq. (8)'s
BIC-like increase; docs/westwood-e.md) over four chain topologies of the paper, with a packet error rate swept
0.01-0.10 (Tables 1, 2, 4) or, on the uniform multihop chain, a link-rate sweep 1-10 Mbit/s at error rate 0.01
(Table 3).

Experiments = the paper's configurations, one topology file each (``testbed/families/004/<experiment>.json``, built
by ``testbed/chain.sh``; docs/families.md "Study 004"): ``client_server``, ``multihop_varied``, ``multihop_uniform``
(needs ``bandwidth_mbit``) and ``bottleneck`` (two TCP sources). Capture tool: ``capture_tools/run_chain.sh``
(netns).

Campaign keys: ``experiment``, ``reps``, ``cc`` (westwood, westwood_e, or any cc the capture tool accepts),
``error_rate`` (fraction of the flow's data packets dropped on its first link, 0-0.5), ``bandwidth_mbit``
(multihop_uniform only: every link's rate, Mbit/s), ``duration_s`` (whole seconds). Every list-valued key is a factor:
the runs are the cartesian product of the factors times ``reps``.
Run ids: ``<experiment>__<cc>__err<error_rate>[__bw<bandwidth>mbit][__t<duration>s]__repNN``, e.g.
``client_server__westwood_e__err0.01__rep01``, ``multihop_uniform__westwood__err0.01__bw4mbit__t30s__rep03`` (the
duration tag only when it differs from the family default, 120 s).
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from mpcc.errors import UserError
from mpcc.families.common import REPO, experiment_header, factor_values, num

FAMILY = "004"
TITLE = "TCP Westwood+ vs Westwood+e (BIC-like increase) over chain topologies (study 004)"
BACKENDS = ("netns",)
EXPERIMENTS = ("client_server", "multihop_varied", "multihop_uniform", "bottleneck")
SWEEPS_BANDWIDTH = ("multihop_uniform",)
CCS = ("westwood", "westwood_e", "reno", "cubic", "bbr", "bic")   # what capture_tools/run_chain.sh accepts
# name: (minimum, maximum, integer?)
NUMERIC = {"error_rate": (0, 0.5, False), "bandwidth_mbit": (0.1, 1000, False), "duration_s": (1, 86400, True)}
# the paper prints no run length; Table 1's largest cell (11479 packets of 592 B at 0.5 Mbit/s) needs >= 108.7 s
DEFAULTS = {"duration_s": 120, "cc": ["westwood", "westwood_e"], "error_rate": 0.01}
# how a link delays a packet (testbed/chain.sh): htb (the default; every recording before 2026-11-27) lets it go at
# the start of its turn at the link rate and delivers it at once; store-and-forward adds its transmission time, as an
# ns-2 link does (docs/ns2-004.md). A run of the default keeps the parameters and run id it always had.
LINK_MODELS = ("htb", "store-and-forward")
DEFAULT_LINK_MODEL = "htb"


@dataclass(frozen=True)
class Run:
    """One run of study 004: the parameters handed to capture_tools/run_chain.sh."""
    experiment: str
    cc: str
    error_rate: float
    duration_s: int
    rep: int
    bandwidth_mbit: float | None = None
    link_model: str = DEFAULT_LINK_MODEL

    family = FAMILY

    @property
    def topology(self) -> str:
        return self.experiment   # one topology file per configuration of the paper

    @property
    def run_id(self) -> str:
        parts = [self.experiment, self.cc, f"err{num(self.error_rate)}"]
        if self.bandwidth_mbit is not None:
            parts.append(f"bw{num(self.bandwidth_mbit)}mbit")
        if self.duration_s != DEFAULTS["duration_s"]:
            parts.append(f"t{self.duration_s}s")
        if self.link_model != DEFAULT_LINK_MODEL:
            parts.append("sf")
        parts.append(f"rep{self.rep:02d}")
        return "__".join(parts)

    def params(self) -> dict:
        out = {"run_id": self.run_id, "family": FAMILY, "experiment": self.experiment, "topology": self.topology,
               "cc": self.cc, "error_rate": self.error_rate, "bandwidth_mbit": self.bandwidth_mbit,
               "duration_s": self.duration_s, "rep": self.rep}
        if self.link_model != DEFAULT_LINK_MODEL:
            out["link_model"] = self.link_model
        return out

    def args(self) -> list[str]:
        """Command-line flags for capture_tools/run_chain.sh (the runner adds --backend and --out)."""
        out = ["--family", FAMILY, "--experiment", self.experiment, "--topology", self.topology, "--cc", self.cc,
               "--duration-s", str(self.duration_s), "--error-rate", num(self.error_rate)]
        if self.bandwidth_mbit is not None:
            out += ["--bandwidth-mbit", num(self.bandwidth_mbit)]
        if self.link_model != DEFAULT_LINK_MODEL:
            out += ["--link-model", self.link_model]
        return out + ["--rep", str(self.rep)]


def _link_models(value, where: str) -> list[str]:
    vals = value if isinstance(value, list) else [value]
    if not vals:
        raise UserError(f"{where}: link_model is an empty list")
    for v in vals:
        if v not in LINK_MODELS:
            raise UserError(f"{where}: link_model must be one of {', '.join(LINK_MODELS)}, got {v!r}")
    return vals


def check_defaults(defaults: dict, where: str) -> None:
    unknown = set(defaults) - set(NUMERIC) - {"cc", "link_model"}
    if unknown:
        raise UserError(f"{where}: unknown default(s) {', '.join(sorted(unknown))}")
    if "bandwidth_mbit" in defaults:
        raise UserError(f"{where}: bandwidth_mbit belongs to the multihop_uniform experiment, not to defaults")
    for k, v in defaults.items():
        if k == "link_model":
            _link_models(v, f"{where}: defaults")
        else:
            factor_values(k, v, NUMERIC, CCS, f"{where}: defaults")


def expand(exp: dict, defaults: dict, reps: int, where: str) -> list[Run]:
    name, e_reps = experiment_header(exp, EXPERIMENTS, set(NUMERIC) | {"cc", "link_model"}, reps, where)
    merged = {**defaults, **{k: v for k, v in exp.items() if k not in ("experiment", "reps")}}
    if name in SWEEPS_BANDWIDTH:
        if "bandwidth_mbit" not in merged:
            raise UserError(f"{where}: {name} needs bandwidth_mbit (the rate of every link, Mbit/s)")
    elif "bandwidth_mbit" in merged:
        raise UserError(f"{where}: bandwidth_mbit belongs only to {', '.join(SWEEPS_BANDWIDTH)}")
    keys = ["cc", "error_rate", "duration_s"] + (["bandwidth_mbit"] if name in SWEEPS_BANDWIDTH else [])
    factors = [factor_values(k, merged[k], NUMERIC, CCS, where) for k in keys]
    keys, factors = keys + ["link_model"], factors + [_link_models(merged.get("link_model", DEFAULT_LINK_MODEL), where)]
    runs = []
    for combo in itertools.product(*factors):
        v = dict(zip(keys, combo))
        for rep in range(1, e_reps + 1):
            runs.append(Run(experiment=name, cc=v["cc"], error_rate=v["error_rate"], duration_s=v["duration_s"],
                            rep=rep, bandwidth_mbit=v.get("bandwidth_mbit"), link_model=v["link_model"]))
    return runs


def capture_tool(backend: str) -> Path:
    """capture_tools/run_chain.sh (netns only; MPCC_RUN_CHAIN overrides, e.g. with a stand-in in tests)."""
    if backend not in BACKENDS:
        raise UserError(f"study 004 runs on the netns backend only, not {backend}")
    return Path(os.environ.get("MPCC_RUN_CHAIN", REPO / "capture_tools" / "run_chain.sh"))
