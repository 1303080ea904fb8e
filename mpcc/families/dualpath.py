"""The campaign side shared by the dual-path study families (001, 003): one client dual-homed to one server over two
heterogeneous paths, single-path TCP vs MPTCP, recorded by ``capture_tools/run_dualpath.sh`` on the netns backend
(topology: ``testbed/families/NNN/topology.json``; docs/families.md).

A family module (``f001.py``, ``f003.py``) describes itself with a :class:`FamilySpec` (its experiments, its modes,
the unit of its switch buffer, its defaults) and hands ``expand``/``check_defaults`` to this module, so that both
families share one expansion, one validation, one run-id scheme and one capture tool.

Experiment keys: ``experiment``, ``reps``, ``mode`` (e.g. ``tcp_path1``, ``tcp_lte``, ``mptcp``), ``cc``,
``mptcp_scheduler`` (MPTCP runs only; ignored for TCP modes), the family's buffer key (``queue_pkts`` or
``buffer_bytes``: the switch buffer on both paths), ``path1_rate_mbit``, ``path1_delay_ms`` (one-way, per
direction), ``path2_rate_mbit``, ``path2_delay_ms``, ``duration_s``, ``ping_interval_s`` and, for the family's flood
experiments, ``udp_flood_mbps``, ``udp_flood_start_s``, ``udp_flood_end_s``. Every list-valued key is a factor: the
runs are the cartesian product of the factors times ``reps``.
"""
from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from mpcc.errors import UserError
from mpcc.families.common import REPO, as_list, check_number, experiment_header, num

BACKENDS = ("netns",)
CCS = ("reno", "cubic", "bbr", "bic", "westwood")   # what capture_tools/run_dualpath.sh accepts
_SCHED = re.compile(r"^[a-z][a-z0-9_]{0,15}$")

# name: (minimum, maximum, integer?)
NUMERIC = {
    "duration_s": (1, 86400, True),
    "ping_interval_s": (0.01, 60, False),
    "path1_rate_mbit": (0.1, 10000, False),
    "path1_delay_ms": (0, 5000, False),
    "path2_rate_mbit": (0.1, 10000, False),
    "path2_delay_ms": (0, 5000, False),
    "udp_flood_mbps": (0.1, 10000, False),
    "udp_flood_start_s": (0, 86400, True),
    "udp_flood_end_s": (0, 86400, True),
}
FLOOD_KEYS = ("udp_flood_mbps", "udp_flood_start_s", "udp_flood_end_s")
BUFFER_BOUNDS = {"pkts": (1, 100000), "bytes": (1514, 100_000_000)}   # a bfifo must hold one full frame


@dataclass(frozen=True)
class FamilySpec:
    family: str
    experiments: tuple
    modes: dict                  # mode name -> (transport, tcp_path or None)
    buffer_key: str              # campaign key of the switch buffer (both paths): queue_pkts | buffer_bytes
    buffer_unit: str             # pkts | bytes
    defaults: dict               # the family's DEFAULTS (campaign keys)
    flood_experiments: tuple = ()

    @property
    def numeric(self) -> dict:
        lo, hi = BUFFER_BOUNDS[self.buffer_unit]
        return {**NUMERIC, self.buffer_key: (lo, hi, True)}

    def buffer_tag(self, n: int) -> str:
        return f"q{n}pkt" if self.buffer_unit == "pkts" else f"b{n}B"


def topology(family: str) -> dict:
    """The family's topology file (testbed/families/NNN/topology.json), the source of its per-path defaults."""
    return json.loads((REPO / "testbed" / "families" / family / "topology.json").read_text())


def path_defaults(family: str, buffer_key: str, unit: str) -> dict:
    """Per-path defaults (rate, one-way delay, buffer) of the topology file as campaign keys."""
    paths = topology(family)["paths"]
    bufs = {paths[k].get(f"buffer_{unit}") for k in ("1", "2")}
    if len(bufs) != 1 or None in bufs:
        raise ValueError(f"testbed/families/{family}/topology.json: both paths need the same buffer_{unit}")
    return {"path1_rate_mbit": paths["1"]["rate_mbit"], "path1_delay_ms": paths["1"]["delay_ms"],
            "path2_rate_mbit": paths["2"]["rate_mbit"], "path2_delay_ms": paths["2"]["delay_ms"],
            buffer_key: bufs.pop()}


@dataclass(frozen=True)
class DualpathRun:
    """One run of a dual-path family: the parameters handed to capture_tools/run_dualpath.sh."""
    spec: FamilySpec = field(repr=False, compare=False)
    experiment: str = ""
    mode: str = ""
    cc: str = "cubic"
    mptcp_scheduler: str | None = None
    buffer: int = 0
    path1_rate_mbit: float = 0
    path1_delay_ms: float = 0
    path2_rate_mbit: float = 0
    path2_delay_ms: float = 0
    duration_s: float = 0
    ping_interval_s: float = 0.2
    rep: int = 1
    udp_flood_mbps: float | None = None
    udp_flood_start_s: float | None = None
    udp_flood_end_s: float | None = None

    @property
    def family(self) -> str:
        return self.spec.family

    @property
    def transport(self) -> str:
        return self.spec.modes[self.mode][0]

    @property
    def tcp_path(self) -> int | None:
        return self.spec.modes[self.mode][1]

    @property
    def run_id(self) -> str:
        """``<experiment>__<mode>[-<scheduler>]__<buffer>[__<what differs from the family defaults>]__repNN``,
        e.g. ``scenario__mptcp__q50pkt__rep01``, ``buffer_sweep__tcp-lte__b25000B__rep03``."""
        d = self.spec.defaults
        mode = self.mode.replace("_", "-")
        if self.mptcp_scheduler not in (None, "default"):
            mode += f"-{self.mptcp_scheduler}"
        parts = [self.experiment, mode, self.spec.buffer_tag(self.buffer)]
        if self.cc != d.get("cc", "cubic"):
            parts.append(self.cc)
        for key, tag, unit in (("path1_rate_mbit", "p1r", "mbit"), ("path1_delay_ms", "p1d", "ms"),
                               ("path2_rate_mbit", "p2r", "mbit"), ("path2_delay_ms", "p2d", "ms")):
            if getattr(self, key) != d[key]:
                parts.append(f"{tag}{num(getattr(self, key))}{unit}")
        if self.duration_s != d["duration_s"]:
            parts.append(f"t{num(self.duration_s)}s")
        if self.ping_interval_s != d["ping_interval_s"]:
            parts.append(f"ping{num(self.ping_interval_s)}s")
        if self.udp_flood_mbps is not None:
            parts.append(f"flood{num(self.udp_flood_mbps)}mbps-{num(self.udp_flood_start_s)}-"
                         f"{num(self.udp_flood_end_s)}s")
        parts.append(f"rep{self.rep:02d}")
        return "__".join(parts)

    def params(self) -> dict:
        unit = self.spec.buffer_unit
        other = "bytes" if unit == "pkts" else "pkts"
        return {"run_id": self.run_id, "family": self.family, "experiment": self.experiment, "mode": self.mode,
                "transport": self.transport, "tcp_path": self.tcp_path, "cc": self.cc,
                "mptcp_scheduler": self.mptcp_scheduler,
                "path1_rate_mbit": self.path1_rate_mbit, "path1_delay_ms": self.path1_delay_ms,
                f"path1_buffer_{unit}": self.buffer, f"path1_buffer_{other}": None,
                "path2_rate_mbit": self.path2_rate_mbit, "path2_delay_ms": self.path2_delay_ms,
                f"path2_buffer_{unit}": self.buffer, f"path2_buffer_{other}": None,
                self.spec.buffer_key: self.buffer, "duration_s": self.duration_s,
                "udp_flood_mbps": self.udp_flood_mbps, "udp_flood_start_s": self.udp_flood_start_s,
                "udp_flood_end_s": self.udp_flood_end_s, "ping_interval_s": self.ping_interval_s, "rep": self.rep}

    def args(self) -> list[str]:
        """Command-line flags for capture_tools/run_dualpath.sh (the runner adds --backend and --out)."""
        unit = self.spec.buffer_unit
        out = ["--family", self.family, "--experiment", self.experiment, "--transport", self.transport]
        if self.tcp_path is not None:
            out += ["--tcp-path", str(self.tcp_path)]
        out += ["--cc", self.cc]
        if self.mptcp_scheduler is not None:
            out += ["--mptcp-scheduler", self.mptcp_scheduler]
        out += ["--duration-s", num(self.duration_s),
                "--path1-rate-mbit", num(self.path1_rate_mbit), "--path1-delay-ms", num(self.path1_delay_ms),
                f"--path1-buffer-{unit}", str(self.buffer),
                "--path2-rate-mbit", num(self.path2_rate_mbit), "--path2-delay-ms", num(self.path2_delay_ms),
                f"--path2-buffer-{unit}", str(self.buffer),
                "--ping-interval-s", num(self.ping_interval_s)]
        if self.udp_flood_mbps is not None:
            out += ["--udp-flood-mbps", num(self.udp_flood_mbps), "--udp-flood-start-s", num(self.udp_flood_start_s),
                    "--udp-flood-end-s", num(self.udp_flood_end_s)]
        return out + ["--rep", str(self.rep)]


def _number(spec: FamilySpec, key: str, value, where: str):
    lo, hi, integer = spec.numeric[key]
    v = check_number(key, value, (lo, hi), where)
    if integer:
        if v != int(v):
            raise UserError(f"{where}: {key} must be a whole number, got {value!r}")
        return int(v)
    return v


def _choice(key: str, value, allowed, where: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise UserError(f"{where}: unknown {key} {value!r} (known: {', '.join(allowed)})")
    return value


def _scheduler(value, where: str) -> str:
    if not isinstance(value, str) or not _SCHED.match(value):
        raise UserError(f"{where}: mptcp_scheduler must be a scheduler name like default or redundant, got {value!r}")
    return value


def _allowed_keys(spec: FamilySpec) -> set:
    return set(spec.numeric) | {"mode", "cc", "mptcp_scheduler"}


def check_defaults(spec: FamilySpec, defaults: dict, where: str) -> None:
    unknown = set(defaults) - _allowed_keys(spec)
    if unknown:
        raise UserError(f"{where}: unknown default(s) {', '.join(sorted(unknown))}")
    for k, v in defaults.items():   # a bad default is an error even where no experiment uses it
        for x in as_list(v):
            if k in spec.numeric:
                _number(spec, k, x, f"{where}: defaults")
            elif k == "mode":
                _choice("mode", x, tuple(spec.modes), f"{where}: defaults")
            elif k == "cc":
                _choice("cc", x, CCS, f"{where}: defaults")
            else:
                _scheduler(x, f"{where}: defaults")


def expand(spec: FamilySpec, exp: dict, defaults: dict, reps: int, where: str) -> list[DualpathRun]:
    name, e_reps = experiment_header(exp, tuple(spec.experiments), _allowed_keys(spec), reps, where)
    merged = {**defaults, **{k: v for k, v in exp.items() if k not in ("experiment", "reps")}}
    flood_given = [k for k in FLOOD_KEYS if k in exp]
    if name in spec.flood_experiments:
        missing = [k for k in FLOOD_KEYS if k not in merged]
        if missing:
            raise UserError(f"{where}: {name} needs {', '.join(missing)}")
    elif flood_given or any(k in merged for k in FLOOD_KEYS):
        where_ok = ", ".join(spec.flood_experiments) or "no experiment of this family"
        raise UserError(f"{where}: udp_flood_* belongs only to {where_ok}")
    if "mode" not in merged:
        raise UserError(f"{where}: missing mode (one of {', '.join(spec.modes)})")
    factors: dict = {}
    for k in ("mode", "cc", "mptcp_scheduler"):
        vals = as_list(merged.get(k, spec.defaults.get(k)))
        if not vals:
            raise UserError(f"{where}: {k} is an empty list")
        if k == "mode":
            factors[k] = [_choice("mode", v, tuple(spec.modes), where) for v in vals]
        elif k == "cc":
            factors[k] = [_choice("cc", v, CCS, where) for v in vals]
        else:
            factors[k] = [_scheduler(v, where) for v in vals]
    for k in spec.numeric:
        if k in merged:
            vals = as_list(merged[k])
            if not vals:
                raise UserError(f"{where}: {k} is an empty list")
            factors[k] = [_number(spec, k, v, where) for v in vals]
    keys = list(factors)
    runs, seen = [], set()
    for combo in itertools.product(*factors.values()):
        vals = dict(zip(keys, combo))
        transport = spec.modes[vals["mode"]][0]
        if transport != "mptcp":
            vals["mptcp_scheduler"] = None   # the scheduler belongs to MPTCP runs only
        if name in spec.flood_experiments:
            s, e = vals["udp_flood_start_s"], vals["udp_flood_end_s"]
            if not s < e <= vals["duration_s"]:
                raise UserError(f"{where}: the flood needs udp_flood_start_s < udp_flood_end_s <= duration_s, got "
                                f"{num(s)}, {num(e)}, {num(vals['duration_s'])}")
        for rep in range(1, e_reps + 1):
            run = DualpathRun(spec=spec, experiment=name, mode=vals["mode"], cc=vals["cc"],
                              mptcp_scheduler=vals["mptcp_scheduler"], buffer=vals[spec.buffer_key],
                              path1_rate_mbit=vals["path1_rate_mbit"], path1_delay_ms=vals["path1_delay_ms"],
                              path2_rate_mbit=vals["path2_rate_mbit"], path2_delay_ms=vals["path2_delay_ms"],
                              duration_s=vals["duration_s"], ping_interval_s=vals["ping_interval_s"], rep=rep,
                              udp_flood_mbps=vals.get("udp_flood_mbps"),
                              udp_flood_start_s=vals.get("udp_flood_start_s"),
                              udp_flood_end_s=vals.get("udp_flood_end_s"))
            if run.run_id not in seen:   # TCP modes x several schedulers collapse to one run
                seen.add(run.run_id)
                runs.append(run)
    return runs


def capture_tool(backend: str) -> Path:
    """capture_tools/run_dualpath.sh (netns only; MPCC_RUN_DUALPATH overrides, e.g. with a stand-in in tests)."""
    if backend not in BACKENDS:
        raise UserError(f"the dual-path families run on the netns backend only, not {backend}")
    return Path(os.environ.get("MPCC_RUN_DUALPATH", REPO / "capture_tools" / "run_dualpath.sh"))
