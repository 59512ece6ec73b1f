"""Warm start: re-tune yesterday's model with a new budget, seeded by yesterday's trials.

Yesterday a random forest was tuned under a wall-clock budget (study "yesterday"; run here
first if the storage has none). Today the data changed a little (another train/validation
split) and there is a new budget. ``study.add_trials(yesterday.trials)`` copies yesterday's
trials into today's study: the sampler's models start from them (their values, their costs,
their constraints), so no start-up design is needed, and they are *imported*: not charged to
today's budget (the ledger counts them apart, as ``cost_imported`` and
``cost_imported_trials`` among the study's user attrs). Only the trials run today are charged.

    python examples/warm_start.py                          # 10 s yesterday, 5 s today
    python examples/warm_start.py --budget 20 --storage sqlite:///forest.db
"""

from __future__ import annotations

import argparse

import optuna
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from optuna_costbo import CostRolloutSampler


def make_objective(split_seed: int) -> object:
    """Validation error of a random forest on one train/validation split of the data."""
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_valid, y_train, y_valid = train_test_split(
        X, y, test_size=0.3, random_state=split_seed
    )

    def objective(trial: optuna.Trial) -> float:
        model = RandomForestClassifier(
            n_estimators=trial.suggest_int("n_estimators", 1, 256, log=True),
            max_depth=trial.suggest_int("max_depth", 1, 32, log=True),
            max_features=trial.suggest_float("max_features", 0.05, 1.0),
            random_state=0,
        )
        model.fit(X_train, y_train)
        return 1.0 - model.score(X_valid, y_valid)

    return objective


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=5.0, help="today's budget, seconds")
    parser.add_argument(
        "--yesterday-budget", type=float, default=10.0, help="yesterday's budget, seconds"
    )
    parser.add_argument("--storage", default="sqlite:///warm_start.db", help="both studies")
    parser.add_argument("--seed", type=int, default=0, help="the samplers' seed")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    yesterday = optuna.create_study(
        study_name="yesterday",
        storage=args.storage,
        load_if_exists=True,
        sampler=CostRolloutSampler(budget=args.yesterday_budget, seed=args.seed),
    )
    if not yesterday.trials:
        yesterday.optimize(make_objective(split_seed=1))
    print(f"yesterday: {len(yesterday.trials)} trials, best error {yesterday.best_value:.4f}")

    if "today" in optuna.get_all_study_names(args.storage):
        optuna.delete_study(study_name="today", storage=args.storage)  # a rerun starts over
    sampler = CostRolloutSampler(budget=args.budget, seed=args.seed + 1)
    today = optuna.create_study(study_name="today", storage=args.storage, sampler=sampler)
    today.add_trials(yesterday.trials)  # imported: they inform the models, not charged
    today.optimize(make_objective(split_seed=2))

    ledger = sampler.ledger(today)
    print(
        f"today: {ledger.n_imported} imported trials ({ledger.imported_cost:.2f} s yesterday), "
        f"{ledger.n_finished} run today"
    )
    print(f"best error (imported trials too): {today.best_value:.4f} at {today.best_params}")
    print(f"spent/budget: {ledger.spent:.2f} / {ledger.budget:.2f} s")


if __name__ == "__main__":
    main()
