"""Solution quality on the synthetic cost-constrained problem of Lee et al. (UAI 2021, Fig. 4).

The problem: x in [-1, 1]^2, r = ||x||_2, minimize f(x) = 10 r sin(2 pi r) under a cost
c(x) = 10 - 5 r per evaluation and a total budget of 150. The global minimum is
f = -7.6625 on the ring r = 0.782 (cost 6.09 there); the cost is largest at the centre.

Methods, each run with seeds 0..S-1 and the same budget:

- ``CostRolloutSampler`` with ``acquisition="ei"``, ``"eipu"``, ``"ei-cool"`` and ``"rollout"``
  with ``horizon=2`` and ``horizon=4`` (default ``n_samples`` and ``n_startup_trials``);
- Optuna's ``TPESampler``, ``GPSampler`` (needs torch) and ``RandomSampler``;
- on request only (``--methods ... rollout1``), the control ``rollout h=1``: the rollout's
  candidate screening and polish with no lookahead.

Budget rule, the same for every method: a trial starts only while the summed cost of the
finished trials is below the budget (so the last trial may overrun it). The objective reports
its cost with :func:`optuna_costbo.report_cost`. ``CostRolloutSampler`` is left to stop the
study by itself (``study.optimize`` without ``n_trials``, with a large safety cap); the run
is checked afterwards against the rule. Optuna's samplers are stopped by a callback.

Outputs (under ``--out``, default ``benchmarks/results``; ``--smoke`` writes
``synthetic_smoke_*`` instead so the full results are not overwritten):

- ``synthetic_runs.csv``: one row per trial (method, seed, trial, cost, cumcost, value, best);
- ``synthetic_run_summary.csv``: one row per run (trials, final best, overrun, timings, logs);
- ``synthetic_quality.md``: per-method summary, paired comparisons of rollout h=2 / h=4
  against every other method (Wilcoxon signed-rank test), mean best-so-far on a cost grid,
  and anything odd seen during the runs (warnings logged by the sampler, crashes, overruns);
- ``synthetic_quality.png`` (if matplotlib is installed): mean best-so-far vs cumulative cost
  with a +-1 standard deviation band, and beside it the regret (best - f*) on a log scale.

Runtime on 2 cores with ``--jobs 2``: ``--smoke`` takes about 10 s; the full run (30 seeds
x 8 methods = 240 runs of 25-27 trials) took 4.6 min on an idle machine and 6 min on a busy
one, most of it in the rollout runs (h=4 is the slowest, about 4 s per run). BLAS and torch
run single-threaded; ``--jobs`` worker processes run the (method, seed) pairs. Results are
deterministic for a given seed (only the timings vary). Note that with the smoke budget of 30
only 4-5 trials fit, fewer than the 6 quasi-random startup trials of ``CostRolloutSampler``:
the smoke run checks the plumbing, not the models.

    python benchmarks/synthetic_quality.py --smoke
    python benchmarks/synthetic_quality.py [--seeds 30] [--methods rollout2 ei] [--jobs 2]
    python benchmarks/synthetic_quality.py --report-only    # re-summarize saved CSVs

Shared with ``hpo.py`` and ``sensors.py`` (all in ``benchmarks/``): the method registry
(``registry.py``), the runner (``runner.py``), the cost-grid statistics (``stats.py``), the CSV
files (``results_io.py``), the report (``reports.py``) and the figure (``figures.py``).
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Sequence
import math
from pathlib import Path
import sys
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

import figures
import optuna
from registry import DEFAULT_METHODS
from registry import METHODS
import reports
from results_io import read_csvs
from results_io import write_csvs
import runner
from runner import Run


BUDGET = 150.0
SMOKE_BUDGET = 30.0
GLOBAL_MIN = -7.662466812698264  # f at r = 0.781959
GRID_POINTS = 11  # table grid: 0, B/10, ..., B (cost 0 has no trial yet: shown as "-")
SAFETY_TRIALS = runner.SAFETY_TRIALS
SUGGEST_NOTE = (
    "s / suggestion: wall time of the two `suggest_float` calls of a trial (where Optuna "
    "calls the sampler), mean over all trials including the startup ones; max in brackets."
)


def problem(x0: float, x1: float) -> tuple[float, float]:
    """Objective f(x) = 10 r sin(2 pi r) and cost c(x) = 10 - 5 r, r = ||x||_2."""
    r = math.hypot(x0, x1)
    return 10.0 * r * math.sin(2.0 * math.pi * r), 10.0 - 5.0 * r


class SyntheticProblem:
    """The problem as ``runner.run_one`` sees it; the cost is reported, not modelled as known
    (``CostRolloutSampler`` learns it with its log-cost GP, as in the paper)."""

    cost_fn = None

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        return {
            "x0": trial.suggest_float("x0", -1.0, 1.0),
            "x1": trial.suggest_float("x1", -1.0, 1.0),
        }

    def evaluate(
        self, params: dict[str, Any], previous: dict[str, Any] | None
    ) -> tuple[float, float]:
        return problem(params["x0"], params["x1"])


def run_one(method: str, seed: int, budget: float) -> Run:
    """Run ``method`` with ``seed`` until the budget is spent (never raises: see ``error``)."""
    return runner.run_one(method, seed, budget, SyntheticProblem(), SAFETY_TRIALS)


def report(
    runs: dict[str, list[Run]], budget: float, total_s: float | None, figure: str | None
) -> str:
    """The Markdown report."""
    n_seeds = max(len(r) for r in runs.values())
    intro = [
        f"f(x) = 10 r sin(2 pi r), c(x) = 10 - 5 r, r = ||x||, x in [-1, 1]^2, budget {budget:g}; "
        f"{n_seeds} seeds per method (0..{n_seeds - 1}), the same seeds for every method. "
        f"Minimization; global minimum f* = {GLOBAL_MIN:.4f} (r = 0.782, cost 6.09). "
        "A trial starts only while the finished trials have spent less than the budget, so "
        "the last trial may overrun it: *final best* counts that trial, *best within budget* "
        "does not (best among trials whose cumulative cost is <= the budget).",
        reports.versions_line(total_s),
    ]
    return reports.report(
        runs,
        budget,
        title="Synthetic problem of Lee et al. (UAI 2021, Figure 4)",
        intro=intro,
        total_s=total_s,
        figure_name=figure,
        suggest_note=SUGGEST_NOTE,
        grid_points=GRID_POINTS,
        figure_band="SD",
    )


def figure(runs: dict[str, list[Run]], budget: float, path: Path) -> bool:
    """Mean best-so-far vs cumulative cost with a +-1 SD band (left), and the same as the
    regret f_best - f* on a log scale (right), where the late differences are visible.
    False if matplotlib is missing."""
    n = max(len(r) for r in runs.values())
    return figures.figure(
        runs,
        budget,
        path,
        suptitle=f"f = 10 r sin(2πr), c = 10 − 5r on [−1, 1]², budget {budget:g}, {n} seeds",
        optimum=GLOBAL_MIN,
        grid_start=budget / 15.0,  # the first trial costs at most 10
        value_label="best value so far",
        band="sd",  # mean +- one standard deviation over seeds, as the paper's figures
    )


# -- main ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=30, help="seeds 0..N-1 (default 30)")
    parser.add_argument(
        "--methods", nargs="+", choices=list(METHODS), default=list(DEFAULT_METHODS)
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--budget", type=float, default=None, help="default 150 (smoke: 30)")
    parser.add_argument("--smoke", action="store_true", help="1 seed, budget 30, smoke files")
    parser.add_argument(
        "--report-only", action="store_true", help="re-summarize the saved CSVs, run nothing"
    )
    args = parser.parse_args(argv)
    seeds = 1 if args.smoke else args.seeds
    budget = args.budget or (SMOKE_BUDGET if args.smoke else BUDGET)
    stem = "synthetic_smoke" if args.smoke else "synthetic"
    args.out.mkdir(parents=True, exist_ok=True)
    prefix = args.out / stem

    total_s: float | None = None
    if args.report_only:
        runs = read_csvs(prefix)
    else:
        # Slowest methods first, so that the two workers finish together.
        tasks = runner.order_tasks(args.methods, range(seeds), interleave=False)
        print(f"{len(tasks)} runs, budget {budget:g}, {args.jobs} workers", flush=True)
        results, total_s = runner.execute(
            tasks,
            budget,
            SyntheticProblem(),
            jobs=args.jobs,
            safety_trials=SAFETY_TRIALS,
            on_done=runner.print_progress,
        )
        runs = runner.group_runs(results)
        write_csvs(runs, budget, prefix)

    png = Path(f"{prefix}_quality.png")
    has_figure = figure(runs, budget, png)
    if not has_figure:
        print("matplotlib is not installed: no figure (pip install matplotlib)")
    text = report(runs, budget, total_s, png.name if has_figure else None)
    Path(f"{prefix}_quality.md").write_text(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
