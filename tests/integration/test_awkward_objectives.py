"""Awkward objectives: NaN, infinite and non-numeric values, exceptions, bad and extreme costs.

Each scenario runs past the start-up trials, so the Gaussian processes are fitted and the
acquisition is maximized, with the default acquisition ("rollout") and, where cheap, "ei"; the
sampler stays legal, the GP never crashes, the ledger stays right.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

from _awkward import ACQUISITIONS
from _awkward import BAD_COSTS
from _awkward import _assert_ledger_is_the_sum_of_costs
from _awkward import _assert_legal
from _awkward import _costed
from _awkward import _sampler
from _awkward import _study
import numpy as np
import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR


optuna.logging.set_verbosity(optuna.logging.ERROR)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_nan_objective_fails_the_trial_but_it_is_charged(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=8.0)
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: math.nan if t.number % 3 == 1 else x))
    trials = study.get_trials()
    assert len(trials) == 8  # 8 trials of cost 1, NaN or not, spend the budget of 8
    for t in trials:
        assert t.state == (TrialState.FAIL if t.number % 3 == 1 else TrialState.COMPLETE)
        assert t.user_attrs["cost"] == 1.0
    assert sampler.ledger(study).spent == 8.0
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_nan_objective_with_wall_clock_costs_is_charged_its_time(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=0.25)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        time.sleep(0.03)
        return math.nan if trial.number % 2 else x

    study = _study(sampler)
    study.optimize(objective, n_trials=50)
    failed = study.get_trials(states=(TrialState.FAIL,))
    assert failed and all(t.user_attrs["cost"] >= 0.03 for t in failed)
    assert all(t.system_attrs[COST_SOURCE_ATTR] == "wall_clock" for t in failed)
    _assert_ledger_is_the_sum_of_costs(sampler, study)
    assert sampler.ledger(study).exhausted and len(study.trials) < 50


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_infinite_objective_values_are_accepted(acquisition: str, direction: str) -> None:
    sampler = _sampler(acquisition)
    study = _study(sampler, direction=direction)
    values = [math.inf, -math.inf]
    study.optimize(
        _costed(lambda t, x: values[t.number % 3] if t.number % 3 < 2 else x), n_trials=9
    )
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    assert study.best_value == (-math.inf if direction == "minimize" else math.inf)
    _assert_legal(study)
    _assert_ledger_is_the_sum_of_costs(sampler, study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_only_infinite_values_do_not_crash_the_gp(acquisition: str) -> None:
    sampler = _sampler(acquisition)
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: math.inf), n_trials=6)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_non_numeric_objective_values_fail_and_are_charged(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=8.0)
    returns: list[Any] = ["abc", None, [1.0, 2.0]]
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: returns[t.number % 4] if t.number % 4 < 3 else x))
    trials = study.get_trials()
    assert len(trials) == 8
    assert [t.state for t in trials] == [
        TrialState.COMPLETE if t.number % 4 == 3 else TrialState.FAIL for t in trials
    ]
    assert sampler.ledger(study).spent == 8.0
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_constant_objective(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=10.0)

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_float("x", 0.0, 1.0)
        trial.suggest_int("n", 1, 4)
        report_cost(trial, 1.0)
        return 3.0

    study = _study(sampler)
    study.optimize(objective)
    assert len(study.trials) == 10
    assert all(t.value == 3.0 for t in study.trials)
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_exceptions_fail_the_trial_and_are_charged(acquisition: str) -> None:
    # Soft: its last trial spends the budget (the hard default would stop short of it).
    sampler = _sampler(acquisition, budget=0.5, overrun_risk=None)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        if trial.number % 3 == 0:
            report_cost(trial, 0.1)  # reported, then the objective crashes
            raise RuntimeError("boom after reporting")
        if trial.number % 3 == 1:
            time.sleep(0.02)
            raise RuntimeError("boom without a report")  # charged the median reported cost
        report_cost(trial, 0.05)
        return x

    study = _study(sampler)
    study.optimize(objective, catch=(RuntimeError,), n_trials=100)
    trials = study.get_trials()
    assert len(trials) < 100  # the budget, not n_trials, ended the loop
    for t in trials:
        if t.number % 3 == 0:
            assert t.state == TrialState.FAIL and t.user_attrs["cost"] == 0.1
        elif t.number % 3 == 1:  # a study of reported costs: never charged seconds
            reported = [u.user_attrs["cost"] for u in trials[: t.number] if u.number % 3 != 1]
            assert t.state == TrialState.FAIL
            assert t.user_attrs["cost"] == pytest.approx(float(np.median(reported)))
            assert t.system_attrs[COST_SOURCE_ATTR] == "estimated"
    _assert_ledger_is_the_sum_of_costs(sampler, study)
    charged = [t.user_attrs["cost"] for t in trials]
    totals = list(itertools.accumulate(charged))  # left to right, as the ledger sums
    assert totals[-1] >= 0.5 > totals[-2]
    _assert_legal(study)


def test_uncaught_exception_leaves_a_charged_trial_and_the_study_goes_on() -> None:
    sampler = _sampler("rollout", budget=5.0)
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: x), n_trials=2)

    def crashing(trial: optuna.Trial) -> float:
        trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
        raise KeyError("not caught")

    with pytest.raises(KeyError):
        study.optimize(crashing)
    assert study.trials[-1].state == TrialState.FAIL
    assert sampler.ledger(study).spent == 3.0
    study.optimize(_costed(lambda t, x: x))
    assert len(study.trials) == 5 and sampler.ledger(study).spent == 5.0


@pytest.mark.parametrize("bad", BAD_COSTS, ids=repr)
def test_report_cost_rejects_bad_costs_inside_the_objective(bad: Any) -> None:
    sampler = _sampler("rollout", budget=100.0)
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: x), n_trials=3)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, bad)
        return x

    study.optimize(objective, n_trials=1, catch=(ValueError,))
    last = study.trials[-1]
    assert last.state == TrialState.FAIL
    # No bad value reached storage: the trial was charged the median reported cost so far
    # (a study of reported costs never charges seconds).
    assert last.user_attrs["cost"] == 1.0
    assert last.system_attrs[COST_SOURCE_ATTR] == "estimated"
    assert sampler.ledger(study).spent == pytest.approx(3.0 + last.user_attrs["cost"])
    study.optimize(_costed(lambda t, x: x), n_trials=2)  # the GP still fits
    assert sampler.ledger(study).n_finished == 6


def test_report_cost_accepts_numpy_numbers() -> None:
    sampler = _sampler("ei", budget=100.0)
    study = _study(sampler)
    costs = [np.float32(1.5), np.int64(2), np.float64(0.25)]

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, costs[trial.number])
        return x

    study.optimize(objective, n_trials=3)
    assert [t.user_attrs["cost"] for t in study.trials] == [1.5, 2.0, 0.25]
    assert all(type(t.user_attrs["cost"]) is float for t in study.trials)
    assert sampler.ledger(study).spent == 3.75


@pytest.mark.parametrize("bad", [True, [1.0], {"usd": 1.0}, -math.inf, np.float64(math.nan)])
def test_bad_cost_user_attr_set_directly_never_corrupts_the_ledger(bad: Any) -> None:
    # Complements tests/sampler/test_sampler.py (-1, nan, inf, a string) with more kinds.
    sampler = _sampler("rollout", budget=100.0)
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: x), n_trials=3)

    def objective(trial: optuna.Trial) -> float:
        trial.set_user_attr("cost", bad)
        return trial.suggest_float("x", 0.0, 1.0)

    study.optimize(objective, n_trials=1)  # a warning, no exception
    last = study.trials[-1]
    assert last.state == TrialState.COMPLETE
    assert isinstance(last.user_attrs["cost"], float) and last.user_attrs["cost"] > 0
    assert sampler.ledger(study).spent == pytest.approx(3.0 + last.user_attrs["cost"])
    study.optimize(_costed(lambda t, x: x), n_trials=2)
    assert sampler.ledger(study).n_finished == 6


def test_cost_user_attr_set_to_none_is_measured() -> None:
    sampler = _sampler("ei", budget=100.0)
    study = _study(sampler)

    def objective(trial: optuna.Trial) -> float:
        trial.set_user_attr("cost", None)
        return trial.suggest_float("x", 0.0, 1.0)

    study.optimize(objective, n_trials=4)
    assert all(t.system_attrs[COST_SOURCE_ATTR] == "wall_clock" for t in study.trials)
    _assert_ledger_is_the_sum_of_costs(sampler, study)


@pytest.mark.parametrize("acquisition", ["rollout", "ei", "eipu", "ei-cool"])
def test_costs_of_wildly_different_scales(acquisition: str) -> None:
    # Costs from 1e-6 to 1e6 in one study (and a few down to 1e-12 and up to 1e12): the GP
    # on log cost must fit, and the suggestions stay legal.
    sampler = _sampler(acquisition, budget=1e15, n_startup_trials=3)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_int("y", 0, 3)
        exponent = 12.0 * x - 6.0 if trial.number % 5 else 24.0 * x - 12.0
        report_cost(trial, 10.0**exponent)
        return (x - 0.5) ** 2 + 0.1 * y

    study = _study(sampler)
    study.optimize(objective, n_trials=12)
    assert len(study.get_trials(states=(TrialState.COMPLETE,))) == 12
    costs = [t.user_attrs["cost"] for t in study.trials]
    assert max(costs) / min(costs) > 1e6
    _assert_legal(study)
    _assert_ledger_is_the_sum_of_costs(sampler, study)


def test_enormous_costs_overflow_to_an_exhausted_ledger_not_nan() -> None:
    sampler = _sampler("ei", budget=1e300)
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: x, cost=1.7e308), n_trials=5)
    ledger = sampler.ledger(study)
    assert len(study.trials) == 1 and ledger.exhausted and not math.isnan(ledger.spent)
