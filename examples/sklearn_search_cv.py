"""Tune a scikit-learn estimator with optuna-integration's OptunaSearchCV under a cost budget.

``OptunaSearchCV`` is scikit-learn's ``RandomizedSearchCV`` driven by an Optuna study. Give it a
study whose sampler is ``CostRolloutSampler`` and ``n_trials=None``: the search then runs
cross-validated trials until their summed wall-clock time reaches the budget and returns by
itself, refits the best estimator on all the training data, and predicts like any fitted
search. ``n_trials`` must be set to ``None`` explicitly (its default is 10, which would stop the
search after 10 trials whatever the budget); ``timeout`` stays ``None``.

    pip install ".[examples]"                            # includes optuna-integration
    python examples/sklearn_search_cv.py                 # 30 s budget
    python examples/sklearn_search_cv.py --budget 5 --storage sqlite:///search.db
"""

from __future__ import annotations

import argparse
from typing import Any
import warnings

import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from optuna_costbo import CostRolloutSampler


# The random forest of the quickstart: cost grows with trees, depth and features per split.
PARAM_DISTRIBUTIONS: dict[str, BaseDistribution] = {
    "n_estimators": IntDistribution(1, 256, log=True),
    "max_depth": IntDistribution(1, 64, log=True),
    "max_features": FloatDistribution(0.02, 1.0, log=True),
    "criterion": CategoricalDistribution(["gini", "entropy"]),
}


def make_search(study: optuna.Study, *, cv: int = 3, seed: int = 0) -> Any:
    """An ``OptunaSearchCV`` that runs ``study`` until its sampler's budget is spent."""
    try:
        from optuna_integration import OptunaSearchCV
    except ImportError as exc:
        raise SystemExit(
            f"this example needs optuna-integration: pip install optuna-integration ({exc})"
        ) from exc

    return OptunaSearchCV(
        RandomForestClassifier(random_state=seed, n_jobs=1),
        PARAM_DISTRIBUTIONS,
        cv=cv,
        n_trials=None,  # the budget decides; the default (10) would stop after 10 trials
        timeout=None,
        study=study,  # OptunaSearchCV maximizes the score: the study must maximize
        random_state=seed,
        refit=True,  # the refit on all the data runs after the search, outside the budget
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=30.0, help="seconds of trial time")
    parser.add_argument(
        "--storage", default=None, help="e.g. sqlite:///search.db; None: in memory"
    )
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    args = parser.parse_args()

    # OptunaSearchCV is marked experimental, and reports its scores to optuna.terminator,
    # which Optuna has deprecated: neither warning concerns this example.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message=r"`optuna\.terminator` module has been deprecated")
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y
    )
    sampler = CostRolloutSampler(budget=args.budget, seed=args.seed)
    study = optuna.create_study(direction="maximize", sampler=sampler, storage=args.storage)
    search = make_search(study, seed=args.seed)
    search.fit(X_train, y_train)

    ledger = sampler.ledger(study)
    print(f"trials: {len(study.trials)}")
    print(f"best params: {search.best_params_}")
    print(f"best cross-validated accuracy: {search.best_score_:.4f}")
    print(f"test accuracy of the refitted forest: {search.score(X_test, y_test):.4f}")
    print(f"spent/budget: {ledger.spent:.1f} s / {ledger.budget:.1f} s")


if __name__ == "__main__":
    main()
