"""Does fitting hyperparameters on a subset, on a refit schedule, cost optimization quality?

Long runs (``--trials`` suggestions, 300 by default) of ``CostRolloutSampler`` on test
functions, once as shipped (hyperparameters fitted on at most ``policy.MAX_FIT_POINTS``
observations and kept until the data grow by ``policy.REFIT_GROWTH``) and once with every fit
on all observations at every suggestion (the reference), same seeds. Printed: the median
regret at 100, 200 and the last trial, the mean CPU seconds per trial, and the paired
comparison over seeds (Wilcoxon signed-rank; the verdict by the signed-rank statistic).

With ``--model-points K`` the comparison is instead the models conditioned on a working set of
at most K observations (``policy.MAX_MODEL_POINTS``; the best, the newest, the rest spread out)
against the models conditioned on all of them, both with the shipped fits: the bound of many
thousands of trials, scaled down to runs that fit in minutes.

The problems are harness problems (the suite's Hartmann-6, Styblinski-Tang 5-D) with a cost
that grows 10x along the first coordinate, reported by the objective, and a budget no run
reaches (each run stops at ``--trials``); the variants patch the package's fit policy through
``benchmarks.harness.package_probes.fit_policy``. Every run is cached as
``<out>/runs/scale_quality[_working_set]/<variant>/<problem>/<method>/seed<NNN>.csv``.

    python -m benchmarks speed scale-quality [--seeds 4] [--trials 300] [--acquisition eipu]
    python -m benchmarks speed scale-quality --model-points 100 --seeds 6  # working-set variant
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
import functools
from pathlib import Path
import re
from typing import Any

import numpy as np

from benchmarks.harness import cache
from benchmarks.harness import package_probes
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.problems.synthetic import hartmann6


def styblinski_tang(x: np.ndarray) -> np.ndarray:
    """Styblinski-Tang on [-5, 5]^d, minimum -39.16617 d (x_i = -2.903534)."""
    return np.sum(x**4 - 16 * x**2 + 5 * x, axis=-1) / 2.0


FUNCTIONS: dict[str, tuple[Callable[[np.ndarray], Any], int, float, float, float]] = {
    # name: (function, dimension, low, high, optimum)
    "hartmann6": (hartmann6, 6, 0.0, 1.0, -3.32237),
    "styblinski-tang5": (styblinski_tang, 5, -5.0, 5.0, -39.16617 * 5),
}
ALL = 10**9
METHOD_FMT = "ours:acquisition={},dashboard_chart=false"
"""The method of every run: ``CostRolloutSampler(1e12, acquisition=A, dashboard_chart=False)``."""


class _Evaluate:
    """f(x) and a cost that grows 10x along the first coordinate (picklable)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[float, float]:
        fn, dim, low, high, _ = FUNCTIONS[self.name]
        x = np.array([params[f"x{i}"] for i in range(dim)])
        return float(fn(x)), float(10 ** ((x[0] - low) / (high - low)))


def make_problem(name: str, trials: int) -> Problem:
    _, dim, low, high, optimum = FUNCTIONS[name]
    return Problem(
        name=name,
        group="scale",
        budget=1e12,  # never reached: every run makes ``trials`` trials
        evaluator=_Evaluate(name),
        params=tuple(Param(f"x{i}", "float", low, high) for i in range(dim)),
        f_star=optimum,
        description=f"{name}, cost 10^(position along x0)",
        max_trials=trials,
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--acquisition", default="eipu")
    parser.add_argument("--problems", nargs="+", default=list(FUNCTIONS))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument(
        "--model-points",
        type=int,
        default=None,
        help="compare models conditioned on at most this many observations with all",
    )
    parser.add_argument("--resume", action="store_true", help="run only what the cache lacks")
    args = parser.parse_args(argv)
    schedule = package_probes.shipped_fit_schedule()
    shipped = (
        schedule.max_fit_points,
        schedule.refit_from,
        schedule.refit_growth,
        schedule.max_model_points,
    )
    full = (ALL, ALL, 0.0, ALL)  # every fit on all observations, at every suggestion
    marks = [m for m in (100, 200) if m < args.trials] + [args.trials]
    fits = (
        f"fit on <= {shipped[0]} observations, past {shipped[1]} refit at {shipped[2]:.0%} growth"
    )
    if args.model_points is None:
        pair = (("shipped", (*shipped[:3], ALL)), ("full", full))
        meaning = f"Shipped: {fits}; full: every fit on all observations."
        out_name = "scale_quality"
    else:
        pair = (("working set", (*shipped[:3], args.model_points)), ("all", (*shipped[:3], ALL)))
        meaning = (
            f"Working set: the models conditioned on at most {args.model_points} observations "
            "(the best quarter, the newest quarter, the rest spread out); all: on every "
            f"observation. Both: {fits}."
        )
        out_name = "scale_quality_working_set"
    method = METHOD_FMT.format(args.acquisition)
    lines = [
        f"{args.trials} trials, acquisition {args.acquisition!r}, {args.seeds} seeds; regret "
        "is the best value minus the optimum (median over seeds); seconds are CPU seconds per "
        f"trial (suggestion and objective). {meaning}",
        "",
        "| problem | variant | "
        + " | ".join(f"regret @ {m}" for m in marks)
        + f" | s / trial | {pair[0][0]} vs {pair[1][0]} at the end: W/T/L, p, verdict |",
        "|" + "---|" * (len(marks) + 4),
    ]
    for name in args.problems:
        problem = make_problem(name, args.trials)
        results = {}
        for variant, values in pair:
            root = args.out / "runs" / out_name / _slug(variant)
            runs = []
            for seed in range(args.seeds):
                run = cache.load_valid(root, problem, method, seed) if args.resume else None
                if run is None:
                    run = runner.run_one(
                        problem,
                        method,
                        seed,
                        configure=functools.partial(
                            package_probes.set_fit_schedule,
                            schedule=package_probes.fit_schedule(*values),
                        ),
                    )
                    cache.write_run(root, problem, run)
                if run.error:
                    raise SystemExit(f"error: {name} {variant} seed {seed}: {run.error}")
                runs.append(run)
            regrets = np.array(
                [stats.best_so_far(r.values) - problem.f_star for r in runs]
            )  # (seeds, trials)
            per_trial = float(np.mean([float(r.meta["cpu_s"]) / r.n_trials for r in runs]))
            results[variant] = (regrets, per_trial)
            print(name, variant, regrets[:, -1].round(5), f"{per_trial:.3f} s", flush=True)
        a, b = results[pair[0][0]][0][:, -1], results[pair[1][0]][0][:, -1]
        t = stats.paired(a, b)
        for variant, (regrets, per_trial) in results.items():
            cells = [f"{np.median(regrets[:, m - 1]):.4g}" for m in marks]
            test = (
                f"{t.wins}/{t.ties}/{t.losses}, p {t.p_value:.2f}, {t.verdict}"
                if variant == pair[0][0]
                else ""
            )
            lines.append(
                f"| {name} | {variant} | " + " | ".join(cells) + f" | {per_trial:.3f} | {test} |"
            )
    table = "\n".join(lines)
    print()
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{out_name}.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.scale_quality
    from benchmarks import _preamble

    _preamble.forward("speed", "scale-quality")
