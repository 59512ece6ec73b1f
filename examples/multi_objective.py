"""Two objectives under a wall-clock budget: a random forest's error and its prediction latency.

A random forest on scikit-learn's digits is tuned for its validation error and for its
prediction latency per sample in milliseconds (timed with ``time.perf_counter`` over the
validation set), both minimized. More and deeper trees predict better and slower, so the answer
is a Pareto front, ``study.best_trials``. The budget is in seconds of wall clock, measured by
the sampler: the objective reports nothing. A GP models each objective, and each suggestion
maximizes the expected hypervolume improvement per unit of predicted cost
(docs/multi_objective.md). The progress bar shows the front's size and hypervolume.

    python examples/multi_objective.py                 # 30 s budget
    python examples/multi_objective.py --budget 60 --storage sqlite:///front.db
"""

from __future__ import annotations

import argparse
import time

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
    parser.add_argument("--budget", type=float, default=30.0, help="seconds of trial time")
    parser.add_argument("--storage", default=None, help="e.g. sqlite:///mo.db; None: in memory")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    args = parser.parse_args()

    X, y = load_digits(return_X_y=True)
    X_train, X_valid, y_train, y_valid = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y
    )

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        model = RandomForestClassifier(
            n_estimators=trial.suggest_int("n_estimators", 1, 256, log=True),
            max_depth=trial.suggest_int("max_depth", 1, 64, log=True),
            max_features=trial.suggest_float("max_features", 0.02, 1.0, log=True),
            random_state=0,
            n_jobs=1,
        )
        model.fit(X_train, y_train)
        start = time.perf_counter()
        predicted = model.predict(X_valid)
        latency_ms = 1000.0 * (time.perf_counter() - start) / len(X_valid)
        error = float((predicted != y_valid).mean())
        return error, latency_ms  # both minimized; the cost is the trial's wall-clock time

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = CostRolloutSampler(budget=args.budget, seed=args.seed)
    study = optuna.create_study(
        directions=["minimize", "minimize"], storage=args.storage, sampler=sampler
    )
    # No n_trials, no timeout: it stops when the budget is spent.
    with CostProgressBar() as progress_bar:
        study.optimize(objective, callbacks=[progress_bar])

    front = sorted(study.best_trials, key=lambda t: t.values[0])
    print(f"trials: {len(study.trials)}")
    print(f"Pareto front ({len(front)} trials), by validation error:")
    for trial in front:
        error, latency_ms = trial.values
        print(
            f"  trial {trial.number:3d}: error {error:.4f}, latency {latency_ms:.4f} ms/sample, "
            f"{trial.params}"
        )
    ledger = sampler.ledger(study)
    print(f"spent/budget: {ledger.spent:.1f} s / {ledger.budget:.1f} s")


if __name__ == "__main__":
    main()
