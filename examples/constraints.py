"""Best accuracy with a model under a size limit: Optuna's constraints, cost-aware.

A (simulated) network's width and depth decide its validation error, its training time in
seconds (the cost, reported) and its size in MB. The constraint "at most 50 MB" (feasible when
size - 50 <= 0) is set in the objective with ``trial.set_constraint`` where Optuna has it (5.0
on), else given as ``constraints_func(trial) -> [size - 50]``: either way the sampler models
the size, looks where the model is likely to fit, and ``study.best_trial`` is the best model
that does.

    python examples/constraints.py                 # a 300 s budget, at most 50 MB
    python examples/constraints.py --budget 100 --max-mb 20 --storage sqlite:///c.db
"""

from __future__ import annotations

import argparse
import math

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


# Optuna 5 stores constraints set in the objective; Optuna 4 takes a constraints_func.
SET_CONSTRAINT = hasattr(optuna.trial.Trial, "set_constraint")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=300.0, help="seconds of training")
    parser.add_argument("--max-mb", type=float, default=50.0, help="the size limit (MB)")
    parser.add_argument("--storage", default=None, help="e.g. sqlite:///c.db; None: in memory")
    args = parser.parse_args()

    def objective(trial: optuna.Trial) -> float:
        width = trial.suggest_int("width", 16, 1024, log=True)
        depth = trial.suggest_int("depth", 1, 12)
        learning_rate = trial.suggest_float("learning_rate", 1e-4, 1e-1, log=True)
        size_mb = 4e-4 * width**2 * depth / 10  # parameters, 4 bytes each
        trial.set_user_attr("size_mb", size_mb)
        if SET_CONSTRAINT:
            trial.set_constraint("size_mb", size_mb - args.max_mb)
        report_cost(trial, 0.5 + 0.01 * width * depth / 10)  # seconds of training
        capacity = math.log(width * depth)
        return 0.05 + 0.5 / capacity + 0.05 * (math.log10(learning_rate) + 2.5) ** 2

    def size_limit(trial: FrozenTrial) -> list[float]:
        return [trial.user_attrs["size_mb"] - args.max_mb]

    constraints = None if SET_CONSTRAINT else size_limit

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = CostRolloutSampler(args.budget, seed=0, constraints_func=constraints)
    study = optuna.create_study(sampler=sampler, storage=args.storage)
    study.optimize(objective)
    best = study.best_trial
    done = study.get_trials(states=[optuna.trial.TrialState.COMPLETE])  # ran (not the skipped)
    feasible = sum(t.user_attrs["size_mb"] <= args.max_mb for t in done)
    print(f"{len(done)} trials, {feasible} within {args.max_mb:g} MB")
    print(f"best error {best.value:.4f} at {best.params}, {best.user_attrs['size_mb']:.1f} MB")
    print(f"spent/budget: {sampler.ledger(study).spent:.1f}/{args.budget:g} s")


if __name__ == "__main__":
    main()
