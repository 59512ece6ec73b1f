"""Does fitting hyperparameters on a subset, on a refit schedule, cost optimization quality?

Long runs (``--trials`` suggestions, 300 by default) of ``CostRolloutSampler`` on test
functions, once as shipped (hyperparameters fitted on at most ``policy.MAX_FIT_POINTS``
observations and kept until the data grow by ``policy.REFIT_GROWTH``) and once with every fit
on all observations at every suggestion (the reference), same seeds. Printed: the median
regret at 100, 200 and the last trial, the mean seconds per suggestion, and the paired
comparison over seeds.

With ``--model-points K`` the comparison is instead the models conditioned on a working set of
at most K observations (``policy.MAX_MODEL_POINTS``; the best, the newest, the rest spread out)
against the models conditioned on all of them, both with the shipped fits: the bound of many
thousands of trials, scaled down to runs that fit in minutes.

    python benchmarks/scale_quality.py [--seeds 4] [--trials 300] [--acquisition eipu]
    python benchmarks/scale_quality.py --model-points 100 --seeds 6  # working-set variant
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
from pathlib import Path
import statistics
import sys
import time

import numpy as np
import optuna
from scipy.stats import wilcoxon

from optuna_costbo import CostRolloutSampler
from optuna_costbo._numerics import policy


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.suite.problems import hartmann6 as _hartmann6


optuna.logging.set_verbosity(optuna.logging.ERROR)


def hartmann6(x: np.ndarray) -> float:
    """Hartmann 6-D on [0, 1]^6, minimum -3.32237 (the suite's definition)."""
    return float(_hartmann6(x))


def styblinski_tang5(x: np.ndarray) -> float:
    """Styblinski-Tang 5-D on [-5, 5]^5, minimum -39.16617 * 5 (x_i = -2.903534)."""
    return float(np.sum(x**4 - 16 * x**2 + 5 * x) / 2.0)


PROBLEMS: dict[str, tuple[Callable[[np.ndarray], float], int, float, float, float]] = {
    # name: (function, dimension, low, high, optimum)
    "hartmann6": (hartmann6, 6, 0.0, 1.0, -3.32237),
    "styblinski-tang5": (styblinski_tang5, 5, -5.0, 5.0, -39.16617 * 5),
}

ALL = 10**9
Variant = tuple[int, int, float, int]  # MAX_FIT_POINTS, REFIT_FROM, REFIT_GROWTH, MAX_MODEL_POINTS
SHIPPED: Variant = (policy.MAX_FIT_POINTS, policy.REFIT_FROM, policy.REFIT_GROWTH, ALL)
FULL: Variant = (ALL, ALL, 0.0, ALL)  # every fit on all observations, at every suggestion


def run(
    problem: str, seed: int, trials: int, acquisition: str, variant: Variant
) -> tuple[np.ndarray, float]:
    fn, dim, low, high, _ = PROBLEMS[problem]
    (policy.MAX_FIT_POINTS, policy.REFIT_FROM, policy.REFIT_GROWTH, policy.MAX_MODEL_POINTS) = (
        variant
    )
    # Cost: grows 10x along the first coordinate, reported by the objective.
    sampler = CostRolloutSampler(1e12, acquisition=acquisition, seed=seed, dashboard_chart=False)
    study = optuna.create_study(sampler=sampler)
    spent = [0.0]

    def objective(trial: optuna.Trial) -> float:
        x = np.array([trial.suggest_float(f"x{i}", low, high) for i in range(dim)])
        trial.set_user_attr("cost", float(10 ** ((x[0] - low) / (high - low))))
        return fn(x)

    def timed(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        spent[0] = time.process_time() - start

    start = time.process_time()
    study.optimize(objective, n_trials=trials, callbacks=[timed])
    values = np.minimum.accumulate([t.value for t in study.trials])
    return values, spent[0] / trials


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--acquisition", default="eipu")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument(
        "--model-points",
        type=int,
        default=None,
        help="compare models conditioned on at most this many observations with all",
    )
    args = parser.parse_args()
    marks = [m for m in (100, 200) if m < args.trials] + [args.trials]
    fits = (
        f"fit on <= {SHIPPED[0]} observations, past {SHIPPED[1]} refit at {SHIPPED[2]:.0%} growth"
    )
    if args.model_points is None:
        pair: tuple[tuple[str, Variant], tuple[str, Variant]] = (
            ("shipped", SHIPPED),
            ("full", FULL),
        )
        meaning = f"Shipped: {fits}; full: every fit on all observations."
        out_name = "scale_quality.md"
    else:
        pair = (("working set", (*SHIPPED[:3], args.model_points)), ("all", SHIPPED))
        meaning = (
            f"Working set: the models conditioned on at most {args.model_points} observations "
            "(the best quarter, the newest quarter, the rest spread out); all: on every "
            f"observation. Both: {fits}."
        )
        out_name = "scale_quality_working_set.md"
    lines = [
        f"{args.trials} trials, acquisition {args.acquisition!r}, {args.seeds} seeds; regret "
        "is the best value minus the optimum (median over seeds); seconds are CPU seconds per "
        f"trial (suggestion and objective). {meaning}",
        "",
        "| problem | variant | "
        + " | ".join(f"regret @ {m}" for m in marks)
        + f" | s / trial | {pair[0][0]} vs {pair[1][0]} at the end: W/T/L, p |",
        "|" + "---|" * (len(marks) + 4),
    ]
    for problem in args.problems:
        optimum = PROBLEMS[problem][4]
        results = {}
        for name, variant in pair:
            runs = [
                run(problem, s, args.trials, args.acquisition, variant) for s in range(args.seeds)
            ]
            regrets = np.array([v - optimum for v, _ in runs])  # (seeds, trials)
            results[name] = (regrets, statistics.fmean(t for _, t in runs))
            print(problem, name, regrets[:, -1].round(5), f"{results[name][1]:.3f} s", flush=True)
        a, b = results[pair[0][0]][0][:, -1], results[pair[1][0]][0][:, -1]
        wins, ties = int(np.sum(a < b)), int(np.sum(a == b))
        p = float(wilcoxon(a, b).pvalue) if np.any(a != b) else 1.0
        for name, (regrets, per_trial) in results.items():
            cells = [f"{np.median(regrets[:, m - 1]):.4g}" for m in marks]
            test = f"{wins}/{ties}/{len(a) - wins - ties}, p {p:.2f}" if name == pair[0][0] else ""
            lines.append(
                f"| {problem} | {name} | " + " | ".join(cells) + f" | {per_trial:.3f} | {test} |"
            )
    table = "\n".join(lines)
    print()
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / out_name).write_text(table + "\n")


if __name__ == "__main__":
    main()
