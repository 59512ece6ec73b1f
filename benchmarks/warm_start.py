"""What a warm start buys at half budget: today's study seeded with a related study's trials.

For each problem and seed: "yesterday" runs the problem with its optimum moved (the objective
evaluated at x + shift, a few percent of each range) on the full budget; "today" runs the
problem itself on half the budget, cold or warm (``study.add_trials(yesterday.trials)``:
imported, not charged). The score is today's simple regret: the best value among the trials
run today, less the known optimum. Prints a markdown table.

    python -m benchmarks warm-start --seeds 5
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna

from benchmarks.harness.problem import Problem
from benchmarks.problems.synthetic import function_problem
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


PROBLEMS = {
    "branin-cheap": lambda: function_problem("branin", "cheap", 150.0, "control", width=0.1),
    "hartmann3-cheap": lambda: function_problem("hartmann3", "cheap", 170.0, "control"),
}


def _objective(problem: Problem, shift: float) -> Callable[[optuna.Trial], float]:
    def objective(trial: optuna.Trial) -> float:
        params = {p.name: trial.suggest_float(p.name, p.low, p.high) for p in problem.params}
        moved = {
            p.name: float(np.clip(params[p.name] + shift * (p.high - p.low), p.low, p.high))
            for p in problem.params
        }
        value, _ = problem.evaluator(moved)
        _, cost = problem.evaluator(params)
        report_cost(trial, cost)
        return value

    return objective


def _run(
    problem: Problem, budget: float, seed: int, shift: float, seed_trials: Any = None
) -> optuna.Study:
    study = optuna.create_study(sampler=CostRolloutSampler(budget=budget, seed=seed))
    if seed_trials is not None:
        study.add_trials(seed_trials)
    study.optimize(_objective(problem, shift))
    return study


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks warm-start",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds per problem")
    parser.add_argument("--shift", type=float, default=0.03, help="yesterday's optimum moved")
    parser.add_argument("--problems", nargs="*", default=sorted(PROBLEMS))
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.ERROR)

    print("| problem | start | median regret | mean regret | trials run today |")
    print("|---|---|---|---|---|")
    for name in args.problems:
        problem = PROBLEMS[name]()
        assert problem.f_star is not None
        rows: dict[str, list[tuple[float, int]]] = {"cold": [], "warm": []}
        for seed in range(args.seeds):
            yesterday = _run(problem, problem.budget, 1000 + seed, args.shift)
            for start, seeds in (("cold", None), ("warm", yesterday.trials)):
                today = _run(problem, problem.budget / 2, seed, 0.0, seeds)
                ran = today.trials[len(seeds or []) :]
                best = min(t.value for t in ran if t.value is not None)
                rows[start].append((best - problem.f_star, len(ran)))
        for start, results in rows.items():
            regret = np.array([r for r, _ in results])
            trials = np.array([n for _, n in results])
            print(
                f"| {name} | {start} | {np.median(regret):.4g} | {regret.mean():.4g} | "
                f"{np.median(trials):.0f} |"
            )
    return 0
