"""Run the cost-aware suite and write its report: ``python -m benchmarks suite [options]``.

    python -m benchmarks suite --quick                    # 3 seeds, every problem and method
    nice -n 10 python -m benchmarks suite --seeds 20 --resume
    python -m benchmarks suite --resume --rerun rollout ei   # re-run ours after a change
    python -m benchmarks suite --report-only               # rebuild the report from the cache
    python -m benchmarks suite --split tuning --resume     # the tuning half of the problems
    python -m benchmarks suite --list                      # problems, split and methods

The problems are ``benchmarks.problems.synthetic.SUITE``, the methods those of
``benchmarks.harness.methods`` (names or ``BASE:key=value`` specs). Every finished run is
cached as ``<out>/runs/<problem>/<method>/seed<NNN>.csv``; ``--resume`` runs only what is
missing (or cached from an older problem definition, or failed), so the baselines (Optuna's,
BoTorch's) run once and are re-used; ``--rerun METHOD ...`` discards the cached runs of those
methods first (and implies ``--resume`` for the rest). The report (``report.md``, CSVs,
``regret_vs_cost.png``) covers the requested problems, methods and seeds found in the cache.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import dataclasses
from pathlib import Path
import sys

from benchmarks.harness import best_known
from benchmarks.harness import cache
from benchmarks.harness import methods as methods_mod
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness.problem import SPLITS
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import split
from benchmarks.problems.synthetic import SUITE
from benchmarks.problems.synthetic import describe


DEFAULT_OUT = Path(__file__).resolve().parent / "results"
BENCHMARKS = Path(__file__).resolve().parents[1]
BEST_KNOWN = BENCHMARKS / "results" / "yahpo_best_known.json"
"""Per real-group problem, the lower of the calibration's f* and the best final value of any
run stored under ``benchmarks/``, its budget variants' (the stopping benchmark's) included
(:mod:`benchmarks.harness.best_known`); regrets are taken against it."""
QUICK_SEEDS = 3
DEFAULT_SEEDS = 20


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"seeds 0..N-1 (default {DEFAULT_SEEDS}; --quick: {QUICK_SEEDS})",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="method names or BASE:key=value specs (see --list); any other name ACQ or "
        "ACQ-hN is passed to CostRolloutSampler(acquisition=ACQ, horizon=N)",
    )
    parser.add_argument(
        "--problems",
        nargs="+",
        default=None,
        help="problem names (default: every one of --groups)",
    )
    parser.add_argument(
        "--groups",
        nargs="+",
        default=list(SYNTHETIC_GROUPS),
        choices=[
            *SYNTHETIC_GROUPS,
            "real",
            "constrained",
            *NOISY_GROUPS,
            *MULTI_GROUPS,
            *EXTREME_GROUPS,
        ],
        help="problem groups (default: the synthetic ones); real: YAHPO Gym surrogates, which "
        "need the benchmark environment of benchmarks/problems/README_yahpo.md; constrained: "
        "three suite problems with a constraints_func (benchmarks/problems/constrained.py); "
        "noisy: suite problems with additive noise (benchmarks/problems/noisy.py); "
        "noisy-real: YAHPO rbv2 instances with the replication drawn per trial (the YAHPO "
        "environment); noisy-live: scikit-learn decision trees with the validation split "
        "drawn per trial (benchmarks/problems/hpo.py); multi: ZDT / DTLZ2 with costs, 2-3 "
        "objectives, scored by hypervolume regret (benchmarks/problems/multi.py); multi-real: "
        "three YAHPO instances with a second objective (benchmarks/problems/yahpo_multi.py, "
        "the YAHPO environment); extreme: test functions whose costs span 1e3-1e5 "
        "(benchmarks/problems/extreme.py); extreme-live: scikit-learn MLPs whose batch size, "
        "width, depth and epochs set the cost (benchmarks/problems/hpo.py); extreme-real: the "
        "widest-cost YAHPO XGBoost instances (the YAHPO environment). --problems finds the "
        "names of the synthetic, noisy, constrained, multi and extreme groups whatever "
        "--groups says",
    )
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="all",
        help="the tuning or the confirmation half of the problems, stratified by group "
        "(default all; see --list)",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SEEDS} seeds (unless --seeds)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="cache and report folder")
    parser.add_argument(
        "--report-dir", type=Path, default=None, help="write the report here (default: --out)"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes (default 1: in this process)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="run only runs missing from the cache"
    )
    parser.add_argument(
        "--rerun",
        nargs="+",
        default=[],
        metavar="METHOD",
        help="discard the cached runs of these methods first (implies --resume)",
    )
    parser.add_argument(
        "--reference",
        default="eipu",
        help="method of the paired tests (default eipu; the docs' tables use rollout, the "
        "package's default acquisition)",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="no runs: report from the cache"
    )
    parser.add_argument(
        "--update-best-known",
        action="store_true",
        help="rewrite benchmarks/results/yahpo_best_known.json from every run of the real "
        "group stored under benchmarks/ (the value its regrets are taken against), then exit",
    )
    parser.add_argument(
        "--list", action="store_true", help="list problems, split and methods, then exit"
    )
    return parser.parse_args(argv)


SYNTHETIC_GROUPS = ("adversarial", "control")
NOISY_GROUPS = ("noisy", "noisy-real", "noisy-live")
MULTI_GROUPS = ("multi", "multi-real")
EXTREME_GROUPS = ("extreme", "extreme-live", "extreme-real")
LOCAL_GROUPS = (*SYNTHETIC_GROUPS, "constrained", "noisy", "multi", "extreme")
"""The groups that need nothing beyond the package's test environment."""


def all_problems(groups: Sequence[str]) -> dict[str, Problem]:
    """The suite's problems of ``groups``: the synthetic ones, and the real group (YAHPO Gym
    surrogates, imported only when asked for)."""
    out = {n: p for n, p in SUITE.items() if p.group in groups}
    if "real" in groups:
        from benchmarks.problems.yahpo import real_problems

        out.update(real_problems())
    if "constrained" in groups:
        from benchmarks.problems.constrained import constrained_problems

        out.update(constrained_problems())
    if "noisy" in groups:
        from benchmarks.problems.noisy import noisy_problems

        out.update(noisy_problems())
    if "multi" in groups:
        from benchmarks.problems.multi import multi_problems

        out.update(multi_problems())
    if "multi-real" in groups:
        from benchmarks.problems.yahpo_multi import multi_real_problems

        out.update(multi_real_problems())
    if "noisy-live" in groups:
        from benchmarks.problems.hpo import noisy_live_problems

        out.update(noisy_live_problems())
    if "noisy-real" in groups:
        from benchmarks.problems.yahpo import noisy_real_problems

        out.update(noisy_real_problems())
    if "extreme" in groups:
        from benchmarks.problems.extreme import extreme_problems

        out.update(extreme_problems())
    if "extreme-live" in groups:
        from benchmarks.problems.hpo import extreme_live_problems

        out.update(extreme_live_problems())
    if "extreme-real" in groups:
        from benchmarks.problems.yahpo import extreme_real_problems

        out.update(extreme_real_problems())
    return out


def list_text(groups: Sequence[str] = SYNTHETIC_GROUPS) -> str:
    problems = list(all_problems(groups).values())
    tuning = {p.name for p in split(problems, "tuning")}
    lines = [describe(), "", "split (stratified by group):"]
    lines += [
        f"  {p.name:<22} {p.group:<12} {'tuning' if p.name in tuning else 'confirmation'}"
        for p in problems
    ]
    lines += ["", "methods:"]
    lines += [f"  {m.name:<18} {m.label}" for m in methods_mod.REGISTRY.values()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(list_text(args.groups))
        return 0
    if args.update_best_known:
        real = all_problems(["real"]).values()
        print("\n".join(best_known.update(BEST_KNOWN, BENCHMARKS, real, variants=True)))
        return 0
    n_seeds = (
        args.seeds if args.seeds is not None else (QUICK_SEEDS if args.quick else DEFAULT_SEEDS)
    )
    seeds = list(range(n_seeds))
    known = all_problems(args.groups)
    if any(n not in known for n in args.problems or ()):
        known = {**all_problems(LOCAL_GROUPS), **known}
    unknown = [n for n in args.problems or () if n not in known]
    if unknown:
        raise SystemExit(f"unknown problems {unknown} in groups {args.groups}; see --list")
    problems = split([known[n] for n in (args.problems or known)], args.split)
    requested = list(dict.fromkeys(args.methods or methods_mod.SUITE_METHODS))
    skipped: dict[str, str] = {}
    if not args.report_only:  # a cached run is reported whether or not it could run here
        for m in requested:
            why = methods_mod.unavailable(methods_mod.resolve(m))
            if why:
                skipped[m] = why
                print(f"skipping method {m!r}: {why}", flush=True)
    methods = [m for m in requested if m not in skipped]
    out: Path = args.out
    root = out / "runs"
    resume = args.resume or bool(args.rerun)
    if args.rerun and not args.report_only:
        n = cache.discard(root, list(args.rerun))
        print(f"--rerun: discarded {n} cached runs of {', '.join(args.rerun)}", flush=True)

    if not args.report_only:
        tasks = runner.order_tasks(problems, methods, seeds)
        runner.run_tasks(tasks, root, resume=resume, jobs=args.jobs)

    scored = {}
    table = best_known.load(BEST_KNOWN)
    scoring = [best_known.rescored(p, table) for p in problems]
    for k, p in enumerate(problems):
        if p.group == "multi-real":  # HV of the calibration's front and every reported run
            from benchmarks.problems.yahpo_multi import best_known_hv

            runs = [cache.load_valid(root, p, m, s) for m in methods for s in seeds]
            hv = best_known_hv(p, [r for r in runs if r is not None])
            scoring[k] = dataclasses.replace(p, hv_star=max(hv, p.hv_star or 0.0))
    beaten = 0
    for p, q in zip(problems, scoring, strict=True):
        for m in methods:
            for s in seeds:
                run = cache.load_valid(root, p, m, s)
                if run is not None:
                    scored[(p.name, m, s)] = report.score(run, q)
                    # a noisy observation may fall below f*: its noise-free value may not
                    beaten += best_known.beats(run.true_values or run.values, q.f_star)
    command = "python -m benchmarks suite " + " ".join(sys.argv[1:] if argv is None else argv)
    preamble = []
    if args.split != "all":
        preamble = [f"Split: {args.split} ({', '.join(p.name for p in problems)}).", ""]
    if any(p.group == "multi-real" for p in problems):
        preamble += [
            "Hypervolume regret of a `multi-real` problem: against the hypervolume of the "
            "union of the calibration's random front and every run reported here "
            "(`benchmarks/problems/yahpo_multi.py`).",
            "",
        ]
    if any(q.f_star != p.f_star for p, q in zip(problems, scoring, strict=True)):
        preamble += [
            "f* of a YAHPO problem: the lower of the calibration's and the best final value "
            "of any run stored under `benchmarks/` (`benchmarks/results/yahpo_best_known.json`"
            "; the runs' regrets against the calibration's alone were clamped at 0).",
            "",
        ]
    if beaten:
        print(f"{beaten} runs beat the best known value (scored 0): --update-best-known")
        preamble += [f"**{beaten} runs beat that value and were scored 0.**", ""]
    path = report.write_suite_report(
        args.report_dir or out,
        scored,
        scoring,
        methods,
        seeds,
        args.reference,
        skipped=skipped,
        command=command.strip(),
        preamble=preamble,
    )
    print(f"report: {path}", flush=True)
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.suite.run
    from benchmarks import _preamble

    _preamble.forward("suite")
