"""Failures in the cost path: a ``cost_fn`` that raises or returns a bad value, a trial that
fails before reporting its cost. The error says where it came from; the trial is charged in
the budget's unit (an estimate, never seconds as dollars); trial, study attrs and ledger agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import COST_FN_ERROR_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._ledger.record import CostFnError


optuna.logging.set_verbosity(optuna.logging.ERROR)


def _objective(trial: optuna.Trial) -> float:
    return trial.suggest_float("x", 0.0, 1.0) ** 2


class _Flaky:
    """A cost_fn, 1 + x, that fails while ``failing`` is set: ``bad`` is an exception to
    raise or a value to return. The objective sets ``failing`` for trial 3 only."""

    def __init__(self, bad: Any) -> None:
        self.bad = bad
        self.failing = False

    def __call__(self, params: dict[str, Any]) -> float:
        if not self.failing:
            return 1.0 + params["x"]
        if isinstance(self.bad, Exception):
            raise self.bad
        return self.bad  # type: ignore[no-any-return]

    def objective(self, trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        self.failing = trial.number == 3
        return x**2


@pytest.mark.parametrize("bad", [RuntimeError("cost service down"), float("nan"), -1.0])
def test_a_failing_cost_fn_is_named_and_the_books_agree(bad: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    cost_fn = _Flaky(bad)
    sampler = CostRolloutSampler(budget=100.0, cost_fn=cost_fn, seed=0, n_startup_trials=2)
    study = optuna.create_study(storage=url, sampler=sampler)
    with pytest.raises(CostFnError, match=r"cost_fn failed for trial 3: .*median cost so far"):
        study.optimize(cost_fn.objective, n_trials=10)
    earlier = sorted(t.user_attrs["cost"] for t in study.trials[:3])
    trial = study.trials[3]
    assert trial.state == TrialState.COMPLETE
    assert trial.user_attrs["cost"] == earlier[1]  # their median, in cost_fn's unit
    assert trial.system_attrs[COST_SOURCE_ATTR] == "estimated"
    assert COST_FN_ERROR_ATTR in trial.system_attrs
    ledger = sampler.ledger(study)
    assert ledger.spent == pytest.approx(sum(earlier) + earlier[1], rel=1e-12)
    assert study.user_attrs[SPENT_ATTR] == ledger.spent
    # On resume, in another process's view, the same: no seconds charged.
    again = optuna.load_study(study_name=study.study_name, storage=url)
    assert CostRolloutSampler(budget=100.0, cost_fn=lambda p: 1.0).ledger(again) == ledger


def test_the_cost_fn_error_keeps_what_it_raised_as_its_cause() -> None:
    cost_fn = _Flaky(KeyError("x"))
    study = optuna.create_study(sampler=CostRolloutSampler(budget=100.0, cost_fn=cost_fn))
    with pytest.raises(CostFnError) as info:
        study.optimize(cost_fn.objective, n_trials=10)
    assert isinstance(info.value.__cause__, KeyError)


def test_a_cost_fn_that_fails_on_candidates_is_named() -> None:
    def cost_fn(params: dict[str, Any]) -> float:
        raise ConnectionError("cost service down")

    sampler = CostRolloutSampler(budget=100.0, cost_fn=cost_fn, seed=0, n_startup_trials=1)
    study = optuna.create_study(sampler=sampler)
    study.enqueue_trial({"x": 0.5})
    with pytest.raises(CostFnError, match="cost_fn failed"):
        study.optimize(_objective, n_trials=3)


def _reported(fail_on: int, how: str) -> Any:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        if trial.number == fail_on:
            if how == "raise":
                raise RuntimeError("the objective failed before reporting its cost")
            if how == "report_cost":
                report_cost(trial, -5.0)  # raises: a bad report fails the trial
            trial.set_user_attr("cost", "ten dollars")  # a bad value set by hand
            return x
        report_cost(trial, 10.0 * (trial.number + 1))
        return x

    return objective


@pytest.mark.parametrize("how", ["raise", "report_cost", "set_user_attr"])
def test_a_trial_that_reports_no_valid_cost_is_charged_in_the_reported_unit(how: str) -> None:
    sampler = CostRolloutSampler(budget=1000.0, seed=0, n_startup_trials=2)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_reported(3, how), n_trials=5, catch=(RuntimeError, ValueError))
    trial = study.trials[3]
    assert trial.user_attrs["cost"] == 20.0  # median of 10, 20, 30 dollars, not seconds
    assert trial.system_attrs[COST_SOURCE_ATTR] == "estimated"
    ledger = sampler.ledger(study)
    assert ledger.spent == 10.0 + 20.0 + 30.0 + 20.0 + 50.0
    assert study.user_attrs[SPENT_ATTR] == ledger.spent


def test_a_measured_study_still_charges_a_failed_trial_its_seconds() -> None:
    sampler = CostRolloutSampler(budget=1000.0, seed=0, n_startup_trials=2)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        if trial.number == 2:
            raise RuntimeError("boom")
        return x

    study.optimize(objective, n_trials=3, catch=(RuntimeError,))
    assert study.trials[2].system_attrs[COST_SOURCE_ATTR] == "wall_clock"
    assert study.trials[2].user_attrs["cost"] < 1.0
