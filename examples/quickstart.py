"""Tune a random forest on scikit-learn's digits under a wall-clock budget.

Training time grows with the number of trees, their depth and the features tried per split
(about 20x across this space), so the budget is in seconds, not trials. A progress bar shows
the budget being spent. The study lives in a local SQLite file, where the sampler also keeps a
"Best value vs cumulative cost" chart for optuna-dashboard (installed by the ``examples``
extra); watch it with ``optuna-dashboard sqlite:///quickstart.db``.

    python examples/quickstart.py                 # 60 s budget
    python examples/quickstart.py --budget 10     # a quick look
"""

from __future__ import annotations

import argparse
import datetime

import optuna
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from optuna_costbo import CostRolloutSampler
from optuna_costbo.progress import CostProgressBar


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=60.0, help="seconds of trial time")
    parser.add_argument("--storage", default="sqlite:///quickstart.db", help="Optuna storage URL")
    parser.add_argument("--study-name", default=None, help="None: a new, time-stamped name")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    args = parser.parse_args()

    X, y = load_digits(return_X_y=True)
    X_train, X_valid, y_train, y_valid = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y
    )

    def objective(trial: optuna.Trial) -> float:
        model = RandomForestClassifier(
            n_estimators=trial.suggest_int("n_estimators", 1, 256, log=True),
            max_depth=trial.suggest_int("max_depth", 1, 64, log=True),
            max_features=trial.suggest_float("max_features", 0.02, 1.0, log=True),
            criterion=trial.suggest_categorical("criterion", ["gini", "entropy"]),
            random_state=0,
            n_jobs=1,
        )
        model.fit(X_train, y_train)
        return 1.0 - model.score(X_valid, y_valid)  # validation error

    name = args.study_name or f"quickstart-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    sampler = CostRolloutSampler(budget=args.budget, seed=args.seed)
    study = optuna.create_study(
        study_name=name, storage=args.storage, sampler=sampler, load_if_exists=True
    )
    # No n_trials, no timeout: it stops when the budget is spent. The bar shows the budget.
    with CostProgressBar() as progress_bar:
        study.optimize(objective, callbacks=[progress_bar])

    ledger = sampler.ledger(study)
    print(f"study {name!r} in {args.storage}")
    print(f"trials: {len(study.trials)}")
    print(f"best validation error: {study.best_value:.4f}")
    print(f"best params: {study.best_params}")
    print(f"spent/budget: {ledger.spent:.1f} s / {ledger.budget:.1f} s")
    print(f"watch it: optuna-dashboard {args.storage}   (then open http://127.0.0.1:8080/)")


if __name__ == "__main__":
    main()
