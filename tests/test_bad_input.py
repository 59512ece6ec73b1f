"""Bad and awkward input: the sampler stays legal, the GP never crashes, the ledger stays right.

Each scenario runs past the startup trials, so the Gaussian processes are fitted and the
acquisition is maximized, with the default acquisition ("rollout") and, where cheap, "ei".
"""

from __future__ import annotations

import datetime
import math
import time
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.costs import sampler_seconds
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR


optuna.logging.set_verbosity(optuna.logging.ERROR)

ACQUISITIONS = ["rollout", "ei"]
X = FloatDistribution(0.0, 1.0)


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        yield


def _sampler(acquisition: str, budget: float = 1e9, **kwargs: Any) -> CostRolloutSampler:
    kwargs.setdefault("n_startup_trials", 2)
    kwargs.setdefault("warn_independent_sampling", False)
    return CostRolloutSampler(budget=budget, seed=0, acquisition=acquisition, **kwargs)


def _study(sampler: optuna.samplers.BaseSampler, **kwargs: Any) -> optuna.Study:
    return optuna.create_study(sampler=sampler, **kwargs)


def _assert_legal(study: optuna.Study) -> None:
    """Every parameter of every trial lies in its distribution."""
    for t in study.get_trials():
        for name, value in t.params.items():
            dist = t.distributions[name]
            assert dist._contains(dist.to_internal_repr(value)), (t.number, name, value, dist)


def _assert_ledger_is_the_sum_of_costs(sampler: CostRolloutSampler, study: optuna.Study) -> None:
    trials = study.get_trials()
    # By default the sampler's own time is charged too when costs are measured wall-clock:
    # decided by the first trial whose cost was reported or measured.
    sources = [
        t.system_attrs.get(COST_SOURCE_ATTR)
        for t in sorted(trials, key=lambda t: t.number)
        if t.system_attrs.get(COST_SOURCE_ATTR) in ("reported", "wall_clock")
    ]
    charged = sampler._user_cost is None and bool(sources) and sources[0] == "wall_clock"
    expected = sum(
        t.user_attrs["cost"] + (sampler_seconds(t) if charged else 0.0)
        for t in trials
        if t.state.is_finished() and not t.system_attrs.get(SKIPPED_ATTR)
    )
    ledger = sampler.ledger(study)
    assert math.isfinite(ledger.spent)
    assert ledger.spent == pytest.approx(expected)


def _costed(fn: Any, cost: float = 1.0) -> Any:
    """An objective that suggests, reports ``cost`` and returns ``fn(trial, x)``."""

    def objective(trial: optuna.Trial) -> Any:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, cost)
        return fn(trial, x)

    return objective


# -- constructor arguments (extends tests/test_sampler.py) ----------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": True}, "budget must be a positive finite number"),
        ({"budget": None}, "budget must be a positive finite number"),
        ({"budget": [10.0]}, "budget must be a positive finite number"),
        ({"budget": -math.inf}, "budget must be a positive finite number"),
        ({"budget": 1.0, "acquisition": None}, "acquisition must be one of"),
        ({"budget": 1.0, "acquisition": "EI"}, "acquisition must be one of"),
        ({"budget": 1.0, "horizon": True}, "horizon must be an int >= 1"),
        ({"budget": 1.0, "horizon": -1}, "horizon must be an int >= 1"),
        ({"budget": 1.0, "n_samples": 2.0}, "n_samples must be an int >= 1"),
        ({"budget": 1.0, "n_samples": True}, "n_samples must be an int >= 1"),
        ({"budget": 1.0, "n_startup_trials": 1.5}, "n_startup_trials must be"),
        ({"budget": 1.0, "n_startup_trials": True}, "n_startup_trials must be"),
        ({"budget": 1.0, "n_startup_trials": "3"}, "n_startup_trials must be"),
        ({"budget": 1.0, "cost_attr": 5}, "cost_attr must be"),
        ({"budget": 1.0, "cost_attr": None}, "cost_attr must be"),
        ({"budget": 1.0, "seed": True}, "seed must be"),
        ({"budget": 1.0, "seed": "0"}, "seed must be"),
        ({"budget": 1.0, "cost_fn": lambda: 1.0}, "cost_fn must take"),
        ({"budget": 1.0, "cost_fn": "x"}, "cost_fn must be callable"),
    ],
)
def test_more_bad_constructor_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CostRolloutSampler(**kwargs)


@pytest.mark.parametrize("seed", [-1, 2**40])
def test_out_of_range_seed_is_a_value_error(seed: int) -> None:
    with pytest.raises(ValueError):
        CostRolloutSampler(budget=1.0, seed=seed)


@pytest.mark.parametrize("budget", [np.int64(5), np.float32(2.5)])
def test_numpy_scalar_budget_is_accepted(budget: Any) -> None:
    sampler = CostRolloutSampler(budget=budget)
    assert sampler.budget == float(budget)


def test_multi_objective_study_is_refused_with_a_clear_message() -> None:
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=_sampler("ei"))
    with pytest.raises(ValueError, match="single-objective studies only"):
        study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=1)


# -- objective values ---------------------------------------------------------------------------


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


# -- exceptions in the objective ------------------------------------------------------------------


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_exceptions_fail_the_trial_and_are_charged(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=0.5)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        if trial.number % 3 == 0:
            report_cost(trial, 0.1)  # reported, then the objective crashes
            raise RuntimeError("boom after reporting")
        if trial.number % 3 == 1:
            time.sleep(0.02)
            raise RuntimeError("boom without a report")  # charged its wall-clock time
        report_cost(trial, 0.05)
        return x

    study = _study(sampler)
    study.optimize(objective, catch=(RuntimeError,), n_trials=100)
    trials = study.get_trials()
    assert len(trials) < 100  # the budget, not n_trials, ended the loop
    for t in trials:
        if t.number % 3 == 0:
            assert t.state == TrialState.FAIL and t.user_attrs["cost"] == 0.1
        elif t.number % 3 == 1:
            assert t.state == TrialState.FAIL and t.user_attrs["cost"] >= 0.02
            assert t.system_attrs[COST_SOURCE_ATTR] == "wall_clock"
    _assert_ledger_is_the_sum_of_costs(sampler, study)
    charged = [t.user_attrs["cost"] for t in trials]
    assert sum(charged) >= 0.5 > sum(charged[:-1])
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


# -- reported costs ---------------------------------------------------------------------------


BAD_COSTS = [-1.0, -1e-9, -math.inf, math.nan, math.inf, "1.0", None, True, [1.0]]


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
    # No bad value reached storage: the trial was charged its (short) wall-clock time.
    assert 0.0 < last.user_attrs["cost"] < 5.0
    assert last.system_attrs[COST_SOURCE_ATTR] == "wall_clock"
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
    # Complements tests/test_sampler.py (-1, nan, inf, a string) with more kinds.
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


# -- degenerate and large search spaces -------------------------------------------------------


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_duplicate_points_enqueued_many_times(acquisition: str) -> None:
    sampler = _sampler(acquisition)
    study = _study(sampler)
    for _ in range(10):
        study.enqueue_trial({"x": 0.5, "n": 2})

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        n = trial.suggest_int("n", 0, 3)
        report_cost(trial, 1.0)
        return (x - 0.2) ** 2 + n

    study.optimize(objective, n_trials=14)
    trials = study.get_trials()
    assert all(t.params == {"x": 0.5, "n": 2} for t in trials[:10])
    assert all(t.state == TrialState.COMPLETE for t in trials)
    _assert_legal(study)
    _assert_ledger_is_the_sum_of_costs(sampler, study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_zero_and_one_finished_trials(acquisition: str) -> None:
    # No startup design: the first trial has no data, the second a single point.
    sampler = _sampler(acquisition, n_startup_trials=0)
    study = _study(sampler)
    study.optimize(_costed(lambda t, x: (x - 0.3) ** 2), n_trials=3)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_only_failed_trials_then_one_success(acquisition: str) -> None:
    sampler = _sampler(acquisition, n_startup_trials=0)
    study = _study(sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
        if trial.number < 3 or trial.number > 3:
            raise RuntimeError("fails")
        return x

    study.optimize(objective, n_trials=6, catch=(RuntimeError,))
    states = [t.state for t in study.trials]
    assert states == [TrialState.FAIL] * 3 + [TrialState.COMPLETE] + [TrialState.FAIL] * 2
    assert sampler.ledger(study).spent == 6.0
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_thirty_dimensional_space(acquisition: str) -> None:
    sampler = _sampler(acquisition, n_startup_trials=3)

    def objective(trial: optuna.Trial) -> float:
        xs = [trial.suggest_float(f"x{i}", -1.0, 1.0) for i in range(30)]
        report_cost(trial, 1.0 + abs(xs[0]))
        return sum(x * x for x in xs)

    study = _study(sampler)
    study.optimize(objective, n_trials=5)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    assert all(len(t.params) == 30 for t in study.trials)
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_categorical_with_fifty_choices(acquisition: str) -> None:
    sampler = _sampler(acquisition, n_startup_trials=3)
    choices = [f"c{i}" for i in range(50)]

    def objective(trial: optuna.Trial) -> float:
        c = trial.suggest_categorical("c", choices)
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0 + int(c[1:]) / 10.0)
        return (int(c[1:]) - 17) ** 2 / 100.0 + x

    study = _study(sampler)
    study.optimize(objective, n_trials=10)
    assert all(t.params["c"] in choices for t in study.trials)
    _assert_legal(study)


def test_mixed_choice_types_in_one_categorical() -> None:
    sampler = _sampler("rollout", n_startup_trials=3)
    choices: list[Any] = [None, True, 3, 2.5, "a"]

    def objective(trial: optuna.Trial) -> float:
        c = trial.suggest_categorical("c", choices)
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
        return x + choices.index(c)

    study = _study(sampler)
    study.optimize(objective, n_trials=8)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_conditional_space(acquisition: str) -> None:
    sampler = _sampler(acquisition)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
        model = trial.suggest_categorical("model", ["a", "b", "c"])
        if model == "a":
            return x + trial.suggest_float("a_lr", 1e-5, 1.0, log=True)
        if model == "b":
            return x + trial.suggest_int("b_depth", 1, 32, log=True)
        return x + trial.suggest_float("c_step", 0.0, 1.0, step=0.25)

    study = _study(sampler)
    study.optimize(objective, n_trials=12)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_dynamic_space(acquisition: str) -> None:
    # Ranges that change from trial to trial, and parameters that come and go. (Optuna itself
    # forbids changing a parameter's kind or a categorical's choices.)
    sampler = _sampler(acquisition)

    def objective(trial: optuna.Trial) -> float:
        n = trial.number
        x = trial.suggest_float("x", 0.0, 1.0 + n)
        k = trial.suggest_int("k", 0, 2 + n % 3)
        w = trial.suggest_float("w", 0.0, 1.0)
        extra = trial.suggest_float(f"extra{n % 2}", -1.0, 1.0) if n >= 4 else 0.0
        report_cost(trial, 1.0)
        return x + k + w + extra

    study = _study(sampler)
    study.optimize(objective, n_trials=10)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    _assert_legal(study)


# -- enqueued and fixed parameters ----------------------------------------------------------------


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_enqueued_partial_and_full_parameters(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=10.0)
    study = _study(sampler)
    study.enqueue_trial({"x": 0.25})  # partial: y is sampled
    study.enqueue_trial({"x": 0.75, "y": 3})  # full

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_int("y", 0, 5)
        report_cost(trial, 1.0)
        return x + y

    study.optimize(objective)
    trials = study.get_trials()
    assert trials[0].params["x"] == 0.25 and trials[1].params == {"x": 0.75, "y": 3}
    assert len(trials) == 10 and sampler.ledger(study).spent == 10.0
    # Enqueued points later in the study, after the models took over.
    study.enqueue_trial({"x": 0.5})
    sampler2 = _sampler(acquisition, budget=12.0)
    study.sampler = sampler2
    study.optimize(objective)
    assert study.trials[10].params["x"] == 0.5
    assert sampler2.ledger(study).spent == 12.0
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_partial_fixed_sampler(acquisition: str) -> None:
    base = _sampler(acquisition, budget=6.0)
    study = _study(optuna.samplers.PartialFixedSampler({"x": 0.25}, base))

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        report_cost(trial, 1.0)
        return x + (y - 0.6) ** 2

    study.optimize(objective)  # the base sampler's budget still ends the loop
    assert len(study.trials) == 6
    assert {t.params["x"] for t in study.trials} == {0.25}
    assert base.ledger(study).spent == 6.0
    _assert_legal(study)


def _fully_fixed_objective(ran: list[int]) -> Any:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        ran.append(trial.number)
        report_cost(trial, 1.0)
        return x

    return objective


def test_enqueued_trial_on_a_spent_budget_is_not_run_or_is_charged() -> None:
    # A trial whose parameters are all fixed never calls the sampler, so it cannot be pruned at
    # its first suggestion: either it is not run, or it runs and is charged like any other.
    sampler = _sampler("rollout", budget=3.0)
    study = _study(sampler)
    ran: list[int] = []
    study.optimize(_fully_fixed_objective(ran))
    assert sampler.ledger(study).spent == 3.0
    study.enqueue_trial({"x": 0.5})
    ran.clear()
    study.optimize(_fully_fixed_objective(ran))
    last = study.trials[-1]
    if ran:  # the objective ran: its cost must be charged
        assert sampler.ledger(study).spent == 4.0, (last.state, last.system_attrs)
    else:
        assert last.state == TrialState.PRUNED and sampler.ledger(study).spent == 3.0


def test_fully_fixed_trial_on_a_spent_budget_is_not_run_or_is_charged() -> None:
    base = _sampler("rollout", budget=3.0)
    study = _study(optuna.samplers.PartialFixedSampler({"x": 0.5}, base))
    ran: list[int] = []
    study.optimize(_fully_fixed_objective(ran))
    assert len(ran) == 3 and base.ledger(study).spent == 3.0
    ran.clear()
    study.optimize(_fully_fixed_objective(ran))
    if ran:
        assert base.ledger(study).spent == 4.0
    else:
        assert study.trials[-1].state == TrialState.PRUNED


# -- trials added from outside ----------------------------------------------------------------


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_added_trials_without_timestamps_or_costs(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=10.0)
    study = _study(sampler)
    for i in range(4):  # add_trial: start == complete, no cost attr: charged 0
        study.add_trial(
            optuna.trial.create_trial(params={"x": i / 4}, distributions={"x": X}, value=i / 4)
        )
    study.add_trial(
        optuna.trial.create_trial(
            params={"x": 0.9}, distributions={"x": X}, value=0.1, user_attrs={"cost": 2.0}
        )
    )
    study.add_trial(
        optuna.trial.create_trial(
            params={"x": 0.8},
            distributions={"x": X},
            state=TrialState.FAIL,
            user_attrs={"cost": 1.0},
        )
    )
    # A finished trial with no timestamps at all, straight into storage.
    bare = FrozenTrial(
        number=0,
        state=TrialState.COMPLETE,
        value=0.3,
        datetime_start=None,
        datetime_complete=None,
        params={"x": 0.33},
        distributions={"x": X},
        user_attrs={},
        system_attrs={},
        intermediate_values={},
        trial_id=0,
    )
    study._storage.create_new_trial(study._study_id, template_trial=bare)
    ledger = sampler.ledger(study)
    assert ledger.spent == 3.0 and ledger.n_finished == 7

    study.optimize(_costed(lambda t, x: (x - 0.4) ** 2))
    assert sampler.ledger(study).spent == 10.0
    assert len(study.trials) == 7 + 7
    _assert_legal(study)


def test_waiting_and_orphaned_running_trials_are_not_spent() -> None:
    sampler = _sampler("ei", budget=5.0)
    study = _study(sampler)
    start = datetime.datetime.now() - datetime.timedelta(hours=1)
    waiting = FrozenTrial(
        number=0,
        state=TrialState.WAITING,
        value=None,
        datetime_start=None,
        datetime_complete=None,
        params={},
        distributions={},
        user_attrs={},
        system_attrs={},
        intermediate_values={},
        trial_id=0,
    )
    study._storage.create_new_trial(study._study_id, template_trial=waiting)
    running_long = FrozenTrial(
        number=0,
        state=TrialState.RUNNING,
        value=None,
        datetime_start=start,
        datetime_complete=None,
        params={"x": 0.5},
        distributions={"x": X},
        user_attrs={},
        system_attrs={},
        intermediate_values={},
        trial_id=0,
    )
    # (a RUNNING trial an hour old, as a worker that died without heartbeat leaves it)
    study._storage.create_new_trial(study._study_id, template_trial=running_long)
    ledger = sampler.ledger(study)
    # A running trial is not spent yet (only accrued), a waiting one costs nothing.
    assert ledger.spent == 0.0 and ledger.n_running == 1 and ledger.running_elapsed > 3000


# -- pruners and direction ---------------------------------------------------------------------


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_hyperband_pruner_maximize(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=6.0)
    pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=9)
    study = _study(sampler, direction="maximize", pruner=pruner)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(9):
            trial.report(-((x - 0.3) ** 2) - 1.0 / (step + 1), step)
            if trial.should_prune():
                report_cost(trial, 0.1 * (step + 1))
                raise optuna.TrialPruned()
        report_cost(trial, 1.0)
        return -((x - 0.3) ** 2)

    study.optimize(objective, n_trials=100)
    costs = [t.user_attrs["cost"] for t in study.trials]
    assert sum(costs) >= 6.0 > sum(costs[:-1])
    _assert_ledger_is_the_sum_of_costs(sampler, study)
    _assert_legal(study)


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_maximize_finds_the_maximum_and_stops(acquisition: str) -> None:
    sampler = _sampler(acquisition, budget=15.0, n_startup_trials=4)
    study = _study(sampler, direction="maximize")
    study.optimize(_costed(lambda t, x: -((x - 0.7) ** 2)))
    assert len(study.trials) == 15
    assert study.best_params["x"] == pytest.approx(0.7, abs=0.05)
    assert study.user_attrs[SPENT_ATTR] == 15.0
