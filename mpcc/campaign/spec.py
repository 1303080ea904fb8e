"""Campaign files (``campaigns/*.yaml``): parse, validate and expand into runs.

A campaign names its study ``family`` (default ``"000"``; ``mpcc.families``) and declares experiments; every
list-valued key of an experiment is a factor, and the runs are the cartesian product of the factors times ``reps``
repetitions. The family's module validates every value, before any root command runs.

``reuse_runs_from: data/NAME`` (top level or in a profile): a committed bundle of another campaign, e.g. the paper
protocol that a profile with more repetitions extends. Its finished runs that this campaign repeats exactly (same run
id and parameters, ``mpcc.campaign.runner.restore_from_bundle``) are copied in and not recorded again.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mpcc.errors import UserError
from mpcc.families import get_family
from mpcc.families.f000 import Run  # noqa: F401  (study 000's run: the type most callers mean)

_SAFE = re.compile(r"^[a-z0-9][a-z0-9_.+-]*$")
_BUNDLE = re.compile(r"^data/[A-Za-z0-9][A-Za-z0-9._-]*$")
PROFILE_KEYS = ("reps", "seed", "description", "defaults", "experiments", "reuse_runs_from")


@dataclass
class Campaign:
    name: str
    reps: int
    seed: int
    runs: list = field(default_factory=list)
    description: str = ""
    family: str = "000"
    reuse_from: str | None = None   # reuse_runs_from: a bundle (data/NAME) whose identical runs are copied, not rerun


def load_campaign(path: str | Path, profile: str | None = None) -> Campaign:
    """Read and validate a campaign file; returns all its runs in declaration order.

    ``profile``: one of the file's ``profiles`` (e.g. ``smoke``), a mapping whose ``reps``, ``seed``, ``description``,
    ``defaults`` (merged over the file's) and ``experiments`` (replacing the file's) make a smaller campaign named
    ``<name>-<profile>`` from the same file."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError(f"campaign file not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    return campaign_from_text(text, path, profile)


def campaign_from_text(text: str, path: str | Path, profile: str | None = None) -> Campaign:
    """:func:`load_campaign` of a campaign file's ``text`` (``path``: its name, for messages and the default campaign
    name). A worker of a campaign spread over hosts (``mpcc.campaign.distributed``) validates the campaign file it is
    sent this way, with its own code, before any root command."""
    path = Path(path)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise UserError(f"{path}: a campaign file is a mapping with name, reps, experiments")
    profiles = doc.pop("profiles", None) or {}
    if not isinstance(profiles, dict):
        raise UserError(f"{path}: profiles must be a mapping of profile name -> settings")
    name = doc.get("name", path.stem)
    if not isinstance(name, str) or not _SAFE.match(name):
        raise UserError(f"{path}: name must match [a-z0-9][a-z0-9_.+-]*")
    if profile is not None:
        if profile not in profiles:
            raise UserError(f"{path}: no profile {profile!r} (has: {', '.join(sorted(profiles)) or 'none'})")
        over = profiles[profile]
        if not isinstance(over, dict) or set(over) - set(PROFILE_KEYS):
            raise UserError(f"{path}: profile {profile!r} may set {', '.join(PROFILE_KEYS)}")
        doc = {**doc, **{k: v for k, v in over.items() if k != "defaults"},
               "defaults": {**(doc.get("defaults") or {}), **(over.get("defaults") or {})}}
        name = f"{name}-{profile}"
        if not _SAFE.match(name):
            raise UserError(f"{path}: profile name {profile!r} must match [a-z0-9][a-z0-9_.+-]*")
    reps = doc.get("reps", 1)
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 1000:
        raise UserError(f"{path}: reps must be an integer 1..1000")
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UserError(f"{path}: seed must be an integer")
    reuse = doc.get("reuse_runs_from")
    if reuse is not None and not (isinstance(reuse, str) and _BUNDLE.match(reuse) and ".." not in reuse):
        raise UserError(f"{path}: reuse_runs_from must name a bundle as data/NAME, got {reuse!r}")
    fam = get_family(doc.get("family", "000"))
    given = doc.get("defaults") or {}
    if not isinstance(given, dict):
        raise UserError(f"{path}: defaults must be a mapping")
    defaults = {**fam.DEFAULTS, **given}
    fam.check_defaults(defaults, str(path))
    exps = doc.get("experiments")
    if not isinstance(exps, list) or not exps:
        raise UserError(f"{path}: experiments must be a non-empty list")
    runs: list = []
    for i, exp in enumerate(exps, 1):
        runs += fam.expand(exp, defaults, reps, f"{path.name}: experiment {i}")
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise UserError(f"{path}: two experiments declare the same run")
    return Campaign(name=name, reps=reps, seed=seed, runs=runs, description=str(doc.get("description", "")),
                    family=fam.FAMILY, reuse_from=reuse)
