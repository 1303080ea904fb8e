"""Study 002: PCC Vivace (``pcc_vivace``, a BPF port of PCC-Kernel's vivace module: testbed/cc/pcc_vivace.bpf.c) vs
TCP CUBIC for video streaming from one server to three clients through a shared link, with and without UDP background
traffic. Runs recorded before issue 30 ran the Vivace paper / PCC-Uspace controller under the name ``pcc_vivace`` (now
``pcc_vivace_usp``); their meta.json ``cc_impl`` names the object (docs/pcc-vivace.md).

Experiments = the paper's tests (its Table 2): ``test1`` (no background), ``test2``-``test4`` (10/20/30 MB/s on the
paper's 1 Gbit/s link = 0.08/0.16/0.24 of capacity -> 8/16/24 Mbit/s on our 100 Mbit/s shared link) and ``test5``
(90 % of capacity -> 90 Mbit/s, 10-s runs). Topology ``testbed/families/002/topology.json``; capture tool
``capture_tools/run_streaming.sh`` (netns); docs/families.md "Study 002".

Campaign keys: ``experiment``, ``reps``, ``cc`` (cubic, pcc_vivace, or any cc the capture tool accepts; two joined
by ``+``, e.g. ``cubic+pcc_vivace``: both at once in one run, stream 1 with the first and stream 2 with the second,
client 3 idle: the paper's test 5, "secara bersamaan"),
``background_mbps`` (UDP background, Mbit/s; default: the test's own), ``video_kbps`` (the video's CBR bitrate,
kbit/s), ``duration_s`` (whole seconds). Every list-valued key is a factor.
Run ids: ``<experiment>__<cc>[__bg<mbps>mbps][__v<kbps>kbps][__t<duration>s]__repNN``, e.g. ``test2__pcc_vivace__rep01``,
``test1__cubic__t8s__rep01``, ``test5__cubic+pcc_vivace__rep01`` (tags only for values that differ from the test's
defaults).
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from mpcc.errors import UserError
from mpcc.families.common import REPO, as_list, experiment_header, factor_values, num

FAMILY = "002"
TITLE = "PCC Vivace vs CUBIC video streaming under UDP background traffic (study 002)"
BACKENDS = ("netns",)
SHARED_LINK_MBIT = 100
# test -> (background Mbit/s on our 100 Mbit/s link: the paper's fraction of its 1 Gbit/s, duration s)
TESTS = {"test1": (0, 220), "test2": (8, 220), "test3": (16, 220), "test4": (24, 220), "test5": (90, 10)}
EXPERIMENTS = tuple(TESTS)
# capture_tools/run_streaming.sh's list; pcc_vivace is the port of PCC-Kernel's vivace module, pcc_vivace_usp the Vivace
# paper / PCC-Uspace controller that was pcc_vivace before issue 30 (docs/pcc-vivace.md)
CCS = ("cubic", "pcc_vivace", "reno", "bbr", "bic", "westwood", "westwood_e", "pcc_vivace_usp")
NUMERIC = {"background_mbps": (0, 1000, False), "video_kbps": (100, 50000, False), "duration_s": (1, 86400, True)}
# the paper prints no durations for tests 1-4: its video lasts 3:40 (220 s), streamed whole; test 5 ran 10 s
DEFAULTS = {"cc": ["cubic", "pcc_vivace"], "video_kbps": 3600}


@dataclass(frozen=True)
class Run:
    """One run of study 002: the parameters handed to capture_tools/run_streaming.sh."""
    experiment: str
    cc: str
    background_mbps: float
    video_kbps: float
    duration_s: int
    rep: int

    family = FAMILY

    @property
    def run_id(self) -> str:
        bg, dur = TESTS[self.experiment]
        parts = [self.experiment, self.cc]
        if self.background_mbps != bg:
            parts.append(f"bg{num(self.background_mbps)}mbps")
        if self.video_kbps != DEFAULTS["video_kbps"]:
            parts.append(f"v{num(self.video_kbps)}kbps")
        if self.duration_s != dur:
            parts.append(f"t{self.duration_s}s")
        parts.append(f"rep{self.rep:02d}")
        return "__".join(parts)

    def params(self) -> dict:
        return {"run_id": self.run_id, "family": FAMILY, "experiment": self.experiment, "cc": self.cc,
                "background_mbps": self.background_mbps, "video_kbps": self.video_kbps,
                "shared_link_mbit": SHARED_LINK_MBIT, "duration_s": self.duration_s, "rep": self.rep}

    def args(self) -> list[str]:
        """Command-line flags for capture_tools/run_streaming.sh (the runner adds --backend and --out)."""
        return ["--family", FAMILY, "--experiment", self.experiment, "--cc", self.cc,
                "--duration-s", str(self.duration_s), "--background-mbps", num(self.background_mbps),
                "--video-kbps", num(self.video_kbps), "--rep", str(self.rep)]


def cc_values(value, where: str) -> list:
    """The values of the ``cc`` factor: each a cc of :data:`CCS`, or two different ones joined by ``+`` (both at
    once in one run); one-line UserErrors."""
    vals = as_list(value)
    if not vals:
        raise UserError(f"{where}: cc is an empty list")
    for v in vals:
        parts = v.split("+") if isinstance(v, str) else [v]
        factor_values("cc", parts, NUMERIC, CCS, where)
        if len(parts) > 2 or (len(parts) == 2 and parts[0] == parts[1]):
            raise UserError(f"{where}: cc {v!r}: at most two different congestion controls joined by +")
    return vals


def _factor(key: str, value, where: str) -> list:
    """The values of one campaign factor: ``cc`` by :func:`cc_values`, numbers per :data:`NUMERIC`."""
    return cc_values(value, where) if key == "cc" else factor_values(key, value, NUMERIC, CCS, where)


def check_defaults(defaults: dict, where: str) -> None:
    unknown = set(defaults) - set(NUMERIC) - {"cc"}
    if unknown:
        raise UserError(f"{where}: unknown default(s) {', '.join(sorted(unknown))}")
    for k, v in defaults.items():
        _factor(k, v, f"{where}: defaults")


def expand(exp: dict, defaults: dict, reps: int, where: str) -> list[Run]:
    name, e_reps = experiment_header(exp, EXPERIMENTS, set(NUMERIC) | {"cc"}, reps, where)
    bg, dur = TESTS[name]
    merged = {"background_mbps": bg, "duration_s": dur, **defaults,
              **{k: v for k, v in exp.items() if k not in ("experiment", "reps")}}
    if "background_mbps" not in exp:
        merged["background_mbps"] = bg   # each test has its own background level, whatever the defaults say
    if "duration_s" not in exp and "duration_s" not in defaults:
        merged["duration_s"] = dur
    keys = ["cc", "background_mbps", "video_kbps", "duration_s"]
    factors = [_factor(k, merged[k], where) for k in keys]
    runs = []
    for combo in itertools.product(*factors):
        v = dict(zip(keys, combo))
        for rep in range(1, e_reps + 1):
            runs.append(Run(experiment=name, cc=v["cc"], background_mbps=v["background_mbps"],
                            video_kbps=v["video_kbps"], duration_s=v["duration_s"], rep=rep))
    return runs


def capture_tool(backend: str) -> Path:
    """capture_tools/run_streaming.sh (netns only; MPCC_RUN_STREAMING overrides, e.g. with a stand-in in tests)."""
    if backend not in BACKENDS:
        raise UserError(f"study 002 runs on the netns backend only, not {backend}")
    return Path(os.environ.get("MPCC_RUN_STREAMING", REPO / "capture_tools" / "run_streaming.sh"))
