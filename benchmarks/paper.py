"""Reproductions of Lee et al., "A Nonmyopic Approach to Cost-Constrained Bayesian
Optimization" (UAI 2021) on the benchmark harness.

    python -m benchmarks paper synthetic [--seeds 30] [--jobs 2]          # Figure 4
    python -m benchmarks paper hpo --model knn --dataset w2a [--seeds 50]  # Figure 5, left
    python -m benchmarks paper hpo --model dt --dataset w2a                # Figure 5, middle
    python -m benchmarks paper hpo --model rf --dataset w2a                # Figure 5, right
    python -m benchmarks paper hpo --model knn --dataset a1a \\
        --methods ei eipu rollout-paper rollout-paper-h4 random            # supplementary table
    python -m benchmarks paper sensors [--seeds 50] [--jobs 2]             # Section 6.3
    python -m benchmarks paper sensors --describe | --fit-kernel
    python -m benchmarks paper EXPERIMENT --smoke                          # 1 seed, tiny budget

Problems: the paper's synthetic problem as printed (``synth-printed`` of
``benchmarks.problems.synthetic``: f = 10 r sin(2 pi r), c = 10 - 5 r on [-1, 1]^2, budget
150), the HPO problems of ``benchmarks.problems.hpo`` (validation error against the seconds
of fit + predict; data from ``benchmarks.problems.data``: OpenML, else the LIBSVM files
through ``--data-dir`` / ``COSTBO_DATA_DIR``) and the sensor placement of
``benchmarks.problems.sensors`` (a moving, state-dependent cost ``cost_fn(params,
previous)``). Methods: the paper's rollout (h = 2 and 4), EI, EIpu, EI-cool and Optuna's
TPE, GP and Random (``--methods``: any name or spec of ``benchmarks.harness.methods``, e.g.
``rollout`` for the package's default); the paired comparisons take ``--reference`` (default:
the paper's two rollouts) against every other method.

Every finished run is cached as ``<out>/runs/<problem>/<method>/seed<NNN>.csv`` (``--out``,
default ``benchmarks/results``; the smoke runs as ``<problem>-smoke``, so they never
overwrite the full runs); ``--resume`` runs only what the cache lacks (a stopped session
loses only the runs in flight), ``--report-only`` rebuilds the report from the cache (with
the same options: a run counts only for the problem definition it was made for). Reports:
``synthetic_quality.md/.png``, ``hpo_<model>_<dataset>_quality.md/.png``,
``sensors_quality.md/.png`` (``..._smoke_...`` after ``--smoke``).

The HPO runs measure wall-clock seconds: each run goes to a fresh process (fork server, one
run per child), at most ``--jobs`` (default 1) at a time, seed by seed with every method
within a seed, so slow drifts of the machine's load hit all methods alike; a random-search
control (``random``) always runs in the same session (``--no-control`` drops it).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import math
from pathlib import Path
import sys
import time

import numpy as np

from benchmarks.harness import cache
from benchmarks.harness import figures
from benchmarks.harness import methods as methods_mod
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run
from benchmarks.problems import data
from benchmarks.problems import hpo
from benchmarks.problems import sensors
from benchmarks.problems.synthetic import SUITE


RESULTS = Path(__file__).resolve().parent / "results"
SMOKE_METHODS = ("rollout-paper", "random")
SYNTHETIC_SMOKE_BUDGET = 30.0  # 4-5 trials: fewer than the 6 start-up trials (plumbing only)
HPO_SMOKE_STARTUP = 3  # so that a smoke run reaches the models (plumbing, not a result)
SENSORS_SMOKE_STARTUP = 3
PRELOAD = (  # imported once by the fork server, not in every run
    "sklearn.ensemble",
    "sklearn.neighbors",
    "sklearn.pipeline",
    "sklearn.random_projection",
    "sklearn.tree",
    "optuna.samplers",
)
PAPER_TABLE = {"ei": 0.140, "eipu": 0.139, "rollout-paper": 0.137, "rollout-paper-h4": 0.131}
PAPER_TABLE_SD = {"ei": 0.005, "eipu": 0.005, "rollout-paper": 0.004, "rollout-paper-h4": 0.001}
PAPER_LABELS = {"ei": "EI", "eipu": "EIpu", "rollout-paper": "R2", "rollout-paper-h4": "R4"}


@dataclass
class Experiment:
    """What an experiment runs and how its report is written."""

    problem: Problem
    stem: str  # report file names: <stem>_quality.md / .png
    default_seeds: int
    default_jobs: int
    interleave: bool = False
    fresh_process: bool = False
    preload: tuple[str, ...] = ()
    source: str = ""  # where the data came from


# -- the experiments ----------------------------------------------------------------------


def synthetic_experiment(args: argparse.Namespace) -> Experiment:
    problem = SUITE["synth-printed"]
    if args.budget is not None or args.smoke:
        problem = problem.variant(
            "smoke" if args.smoke else f"b{args.budget:g}",
            budget=args.budget or SYNTHETIC_SMOKE_BUDGET,
        )
    return Experiment(problem, "synthetic_smoke" if args.smoke else "synthetic", 30, 2)


def _hpo_dataset(args: argparse.Namespace) -> data.Dataset:
    try:
        return data.dataset_from_args(args.dataset, args)
    except data.DataUnavailableError as exc:
        raise SystemExit(f"error: {exc}") from None


def hpo_experiment(args: argparse.Namespace) -> Experiment:
    dataset = None if args.report_only else _hpo_dataset(args)
    budget = args.budget or (
        hpo.SMOKE_BUDGETS[args.model]
        if args.smoke
        else hpo.default_budget(args.model, args.dataset)
    )
    problem = hpo.paper_problem(
        args.model,
        args.dataset,
        dataset,
        budget=budget,
        split_mapping=args.split_mapping,
        timer=args.clock,
        n_startup=args.n_startup or (HPO_SMOKE_STARTUP if args.smoke else None),
        split_seed=args.split_seed,
        valid_fraction=args.valid_fraction,
    )
    if args.smoke:
        problem = problem.variant("smoke")
    return Experiment(
        problem,
        f"hpo_{args.model}_{args.dataset}" + ("_smoke" if args.smoke else ""),
        50,
        1,
        interleave=True,
        fresh_process=True,
        preload=PRELOAD,
        source=dataset.describe() if dataset is not None else "",
    )


def _placement(args: argparse.Namespace) -> sensors.SensorPlacement:
    try:
        network = sensors.load_network(args.data_dir)
    except data.DataUnavailableError as exc:
        raise SystemExit(f"error: {exc}") from None
    return sensors.SensorPlacement(network)


def sensors_experiment(args: argparse.Namespace) -> Experiment:
    placement = _placement(args)
    n_startup = args.n_startup or (SENSORS_SMOKE_STARTUP if args.smoke else sensors.N_STARTUP)
    budget = args.budget or (sensors.SMOKE_BUDGET if args.smoke else sensors.BUDGET)
    problem = sensors.sensor_problem(placement, budget=budget, n_startup=n_startup)
    if args.smoke:
        problem = problem.variant("smoke")
    return Experiment(
        problem,
        "sensors_smoke" if args.smoke else "sensors",
        50,
        2,
        source=placement.network.source,
    )


# -- reports ------------------------------------------------------------------------------


def paper_table(runs: dict[str, list[Run]], budget: float, model: str, dataset: str) -> str:
    """Mean and std (ddof=1) over replications of the best validation error within the
    budget, one column per method, in the layout of the paper's Table 1 (EI, EIpu, R2, R4
    first); with the paper's numbers for KNN on a1a."""
    order = [m for m in PAPER_LABELS if m in runs] + [m for m in runs if m not in PAPER_LABELS]
    at_budget = {
        m: np.array([stats.best_within(r.costs, r.values, budget) for r in runs[m]]) for m in order
    }
    summary = {m: stats.mean_sd(at_budget[m]) for m in order}
    best = min((summary[m][0] for m in order if math.isfinite(summary[m][0])), default=math.nan)

    def cell(m: str, k: int) -> str:
        text = report.fmt(summary[m][k])
        return f"**{text}**" if k == 0 and summary[m][0] == best else text

    header = [""] + [PAPER_LABELS.get(m, methods_mod.label(m)) for m in order]
    rows = [
        ["mean"] + [cell(m, 0) for m in order],
        ["std"] + [cell(m, 1) for m in order],
        ["runs"] + [str(int(np.sum(np.isfinite(at_budget[m])))) for m in order],
    ]
    lines = [
        "## Final validation error in the paper's format",
        "",
        "Best validation error among the trials within the budget (cumulative cost <= "
        f"{budget:g} s), mean and standard deviation (ddof=1) over the replications; lowest "
        "mean in bold.",
        "",
    ]
    if model == "knn" and dataset == "a1a":
        rows.append(["paper mean"] + [report.fmt(PAPER_TABLE.get(m, math.nan)) for m in order])
        rows.append(["paper std"] + [report.fmt(PAPER_TABLE_SD.get(m, math.nan)) for m in order])
        lines[3:3] = [
            "Paper (Lee et al., UAI 2021, supplementary Table 1, KNN on OpenML a1a, budget "
            "800 s on their machine): EI 0.140 ± 0.005, EIpu 0.139 ± 0.005, R2 0.137 ± 0.004, "
            "R4 0.131 ± 0.001. Their data split is not given, so only the ordering and the "
            "spreads are comparable, not the levels.",
            "",
        ]
    return "\n".join(lines + report.table(header, rows)) + "\n"


def write_report(
    args: argparse.Namespace,
    exp: Experiment,
    runs: dict[str, list[Run]],
    failed: list[Run],
    total_s: float | None,
) -> Path:
    problem = exp.problem
    budget = problem.budget
    n = max(len(r) for r in runs.values())
    png = args.out / f"{exp.stem}_quality.png"
    seeds = f"{n} seeds per method (0..{n - 1}), the same seeds for every method"
    rule = (
        "A trial starts only while the finished trials have spent less than the budget, so "
        "the last trial may overrun it: *final best* counts that trial, *best within budget* "
        "does not (best among trials whose cumulative cost is <= the budget)."
    )
    source = exp.source or next(
        (str(r.meta["data"]) for rs in runs.values() for r in rs if "data" in r.meta), ""
    )
    versions = report.versions_line(total_s)
    if args.experiment == "synthetic":
        title = "Synthetic problem of Lee et al. (UAI 2021, Figure 4)"
        intro = [
            f"f(x) = 10 r sin(2 pi r), c(x) = 10 - 5 r, r = ||x||, x in [-1, 1]^2, budget "
            f"{budget:g}; {seeds}. Minimization; global minimum f* = {problem.f_star:.4f} "
            f"(r = 0.782, cost 6.09). {rule}",
            versions,
        ]
        has_figure = figures.problem_figure(
            runs,
            budget,
            png,
            references=args.reference,
            suptitle=f"f = 10 r sin(2πr), c = 10 − 5r on [−1, 1]², budget {budget:g}, {n} seeds",
            optimum=problem.f_star,
            grid_start=budget / 15.0,  # the first trial costs at most 10
            band="sd",  # mean +- one standard deviation over seeds, as the paper's figures
        )
        extra: list[str] = []
        digits = 3
    elif args.experiment == "hpo":
        label = hpo.MODELS[args.model].label
        title = f"HPO: {label} on {args.dataset} (Lee et al., UAI 2021, Figure 5)"
        intro = [
            f"{label} on {args.dataset}, validation classification error (minimize), cost = "
            f"{args.clock} seconds of fit + predict, budget {budget:g} s (paper: "
            f"{hpo.PAPER_BUDGETS[args.model]:g} s on its machine); {seeds} and data split, "
            f"split threshold mapping {args.split_mapping!r}. Runs ran {args.jobs} at a time, "
            f"each in a fresh process, seed by seed. {rule}",
            f"Data: {source or '(not recorded)'}",
            report.versions_line(total_s, extra=f", jobs {args.jobs}"),
        ]
        has_figure = figures.problem_figure(
            runs,
            budget,
            png,
            references=args.reference,
            suptitle=f"{label} on {args.dataset}: budget {budget:g} s, {n} replications",
            band="sd",
            value_label="best validation error so far",
            cost_label="cumulative cost (s of fit + predict)",
            cost_histogram=True,
        )
        extra = [paper_table(runs, budget, args.model, args.dataset)]
        digits = 4
    else:
        placement = problem.evaluator
        assert isinstance(placement, sensors.SensorPlacement)
        title = "Sensor set selection with a moving cost (Lee et al., UAI 2021, Section 6.3)"
        intro = [
            f"Place {placement.n_sensors} sensors among the stations of {source}; objective: "
            "RMSE (degC) of simple kriging of every station's monthly tmax anomalies from the "
            f"chosen ones (kernel {placement.kriging.kernel}); cost of a configuration: "
            f"{placement.fixed_cost:.4g} years + Frobenius distance moved (km) / "
            f"{placement.speed:g} km per year, from the previous configuration (the 10 "
            f"stations nearest to Denver before the first). Budget {budget:g} years; {seeds}. "
            "CostRolloutSampler gets the cost as a known cost_fn and starts with "
            f"{problem.sampler_options['n_startup_trials']} quasi-random trials; every method "
            "is charged the same reported cost. See benchmarks/problems/sensors.py for the "
            "interpretation.",
            versions,
        ]
        has_figure = figures.problem_figure(
            runs,
            budget,
            png,
            references=args.reference,
            suptitle=f"Sensor set selection (Colorado tmax): budget {budget:g} years, {n} reps",
            band="sd",
            value_label="best RMSE so far (degC)",
            cost_label="cumulative cost (years)",
            cost_histogram=True,
        )
        extra = []
        digits = 3
    if not has_figure:
        print("matplotlib is not installed: no figure (pip install matplotlib)")
    text = report.problem_report(
        runs,
        problem,
        args.reference,
        title=title,
        intro=[
            f"Command: `{_command(args)}`; cache: `{problem.name}` in `{args.out}/runs`.",
            *intro,
        ],
        figure_name=png.name if has_figure else None,
        failed=failed,
        figure_band="SD",
        digits=digits,
        extra_sections=extra,
    )
    path = args.out / f"{exp.stem}_quality.md"
    path.write_text(text)
    return path


def _command(args: argparse.Namespace) -> str:
    return "python -m benchmarks paper " + " ".join(args.argv)


# -- main ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="experiment", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--seeds", "--reps", type=int, default=None, help="seeds 0..N-1 (synthetic 30, else 50)"
    )
    common.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="method names or specs (default: the paper's eight; smoke: rollout-paper random)",
    )
    common.add_argument(
        "--reference",
        nargs="+",
        default=list(methods_mod.PAPER_REFERENCES),
        help="the methods compared with every other one (default: the paper's rollouts)",
    )
    common.add_argument("--budget", type=float, default=None, help="default: the problem's")
    common.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="worker processes (synthetic, sensors: 2; hpo: 1 fresh process per run at a "
        "time); 0: in this process",
    )
    common.add_argument("--smoke", action="store_true", help="1 seed, tiny budget")
    common.add_argument("--out", type=Path, default=RESULTS, help="cache and report folder")
    common.add_argument("--resume", action="store_true", help="run only what the cache lacks")
    common.add_argument("--report-only", action="store_true", help="report from the cache")
    sub.add_parser("synthetic", parents=[common], help="the synthetic problem (Figure 4)")
    h = sub.add_parser("hpo", parents=[common], help="KNN / DT / RF (Figure 5, a1a table)")
    h.add_argument("--model", "--problem", choices=hpo.PAPER_MODELS, default="knn")
    h.add_argument("--dataset", default="w2a", help="w2a (default), a1a, ...")
    h.add_argument("--no-control", action="store_true", help="do not add random search")
    h.add_argument(
        "--split-mapping",
        choices=("fraction", "impurity"),
        default="fraction",
        help="split threshold -> min_samples_split fraction (default) or min_impurity_decrease",
    )
    h.add_argument(
        "--clock",
        choices=hpo.TIMERS,
        default="wall",
        help="cost = wall-clock seconds (default, the paper's) or the process's CPU seconds",
    )
    h.add_argument(
        "--n-startup",
        type=int,
        default=None,
        help="CostRolloutSampler start-up trials (default: its own, 2 (d + 1); smoke: 3)",
    )
    data.add_data_arguments(h)
    s = sub.add_parser("sensors", parents=[common], help="sensor placement (Section 6.3)")
    s.add_argument(
        "--n-startup",
        type=int,
        default=None,
        help=f"CostRolloutSampler start-up trials (default {sensors.N_STARTUP}; smoke 3)",
    )
    s.add_argument("--data-dir", default=None, help=f"default: ${data.DATA_DIR_ENV}")
    s.add_argument("--describe", action="store_true", help="describe the problem, exit")
    s.add_argument("--fit-kernel", action="store_true", help="refit the kernel, exit")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.experiment == "sensors" and (args.describe or args.fit_kernel):
        placement = _placement(args)
        if args.fit_kernel:
            start = time.perf_counter()
            kernel, nll = sensors.fit_kernel(placement.network)
            seconds = time.perf_counter() - start
            print(f"{kernel} (negative log likelihood {nll:.1f}, {seconds:.0f} s)")
        else:
            print(sensors.describe(placement))
        return 0
    build = {
        "synthetic": synthetic_experiment,
        "hpo": hpo_experiment,
        "sensors": sensors_experiment,
    }[args.experiment]
    exp = build(args)
    problem = exp.problem
    seeds = list(range(1 if args.smoke else (args.seeds or exp.default_seeds)))
    methods = list(args.methods or (SMOKE_METHODS if args.smoke else methods_mod.PAPER_METHODS))
    if args.experiment == "hpo" and not args.no_control and "random" not in methods:
        methods.append("random")  # the same-session control
    jobs = exp.default_jobs if args.jobs is None else args.jobs
    args.jobs = jobs
    args.out.mkdir(parents=True, exist_ok=True)
    root = args.out / "runs"

    total_s: float | None = None
    if not args.report_only:
        for m in methods:
            why = methods_mod.unavailable(methods_mod.resolve(m))
            if why:
                raise SystemExit(f"error: method {m!r} cannot run here: {why}")
        if exp.source:
            print(exp.source, flush=True)
        tasks = runner.order_tasks(
            [problem], methods, seeds, interleave=exp.interleave, slow_first=args.reference
        )
        print(f"{problem.name}: budget {problem.budget:g}, {jobs} worker(s)", flush=True)
        preload = exp.preload + (("torch",) if "optuna-gp" in methods else ())

        def note(run: Run) -> None:
            if exp.source:
                run.meta["data"] = exp.source

        _, total_s = runner.run_tasks(
            tasks,
            root,
            resume=args.resume,
            jobs=jobs,
            fresh_process=exp.fresh_process,
            preload=preload,
            on_run=note,
        )
    valid, failed, other = cache.load_all(root, problem, methods, seeds)
    if other:
        print(
            f"note: {other} cached runs in {root / problem.name} are of another definition "
            "of the problem (budget, settings): not used; give the options they were run with"
        )
    runs = {
        m: [valid[(m, s)] for s in seeds if (m, s) in valid]
        for m in methods
        if any((m, s) in valid for s in seeds)
    }
    if not runs:
        raise SystemExit(f"error: no cached runs of {problem.name} under {root}")
    path = write_report(args, exp, runs, failed, total_s)
    print(path.read_text())
    print(f"report: {path}")
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.paper
    from benchmarks import _preamble

    _preamble.forward("paper")
