"""`mpcc scorecard CAMPAIGN_DIR [--json]`: claim-by-claim reproduction verdicts of a campaign's paper (000, or the
campaign's study family: 001, 002, 003, 004)."""
from __future__ import annotations

import json
import math
from pathlib import Path

from mpcc.errors import UserError

NAME = "scorecard"
HELP = "claim-by-claim reproduction scorecard of a campaign's paper (000, 001, 002, 003, 004) on a campaign directory (docs/claims.md)"
PAPER_RUN_LENGTH = {"000": "100 s", "001": "45 s", "002": "tests 1-4 not stated (video 220 s), test 5 10 s", "003": "900 s (scenarios: not stated)",
                    "004": "not stated (>= 108.7 s by Table 1; paper profile 120 s)"}


def add_arguments(parser):
    parser.add_argument("campaign_dir", metavar="CAMPAIGN_DIR", help="campaign output directory (holds runs/)")
    parser.add_argument("--json", action="store_true", help="print one JSON object {\"campaign\", \"claims\": [...]}")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level; intervals are 1-alpha (default 0.05)")
    parser.add_argument("--n-boot", type=int, default=9999, help="bootstrap resamples for ratio intervals (default 9999)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes for runs not yet analysed (default: all cores)")
    parser.add_argument("--derived-dir", metavar="DIR",
                        help="keep the per-run derived tables under DIR/<run_id>/ instead of inside the run directories")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="analyse runs on a dask.distributed scheduler")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--arm", metavar="MODEL[,LEN]",
                        help="study 000 datasets of several switch queue models / UDP datagram sizes (the fidelity "
                             "ablation, data/fidelity000): score this arm, e.g. tbf-netem or fifo-after-delay,8192")
    parser.add_argument("--bic", metavar="KERNEL", choices=("4.15", "6.1"),
                        help="study 000 datasets with both BICs (data/bic000): score the runs of this kernel's BIC, "
                             "4.15 (bic415, the paper's) or 6.1 (bic), as the paper's BIC (analysis.paper_bic)")


def _clean(v):
    if v is None:
        return None
    if isinstance(v, float):
        return None if math.isnan(v) else (("inf" if v > 0 else "-inf") if math.isinf(v) else v)
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def _g(x, nd=4):
    from analysis.claims.core import fmt
    return fmt(x, nd, missing="-")


def run_counts(runs) -> dict:
    """Run-status counts: complete (analysed), skipped, incomplete, analysis_failed (complete but unreadable)."""
    st = runs["status"].astype(str)
    failed = st.eq("complete") & runs["reason"].astype(str).str.startswith("analysis failed")
    superseded = runs["reason"].astype(str).str.startswith("superseded")
    return {"complete": int((st.eq("complete") & ~failed).sum()), "skipped": int(st.eq("skipped").sum()),
            "incomplete": int((st.eq("incomplete") & ~superseded).sum()), "superseded": int(superseded.sum()),
            "analysis_failed": int(failed.sum()), "total": int(len(runs))}


def run(args) -> int:
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha must be between 0 and 1 (exclusive), got {args.alpha}")
    if args.n_boot < 100:
        raise UserError(f"--n-boot must be >= 100, got {args.n_boot}")
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {args.jobs}")
    d = Path(args.campaign_dir)
    if not d.is_dir():
        raise UserError(f"{d}: no such campaign directory")
    if not (d / "runs").is_dir():
        raise UserError(f"{d}: not a campaign directory (no runs/ inside)")
    from analysis.claims import VERDICTS, evaluate  # lazy: heavy imports only when the command runs
    from analysis.claims.core import headline
    from analysis.claims.explain import evidence_of
    from analysis import cc_impl
    from analysis.dataset import campaign_name, load_campaign, run_metas

    arm = None
    if args.arm is not None:
        from analysis.ablation import parse_arm
        from analysis.errors import AnalysisError
        try:
            arm = parse_arm(args.arm)
        except AnalysisError as exc:
            raise UserError(f"--arm: {exc}") from None
    df = load_campaign(d, jobs=args.jobs, progress=not args.no_progress, scheduler=args.scheduler,
                       derived_dir=args.derived_dir)
    if arm is not None:
        from analysis.ablation import arm_label, arm_set, select_arm
        have = arm_set(df)
        if arm not in have:
            raise UserError(f"--arm {args.arm}: no complete run of that arm in {d} (arms: "
                            f"{'; '.join(arm_label(*a) for a in have) or 'none'})")
        df = select_arm(df, arm)
    if args.bic is not None:
        from analysis import paper_bic
        from analysis.errors import AnalysisError
        try:
            df, _ = paper_bic.as_paper(df, args.bic)
        except AnalysisError as exc:
            raise UserError(f"--bic {args.bic}: {exc}") from None
    res = evaluate(df, alpha=args.alpha, n_boot=args.n_boot, seed=args.seed)
    counts = run_counts(df.attrs["runs"])
    head = headline(res)
    sanity = res[res["tier"] == "sanity"]
    subst = res[res["substitute_for"].notna()]
    verdicts = verdict_counts(head, VERDICTS)
    name = campaign_name(d) or d.name
    durations = sorted({float(x) for x in df["duration_s"].dropna()}) if len(df) else []
    paper = str(res["paper"].iloc[0]) if len(res) else "000"
    metas = list(run_metas(d))                       # meta.json of every run, read once
    hosts, effect = host_audit(d, df, args.seed, metas)
    impls = cc_impl.implementations(metas)
    if args.json:
        expl = evidence_of(res)
        claims = []
        for (_, r), e in zip(res.iterrows(), expl):
            c = {k: _clean(v) for k, v in r.items() if not k.startswith("explanation_")}
            c["explanation"] = e
            claims.append(c)
        kinds = res["explanation_kind"].dropna().value_counts()
        out = {"paper": paper, "campaign": name, "campaign_dir": str(d), "alpha": args.alpha, "runs": counts,
               "duration_s": durations, "verdicts": verdicts, "headline_claims": int(len(head)),
               "sanity_verdicts": verdict_counts(sanity, VERDICTS),
               "substitute_verdicts": verdict_counts(subst, VERDICTS),
               "explanation_kinds": {k: int(v) for k, v in kinds.items()}, "hosts": host_json(hosts, effect),
               "cc_implementations": [{"cc": r.cc, "implementation": r.implementation, "runs": int(r.runs)}
                                      for r in impls.itertuples()],
               "claims": claims}
        print(json.dumps(out, indent=1, allow_nan=False))
        return 0
    print(f"# scorecard of paper {paper} on campaign {name} ({d}): runs {counts['complete']} complete, "
          f"{counts['skipped']} skipped, {counts['incomplete']} incomplete, {counts['analysis_failed']} unreadable; "
          f"run length {', '.join(f'{x:g}' for x in durations) or '-'} s (paper: {PAPER_RUN_LENGTH.get(paper, '?')}); alpha {args.alpha:g}")
    if effect is not None:   # which hosts recorded the runs, and whether goodput differs by host (docs/multi-host.md)
        print(f"# {effect.line(args.alpha)}")
    print(f"# congestion controls: {cc_impl.line(impls)}")
    w = max(len(c) for c in res["claim_id"]) if len(res) else 10
    for title, part in (("claims about the congestion controls (the headline)", head),
                        ("sanity checks (hold by construction of the testbed)", sanity),
                        ("substitutes (a statement judged on another mechanism; never its verdict)", subst)):
        if part.empty:
            continue
        print(f"## {title}: {len(part)}")
        for r in part.itertuples():
            unit = getattr(r, "unit", "") or ""
            ci = f"[{_g(r.ci_low)}, {_g(r.ci_high)}]{' ' + unit if unit else ''}"
            print(f"{r.verdict:<14} {r.claim_id:<{w}}  paper: {r.paper_value} | ours: {_g(r.ours)} {ci} n={r.n} | "
                  f"{r.test} | p={_g(r.p_value, 3)} effect={_g(r.effect_size, 3)} | {r.note or '-'}")
            if isinstance(r.explanation_kind, str):
                print(f"{'':<14} {'':<{w}}  why ({r.explanation_kind}): {r.explanation_text}")
    print("# verdicts (headline): " + ", ".join(f"{k} {v}" for k, v in verdicts.items())
          + f"; sanity checks: {len(sanity)}; substitutes: {len(subst)}")
    return 0


def verdict_counts(res, verdicts) -> dict:
    """Rows per verdict (every verdict named, zeros included)."""
    return {v: int((res["verdict"] == v).sum()) for v in verdicts}


def host_audit(d: Path, df, seed: int, metas=None):
    """(the runs' hosts: ``analysis.dataset.run_hosts``, the host effect on goodput within configurations:
    ``analysis.stats.host_effect``, None when the rows have no goodput column); ``metas``: the runs' meta.json
    (``analysis.dataset.run_metas``) when already read."""
    from analysis.dataset import run_hosts
    from analysis.stats.host_effect import campaign_host_effect
    hosts = run_hosts(d, metas)
    try:
        effect = campaign_host_effect(df, hosts, seed=seed)
    except ValueError:
        effect = None
    return hosts, effect


def host_json(hosts, effect) -> dict:
    """The scorecard JSON's ``hosts``: runs and kernels per recording host, and the host-effect test."""
    recorded = {}
    for h, g in hosts.dropna(subset=["host"]).groupby("host"):
        recorded[str(h)] = {"runs": int(len(g)), "kernels": sorted(str(k) for k in g["kernel"].dropna().unique())}
    out = {"recorded": recorded, "runs_without_host": int(hosts["host"].isna().sum())}
    if effect is not None:
        out["host_effect"] = {"value": effect.value, "unit": effect.unit, "configurations": effect.blocks,
                              "mixed_configurations": effect.mixed, "statistic": _clean(effect.statistic),
                              "p_value": _clean(effect.p_value), "n_perm": effect.n_perm,
                              "median_spread_pct": _clean(effect.median_spread_pct)}
    return out
