"""Cheap and expensive trials with the study's wall clock as the budget, sampler included.

Live scikit-learn problems (``benchmarks.problems.hpo.live_problems``): on bundled or
generated data, two whose trials take about 5-60 ms and two whose trials take about 0.05-2 s;
the paper's DT on w2a and KNN on a1a (``dt-w2a``, ``knn-a1a``: 1-180 ms; data through
``COSTBO_DATA_DIR`` offline, ``benchmarks.problems.data``). Each run gets a wall-clock
budget for the whole ``study.optimize`` (sampler, Optuna and objective; ``clock="wall"``:
nothing is reported, so ``CostRolloutSampler`` measures the trials and charges its own time);
a trial counts if it finished within the budget. Methods
run interleaved in this process, seed by seed (the order rotated per seed), so that the load
of a shared machine falls on all of them alike.

Reported per problem: mean final regret (best value of the run minus the best value any run
of that problem found), mean rank over seeds (1 = best; ties share), mean trials, the share
of the wall clock spent outside the objective (the sampler, plus Optuna's bookkeeping, which
is the same for all methods), the full / quick suggestions of ``CostRolloutSampler``, and the
paired test of the first method against each other one (Wilcoxon signed-rank over seeds; the
verdict by the signed-rank statistic).

    pip install torch==2.13.0   # for GPSampler
    python -m benchmarks cheap-trials [--seeds 10] [--problems sgd-digits tree-synth ...]
    python -m benchmarks cheap-trials --methods rollout eipu optuna-tpe --tag cheap_trials_x
    python -m benchmarks cheap-trials --tag cheap_trials_x --report-only

Methods: names or specs of ``benchmarks.harness.methods`` (default: ``rollout``,
``rollout:charge_sampler_time=false``, ``optuna-tpe``, ``random``, ``optuna-gp``); the former
names are still read: ``costbo`` (``rollout``), ``costbo-acq-A`` (``A``), ``costbo-prefetch``
(``rollout:prefetch=true``), ``costbo-uncharged`` (``rollout:charge_sampler_time=false``),
``costbo-shareF`` (``rollout:max_sampler_share=F``), ``tpe``, ``gp``.

Every run is cached as ``<out>/runs/<tag>/<problem>/<method>/seed<NNN>.csv`` (with each
trial's end time); ``--resume`` runs only what is missing; the report is ``<out>/<tag>.md``.
``--smoke``: one seed, budgets x 0.1, tag ``<tag>_smoke``. ``--budget-scale 3``: every budget
three times as long (the expensive problems with 30 s).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import math
import os
from pathlib import Path
import re

import numpy as np

from benchmarks.harness import cache
from benchmarks.harness import package_probes
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run
from benchmarks.problems.data import DataUnavailableError
from benchmarks.problems.hpo import PaperLiveEvaluator
from benchmarks.problems.hpo import live_problems


RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_METHODS = (
    "rollout",
    "rollout:charge_sampler_time=false",
    "optuna-tpe",
    "random",
    "optuna-gp",
)
LEGACY = {
    "costbo": "rollout",
    "costbo-prefetch": "rollout:prefetch=true",
    "costbo-uncharged": "rollout:charge_sampler_time=false",
    "tpe": "optuna-tpe",
    "gp": "optuna-gp",
}


def method_name(name: str) -> str:
    """The harness's name of a method (the former names of this script translated)."""
    if name in LEGACY:
        return LEGACY[name]
    if name.startswith("costbo-acq-"):  # e.g. costbo-acq-eipu: another acquisition
        return name.removeprefix("costbo-acq-")
    match = re.fullmatch(r"costbo-share([0-9.]+)", name)
    if match:
        return f"rollout:max_sampler_share={match.group(1)}"
    return name


def in_budget(run: Run, budget: float) -> tuple[float, int]:
    """(best value, number of trials) among the trials that finished within the budget."""
    kept = [v for v, t in zip(run.values, run.elapsed, strict=True) if t <= budget]
    finite = [v for v in kept if math.isfinite(v)]
    return (min(finite) if finite else math.inf), len(kept)


def sampler_share(run: Run) -> float:
    """Share of the run's wall clock outside the objective's fit and score (the sampler and
    Optuna's bookkeeping, over the whole run: the last trial may end after the budget)."""
    total = float(run.meta.get("optimize_s", run.run_s))
    return max(total - sum(run.costs), 0.0) / total if total > 0 else 0.0


def _routes(runs: list[Run]) -> str:
    full = [float(r.meta.get("n_full", -1)) for r in runs]
    if min(full) < 0:
        return "-"
    return f"{np.mean(full):.0f} / {np.mean([float(r.meta['n_quick']) for r in runs]):.0f}"


def write_report(
    runs: dict[tuple[str, str, int], Run],
    problems: Sequence[Problem],
    methods: list[str],
    seeds: list[int],
) -> str:
    lines = []
    for problem in problems:
        mine = {(m, s): r for (p, m, s), r in runs.items() if p == problem.name}
        if not mine:
            continue
        best = {key: in_budget(r, problem.budget) for key, r in mine.items()}
        overall = min(b for b, _ in best.values())
        complete = [s for s in seeds if all((m, s) in mine for m in methods)]
        ranks = np.array(
            [stats.ranks_in_cell(np.array([best[(m, s)][0] for m in methods])) for s in complete]
        )  # (seeds, methods)
        lines.append(
            f"\n### {problem.name} (budget {problem.budget:g} s wall-clock, "
            f"{len(complete)} seeds)\n"
        )
        lines.append(
            "| method | regret (mean) | regret (median) | rank (mean) | trials | sampler share "
            f"| full / quick suggestions | vs {methods[0]}: W/T/L, p, verdict |"
        )
        lines.append("|---|---|---|---|---|---|---|---|")
        for j, m in enumerate(methods):
            keys = [(m, s) for s in seeds if (m, s) in mine]
            if not keys:
                continue
            regret = np.array([best[k][0] - overall for k in keys])
            versus = ""
            if j > 0 and complete:
                t = stats.paired(
                    [best[(methods[0], s)][0] for s in complete],
                    [best[(m, s)][0] for s in complete],
                )
                versus = f"{t.wins}/{t.ties}/{t.losses}, p {report.fmt_p(t.p_value)}, {t.verdict}"
            lines.append(
                f"| {m} | {regret.mean():.4f} | {np.median(regret):.4f} | "
                f"{ranks[:, j].mean() if len(complete) else float('nan'):.2f} | "
                f"{np.mean([best[k][1] for k in keys]):.0f} | "
                f"{100 * np.mean([sampler_share(mine[k]) for k in keys]):.0f}% | "
                f"{_routes([mine[k] for k in keys])} | {versus} |"
            )
    loads = [float(r.meta["load1"]) for r in runs.values() if "load1" in r.meta]
    text = "\n".join(lines)
    if loads:
        text += (
            f"\n\nLoad average (1 min) during the runs: mean {np.mean(loads):.1f}, "
            f"max {np.max(loads):.1f} on {os.cpu_count()} cores.\n"
        )
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--methods", nargs="*", default=list(DEFAULT_METHODS))
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--tag", default="cheap_trials")
    parser.add_argument(
        "--budget-scale", type=float, default=1.0, help="multiply every problem's budget"
    )
    parser.add_argument("--resume", action="store_true", help="run only what the cache lacks")
    parser.add_argument("--report-only", action="store_true", help="report from the cache")
    args = parser.parse_args(argv)
    problems = live_problems(scale=(0.1 if args.smoke else 1.0) * args.budget_scale)
    chosen = [problems[n] for n in (args.problems or problems)]
    seeds = list(range(args.first_seed, args.first_seed + (1 if args.smoke else args.seeds)))
    tag = args.tag + ("_smoke" if args.smoke else "")
    methods = list(dict.fromkeys(method_name(m) for m in args.methods))
    root = args.out / "runs" / tag
    args.out.mkdir(parents=True, exist_ok=True)

    if not args.report_only:
        for problem in chosen:
            if isinstance(problem.evaluator, PaperLiveEvaluator):
                try:
                    problem.evaluator.load()  # the data, before any timed run
                except DataUnavailableError as exc:
                    raise SystemExit(str(exc)) from None
            # Warm up imports and first calls (torch, sklearn) outside any timed run.
            warm_up = problem.variant("warm-up", budget=0.3)
            for method in methods:
                runner.run_one(warm_up, method, 0)
        tasks: list[runner.Task] = []
        for i, seed in enumerate(seeds):
            order = methods[i % len(methods) :] + methods[: i % len(methods)]
            tasks += [(p, m, seed) for p in chosen for m in order]

        def note(run: Run) -> None:
            run.meta["load1"] = os.getloadavg()[0]

        runner.run_tasks(
            tasks,
            root,
            resume=args.resume,
            jobs=0,
            probe=package_probes.effort_counts,
            on_run=note,
        )
    runs: dict[tuple[str, str, int], Run] = {}
    for p in chosen:
        for m in methods:
            for s in seeds:
                run = cache.load_valid(root, p, m, s)
                if run is not None:
                    runs[(p.name, m, s)] = run
    if not runs:
        raise SystemExit(f"error: no cached runs under {root}")
    text = write_report(runs, chosen, methods, seeds)
    path = args.out / f"{tag}.md"
    path.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.cheap_trials
    from benchmarks import _preamble

    _preamble.forward("cheap-trials")
