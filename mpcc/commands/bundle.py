"""``mpcc bundle CAMPAIGN_DIR [--out data/sample] [--max-mb 60] [--format dirs|columnar]``: package a recorded campaign
as a small dataset; ``mpcc bundle --convert OLD_BUNDLE --out NEW_DIR``: a run-directory bundle as a columnar one.

What goes into ``OUT/runs/<run_id>/`` (layout: docs/architecture.md):
* every complete run: params.json, meta.json, COMPLETE, capture.log, the derived table written by
  :func:`analysis.dataset.load_campaign` (``derived/flows.parquet`` + ``derived/fingerprint.json``, which keeps the
  sha256 of the original captures; rewritten without pandas/Arrow schema metadata, column statistics and
  dictionary pages, 5x smaller, same rows), the ``ss`` samples xz'd (``ss/flowN.txt.xz``) and the iperf3 JSON xz'd (``iperf3/*.json.xz``);
* for one repetition of as many configurations as fit in the size budget (rep 1, or the lowest complete rep whose
  raw captures are in the campaign directory: a run restored from a bundle may have none), the raw captures xz'd (``*.pcap.xz``: iperf3 re-sends one 128 KB buffer, which xz's dictionary sees and gzip's 32 KB
  window does not — 3.6x smaller) with the iperf3 JSON kept plain, and ``derived/fingerprint.json`` recomputed
  over the bundled files, so the run can be re-analysed from its captures and the cache stays valid;
* every skipped run: params.json, meta.json (if any), SKIPPED (its reason);
* incomplete runs are left out and listed in the README.
Plus the campaign file, ``bundle.json`` (machine-readable manifest) and ``README.md`` (provenance: commit, kernel,
mechanisms, dates, unavailable CCs and why, how to regenerate). The bundle is built in a temporary directory next to
``OUT`` and moved into place at the end; an existing non-empty ``OUT`` is only replaced with ``--force`` and only if it
is itself a bundle (has bundle.json).

``--raw-archive FILE`` also writes every complete run's raw captures into FILE (``analysis.raw_archive``: a tar of
per-capture xz members), listed in bundle.json with each capture's sha256; ``mpcc verify-raw FILE OUT`` checks it.

``--format columnar`` stores the same content in a handful of Parquet files per recording session instead of one
directory per run (``analysis.bundle_store``: layout, partitions; ``load_campaign`` reads either): the run-directory
bundle above is built first, then written columnar (:func:`analysis.bundle_store.write_columnar`, which ``--convert``
applies to an existing bundle).
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from mpcc.errors import UserError

NAME = "bundle"
HELP = "package a campaign directory into a small dataset (derived tables, ss, meta, xz'd raw captures)"
REPO = Path(__file__).resolve().parents[2]
CAPTURES = ("router1.pcap", "receiver.pcap", "router1-flow2.pcap", "receiver-flow2.pcap")   # study 000


def _captures(run_dir: Path) -> tuple:
    """Capture file names of the run's study family (``analysis.families``: e.g. client-path1.pcap for 001/003)."""
    from analysis.families import family_of_run, get
    return tuple(get(family_of_run(run_dir)).CAPTURES)
SWEEP = {"single_vs_multi": "path_mode", "link_delay": "link_delay_ms", "loss_rate": "loss_pct",
         "tcp_fairness": "cc2", "udp_fairness": "cbr_mbps",
         "buffer_sweep": "buffer_bytes", "scenario": "queue_pkts", "resilience": "queue_pkts",   # studies 001, 003
         "client_server": "error_rate", "multihop_varied": "error_rate", "multihop_uniform": "bandwidth_mbit",
         "bottleneck": "error_rate",   # study 004
         "test1": "cc", "test2": "cc", "test3": "cc", "test4": "cc", "test5": "cc"}   # study 002
EXPERIMENT_ORDER = ["single_vs_multi", "tcp_fairness", "udp_fairness", "link_delay", "loss_rate"]
CC_ORDER = ["reno", "bic", "cubic", "bbr"]
METADATA_MARGIN = 4096   # bytes kept free for what bundle.json and README.md gain once the captures are chosen
# bytes a captured run takes beyond what it adds to its run directory: its README line (run ids are < 100 characters);
# in a columnar bundle also its captures/RUN_ID/ directory and the index entries of its files in bundle.json
CAPTURED_RUN_BYTES = {"dirs": 128, "columnar": 128 + 4096 + 1024}


def add_arguments(p):
    p.add_argument("campaign", nargs="?", help="campaign directory (runs/<run_id>/...), e.g. data/raw/quick")
    p.add_argument("--out", default=None, help="bundle directory (default data/sample; required with --convert)")
    p.add_argument("--format", choices=("dirs", "columnar"), default="dirs",
                   help="dirs: one directory per run (default); columnar: Parquet tables per recording session "
                        "(analysis.bundle_store)")
    p.add_argument("--convert", metavar="OLD_BUNDLE", default=None,
                   help="instead of bundling a campaign, write the run-directory bundle OLD_BUNDLE as a columnar "
                        "bundle at --out (--out OLD_BUNDLE --force converts it in place)")
    p.add_argument("--max-mb", type=float, default=60.0,
                   help="size budget of the whole bundle in MB as written (du -sb: its bundle.json and README.md "
                   "included; with --format columnar its tables and captures); default 60: data/sample and data/paper "
                   "together stay within the repository's 300 MB on disk, tests/test_data_budget.py")
    p.add_argument("--derived-dir", default=None,
                   help="where load_campaign keeps/finds the per-run tables when the campaign is read-only")
    p.add_argument("--jobs", type=int, default=None, help="processes for analysing runs without a derived table")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at --out")
    p.add_argument("--raw-archive", metavar="FILE", default=None,
                   help="also write every complete run's raw captures into FILE (a tar of per-file xz members, "
                        "analysis.raw_archive), for a data repository next to the bundle; bundle.json lists it with "
                        "each member's sha256 (check it with `mpcc verify-raw FILE OUT`); FILE must not exist")
    p.add_argument("--ss-reps", type=int, default=None, metavar="N",
                   help="keep the ss samples of the N lowest complete repetitions of each configuration only "
                        "(default: of every run); the other runs keep their derived tables, meta.json and iperf3 JSON")


# ----------------------------------------------------------------------------------------------- helpers

def _xz_to(src: Path, dst: Path) -> int:
    """xz ``src`` to ``dst`` (preset 9: a 64 MB dictionary spans iperf3's repeated send buffer); returns the size.
    A compressed ``src`` (.xz or .gz, e.g. the recording queue's quick xz -1 of a finished run's captures) is
    decompressed first, so the bundle always ships preset 9."""
    import lzma

    from analysis.ingest.compressed import open_decompressed
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open_decompressed(src) as fin, lzma.open(dst, "wb", format=lzma.FORMAT_XZ, preset=9) as xz:
        shutil.copyfileobj(fin, xz, 1 << 20)
    return dst.stat().st_size


def _xz_text_to(src: Path, dst: Path) -> int:
    """xz a small text file (ss samples, iperf3 JSON): preset 9e; returns the compressed size."""
    import lzma
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(lzma.compress(src.read_bytes(), format=lzma.FORMAT_XZ, preset=9 | lzma.PRESET_EXTREME))
    return dst.stat().st_size


def _slim_parquet(src: Path, dst: Path) -> int:
    """Copy a derived table without the pandas schema metadata and per-column statistics (a 1-2 row table is
    mostly metadata); ``analysis.dataset`` re-types every column on reading, so the loaded rows are the same."""
    import pyarrow.parquet as pq
    dst.parent.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(src).replace_schema_metadata(None)
    # no statistics, no dictionary pages, no embedded Arrow schema: 9.5 KB -> 5 KB for one or two rows
    pq.write_table(table, dst, write_statistics=False, use_dictionary=False, store_schema=False)
    return dst.stat().st_size


def _gzip_to(src: Path, dst: Path) -> int:
    """gzip ``src`` to ``dst`` reproducibly (mtime 0 in the header, no file name); returns the compressed size."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            shutil.copyfileobj(fin, gz, 1 << 20)
    return dst.stat().st_size


def _copy(src: Path, dst: Path) -> int:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return dst.stat().st_size


def _json(path: Path) -> dict:
    try:
        v = json.loads(path.read_text())
        return v if isinstance(v, dict) else {}
    except (OSError, ValueError):
        return {}


def _dir_size(d: Path) -> int:
    """Bytes as ``du -sb`` counts them: file sizes plus 4096 per directory (conservative for the budget)."""
    return sum(p.stat().st_size if p.is_file() else 4096 for p in d.rglob("*"))


def _bisect_order(values) -> list:
    """Values in the order min, max, middle, then the middles of the halves... (spread coverage first)."""
    vals = sorted(values, key=lambda v: (v is None, v if not isinstance(v, str) else 0, str(v)))
    out, queue = [], [(0, len(vals) - 1)]
    if not vals:
        return out
    out.extend(dict.fromkeys([vals[0], vals[-1]]))
    while queue:
        lo, hi = queue.pop(0)
        if hi - lo < 2:
            continue
        mid = (lo + hi) // 2
        if vals[mid] not in out:
            out.append(vals[mid])
        queue += [(lo, mid), (mid, hi)]
    out += [v for v in vals if v not in out]
    return out


def lowest_reps(runs, n: int):
    """Rows of ``runs`` (the runs table of :func:`analysis.dataset.run_status`) for the ``n`` lowest complete
    repetitions of each configuration (every column but run_id, status, reason and rep)."""
    comp = runs[runs["status"] == "complete"].copy()
    if comp.empty:
        return comp
    comp["rep"] = comp["rep"].fillna(0).astype(int)
    keycols = [c for c in comp.columns if c not in ("run_id", "status", "reason", "rep")]   # the configuration
    comp = comp.sort_values("rep", kind="stable")
    return comp.groupby(keycols, dropna=False, sort=False).head(n)


def capture_priority(runs) -> list[str]:
    """Run ids of one repetition per configuration (the lowest complete rep), in the order captures are added:
    experiments interleaved (Table 3 first), within an experiment the swept values spread out (extremes first) and
    the CCs in the paper's order. ``runs``: the runs table of :func:`analysis.dataset.run_status`."""
    first = lowest_reps(runs, 1)
    if first.empty:
        return []
    per_exp = {}
    for exp, g in first.groupby("experiment", sort=False):
        col = SWEEP.get(exp)
        order = _bisect_order(list(dict.fromkeys(g[col]))) if col in g else []
        rank = {v: i for i, v in enumerate(order)}
        g = g.assign(_r=g[col].map(lambda v: rank.get(v, len(rank))) if col in g else 0,
                     _c=g["cc"].map(lambda c: CC_ORDER.index(c) if c in CC_ORDER else len(CC_ORDER)))
        per_exp[exp] = list(g.sort_values(["_r", "_c", "run_id"])["run_id"])
    exps = [e for e in EXPERIMENT_ORDER if e in per_exp] + sorted(e for e in per_exp if e not in EXPERIMENT_ORDER)
    out, i = [], 0
    while any(i < len(per_exp[e]) for e in exps):
        out += [per_exp[e][i] for e in exps if i < len(per_exp[e])]
        i += 1
    return out


def _portable(path: Path) -> str:
    """``path`` relative to the repository when inside it (e.g. data/raw/quick), else its name: no machine paths."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return path.resolve().name


def _campaign_json(camp: Path) -> dict:
    """The campaign directory's ``campaign.json`` (the runner's record: sessions, order, runs restored from a
    bundle), {} when absent or unreadable."""
    try:
        meta = json.loads((camp / "campaign.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _recording_commits(sessions: list[dict]) -> list[str]:
    """Distinct git commits of the code that recorded the campaign (:func:`_sessions`, runner >= 0.1)."""
    out = []
    for x in sessions:
        c = x["git_commit"] and x["git_commit"] + (" (dirty)" if x["git_dirty"] else "")
        if c and c not in out:
            out.append(c)
    return out


def _sessions(cmeta: dict) -> list[dict]:
    """Recording sessions from ``campaign.json`` (:func:`_campaign_json`): start time, commit (and whether the tree
    was dirty), and how many runs ran at once (``jobs``); a session across hosts (``mpcc campaign run --scheduler``,
    docs/multi-host.md) also its ``hosts`` (host -> slots); one of another campaign whose runs were reused
    (``reuse_runs_from``) its ``campaign``."""
    out = []
    for x in cmeta.get("sessions", []):
        if not isinstance(x, dict):
            continue
        s = {"started_utc": x.get("started_utc"), "git_commit": x.get("git_commit"), "git_dirty": x.get("git_dirty"),
             "jobs": x.get("jobs", 1)}
        if isinstance(x.get("workers"), list):
            hosts: dict = {}
            for w in x["workers"]:
                if isinstance(w, dict):
                    hosts[str(w.get("host"))] = hosts.get(str(w.get("host")), 0) + int(w.get("slots") or 0)
            s["hosts"] = dict(sorted(hosts.items()))
        if x.get("campaign"):   # a session of another campaign whose runs this one reused (reuse_runs_from)
            s["campaign"] = str(x["campaign"])
        out.append(s)
    return out


def _host_load_summary(metas: dict) -> dict:
    """Host CPU contention while the flows ran (meta.json ``host_load.cpu_pressure_some_pct``, %), over the runs
    that recorded it; ``missing`` counts complete runs recorded before it was measured."""
    vals, missing = [], 0
    for m in metas.values():
        if m.get("status") != "complete":
            continue
        v = (m.get("host_load") or {}).get("cpu_pressure_some_pct") if isinstance(m.get("host_load"), dict) else None
        if isinstance(v, (int, float)):
            vals.append(float(v))
        else:
            missing += 1
    if not vals:
        return {"n": 0, "missing": missing}
    q = sorted(vals)
    pick = lambda f: q[min(len(q) - 1, int(round(f * (len(q) - 1))))]  # noqa: E731 - nearest-rank quantile
    return {"n": len(q), "missing": missing, "median": pick(0.5), "p90": pick(0.9), "max": q[-1]}


def _git_commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        # the code's state: changes under data/ (e.g. the bundles being converted one after another) do not count
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)data"], capture_output=True, text=True, timeout=30).stdout.strip()
        return head + (" (work tree had uncommitted changes outside data/)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown (git not available)"


# ----------------------------------------------------------------------------------------------- bundling

def _bundle_run(src: Path, dst: Path, status: str, derived_src: Path | None, ss: bool = True) -> None:
    """One run into the bundle: markers, derived table and text files xz'd (the ss samples only if ``ss``)."""
    dst.mkdir(parents=True)
    for name in ("params.json", "meta.json", "capture.log"):
        if (src / name).is_file():
            _copy(src / name, dst / name)
    if status == "skipped":
        _copy(src / "SKIPPED", dst / "SKIPPED")
        return
    if derived_src is not None:
        if (derived_src / "flows.parquet").is_file():
            _slim_parquet(derived_src / "flows.parquet", dst / "derived" / "flows.parquet")
        if (derived_src / "fingerprint.json").is_file():
            _copy(derived_src / "fingerprint.json", dst / "derived" / "fingerprint.json")
    # ss samples, iperf3 JSON; dual-path runs (001/003) also ping, switch and nstat counters; chain runs (004) link
    # counters; streaming runs (002) the clients' progress and the background's logs
    for sub, pattern in (("ss", "*.txt"), ("iperf3", "*.json"), ("ping", "*.txt"), ("switches", "*.txt"),
                         ("nstat", "*.txt"), ("links", "*.txt"), ("video", "*.json"),
                         ("video", "*.progress"), ("background", "*.txt"), ("background", "*.json"),
                         ("background", "*.out")):   # not D-ITG's binary per-packet *.log (the captures hold them)
        if not (src / sub).is_dir() or (sub == "ss" and not ss):
            continue
        for f in sorted((src / sub).glob(pattern)):
            _xz_text_to(f, dst / sub / (f.name + ".xz"))
        # a run restored from an earlier bundle (mpcc campaign run --resume-from) has them xz'd already
        for f in sorted((src / sub).glob(pattern + ".xz")):
            if not (src / sub / f.name[:-3]).is_file():
                _copy(f, dst / sub / f.name)
    _copy(src / "COMPLETE", dst / "COMPLETE")  # last, as in a run directory


def _capture_sha256(fp_file: Path, name: str) -> str | None:
    try:
        return json.loads(fp_file.read_text())["files"][name]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _stage_captures(camp: Path, run_ids: list[str], stage: Path, jobs: int, derived_root: Path | None = None,
                    previous: Path | None = None) -> None:
    """xz the raw captures of ``run_ids`` into ``stage/<run_id>/`` with ``jobs`` threads (lzma releases the GIL;
    xz -9 runs at a few MB/s, the slowest step of a bundle). A capture already xz'd in the ``previous`` bundle is
    copied from it when both fingerprints give it the same sha256 (of the decompressed content)."""
    from concurrent.futures import ThreadPoolExecutor

    from analysis.dataset import run_cache_dir
    from analysis.runmeta import capture_path
    work = []
    for rid in run_ids:
        for name in _captures(camp / "runs" / rid):
            src = capture_path(camp / "runs" / rid, name)    # plain, or compressed by the recording queue
            if src is None:
                continue
            dst = stage / rid / f"{name}.xz"
            if previous is not None and (previous / "runs" / rid / f"{name}.xz").is_file():
                old = _capture_sha256(previous / "runs" / rid / "derived" / "fingerprint.json", name)
                raw_fp = run_cache_dir(camp / "runs" / rid, derived_root) / "fingerprint.json"
                if old is not None and old == _capture_sha256(raw_fp, name):
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(previous / "runs" / rid / f"{name}.xz", dst)
                    continue
            work.append((src, dst))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        list(ex.map(lambda w: _xz_to(*w), work))


def _add_captures(src: Path, dst: Path, stage: Path | None = None) -> int:
    """Raw captures of one run, xz'd, with plain iperf3 JSON and a recomputed fingerprint; returns bytes added."""
    from analysis.dataset import fingerprint

    from analysis.runmeta import capture_path
    before = _dir_size(dst)
    for name in _captures(src):
        staged = stage / src.name / f"{name}.xz" if stage is not None else None
        found = capture_path(src, name)
        if staged is not None and staged.is_file():
            shutil.move(staged, dst / f"{name}.xz")
        elif found is not None and found.name == name:
            _xz_to(found, dst / f"{name}.xz")
        elif found is not None:                        # already .xz or .gz
            _copy(found, dst / found.name)
    for f in sorted((src / "iperf3").glob("*.json")) if (src / "iperf3").is_dir() else []:
        _copy(f, dst / "iperf3" / f.name)
        (dst / "iperf3" / (f.name + ".xz")).unlink(missing_ok=True)
    if (dst / "derived" / "flows.parquet").is_file():
        (dst / "derived" / "fingerprint.json").write_text(json.dumps(fingerprint(dst), indent=1, sort_keys=True))
    return _dir_size(dst) - before


def _remove_captures(src: Path, dst: Path, saved_fp: bytes | None) -> None:
    for name in _captures(src):
        (dst / f"{name}.gz").unlink(missing_ok=True)
        (dst / f"{name}.xz").unlink(missing_ok=True)
    for f in sorted((dst / "iperf3").glob("*.json")) if (dst / "iperf3").is_dir() else []:
        _xz_text_to(src / "iperf3" / f.name, dst / "iperf3" / (f.name + ".xz"))
        f.unlink()
    if saved_fp is not None:
        (dst / "derived" / "fingerprint.json").write_bytes(saved_fp)


def _layout_dirs(ss_scope: str) -> str:
    """README paragraph on what a run directory of the bundle holds."""
    return f"""Per complete run: `params.json`, `meta.json`, `COMPLETE`, `capture.log`, `derived/flows.parquet` (the per-flow
metrics of `analysis.dataset.load_campaign`, stored without pandas metadata; `derived/fingerprint.json` holds the
sha256 of the original captures), `ss/flowN.txt.xz` (`ss -ti` samples, 100 ms; {ss_scope}) and `iperf3/*.json.xz`. Per skipped run: `params.json`, `meta.json`,
`SKIPPED`. `load_campaign` uses the derived tables as they are when a run has no raw captures."""


def _layout_columnar(m: dict, ss_scope: str) -> str:
    """README paragraph on the columnar layout (``analysis.bundle_store``) and its partitions."""
    parts = "\n".join(
        f"| `{p}` | {(e.get('session') or {}).get('git_commit') or '-'} | {e['complete']} | {e['skipped']} | "
        f"{len(e['files'])} |" for p, e in sorted(m["partitions"].items()))
    return f"""Format `columnar/1` (`analysis/bundle_store.py`): per partition `P` — one recording session, named after its start
(`s20261124T051711Z`); `s-unknown` holds runs without a recorded start time — `runs/P.parquet` (one row per run:
status, reason, parameters, and its `params.json`, `meta.json`, `COMPLETE` or `SKIPPED` and `capture.log` verbatim,
`derived/fingerprint.json` without the files' mtimes: the sha256 of the original captures), `rows/P.parquet`
(the per-flow metrics of `analysis.dataset.load_campaign`), `ss/P.parquet` (`ss -ti` samples, 100 ms; {ss_scope}),
`iperf3/P.parquet` (iperf3 JSON) and `files/P.parquet` (every other file of the runs), zstd-compressed; raw
captures under `captures/<run_id>/`. `bundle.json` `partitions` lists every file with its size and sha256.
`load_campaign` reads the tables directly; `analysis.bundle_store.materialize` recreates the run directories
(`params.json`, `meta.json`, `derived/flows.parquet`, `ss/flowN.txt`, ...) for code that needs them. Bundling more
sessions adds partition files and leaves these byte-identical.

| partition | recorded by commit | complete | skipped | files |
|---|---|---|---|---|
{parts}"""


def _raw_archive_text(m: dict) -> str:
    """README paragraph on the bundle's raw-capture archive (``--raw-archive``), '' without one."""
    ra = m.get("raw_archive")
    if not isinstance(ra, dict):
        return ""
    runs = len({k.split("/", 1)[0] for k in ra.get("members", {})})
    return f"""
## Raw-capture archive
Every raw capture of {runs} runs ({len(ra.get('members', {}))} files) is in `{ra.get('file')}` ({ra.get('bytes', 0) / 1e6:.1f} MB,
sha256 `{ra.get('sha256')}`), kept outside the repository (format `{ra.get('format')}`, `analysis/raw_archive.py`: a tar of
per-file xz members; `bundle.json` `raw_archive` lists each with its sha256). `mpcc verify-raw {ra.get('file')} {m.get('bundle_dir')}`
checks it and re-derives this bundle's tables from it.
"""


def _readme(manifest: dict) -> str:
    m = manifest
    exp_lines = "\n".join(f"| {e} | {c.get('complete', 0)} | {c.get('skipped', 0)} | {c.get('incomplete', 0)} | "
                          f"{c.get('captured', 0)} |" for e, c in sorted(m["experiments"].items()))
    unavailable = "\n".join(f"  * {r} ({n} runs)" for r, n in sorted(m["skip_reasons"].items())) or "  * none"
    ccs_missing = ", ".join(m["ccs_unavailable"]) or "none"
    impls = "; ".join(f"{cc}: " + ", ".join(f"{k} in {n} runs" for k, n in sorted(c.items()))
                      for cc, c in m.get("cc_implementations", {}).items()) or "not recorded"
    mech = "\n".join(f"  * {k}: {', '.join(v)}" for k, v in sorted(m["mechanisms"].items())) or "  * (not recorded)"
    failed = "\n".join(f"* {r}: {why}" for r, why in sorted(m["not_analysed"].items())) or "* none"
    captured = "\n".join(f"* `{r}`" for r in m["captured_runs"]) or "* none"
    sess = "\n".join(f"  * {x['started_utc']}: commit {(x['git_commit'] or 'unknown')[:12]}, {x['jobs']} run(s) at once"
                     + (f" on {', '.join(f'{h} ({n})' for h, n in x['hosts'].items())}" if x.get("hosts") else "")
                     + (f", by campaign `{x['campaign']}` (runs reused through `reuse_runs_from`)"
                        if x.get("campaign") else "")
                     for x in m.get("sessions", [])) or "  * (not recorded)"
    hl = m.get("host_load", {})
    load = (f"median {hl['median']:g} %, 90th percentile {hl['p90']:g} %, max {hl['max']:g} % over {hl['n']} runs"
            if hl.get("n") else "not measured") + (f"; not measured for {hl['missing']} runs recorded before "
                                                    f"the field existed" if hl.get("missing") else "")
    no_room = len(m["configurations_without_captures"])
    ss_option = "" if m.get("ss_reps") is None else f" --ss-reps {m['ss_reps']}"
    ss_scope = ("of every complete run" if m.get("ss_reps") is None else
                f"only of the {m['ss_reps']} lowest complete repetition(s) of each configuration, `--ss-reps`")
    bdir = m.get("bundle_dir", "data/sample")
    columnar = m.get("format") == "columnar/1"
    conv = m.get("converted")
    built = m["bundled_at"] + (f"; written in the columnar format by `mpcc bundle --convert` on {conv['at']} (code "
                               f"{conv['git_commit']})" if conv else "")
    what = (f"{m['runs_total']} runs in {len(m['partitions'])} partitions (recording sessions)"
            if columnar else f"{m['runs_total']} run directories under `runs/`")
    layout = _layout_columnar(m, ss_scope) if columnar else _layout_dirs(ss_scope)
    fmt_option = " --format columnar" if columnar else ""
    return f"""# {bdir} — bundled campaign `{m['campaign']}`

Real measurements recorded with this repository's testbed (`{', '.join(m['backends'])}` backend). Nothing here is
synthetic: every number comes from the captures, `ss` samples and iperf3 output of these runs. Built by
`mpcc bundle` on {built}.

## Provenance
* campaign file: `campaign.yaml` (copied from the campaign directory), profile `{m['campaign']}`
* code that recorded the runs: {', '.join(m['recording_commits']) or 'not recorded in campaign.json'} (git commit per
  recording session, from `campaign.json`); code that analysed and bundled them: {m['git_commit']}
* recording sessions (resumes of the same campaign; `jobs` = runs recorded at once, each on its own namespace
  testbed):
{sess}
* host CPU contention while the flows ran (`meta.json` `host_load.cpu_pressure_some_pct`: share of wall time some
  task waited for a CPU, Linux PSI; the column `host_cpu_pressure_pct` of `load_campaign`): {load}
* kernel(s): {', '.join(m['kernels']) or 'unknown'}
* recorded: {m['first_start'] or '?'} … {m['last_start'] or '?'} (run start times from meta.json, UTC)
* tools: {', '.join(m['tools']) or 'unknown'}
* mechanisms and kernel features (from meta.json):
{mech}
* congestion control implementations (`meta.json` `cc_impl`; runs recorded before it existed have none): {impls}
* congestion controls the campaign asks for that this kernel lacks: {ccs_missing}; their runs are `SKIPPED`
  with the reason below (also absent, not used by the campaign: {', '.join(m['ccs_unavailable_unused']) or 'none'}):
{unavailable}

## Contents
{what} ({m['size_mb']:.1f} MB in total, budget {m['max_mb']:.0f} MB).

| experiment | complete | skipped | incomplete (not shipped) | with raw captures |
|---|---|---|---|---|
{exp_lines}

{layout}

Raw captures (`*.pcap.xz`, tcpdump -s 128 at router1 and the receiver side, unmodified, compressed with xz because
iperf3 re-sends one 128 KB buffer that xz's dictionary spans and gzip's window does not — 3.6× smaller; `xz -d` or
`analysis.ingest.read_pcap` reads them directly; iperf3 JSON kept plain so the run can be re-analysed from scratch) are included for one repetition of {len(m['captured_runs'])} configurations, chosen
to cover every experiment and the ends of each sweep first; {no_room} configuration(s) have no raw capture in the
bundle because the {m['max_mb']:.0f} MB budget is used up (their derived tables, `ss` and iperf3 data are here;
{m.get('configurations_not_tried', 0)} of them were not tried once the room left was smaller than every run's
captures tried before). {len(m.get('runs_without_raw_captures_in_source', []))} run(s) had no raw captures in the
campaign directory bundled (restored from an earlier bundle that did not ship them) and are not candidates.
Runs with raw captures:
{captured}

Complete runs the analysis could not process (shipped without a derived table):
{failed}
{_raw_archive_text(m)}
## Regenerate
```
sudo mpcc campaign run campaigns/{m['campaign']}.yaml --backend netns     # resumable; writes data/raw/{m['campaign']}/
mpcc bundle data/raw/{m['campaign']} --out {bdir} --max-mb {m['max_mb']:.0f}{ss_option}{fmt_option} --force
make notebooks-refresh                                                     # committed notebook outputs (nbval)
```
To go on with an unfinished campaign on another machine, start from this bundle: `sudo mpcc campaign run
campaigns/{m['campaign']}.yaml --backend netns --resume-from {bdir}` copies its finished runs into data/raw/{m['campaign']}/
and records only the rest; bundle again as above.
Results differ between machines (kernel, CPU contention, mechanisms); compare with the scorecard
(`mpcc scorecard {bdir}`), not bit for bit.
"""


def run(args) -> int:
    if args.convert is not None:
        return convert(args)
    if args.campaign is None:
        raise UserError("give the campaign directory to bundle (or --convert OLD_BUNDLE)")
    camp = Path(args.campaign)
    if not (camp / "runs").is_dir():
        raise UserError(f"not a campaign directory (no runs/ inside): {args.campaign}")
    if args.max_mb <= 0:
        raise UserError(f"--max-mb must be positive, got {args.max_mb}")
    if args.ss_reps is not None and args.ss_reps < 1:
        raise UserError(f"--ss-reps must be at least 1, got {args.ss_reps}")
    out = Path(args.out or REPO / "data" / "sample").resolve()
    if out == camp.resolve() or camp.resolve() in out.parents:
        raise UserError("--out must not be inside the campaign directory")
    raw_archive = Path(args.raw_archive).resolve() if getattr(args, "raw_archive", None) else None
    made_archive = False
    if raw_archive is not None:
        if raw_archive.exists():
            raise UserError(f"--raw-archive {args.raw_archive}: exists (an archive is never overwritten)")
        if not raw_archive.parent.is_dir():
            raise UserError(f"--raw-archive {args.raw_archive}: no such directory {raw_archive.parent}")
        if out == raw_archive or out in raw_archive.parents:
            raise UserError("--raw-archive must not be inside the bundle (it is meant for a data repository)")
    from tqdm import tqdm

    from analysis.bundle_store import check_out, replace_dir
    check_out(out, args.force)

    from analysis.dataset import load_campaign, run_cache_dir

    df = load_campaign(camp, jobs=args.jobs, progress=True, derived_dir=args.derived_dir)
    runs = df.attrs["runs"]
    budget = int(args.max_mb * 1e6)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.bundle-", dir=out.parent))
    stage = scratch = None
    try:
        for name in ("campaign.yaml", "campaign.json"):
            if (camp / name).is_file():
                _copy(camp / name, tmp / name)
        derived_root = Path(args.derived_dir) if args.derived_dir else None
        shipped = runs[runs["status"].isin(["complete", "skipped"])]
        with_ss = set(shipped["run_id"] if args.ss_reps is None else lowest_reps(runs, args.ss_reps)["run_id"])
        metas = {}
        for _, r in tqdm(list(shipped.iterrows()), unit="run", desc="bundle", file=sys.stderr):
            src = camp / "runs" / r["run_id"]
            ddir = run_cache_dir(src, derived_root)
            _bundle_run(src, tmp / "runs" / r["run_id"], r["status"], ddir if ddir.is_dir() else None,
                        ss=r["run_id"] in with_ss)
            metas[r["run_id"]] = _json(src / "meta.json")
        if args.format == "columnar":   # the budget is the bundle's as written: its runs as columnar/1 tables
            scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.runs-", dir=out.parent))
            size = _columnar_runs_bytes(tmp, scratch, out, args.jobs)
        else:
            size = _dir_size(tmp)
        as_written = " as columnar/1 tables" if args.format == "columnar" else ""
        _check_room(size, budget, f"the runs alone take {{}} MB{as_written}", args.max_mb)
        analysed = set(df["run_id"])
        sources = runs[runs["run_id"].isin(analysed)]
        from analysis.runmeta import has_captures
        has = sources["run_id"].map(lambda rid: has_captures(camp / "runs" / rid)).astype(bool)
        without = sorted(sources.loc[~has, "run_id"])   # e.g. restored from a bundle without them
        candidates = capture_priority(sources.loc[has])
        archived = None
        if raw_archive is not None:
            archived = _write_raw_archive(camp, sources, _campaign_of(camp, df), raw_archive,
                                          args.jobs or os.cpu_count() or 1)
            made_archive = True

        def manifest_of(captured, no_room, untried) -> dict:
            m = _manifest(camp, df, runs, metas, captured, no_room, untried, without, args.max_mb, args.ss_reps)
            m["bundle_dir"] = _portable(out)
            if archived is not None:
                m["raw_archive"] = archived
            return m

        # bundle.json and README.md count too: reserve what they take before any capture is chosen (the lists of
        # captured and uncaptured configurations hold the same run ids whatever is chosen), and per captured run its
        # README line (and in a columnar bundle its captures/ directory and index entries)
        reserve = _metadata_bytes(manifest_of([], candidates, [])) + METADATA_MARGIN
        _check_room(size + reserve, budget, f"the runs{as_written} with bundle.json and README.md take {{}} MB",
                    args.max_mb)
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.xz-", dir=out.parent))
        previous = _previous_run_dirs(out, stage / ".previous")
        captured, no_room, untried = _fill_with_captures(camp, tmp, stage, candidates, size + reserve, budget,
                                                         args.jobs or os.cpu_count() or 1, derived_root, previous,
                                                         CAPTURED_RUN_BYTES[args.format])
        shutil.rmtree(stage, ignore_errors=True)
        manifest = manifest_of(captured, no_room, untried)
        manifest["size_mb"] = (_dir_size(tmp) + _metadata_bytes(manifest)) / 1e6
        (tmp / "bundle.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
        (tmp / "README.md").write_text(_readme(manifest))
        if args.format == "columnar":
            _write_columnar_checked(tmp, out, args.jobs, reuse=scratch)
            shutil.rmtree(tmp)
            shutil.rmtree(scratch)
        else:
            replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in (stage, scratch):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)
        if made_archive:      # written by this command for a bundle that was not made
            raw_archive.unlink(missing_ok=True)
        raise
    if raw_archive is not None:
        ra = manifest["raw_archive"]
        print(f"mpcc bundle: raw archive {raw_archive} ({len(ra['members'])} captures, {ra['bytes'] / 1e6:.1f} MB)",
              file=sys.stderr)
    print(f"mpcc bundle: {len(shipped)} runs ({len(captured)} with raw captures, {len(no_room) + len(untried)} "
          f"configurations without for lack of room, {len(without)} runs without raw captures in {camp}) -> {out} "
          f"({_dir_size(out) / 1e6:.1f} MB, format {args.format})", file=sys.stderr)
    return 0


def _check_room(size: int, budget: int, what: str, max_mb: float) -> None:
    """UserError when ``size`` bytes already exceed the budget (``what``: the message, {} for the MB)."""
    if size > budget:
        raise UserError(f"{what.format(f'{size / 1e6:.1f}')} > --max-mb {max_mb:g}: nothing left for captures; "
                        "raise --max-mb")


def _metadata_bytes(manifest: dict) -> int:
    """Bytes of the bundle.json and README.md written for ``manifest``."""
    return (len(json.dumps(manifest, indent=1, sort_keys=True).encode())
            + len(_readme({**manifest, "size_mb": 0.0}).encode()))


def _columnar_runs_bytes(tmp: Path, scratch: Path, out: Path, jobs) -> int:
    """Bytes (as ``du -sb`` counts them) of the runs staged in ``tmp``, without captures, written as the columnar/1
    tables of a bundle into ``scratch``: what a columnar bundle's runs take of its budget. The partitions of ``out``
    (a columnar bundle being replaced) whose content is unchanged are reused, and the final write reuses ``scratch``
    in turn, so no table is compressed twice unless captures change it."""
    from analysis.bundle_store import write_columnar
    (tmp / "bundle.json").write_text("{}")   # write_columnar reads a manifest; the real one replaces it
    write_columnar(tmp, scratch, force=True, jobs=jobs, reuse=out)
    return _dir_size(scratch)


def _write_columnar_checked(src: Path, out: Path, jobs, reuse: Path | None = None) -> None:
    """Write the run-directory bundle ``src`` as the columnar bundle ``out`` (unchanged partition files taken from
    ``reuse``, default ``out``), its bundle.json with the digests of the rows and runs listing bundled
    (``write_columnar(digests=True)``), checked equal on ``out`` once written (tests/test_bundle_conversion.py checks
    them again on the committed bundle)."""
    from analysis.bundle_digest import rows_digest, runs_digest
    from analysis.bundle_store import write_columnar
    from analysis.dataset import load_campaign
    record = write_columnar(src, out, force=True, readme=_readme, jobs=jobs, digests=True, reuse=reuse)["digests"]
    after = load_campaign(out, jobs=1, progress=False)
    if rows_digest(after) != record["rows_sha256"] or runs_digest(after) != record["runs_sha256"]:
        raise UserError(f"{out}: its rows or runs listing differ from the runs bundled (a bug in the columnar writer): "
                        "do not commit it")


def _write_raw_archive(camp: Path, sources, campaign: str, dest: Path, jobs: int) -> dict:
    """Every raw capture of the analysed runs ``sources`` (rows of the runs listing) into ``dest``
    (:func:`analysis.raw_archive.write`); returns bundle.json's ``raw_archive`` record."""
    from analysis.raw_archive import write
    from analysis.runmeta import capture_path
    caps = {}
    for rid in sorted(sources["run_id"]):
        found = {name: capture_path(camp / "runs" / rid, name) for name in _captures(camp / "runs" / rid)}
        found = {k: v for k, v in found.items() if v is not None}
        if found:
            caps[rid] = found
    if not caps:
        raise UserError(f"--raw-archive: no run of {camp} has raw captures")
    return write(caps, dest, campaign=campaign, jobs=jobs)


def _previous_run_dirs(out: Path, scratch: Path) -> Path | None:
    """The bundle at ``out`` as run directories, whose xz'd captures ``_stage_captures`` reuses: ``out`` itself, or
    for a columnar bundle its captured runs materialised in ``scratch`` (captures symlinked); None without one."""
    from analysis.bundle_store import is_columnar, manifest, materialize
    if not (out / "bundle.json").is_file():
        return None
    if not is_columnar(out):
        return out
    materialize(out, scratch, manifest(out).get("captured_runs") or [], link_captures=True)
    return scratch


def convert(args) -> int:
    """``mpcc bundle --convert OLD_BUNDLE --out NEW_DIR``: the run-directory bundle as a columnar one (same manifest,
    plus "format", "partitions" and "converted"; README regenerated). The new bundle is written next to NEW_DIR and
    checked against OLD_BUNDLE before it replaces anything: ``load_campaign``'s rows and runs listing
    (``pandas.testing.assert_frame_equal``) and the scorecard (``analysis.bundle_digest.scorecard``) must be
    identical. "converted" records when, from what, by which commit, and the digests of the three
    (``analysis.bundle_digest``), which tests/test_bundle_conversion.py checks on every committed bundle."""
    import pandas as pd

    from analysis.bundle_digest import digests, scorecard
    from analysis.bundle_store import FORMAT, check_out, replace_dir, source_manifest, write_columnar
    from analysis.dataset import load_campaign
    if args.campaign is not None:
        raise UserError("--convert takes the bundle to convert; give no campaign directory with it")
    if args.out is None:
        raise UserError("--convert needs --out (the new bundle's directory; OLD_BUNDLE itself with --force converts "
                        "it in place)")
    src, out = Path(args.convert), Path(args.out).resolve()
    if src.resolve() in out.parents:
        raise UserError("--out must not be inside the bundle being converted")
    source_manifest(src)          # a run-directory bundle, or a one-line error
    check_out(out, args.force)
    before = load_campaign(src, jobs=args.jobs, progress=True)
    scores_before = scorecard(before)
    record = {"at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "from": _portable(src),
              "git_commit": _git_commit(), **digests(before, scores_before),
              "checked": "rows, runs listing and scorecard identical to the bundle converted (assert_frame_equal)"}
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.convert-", dir=out.parent)) / "bundle"
    try:
        m = write_columnar(src, staging, readme=_readme, jobs=args.jobs, progress=True,
                           extra={"bundle_dir": _portable(out), "converted": record})
        after = load_campaign(staging, jobs=args.jobs, progress=False)
        for what, a, b in (("rows", before, after), ("runs listing", before.attrs["runs"], after.attrs["runs"]),
                           ("scorecard", scores_before, scorecard(after))):
            key = [c for c in ("run_id", "flow") if c in a.columns] if what != "scorecard" else []
            a = a.sort_values(key, kind="stable").reset_index(drop=True) if key else a.reset_index(drop=True)
            b = b.sort_values(key, kind="stable").reset_index(drop=True) if key else b.reset_index(drop=True)
            try:
                pd.testing.assert_frame_equal(a, b)
            except AssertionError as exc:
                first = str(exc).strip().splitlines()[0]
                raise UserError(f"the columnar bundle's {what} differ from {src}'s ({first}); nothing replaced")
        replace_dir(staging, out)
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)
    nfiles = sum(len(p["files"]) for p in m["partitions"].values())
    print(f"mpcc bundle: {src} -> {out} ({FORMAT}: {len(m['partitions'])} partitions, {nfiles} files, "
          f"{m['size_mb']:.1f} MB; rows, runs and scorecard identical)", file=sys.stderr)
    return 0


def _fill_with_captures(camp: Path, tmp: Path, stage: Path, candidates: list[str], size: int, budget: int, jobs: int,
                        derived_root: Path | None, previous: Path | None, per_run: int = 0) -> tuple[list, list, list]:
    """Add the raw captures of ``candidates`` (run ids, in :func:`capture_priority` order) to the bundle being built
    in ``tmp`` while they fit in ``budget`` bytes (``size``: bytes used so far; ``per_run``: bytes a captured run
    takes besides what it adds to its run directory, e.g. its README line). A run whose captures do not fit is
    left without them and later (smaller) ones are still tried. Captures are xz'd ``jobs`` runs at a time, and the
    rest are not xz'd at all once the room left is smaller than the smallest run's xz'd captures so far (runs of one
    campaign differ little in size; xz -9 of every candidate took 12 of 17 minutes of a 60-MB bundle that had room
    for 3). Returns (captured, no_room, untried) run ids."""
    from tqdm import tqdm
    captured, no_room, untried = [], [], []
    smallest = None
    with tqdm(total=len(candidates), unit="run", desc="captures", file=sys.stderr) as bar:
        for i in range(0, len(candidates), jobs):
            if smallest is not None and budget - size < smallest:
                untried = candidates[i:]
                bar.update(len(untried))
                break
            chunk = candidates[i:i + jobs]
            _stage_captures(camp, chunk, stage, jobs, derived_root, previous)
            for rid in chunk:
                src, dst = camp / "runs" / rid, tmp / "runs" / rid
                fp = dst / "derived" / "fingerprint.json"
                saved = fp.read_bytes() if fp.is_file() else None
                added = _add_captures(src, dst, stage) + per_run
                smallest = added if smallest is None else min(smallest, added)
                if size + added > budget:
                    _remove_captures(src, dst, saved)
                    no_room.append(rid)
                else:
                    size += added
                    captured.append(rid)
                bar.update(1)
    return captured, no_room, untried


def _incomplete_runs(cmeta: dict, runs) -> tuple[list[str], list[str]]:
    """Run directories left out as incomplete: those of the campaign directory, and those an earlier bundle left out
    (``campaign.json`` ``incomplete_runs_restored``, written by ``--resume-from``) that have no directory here since
    (a run recorded again here counts as what it is now). Returns (all, restored only)."""
    here = set(runs.loc[runs["status"] == "incomplete", "run_id"])
    only_restored = sorted(set(cmeta.get("incomplete_runs_restored", [])) - set(runs["run_id"]))
    return sorted(here | set(only_restored)), only_restored


def _campaign_of(camp: Path, df) -> str:
    """The campaign's name: its campaign.json's, else as its runs record it (runs reused from another campaign keep
    that one's name), else the directory's name."""
    from analysis.dataset import campaign_name
    return campaign_name(camp) or (str(df["campaign"].dropna().iloc[0]) if len(df) else camp.name)


def _manifest(camp, df, runs, metas, captured, no_room, untried, without, max_mb, ss_reps) -> dict:
    exps: dict = {}
    for _, r in runs.iterrows():
        e = exps.setdefault(str(r["experiment"]), Counter())
        e[r["status"]] += 1
    cmeta = _campaign_json(camp)
    sessions = _sessions(cmeta)
    incomplete, only_restored = _incomplete_runs(cmeta, runs)
    for rid in only_restored:   # run ids start with their experiment: <experiment>__<cc>__...
        exps.setdefault(rid.split("__")[0], Counter())["incomplete"] += 1
    for rid in captured:
        exps[str(runs.loc[runs["run_id"] == rid, "experiment"].iloc[0])]["captured"] += 1
    starts = sorted(m.get("start_time") for m in metas.values() if m.get("start_time"))
    mech: dict = {}
    cc_avail: dict = {}
    cc_impls: dict = {}   # cc -> Counter of "implementation (object)" over runs (meta.json cc_impl)
    tools, kernels, backends = set(), set(), set()
    for m in metas.values():
        for k in ("delay_mechanism", "round_robin_mechanism", "fq"):
            if m.get(k):
                mech.setdefault(k, set()).add(str(m[k]))
        feat = m.get("features") or {}
        for k, v in (feat.get("mechanism") or {}).items():
            if k not in ("delay", "round_robin"):  # those two are recorded as *_mechanism above
                mech.setdefault(f"{k}_mechanism", set()).add(str(v))
        for k in ("netem", "teql", "fq"):
            if k in feat:
                mech.setdefault("kernel has " + k, set()).add("yes" if feat[k] else "no")
        for cc, ok in (feat.get("cc") or {}).items():
            cc_avail.setdefault(cc, set()).add(bool(ok))
        for cc, impl in (m.get("cc_impl") or {}).items():
            key = impl.get("implementation", "?")
            if impl.get("object_sha256"):
                key += f" ({impl.get('source')}, object sha256 {impl['object_sha256'][:12]}…)"
            cc_impls.setdefault(cc, Counter())[key] += 1
        for k, v in (m.get("tool_versions") or {}).items():
            tools.add(f"{k}: {v}")
        if m.get("kernel"):
            kernels.add(str(m["kernel"]))
        if m.get("backend"):
            backends.add(str(m["backend"]))
    wanted = {c for v in runs["cc"].dropna() for c in str(v).split("+")}   # "a+b": both at once (study 002)
    wanted |= set(runs["cc2"].dropna()) if "cc2" in runs else set()
    skipped = runs[runs["status"] == "skipped"]
    reasons = Counter(str(x) for x in skipped["reason"])
    not_analysed = {r["run_id"]: r["reason"] for _, r in runs.iterrows()
                    if r["status"] == "complete" and str(r["reason"] or "").startswith("analysis failed")}
    return {
        "campaign": _campaign_of(camp, df),
        "source": _portable(camp), "bundled_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": _git_commit(), "recording_commits": _recording_commits(sessions),
        "sessions": sessions, "host_load": _host_load_summary(metas), "kernels": sorted(kernels), "backends": sorted(backends) or ["unknown"],
        "first_start": starts[0] if starts else None, "last_start": starts[-1] if starts else None,
        "tools": sorted(tools), "mechanisms": {k: sorted(v) for k, v in mech.items()},
        "ccs_unavailable": sorted(cc for cc, oks in cc_avail.items() if oks == {False} and cc in wanted),
        "ccs_unavailable_unused": sorted(cc for cc, oks in cc_avail.items() if oks == {False} and cc not in wanted),
        "cc_implementations": {cc: dict(c) for cc, c in sorted(cc_impls.items())},
        "skip_reasons": dict(reasons), "experiments": {k: dict(v) for k, v in exps.items()},
        "runs_total": int(runs["status"].isin(["complete", "skipped"]).sum()),
        "incomplete_runs": incomplete,
        "not_analysed": not_analysed, "captured_runs": captured,
        "configurations_without_captures": no_room + untried, "configurations_not_tried": len(untried),
        "runs_without_raw_captures_in_source": without, "max_mb": max_mb, "ss_reps": ss_reps,
    }
