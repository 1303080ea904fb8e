"""``mpcc campaign run CAMPAIGN --backend netns --out DIR [--jobs N | --scheduler tcp://HOST:PORT] [--dry-run]
[--seed N]``."""
from __future__ import annotations

import sys
from pathlib import Path

from mpcc.campaign.pace import eta
from mpcc.campaign.room import estimate
from mpcc.campaign.runner import BACKENDS, EXIT_NO_ROOM, ordered_runs, run_campaign, run_status
from mpcc.campaign.spec import load_campaign
from mpcc.errors import UserError

NAME = "campaign"
HELP = "run (or list with --dry-run) the runs of a campaign file on a testbed backend; resumable"


def add_arguments(p):
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    r = sub.add_parser("run", help="run a campaign (skips completed runs, redoes incomplete ones)")
    r.add_argument("campaign", help="campaign file, e.g. campaigns/smoke.yaml")
    r.add_argument("--profile", help="a profile of the campaign file (e.g. smoke): a smaller campaign <name>-<profile>")
    r.add_argument("--backend", choices=BACKENDS, default="netns")
    r.add_argument("--out", help="output directory (default: data/raw/<campaign name>)")
    r.add_argument("--seed", type=int, help="seed of the run order (default: the campaign's seed)")
    r.add_argument("--jobs", type=int, default=1,
                   help="runs at once, each on its own namespace testbed (netns backend only; default 1)")
    r.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="record on the workers of this dask.distributed scheduler, each on its own host as root with "
                        "its own slots (dask worker --resources slots=N); the run directories come back to --out "
                        "(docs/multi-host.md). This process needs no root then")
    r.add_argument("--retry-skipped", action="store_true",
                   help="record SKIPPED runs again (e.g. a CC now available as a BPF port); the skipped directories "
                        "are kept as <run_id>.incomplete-<time>-skipped")
    r.add_argument("--redo-contended", type=float, metavar="PCT",
                   help="record again the complete runs whose meta.json host CPU pressure (host_load, PSI some) "
                        "exceeded PCT %%; their directories are kept as <run_id>.incomplete-<time>-contended")
    r.add_argument("--experiments", metavar="E[,E...]",
                   help="record only runs of these experiments this time (e.g. the paper's tables first); "
                        "the others stay pending")
    r.add_argument("--resume-from", metavar="BUNDLE",
                   help="a bundle of this campaign (mpcc bundle, e.g. data/paper): its finished runs are copied into "
                        "--out and count as done, so recording resumes on a new machine from the committed bundle")
    r.add_argument("--min-free-gb", type=float, metavar="GB",
                   help="start no further run once --out's file system has less than GB x 10^9 bytes free (the runs "
                        "in flight finish; exit 4; the same command resumes). Default: the larger of 1 GB and "
                        "2 x runs at once x the largest run so far; 0: no floor")
    r.add_argument("--dry-run", action="store_true",
                   help="list the runs and the time they take (and, once --out has complete runs, the pace so far "
                        "and the disk the rest need); run nothing")


def reusable(campaign, out: Path) -> set:
    """Run ids of ``campaign`` that its ``reuse_runs_from`` bundle holds finished and ``out`` has no directory for."""
    from analysis.dataset import run_status as bundle_runs
    from analysis.errors import AnalysisError
    from mpcc.campaign.runner import reuse_path
    try:
        st = bundle_runs(reuse_path(campaign))
    except (AnalysisError, OSError) as exc:
        raise UserError(f"reuse_runs_from {campaign.reuse_from}: {exc}") from None
    done = set(st.loc[st["status"].isin(["complete", "skipped"]), "run_id"]) if len(st) else set()
    return {r.run_id for r in campaign.runs if r.run_id in done and not (out / "runs" / r.run_id).exists()}


def run(args) -> int:
    campaign = load_campaign(args.campaign, args.profile)
    seed = campaign.seed if args.seed is None else args.seed
    out = Path(args.out) if args.out else Path("data/raw") / campaign.name
    order = ordered_runs(campaign, seed)
    if args.dry_run:
        for r in order:
            print(f"{run_status(out / 'runs' / r.run_id):10s} {r.run_id}")
        traffic = sum(r.duration_s for r in order)
        print(f"{len(order)} runs, seed {seed}; traffic time {traffic:g} s = {traffic / 3600:.2f} h "
              f"(plus ~10 s set-up/teardown per run: ~{(traffic + 10 * len(order)) / 3600:.2f} h)", file=sys.stderr)
        left = sum(run_status(out / "runs" / r.run_id) not in ("complete", "skipped") for r in order)
        if campaign.reuse_from is not None:
            n = len(reusable(campaign, out))
            print(f"reuse_runs_from {campaign.reuse_from}: {n} of these runs finished there and not here, copied in "
                  f"when recording starts (if recorded with the same parameters), not recorded again", file=sys.stderr)
            left -= n
        for line in (eta(out, left), estimate(out, left)) if out.is_dir() else ():
            if line:
                print(line, file=sys.stderr)
        return 0
    experiments = None
    if args.experiments:
        experiments = {e.strip() for e in args.experiments.split(",") if e.strip()}
        unknown = experiments - {r.experiment for r in campaign.runs}
        if unknown:
            raise UserError(f"--experiments: {', '.join(sorted(unknown))} not in {args.campaign} "
                            f"(has: {', '.join(sorted({r.experiment for r in campaign.runs}))})")
    if args.redo_contended is not None and not 0 <= args.redo_contended <= 100:
        raise UserError(f"--redo-contended must be a percentage 0..100, got {args.redo_contended:g}")
    resume_from = Path(args.resume_from) if args.resume_from else None
    if resume_from is not None and not (resume_from / "bundle.json").is_file():
        raise UserError(f"--resume-from {args.resume_from}: not a bundle (no bundle.json; made by mpcc bundle)")
    if args.scheduler is not None and not args.scheduler.strip():
        raise UserError("--scheduler needs an address, e.g. tcp://coordinator:8786")
    res = run_campaign(campaign, Path(args.campaign), out, args.backend, seed, jobs=args.jobs,
                       retry=args.retry_skipped, redo_contended_pct=args.redo_contended, experiments=experiments,
                       resume_from=resume_from, scheduler=args.scheduler, profile=args.profile,
                       min_free_gb=args.min_free_gb)
    print(f"{campaign.name}: {res.complete} completed, {res.skipped} skipped, {res.failed} failed, "
          f"{res.already} already done -> {out}", file=sys.stderr)
    if res.stopped is not None:
        print(f"{campaign.name}: stopped before the disk filled: {res.stopped}; {res.left} run(s) not started. "
              f"Make room (or set --min-free-gb) and run the same command to resume", file=sys.stderr)
        return EXIT_NO_ROOM
    return 1 if res.failed else 0
