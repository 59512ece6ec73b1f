"""Pruning under a wall-clock budget: an MLP trained epoch by epoch, stopped early when hopeless.

Each trial trains scikit-learn's ``MLPClassifier`` on the digits data set one epoch at a time
(``partial_fit``), reports the validation error after every epoch and asks the pruner whether
to go on. ``CostBudgetPruner(MedianPruner())`` prunes what the median rule prunes, at the
epochs whose values rank the better half of the completed trials by their final values (the
pairing first at the end and at half budget in docs/pruning.md), and also a trial that would
overrun the budget. The budget is wall-clock seconds: a pruned trial is charged the seconds it
ran, and the sampler's models learn from it (its value at its last epoch, extrapolated by the
completed trials' learning curves; its cost, scaled to a full trial).

    python examples/pruning.py --budget 60
    python examples/pruning.py --budget 60 --pruner hyperband --storage sqlite:///pruning.db
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import optuna
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from optuna_costbo import CostBudgetPruner
from optuna_costbo import CostRolloutSampler


EPOCHS = 27


def make_objective() -> optuna.study.study.ObjectiveFuncType:
    X, y = load_digits(return_X_y=True)
    X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(X_train)
    X_train, X_valid = scaler.transform(X_train), scaler.transform(X_valid)
    classes = np.unique(y)

    def objective(trial: optuna.Trial) -> float:
        model = MLPClassifier(
            hidden_layer_sizes=(trial.suggest_int("width", 8, 512, log=True),)
            * trial.suggest_int("depth", 1, 3),
            alpha=trial.suggest_float("alpha", 1e-6, 1e-1, log=True),
            learning_rate_init=trial.suggest_float("learning_rate", 1e-4, 1e-1, log=True),
            batch_size=trial.suggest_categorical("batch_size", [16, 64, 256]),
            random_state=0,
        )
        error = 1.0
        for epoch in range(1, EPOCHS + 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.partial_fit(X_train, y_train, classes=classes)
            error = 1.0 - model.score(X_valid, y_valid)
            trial.report(error, epoch)
            if trial.should_prune():  # the wall clock so far is what the trial is charged
                raise optuna.TrialPruned()
        return error

    return objective


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=60.0, help="wall-clock seconds")
    parser.add_argument(
        "--pruner", choices=["median", "hyperband"], default="median", help="the wrapped pruner"
    )
    parser.add_argument(
        "--storage", default=None, help="e.g. sqlite:///pruning.db; None: in memory"
    )
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    if args.pruner == "hyperband":
        pruner = optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=EPOCHS, reduction_factor=3
        )
    else:
        pruner = optuna.pruners.MedianPruner()  # Optuna's defaults, as benchmarked
    sampler = CostRolloutSampler(budget=args.budget, seed=0)
    study = optuna.create_study(
        sampler=sampler, pruner=CostBudgetPruner(pruner), storage=args.storage
    )
    study.optimize(make_objective())  # no n_trials: the budget ends it

    states = [t.state for t in study.trials]
    complete = states.count(optuna.trial.TrialState.COMPLETE)
    pruned = states.count(optuna.trial.TrialState.PRUNED)
    print(f"trials: {complete} complete, {pruned} pruned")
    if complete:
        print(f"best validation error: {study.best_value:.4f} with {study.best_params}")
    else:
        print("best validation error: none (no trial completed; give a larger --budget)")
    ledger = sampler.ledger(study)
    print(f"spent/budget: {ledger.spent:.1f}/{args.budget:g} s")


if __name__ == "__main__":
    main()
