"""Bundle the results of ``testbed/kernel415/run-vm.sh`` (study 000's loss experiment on Linux 4.15 and 6.1 in one VM;
docs/kernel-415.md) into the committed form that ``analysis.kernel415`` reads:

    python tools/bundle_kernel415.py RESULTS_DIR [--out data/kernel415] [--max-mb 6]

- each arm RESULTS_DIR/linux-X.Y (a campaign directory) becomes a columnar bundle OUT/linux-X.Y (``mpcc bundle
  --format columnar --force``: a later session's bundle replaces the earlier one, never a run of it: the raw results
  directory keeps every run), its campaign.json with this host's paths written portably
  (``analysis.validation_store.portable_paths``);
- OUT/vm.json keeps what the bundles do not: the plan (RESULTS_DIR/params.json) and per run the guest's description
  (guest.json: its kernel and TCP sysctls) and this host's CPU pressure over the run (vm_host.json; TCG's timing
  depends on it).

One-line errors (exit 2) for a directory that is not such a results directory."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from analysis.kernel415 import arm_dirs  # noqa: E402
from analysis.validation_store import portable_paths  # noqa: E402


def die(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def sidecars(arm: Path) -> dict:
    """{run_id: {guest, vm_host}} of one arm's complete runs."""
    out = {}
    for d in sorted((arm / "runs").iterdir()):
        if d.is_dir() and (d / "COMPLETE").is_file():
            out[d.name] = {"guest": _json(d / "guest.json"), "vm_host": _json(d / "vm_host.json")}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/bundle_kernel415.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="the results directory of testbed/kernel415/run-vm.sh --out")
    ap.add_argument("--out", default=str(REPO / "data" / "kernel415"), help="where the bundles go (default data/kernel415)")
    ap.add_argument("--max-mb", type=float, default=6.0, help="size budget of each arm's bundle in MB (default 6)")
    args = ap.parse_args(argv)
    res, out = Path(args.results), Path(args.out)
    params = _json(res / "params.json")
    if not isinstance(params, dict) or "plan" not in params:
        die(f"{res}: no params.json with a plan (not a results directory of testbed/kernel415/run-vm.sh)")
    arms = arm_dirs(res)
    if not arms:
        die(f"{res}: no linux-X.Y arm with runs/ yet")
    out.mkdir(parents=True, exist_ok=True)
    vm = {"params": json.loads(portable_paths(json.dumps(params))), "runs": {}}
    for kernel, arm in arms.items():
        dest = out / arm.name
        print(f"bundling {arm} -> {dest}", file=sys.stderr)
        r = subprocess.run([sys.executable, "-m", "mpcc.cli", "bundle", str(arm), "--format", "columnar", "--out",
                            str(dest), "--max-mb", str(args.max_mb), "--force"], cwd=REPO)
        if r.returncode != 0:
            die(f"mpcc bundle {arm} failed (exit {r.returncode})")
        cj = dest / "campaign.json"
        if cj.is_file():
            cj.write_text(portable_paths(cj.read_text()))
        vm["runs"][arm.name] = sidecars(arm)
    (out / "vm.json").write_text(json.dumps(vm, indent=1, sort_keys=True) + "\n")
    n = sum(len(v) for v in vm["runs"].values())
    print(f"bundled {n} complete runs of {len(vm['params']['plan'])} planned into {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
