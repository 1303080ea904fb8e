"""Study 000 (Sutawijaya et al. 2020): Reno, BIC, CUBIC, BBR over two equal-cost paths with per-packet round-robin.

The experiments of its campaign files, their factors and validation, and the run parameters handed to
``capture_tools/run_experiment.sh`` (netns) or ``testbed/vagrant/run_experiment.sh`` (VMs).
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from mpcc.errors import UserError
from mpcc.families.common import REPO, as_list as _as_list, check_number, experiment_header, num as _num

FAMILY = "000"
TITLE = "TCP congestion control over per-packet round-robin multi-path routing (study 000)"
BACKENDS = ("netns", "vagrant")
EXPERIMENTS = ("single_vs_multi", "link_delay", "loss_rate", "tcp_fairness", "udp_fairness")
KNOWN_CCS = ("reno", "bic", "bic415", "cubic", "bbr", "westwood", "westwood_e", "pcc_vivace", "pcc_vivace_usp", "htcp", "vegas",
             "illinois", "highspeed", "scalable")
PATH_MODES = ("single", "multipath")
# how each switch chains its delay and its 100-packet buffer (testbed/nodes/switch.sh --queue-model,
# docs/netem-semantics.md); not given: the backend's own (fifo-after-delay with the delay shim, tbf-netem with netem)
QUEUE_MODELS = ("fifo-after-delay", "tbf-netem", "netem-tbf", "netem-tbf-k6")
# UDP payload per datagram of udp_fairness's CBR flow (iperf3 -l), bytes; not given: iperf3's own default (the control
# connection's MSS since 3.1.5; 8192 up to 3.1.4, the paper's era: docs/netem-semantics.md section 5)
UDP_LEN_BYTES = (16, 65507)
# the senders' net.ipv4.tcp_recovery bitmap (1 RACK, +2 static reordering window, +4 no DUPACK heuristic; without 1
# the RFC 6675 DUPACK threshold, on kernels before 6.17 only: the capture tools skip it on later ones); not given: the
# kernel's default (1 on every kernel since 4.4)
TCP_RECOVERY = range(0, 8)
TWO_FLOW = ("tcp_fairness", "udp_fairness")  # experiments with a second flow (starting at flow2_offset_s)

# name: (type, minimum, maximum)
NUMERIC = {
    "duration_s": (float, 1, 3600),
    "link_delay_ms": (float, 0, 1000),
    "loss_pct": (float, 0, 50),
    "cbr_mbps": (float, 0.1, 1000),
    "flow2_offset_s": (float, 0, 3600),
    "path_skew_ms": (float, 0, 1000),
}
RUN_KEYS = ("experiment", "cc", "cc2", "path_mode", "link_delay_ms", "loss_pct", "cbr_mbps", "duration_s",
            "flow2_offset_s", "path_skew_ms")
DEFAULTS = {"duration_s": 100, "link_delay_ms": 10, "loss_pct": 0, "path_mode": "multipath", "flow2_offset_s": 5,
            "path_skew_ms": 0}


@dataclass(frozen=True)
class Run:
    """One experiment run: the parameters handed to capture_tools/run_experiment.sh."""
    experiment: str
    cc: str
    path_mode: str
    link_delay_ms: float
    loss_pct: float
    duration_s: float
    flow2_offset_s: float
    path_skew_ms: float
    rep: int
    cc2: str | None = None
    cbr_mbps: float | None = None
    queue_model: str | None = None
    udp_len_bytes: int | None = None
    tcp_recovery: int | None = None
    family = FAMILY

    @property
    def run_id(self) -> str:
        ccs = self.cc if self.cc2 is None else f"{self.cc}+{self.cc2}"
        parts = [self.experiment, ccs, self.path_mode, f"d{_num(self.link_delay_ms)}ms", f"l{_num(self.loss_pct)}pct"]
        if self.cbr_mbps is not None:
            parts.append(f"cbr{_num(self.cbr_mbps)}mbps")
        if self.udp_len_bytes is not None:
            parts.append(f"len{self.udp_len_bytes}B")
        if self.path_skew_ms:
            parts.append(f"skew{_num(self.path_skew_ms)}ms")
        if self.tcp_recovery is not None:
            parts.append(f"rec{self.tcp_recovery}")
        if self.queue_model is not None:
            parts.append(f"q-{self.queue_model}")
        parts.append(f"rep{self.rep:02d}")
        return "__".join(parts)

    def params(self) -> dict:
        d = {k: getattr(self, k) for k in RUN_KEYS}
        if self.queue_model is not None:
            d["queue_model"] = self.queue_model
        if self.udp_len_bytes is not None:
            d["udp_len_bytes"] = self.udp_len_bytes
        if self.tcp_recovery is not None:
            d["tcp_recovery"] = self.tcp_recovery
        d["rep"] = self.rep
        d["run_id"] = self.run_id
        return d

    def args(self) -> list[str]:
        """Command-line flags for capture_tools/run_experiment.sh."""
        out = ["--experiment", self.experiment, "--cc", self.cc, "--path-mode", self.path_mode,
               "--link-delay-ms", _num(self.link_delay_ms), "--loss-pct", _num(self.loss_pct),
               "--duration-s", _num(self.duration_s), "--path-skew-ms", _num(self.path_skew_ms),
               "--rep", str(self.rep)]
        if self.experiment in TWO_FLOW:
            out += ["--flow2-offset-s", _num(self.flow2_offset_s)]
        if self.cc2 is not None:
            out += ["--cc2", self.cc2]
        if self.cbr_mbps is not None:
            out += ["--cbr-mbps", _num(self.cbr_mbps)]
        if self.queue_model is not None:
            out += ["--queue-model", self.queue_model]
        if self.udp_len_bytes is not None:
            out += ["--udp-len-bytes", str(self.udp_len_bytes)]
        if self.tcp_recovery is not None:
            out += ["--tcp-recovery", str(self.tcp_recovery)]
        return out


def _check_number(key: str, value, where: str) -> float:
    return check_number(key, value, NUMERIC[key][1:], where)


def _check_cc(value, where: str, key: str = "cc") -> str:
    if not isinstance(value, str) or value not in KNOWN_CCS:
        raise UserError(f"{where}: unknown {key} {value!r} (known: {', '.join(KNOWN_CCS)})")
    return value


def expand(exp: dict, defaults: dict, reps: int, where: str) -> list[Run]:
    name, e_reps = experiment_header(exp, tuple(EXPERIMENTS), set(NUMERIC) | {"cc", "cc_pair", "path_mode", "queue_model",
                                                                            "udp_len_bytes", "tcp_recovery"},
                                     reps, where)
    merged = {**defaults, **{k: v for k, v in exp.items() if k not in ("experiment", "reps")}}

    if name == "tcp_fairness":
        pairs = merged.pop("cc_pair", None)
        merged.pop("cc", None)
        if not pairs:
            raise UserError(f"{where}: tcp_fairness needs cc_pair: [[cc, cc2], ...]")
        cc_opts = []
        for p in _as_list(pairs):
            if not (isinstance(p, list) and len(p) == 2):
                raise UserError(f"{where}: each cc_pair must be a list of two cc names, got {p!r}")
            cc_opts.append((_check_cc(p[0], where), _check_cc(p[1], where, "cc2")))
    else:
        if "cc_pair" in merged:
            raise UserError(f"{where}: cc_pair belongs only to tcp_fairness")
        if "cc" not in merged:
            raise UserError(f"{where}: missing cc")
        cc_opts = [(_check_cc(c, where), None) for c in _as_list(merged.pop("cc"))]
    if name == "udp_fairness" and "cbr_mbps" not in merged:
        raise UserError(f"{where}: udp_fairness needs cbr_mbps")
    if name != "udp_fairness" and "cbr_mbps" in merged:
        raise UserError(f"{where}: cbr_mbps belongs only to udp_fairness")

    modes = _as_list(merged.pop("path_mode", "multipath"))
    for m in modes:
        if m not in PATH_MODES:
            raise UserError(f"{where}: path_mode must be single or multipath, got {m!r}")
    qmodels = _as_list(merged.pop("queue_model", None))
    for q in qmodels:
        if q is not None and q not in QUEUE_MODELS:
            raise UserError(f"{where}: queue_model must be one of {', '.join(QUEUE_MODELS)}, got {q!r}")
    ulens = _as_list(merged.pop("udp_len_bytes", None))
    if name != "udp_fairness" and "udp_len_bytes" not in exp:
        ulens = [None]   # a campaign-wide default applies to the UDP experiment only
    for u in ulens:
        if u is None:
            continue
        if isinstance(u, bool) or not isinstance(u, int) or not UDP_LEN_BYTES[0] <= u <= UDP_LEN_BYTES[1]:
            raise UserError(f"{where}: udp_len_bytes must be an integer {UDP_LEN_BYTES[0]}..{UDP_LEN_BYTES[1]}, "
                            f"got {u!r}")
        if name != "udp_fairness":
            raise UserError(f"{where}: udp_len_bytes belongs only to udp_fairness")
    recs = _as_list(merged.pop("tcp_recovery", None))
    for r in recs:
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r not in TCP_RECOVERY):
            raise UserError(f"{where}: tcp_recovery must be an integer 0..7 (net.ipv4.tcp_recovery), got {r!r}")
    factors = {k: [_check_number(k, v, where) for v in _as_list(merged[k])] for k in NUMERIC if k in merged}
    for k, vals in factors.items():
        if not vals:
            raise UserError(f"{where}: {k} is an empty list")
    keys = list(factors)
    runs = []
    for (cc, cc2), mode, qm, ulen, rec, combo in itertools.product(cc_opts, modes, qmodels, ulens, recs,
                                                                   itertools.product(*factors.values())):
        vals = dict(zip(keys, combo))
        if vals["flow2_offset_s"] >= vals["duration_s"] and name in TWO_FLOW:
            raise UserError(f"{where}: flow2_offset_s must be shorter than duration_s")
        for rep in range(1, e_reps + 1):
            runs.append(Run(experiment=name, cc=cc, cc2=cc2, path_mode=mode, rep=rep, queue_model=qm, udp_len_bytes=ulen,
                            tcp_recovery=rec, cbr_mbps=vals.get("cbr_mbps"), **{k: vals[k] for k in keys if k != "cbr_mbps"}))
    return runs




def check_defaults(defaults: dict, where: str) -> None:
    unknown = set(defaults) - set(NUMERIC) - {"path_mode", "queue_model", "udp_len_bytes", "tcp_recovery"}
    if unknown:
        raise UserError(f"{where}: unknown default(s) {', '.join(sorted(unknown))}")


def capture_tool(backend: str) -> Path:
    """The capture tool that produces one run directory of this family on ``backend``."""
    if backend == "vagrant":
        return Path(os.environ.get("MPCC_RUN_EXPERIMENT_VAGRANT", REPO / "testbed" / "vagrant" / "run_experiment.sh"))
    return Path(os.environ.get("MPCC_RUN_EXPERIMENT", REPO / "capture_tools" / "run_experiment.sh"))
