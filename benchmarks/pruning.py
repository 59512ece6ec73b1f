"""Pruning under a budget (issue 24): samplers with pruners on problems with steps.

    python -m benchmarks pruning --seeds 10 --resume                  # every problem and method
    python -m benchmarks pruning --tag before --problems yahpo-lcbench-189905-epochs --resume
    python -m benchmarks pruning --tag before --report-only           # the report from the cache
    python -m benchmarks pruning --calibrate-live                     # the live MLP's costs
    python -m benchmarks pruning --calibrate-live --problems live-hgb-synth-rounds
    python -m benchmarks pruning --list

Problems (``benchmarks/problems/stepped.py``): YAHPO Gym lcbench (epochs 1..52) and
rbv2_xgboost with the fixed gbtree space (trainsize rungs as steps 1, 3, 9, 27), which need the
benchmark environment of ``benchmarks/problems/README_yahpo.md``, and two live scikit-learn
problems with CPU seconds reported: an MLP (27 ``partial_fit`` epochs on digits, validation
error) and gradient boosting (12 ``warm_start`` steps of 10 rounds on generated data,
validation log loss); each also as ``<name>-b<x>``, the
same with x times its budget (``-b2``: 80 full trials' cost, half budget at the usual 40). Methods
(``benchmarks/harness/methods.py``, ``NAME+PRUNER``): by default the package's default sampler
with Hyperband, with Median and without a pruner, TPE + Hyperband, TPE + Median, GPSampler +
Median, random search + Hyperband. Each run reports every step (``trial.report``), asks
``trial.should_prune()`` after each, and charges a pruned trial the cumulative cost of the
step it reached (``benchmarks/harness/runner.py``); a trial starts while the finished trials
spent less than the budget.

Scores: the regret of the best COMPLETE trial (its last step's value minus f*, or the raw
value of a live problem, whose optimum is unknown): a pruned trial has no final
value. At half budget: the best COMPLETE trial among those whose cumulative cost, pruned
trials' costs included, is within half the budget. Report: ranks within each (problem, seed)
at the end and at half budget; paired Wilcoxon tests of ``rollout+hyperband`` and
``rollout+median`` against every other method with the harness's verdict rule
(``benchmarks/harness/stats.py``); how many trials each method pruned and where.

Everything goes to ``benchmarks/results/pruning/<tag>/`` (default tag ``latest``; the
committed baseline of the package before pruned trials informed its models is ``before``):
``runs/<problem>/<method>/seed<NNN>.csv`` (``step`` and ``state`` columns per trial),
``report.md``, its figure and CSVs (``--suffix _20`` names them ``report_20.md``, ... beside
them). ``--resume`` runs only what the cache lacks, so a stopped session
continues where it stopped; problems that cannot run here (no ``yahpo_gym``) are skipped with
the reason and reported from the cache.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
import importlib.util
import math
from pathlib import Path
import sys
import time
from typing import Any

import numpy as np

from benchmarks.harness import best_known
from benchmarks.harness import cache
from benchmarks.harness import figures
from benchmarks.harness import methods as methods_mod
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import Problem
from benchmarks.problems import stepped


RESULTS = Path(__file__).resolve().parent / "results" / "pruning"
BEST_KNOWN = RESULTS / "best_known.json"
"""Per YAHPO problem, the lower of f* and the best final value of any stored run
(:mod:`benchmarks.harness.best_known`); regrets are taken against it."""
DEFAULT_SEEDS = 10


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds 0..N-1")
    parser.add_argument(
        "--problems",
        nargs="+",
        default=None,
        help="problem names (default: stepped.DEFAULT_PROBLEMS, two lcbench, one rbv2_xgboost "
        "and the live one; see --list); <name>-b<x> is the problem with x times its budget",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="method names, NAME+median or NAME+hyperband (default: the seven of issue 24)",
    )
    parser.add_argument(
        "--references",
        nargs="+",
        default=list(methods_mod.PRUNING_REFERENCES),
        help="methods tested against every other one (default: rollout+hyperband rollout+median)",
    )
    parser.add_argument(
        "--tag", default="latest", help="results folder under benchmarks/results/pruning/"
    )
    parser.add_argument("--out", type=Path, default=None, help="results folder (overrides --tag)")
    parser.add_argument("--resume", action="store_true", help="run only what the cache lacks")
    parser.add_argument("--report-only", action="store_true", help="no runs: report the cache")
    parser.add_argument(
        "--suffix",
        default="",
        help="appended to the name of every file the report writes (report_20.md, "
        "regret_vs_cost_20.png, ... for --suffix _20), so a report over more seeds or other "
        "methods sits beside report.md instead of replacing it",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes for YAHPO runs (default 1)"
    )
    parser.add_argument(
        "--calibrate-live",
        type=int,
        nargs="?",
        const=30,
        default=None,
        metavar="N",
        help="measure N (default 30) random configurations of each live problem of "
        "--problems (default: the MLP), write live_calibration.md (the MLP) or "
        "live_calibration_hgb.md (the gradient boosting) and exit",
    )
    parser.add_argument(
        "--max-trials",
        type=int,
        default=None,
        help=f"trials per run at most (default {stepped.MAX_TRIALS}); a run cached under a "
        "lower cap that hit it is run again with --resume, one that ended by its budget is kept",
    )
    parser.add_argument(
        "--update-best-known",
        action="store_true",
        help="rewrite best_known.json from every stored run under benchmarks/results/pruning/ "
        "(the value regrets are taken against), then exit",
    )
    parser.add_argument("--list", action="store_true", help="problems and methods, then exit")
    args = parser.parse_args(argv)
    if "/" in args.suffix or "\\" in args.suffix:
        parser.error(f"--suffix {args.suffix!r} names a folder; it may only extend file names")
    return args


def package_ref() -> str:
    """The last commit that changed ``optuna_costbo/`` in this checkout (``+dirty`` when it
    has uncommitted changes there), or ``unknown``: which package a run measured."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    try:
        ref = subprocess.run(
            ["git", "log", "-1", "--format=%h", "--", "optuna_costbo"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "optuna_costbo"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return (ref or "unknown") + ("+dirty" if dirty else "")


NEAR = 0.01
"""Two trials are near repeats when every numeric parameter is within NEAR of the other's in
the unit box (log scale where the parameter is) and every categorical one is equal."""


def near_repeats(sampler: Any, study: Any) -> dict[str, Any]:
    """The run's probe: how many trials are near repeats of an earlier trial (``NEAR``), and
    of an earlier PRUNED one (a sampler whose model sees only COMPLETE trials can propose a
    pruned region again and again)."""
    import optuna

    trials = study.get_trials(deepcopy=False)
    names = sorted({k for t in trials for k in t.params})
    units = np.full((len(trials), len(names)), np.nan)  # (n, d)
    for i, t in enumerate(trials):
        for j, name in enumerate(names):
            if name not in t.params:
                continue
            dist, value = t.distributions[name], t.params[name]
            if isinstance(dist, optuna.distributions.CategoricalDistribution):
                units[i, j] = 1e6 * dist.choices.index(value)  # equal or far apart
            else:
                lo, hi, x = float(dist.low), float(dist.high), float(value)
                if dist.log:
                    lo, hi, x = math.log(lo), math.log(hi), math.log(x)
                units[i, j] = (x - lo) / (hi - lo) if hi > lo else 0.0
    repeats = repeats_of_pruned = 0
    pruned = np.array([t.state == optuna.trial.TrialState.PRUNED for t in trials])  # (n,)
    for i in range(1, len(trials)):
        with np.errstate(invalid="ignore"):
            close = np.all(np.abs(units[:i] - units[i]) <= NEAR, axis=1)  # (i,)
        repeats += bool(close.any())
        repeats_of_pruned += bool((close & pruned[:i]).any())
    return {"near_repeats": repeats, "near_repeats_of_pruned": repeats_of_pruned}


def cannot_run(name: str) -> str | None:
    """Why problem ``name`` cannot run in this environment (None if it can)."""
    if stepped.base_name(name) in stepped.LIVE_NAMES:
        return None
    if importlib.util.find_spec("yahpo_gym") is None:
        return "yahpo_gym is not installed (benchmarks/problems/README_yahpo.md)"
    from benchmarks.problems.yahpo import yahpo_data_dir

    try:
        yahpo_data_dir()
    except FileNotFoundError as exc:
        return str(exc)
    return None


LIVE_CALIBRATION = {
    stepped.LIVE_NAME: ("live_calibration", "LIVE_BUDGET"),
    stepped.LIVE_HGB_NAME: ("live_calibration_hgb", "LIVE_HGB_BUDGET"),
}
"""Live problem -> (the calibration file's stem, the name of its budget in ``stepped``)."""


def calibrate_live(n: int, out: Path, name: str = stepped.LIVE_NAME) -> Path:
    """Run ``n`` random configurations of the live problem ``name``; write what a budget is
    40x of (``live_calibration.md``; ``live_calibration_hgb.md`` for the gradient boosting)."""
    problem = stepped.get_problem(name)
    start = time.perf_counter()
    _, rows = stepped.calibrate_live(n, name=name)
    full = rows[:, 1]
    last = problem.steps[-1]
    stem, budget_const = LIVE_CALIBRATION[name]
    lines = [
        f"# Live problem {name}: cost of random configurations",
        "",
        f"`python -m benchmarks pruning --calibrate-live {n} --problems {name}`: {n} random "
        f"configurations of `{name}` (uniform in the unit box of the space, seed 0), "
        f"{last} steps each; CPU seconds of each step's training and validation, one "
        f"thread. {report.versions_line(time.perf_counter() - start)}",
        "",
        "| quantity | value |",
        "|---|---|",
        f"| mean CPU s of {last} steps | {full.mean():.3f} |",
        f"| min / median / max | {full.min():.3f} / {np.median(full):.3f} / {full.max():.3f} |",
        f"| mean CPU s of step 1 | {rows[:, 0].mean():.4f} |",
        f"| 40 x mean (the budget rule of the YAHPO problems) | {40 * full.mean():.1f} |",
        f"| budget in use (`stepped.{budget_const}`) | {problem.budget:g} |",
        f"| final value: min / median | {rows[:, 2].min():.4f} / {np.median(rows[:, 2]):.4f} |",
        "",
    ]
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}.md"
    path.write_text("\n".join(lines))
    return path


# -- the report -----------------------------------------------------------------------------


def _pruned_at(run: runner.Run, step: int) -> int:
    """Trials of ``run`` pruned at ``step``."""
    return sum(s == "pruned" and k == step for s, k in zip(run.states, run.steps, strict=True))


def pruning_rows(
    scored: dict[tuple[str, str, int], report.Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
) -> list[dict[str, Any]]:
    """Per (problem, method): what the pruner did, averaged over the seeds.

    ``startup_trial``: the number of trials started when the run had 2(d+1) COMPLETE trials
    (where the package's start-up design ended before pruned trials informed its models;
    nan if never reached)."""
    rows: list[dict[str, Any]] = []
    for p in problems:
        for m in methods:
            runs = [sc.run for key, sc in sorted(scored.items()) if key[:2] == (p.name, m)]
            if not runs:
                continue
            n = np.array([len(r.states) for r in runs], dtype=float)
            complete = np.array([r.states.count("complete") for r in runs], dtype=float)
            pruned = np.array([r.states.count("pruned") for r in runs], dtype=float)
            at_last = np.array([_pruned_at(r, p.max_step) for r in runs], dtype=float)
            at_first = np.array([_pruned_at(r, p.steps[0]) for r in runs], dtype=float)
            need = max(4, 2 * (p.dim + 1))
            startup = [
                float(np.searchsorted(np.cumsum([s == "complete" for s in r.states]), need) + 1)
                if r.states.count("complete") >= need
                else math.nan
                for r in runs
            ]
            spent_pruned = [
                sum(c for c, s in zip(r.costs, r.states, strict=True) if s == "pruned")
                / max(sum(r.costs), 1e-300)
                for r in runs
            ]
            rows.append(
                {
                    "problem": p.name,
                    "method": m,
                    "runs": len(runs),
                    "trials": float(n.mean()),
                    "complete": float(complete.mean()),
                    "pruned": float(pruned.mean()),
                    "pruned_share": float(pruned.sum() / max(n.sum(), 1.0)),
                    "pruned_first_step": float(at_first.mean()),
                    "pruned_last_step": float(at_last.mean()),
                    "cost_share_pruned": float(np.mean(spent_pruned)),
                    "startup_trial": float(np.nanmedian(startup))
                    if np.isfinite(startup).any()
                    else math.nan,
                    "runs_without_startup_end": int(np.sum(~np.isfinite(startup))),
                    "near_repeats_of_pruned": float(
                        np.mean([r.meta.get("near_repeats_of_pruned", math.nan) for r in runs])
                    ),
                    "spent_share": float(np.mean([sum(r.costs) / p.budget for r in runs])),
                    "capped": int(sum(r.capped for r in runs)),
                    "failed_trials": float(np.mean([r.states.count("fail") for r in runs])),
                }
            )
    return rows


def _tests_section(
    tests: list[dict[str, Any]],
    problems: Sequence[Problem],
    methods: Sequence[str],
    reference: str,
    label: dict[str, str],
) -> list[str]:
    others = [m for m in methods if m != reference]
    md = [f"## Paired tests: `{reference}` against each method", ""]
    md += [
        "Wilcoxon signed-rank over seeds, per problem; better / same / worse: how many problems "
        f"`{reference}` is significantly better / not significantly different / significantly "
        "worse (p < 0.05, the direction by the signed-rank sums W- against W+, not the mean); "
        "W/T/L: wins / ties / losses over (problem, seed) pairs.",
        "",
        "| method | end: better/same/worse | end: W/T/L | half: better/same/worse | half: W/T/L |",
        "|---|---|---|---|---|",
    ]
    for m in others:
        cells = [c for point in report.POINTS for c in report.verdict_counts(tests, m, point)]
        md.append(f"| {label[m]} | " + " | ".join(cells) + " |")
    md.append("")
    for point in report.POINTS:
        when = "end of budget" if point == "end" else "half budget"
        md += [
            f"### `{reference}`, per problem, {when}",
            "",
            f"Mean regret difference (`{reference}` minus the other; negative: `{reference}` "
            "lower), p, W/T/L, and the verdict when p < 0.05.",
            "",
            "| problem | " + " | ".join(label[m] for m in others) + " |",
            "|---" * (len(others) + 1) + "|",
        ]
        for p in problems:
            cells = []
            for m in others:
                r = next(
                    (
                        r
                        for r in tests
                        if (r["problem"], r["method"], r["point"]) == (p.name, m, point)
                    ),
                    None,
                )
                if r is None:
                    cells.append("-")
                    continue
                star = "**" if r["p_value"] < stats.ALPHA else ""
                verdict = f" {r['verdict']}" if r["verdict"] != "same" else ""
                cells.append(
                    f"{star}{report.fmt_g(r['mean_diff'], 2)} (p {report.fmt_g(r['p_value'], 2)})"
                    f"{star} {r['wins']}/{r['ties']}/{r['losses']}{verdict}"
                )
            md.append(f"| {p.name} | " + " | ".join(cells) + " |")
        md.append("")
    return md


def write_report(
    out: Path,
    scored: dict[tuple[str, str, int], report.Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
    references: Sequence[str],
    *,
    command: str,
    skipped: dict[str, str],
    failed: Sequence[runner.Run] = (),
    beaten: int = 0,
    suffix: str = "",
) -> Path:
    """``report.md``, its figure and its CSVs under ``out``, each name's stem followed by
    ``suffix`` (``report_20.md`` for ``"_20"``); the Markdown path."""
    if "/" in suffix or "\\" in suffix:
        raise ValueError(f"suffix {suffix!r} names a folder; it may only extend file names")
    out.mkdir(parents=True, exist_ok=True)

    def named(stem: str, ext: str) -> Path:
        return out / f"{stem}{suffix}.{ext}"

    label = {m: methods_mod.label(m) for m in methods}
    per_problem, complete = report.rank_tables(scored, problems, methods, seeds)
    grouped = report.group_ranks(per_problem, problems, methods)
    scope_list = report.scopes(problems)
    refs = [r for r in references if r in methods]
    tests = {r: report.paired_tests(scored, problems, methods, seeds, r) for r in refs}
    prune = pruning_rows(scored, problems, methods)

    summary = [
        {
            **report.summary_row(p, m, mine),
            **report.rank_fields(p, m, per_problem),
            "run_s_mean": float(np.mean([x.run.run_s for x in mine])),
            "suggest_s_mean": float(np.mean([x.run.suggest_s for x in mine])),
        }
        for p in problems
        for m in methods
        if (mine := [scored[(p.name, m, s)] for s in seeds if (p.name, m, s) in scored])
    ]
    report.write_csv(named("problem_summary", "csv"), summary)
    report.write_csv(named("pruning", "csv"), prune)
    report.write_csv(named("wilcoxon", "csv"), [row for r in refs for row in tests[r]])
    report.write_csv(named("ranks", "csv"), report.rank_rows(grouped, scope_list, methods))
    report.write_csv(
        named("runs_summary", "csv"),
        [
            {
                "problem": pn,
                "method": m,
                "seed": s,
                "n_trials": sc.n_trials,
                "complete": sc.run.states.count("complete"),
                "pruned": sc.run.states.count("pruned"),
                "spent": sc.spent,
                "final_regret": sc.final,
                "half_regret": sc.half,
                "run_s": sc.run.run_s,
                "suggest_s": sc.run.suggest_s,
                "capped": int(sc.run.capped),
            }
            for (pn, m, s), sc in sorted(scored.items())
        ],
    )
    figure = named("regret_vs_cost", "png")
    curves = figures.suite_figure(figure, scored, problems, methods, seeds)
    report.write_csv(named("curves", "csv"), curves)

    groups = scope_list[1:]
    counts = ", ".join(f"{sum(p.group == g for p in problems)} {g}" for g in groups)
    md = ["# Pruning under a budget: results", ""]
    md += [
        f"Command: `{command}`",
        "",
        f"{len(problems)} problems ({counts}), {len(methods)} methods, seeds "
        f"{report.seed_text(seeds)}; {len(scored)} runs; ranks over "
        f"{sum(complete.values())} complete (problem, seed) cells (every method ran): "
        f"{', '.join(f'{k} {v}' for k, v in complete.items())}.",
        "",
        "Regret: the last step's value of the best COMPLETE trial minus f* (YAHPO: the "
        "lower of the calibration's best known value and the best final value of any stored "
        "run of this benchmark, `benchmarks/results/pruning/best_known.json`; the live "
        "problems: f* unknown, the raw value: the MLP's validation error, the gradient "
        "boosting's validation log loss). "
        + (
            f"**{beaten} runs beat that value and were scored 0: the table is stale.** "
            if beaten
            else ""
        )
        + "A pruned trial has no final value; its cost counts. Half budget: the best "
        "COMPLETE trial among the trials within half the budget of cumulative cost. Ours gets "
        "its pruner wrapped, `CostBudgetPruner(pruner)`; Optuna's samplers the bare pruner; "
        "`MedianPruner()` with Optuna's defaults, `HyperbandPruner(min_resource=1, "
        "max_resource=<last step>, reduction_factor=3)`; no pruner: `NopPruner()`. "
        "`should_prune()` is asked after every step, the last included (Optuna's examples do).",
        "",
    ]
    refs_found = Counter(str(sc.run.meta.get("package_ref", "unknown")) for sc in scored.values())
    md += [
        "Package (the last commit that changed `optuna_costbo/` when the run was made): "
        + ", ".join(f"{ref} ({n} runs)" for ref, n in refs_found.most_common())
        + ". "
        + report.versions_line(None),
        "",
    ]
    if skipped:
        md += ["Not run in this session (reported from the cache):", ""]
        md += [f"- {k}: {why}" for k, why in skipped.items()] + [""]

    md += ["## Average rank (lower is better)", ""]
    md += [
        f"Ranks within each (problem, seed) by regret, averaged over seeds, then over problems "
        f"(all, then per group). 1 = best of {len(methods)}.",
        "",
        "| method | "
        + " | ".join(f"{scope}, {point}" for scope in scope_list for point in report.POINTS)
        + " |",
        "|---" * (1 + 2 * len(scope_list)) + "|",
    ]
    for m in methods:
        cells = [
            report.fmt_g(grouped[(scope, m, point)], 3)
            for scope in scope_list
            for point in report.POINTS
        ]
        md.append(f"| {label[m]} | " + " | ".join(cells) + " |")
    md.append("")

    for point in report.POINTS:
        md += [
            f"## Mean regret, {'end of budget' if point == 'end' else 'half budget'}",
            "",
            "Mean over seeds (regret; the live problems: the raw value), and the average "
            "rank within the problem in brackets.",
            "",
            "| method | " + " | ".join(p.name for p in problems) + " |",
            "|---" * (len(problems) + 1) + "|",
        ]
        for m in methods:
            cells = []
            for p in problems:
                row = next(
                    (r for r in summary if (r["problem"], r["method"]) == (p.name, m)), None
                )
                if row is None:
                    cells.append("-")
                    continue
                key = "final_mean" if point == "end" else "half_mean"
                rank = row["rank_end" if point == "end" else "rank_half"]
                cells.append(f"{report.fmt_g(row[key])} ({report.fmt_g(rank, 2)})")
            md.append(f"| {label[m]} | " + " | ".join(cells) + " |")
        md.append("")

    for r in refs:
        md += _tests_section(tests[r], problems, methods, r, label)

    md += ["## What the pruners did", ""]
    md += [
        "Per run, averaged over seeds: trials started, COMPLETE and pruned trials, pruned at "
        "the first step and at the last step (after the whole cost was paid), the share of "
        "the spent cost that went to pruned trials, and the median trial number at which the "
        "run had 2(d+1) COMPLETE trials (where the package's start-up design ended before "
        "pruned trials informed its models, at ff6f55a; since, it counts pruned trials too; "
        "in brackets the runs that never got there); near repeats of a pruned trial: "
        f"trials within {NEAR} of an earlier PRUNED "
        "trial in every parameter (unit box, log scale where the parameter is); spent: the "
        "cost spent over the budget; capped: runs stopped at the trial cap ("
        + ", ".join(sorted({f"{p.max_trials}" for p in problems}))
        + " trials) with budget left.",
        "",
        "| problem | method | trials | complete | pruned | pruned at first step "
        "| pruned at last step | cost share of pruned | 2(d+1) complete at trial (never) "
        "| near repeats of a pruned trial | spent | capped |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in prune:
        startup = row["startup_trial"]
        md.append(
            f"| {row['problem']} | {label[row['method']]} | {row['trials']:.1f} "
            f"| {row['complete']:.1f} | {row['pruned']:.1f} ({100 * row['pruned_share']:.0f}%) "
            f"| {row['pruned_first_step']:.1f} | {row['pruned_last_step']:.1f} "
            f"| {100 * row['cost_share_pruned']:.0f}% "
            f"| {'-' if math.isnan(startup) else f'{startup:g}'} "
            f"({row['runs_without_startup_end']}) | {row['near_repeats_of_pruned']:.1f} "
            f"| {100 * row['spent_share']:.0f}% | {row['capped']} |"
        )
    md.append("")

    md += ["## Time per run", ""]
    md += [
        "| method | mean s / run | max s / run | mean s in suggestions | total min |",
        "|---|---|---|---|---|",
    ]
    for m in methods:
        mine = [sc for (_, mm, _), sc in scored.items() if mm == m]
        if not mine:
            continue
        t = np.array([sc.run.run_s for sc in mine])
        md.append(
            f"| {label[m]} | {t.mean():.1f} | {t.max():.0f} "
            f"| {np.mean([sc.run.suggest_s for sc in mine]):.1f} | {t.sum() / 60:.1f} |"
        )
    md.append("")
    md += ["## Flags", ""]
    notes = [f"- {r.problem} / {r.method} / seed {r.seed}: FAILED: {r.error}" for r in failed]
    for (pn, m, s), sc in sorted(scored.items()):
        if sc.run.capped:
            notes.append(f"- {pn} / {m} / seed {s}: hit the trial cap")
        if math.isnan(sc.final):
            notes.append(f"- {pn} / {m} / seed {s}: no COMPLETE trial")
    logs: Counter[str] = Counter()
    for sc in scored.values():
        for msg, count in sc.run.meta.get("log_messages", {}).items():
            logs[f"{sc.run.method}: {report.shorten(msg)}"] += count
    notes += [f"- logged {count}x: `{msg}`" for msg, count in logs.most_common(8)]
    md += notes or ["None: no failed run, no capped run, every run has a COMPLETE trial."]
    md += ["", f"![median regret vs cost]({figure.name})", ""]
    path = named("report", "md")
    path.write_text("\n".join(md))
    return path


# -- the command ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out: Path = args.out or RESULTS / args.tag
    if args.list:
        for name in stepped.problem_names():
            mark = "*" if name in stepped.DEFAULT_PROBLEMS else " "
            print(f"{mark} {name:<36} {cannot_run(name) or ''}")
        print("(* run by default)")
        print("methods (default):", " ".join(methods_mod.PRUNING_METHODS))
        return 0
    if args.calibrate_live is not None:
        live = [n for n in args.problems or [stepped.LIVE_NAME] if n in stepped.LIVE_NAMES]
        if not live:
            raise SystemExit(f"--calibrate-live measures live problems: {stepped.LIVE_NAMES}")
        for name in live:
            print(f"wrote {calibrate_live(args.calibrate_live, RESULTS, name)}")
        return 0
    if args.update_best_known:
        everything = [stepped.get_problem(n) for n in stepped.problem_names()]
        lines = best_known.update(BEST_KNOWN, RESULTS, everything, variants=True)
        print("\n".join(lines))
        return 0
    names = list(args.problems or stepped.DEFAULT_PROBLEMS)
    unknown = [n for n in names if not stepped.is_known(n)]
    if unknown:
        raise SystemExit(f"unknown problems {unknown}; see --list")
    methods = list(dict.fromkeys(args.methods or methods_mod.PRUNING_METHODS))
    seeds = list(range(args.seeds))
    if args.max_trials is not None and args.max_trials < 1:
        raise SystemExit(f"--max-trials must be a positive int, got {args.max_trials}")
    problems = [stepped.get_problem(n, args.max_trials) for n in names]
    root = out / "runs"
    skipped: dict[str, str] = {}
    if not args.report_only:
        for m in methods:
            why = methods_mod.unavailable(methods_mod.resolve(m))
            if why:
                raise SystemExit(f"method {m!r} cannot run here: {why}")
        for n in names:
            why = cannot_run(n)
            if why:
                skipped[n] = why
                print(f"skipping problem {n}: {why}", flush=True)
        runnable = [p for p in problems if p.name not in skipped]
        ref = package_ref()

        def stamp(run: runner.Run) -> None:
            run.meta["package_ref"] = ref

        cap = args.max_trials
        yahpo = [stepped.ProblemFactory(p.name, cap) for p in runnable if p.group != "live"]
        live = [stepped.ProblemFactory(p.name, cap) for p in runnable if p.group == "live"]
        if yahpo:  # surrogate costs: deterministic, runs in this process (or --jobs workers)
            tasks = runner.order_tasks(yahpo, methods, seeds)
            runner.run_tasks(
                tasks, root, resume=args.resume, jobs=args.jobs, probe=near_repeats, on_run=stamp
            )
        if live:  # measured CPU seconds: each run in a fresh process, one at a time
            tasks = runner.order_tasks(live, methods, seeds)
            runner.run_tasks(
                tasks,
                root,
                resume=args.resume,
                jobs=1,
                fresh_process=True,
                preload=[
                    "sklearn.neural_network",
                    "sklearn.ensemble",
                    "benchmarks.problems.stepped",
                ],
                probe=near_repeats,
                on_run=stamp,
            )

    scored: dict[tuple[str, str, int], report.Scored] = {}
    failed: list[runner.Run] = []
    other = 0
    known = best_known.load(BEST_KNOWN)
    scoring = [best_known.rescored(p, known, stepped.base_name(p.name)) for p in problems]
    beaten = 0
    for p, q in zip(problems, scoring, strict=True):
        valid, bad, n_other = cache.load_all(root, p, methods, seeds)
        failed += bad
        other += n_other
        for (m, s), run in valid.items():
            scored[(p.name, m, s)] = report.score(run, q)
            beaten += best_known.beats(run.values, q.f_star)
    if beaten:
        print(
            f"{beaten} runs beat the best known value (scored 0): run "
            "--update-best-known and report again",
            flush=True,
        )
    if other:
        print(
            f"{other} cached runs ignored (another problem definition, or cut short by a "
            "lower trial cap)",
            flush=True,
        )
    print(f"{len(scored)} runs found, {len(failed)} failed", flush=True)
    command = "python -m benchmarks pruning " + " ".join(sys.argv[1:] if argv is None else argv)
    path = write_report(
        out,
        scored,
        scoring,
        methods,
        seeds,
        args.references,
        command=command.strip(),
        skipped=skipped,
        failed=failed,
        beaten=beaten,
        suffix=args.suffix,
    )
    print(f"report: {path}", flush=True)
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.pruning
    from benchmarks import _preamble

    _preamble.forward("pruning")
