"""optuna-integration's OptunaSearchCV driven by CostRolloutSampler stops at the budget by itself.

``OptunaSearchCV(..., study=study, n_trials=None, timeout=None)`` calls
``study.optimize(objective, n_trials=None, timeout=None, ...)``: with neither limit Optuna runs
trials until the study is stopped, which the sampler does once the budget is spent. The costs
here come from a known ``cost_fn``, so the ledger and the number of trials are exact.
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.distributions import IntDistribution
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler


pytest.importorskip("sklearn")
pytest.importorskip("pandas")
optuna_integration = pytest.importorskip("optuna_integration")

from sklearn.datasets import load_iris  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402


optuna.logging.set_verbosity(optuna.logging.ERROR)
pytestmark = pytest.mark.filterwarnings(
    "ignore::optuna.exceptions.ExperimentalWarning",
    "ignore:`optuna.terminator` module has been deprecated:FutureWarning",
)

REPO = Path(__file__).resolve().parents[2]


def _depth_cost(params: dict[str, Any]) -> float:
    """A known cost: a deeper tree costs more."""
    return float(params["max_depth"])


def _search(study: optuna.Study, **kwargs: Any) -> Any:
    return optuna_integration.OptunaSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": IntDistribution(1, 8)},
        cv=3,
        study=study,
        random_state=0,
        **kwargs,
    )


def test_search_with_no_trial_count_stops_at_the_budget_by_itself() -> None:
    budget = 12.0
    sampler = CostRolloutSampler(budget=budget, cost_fn=_depth_cost, n_startup_trials=50, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    search = _search(study, n_trials=None, timeout=None)
    X, y = load_iris(return_X_y=True)
    assert search.fit(X, y) is search  # returned by itself: no n_trials, no timeout

    trials = study.trials
    assert all(t.state == TrialState.COMPLETE for t in trials)
    costs = [float(t.params["max_depth"]) for t in trials]
    assert [t.user_attrs["cost"] for t in trials] == costs  # charged what cost_fn says
    # It stopped with the first trial that reached the budget, not before, not after.
    totals = list(itertools.accumulate(costs))  # left to right, as the ledger sums
    assert totals[-1] >= budget > totals[-2]
    assert sampler.ledger(study).spent == pytest.approx(sum(costs))
    assert search.n_trials_ == len(trials)
    # The fitted search works as usual: best of the trials, refitted, with a cost column.
    assert search.best_score_ == max(t.value for t in trials)
    assert search.best_params_ == study.best_params
    assert search.best_estimator_.max_depth == study.best_params["max_depth"]
    assert search.cv_results_["cost"] == costs
    assert np.isfinite(search.score(X, y))


def test_default_n_trials_of_ten_stops_before_the_budget() -> None:
    """Why the docs say n_trials=None: OptunaSearchCV's default is 10 trials."""
    sampler = CostRolloutSampler(budget=1000.0, cost_fn=_depth_cost, n_startup_trials=50, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    _search(study).fit(*load_iris(return_X_y=True))
    assert len(study.trials) == 10 and sampler.remaining_budget(study) > 900.0


def test_example_builds_a_search_that_the_budget_stops() -> None:
    spec = importlib.util.spec_from_file_location(
        "sklearn_search_cv", REPO / "examples" / "sklearn_search_cv.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    study = optuna.create_study(direction="maximize", sampler=CostRolloutSampler(budget=1.0))
    search = example.make_search(study)
    assert search.n_trials is None and search.timeout is None and search.study is study
