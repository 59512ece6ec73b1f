"""Awkward studies: duplicates, few or failed trials, wide, categorical, conditional, dynamic,
enqueued and fixed spaces, added and orphaned trials, HyperbandPruner, maximization.

Each scenario runs past the start-up trials (see ``test_awkward_objectives.py``).
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any

from _awkward import ACQUISITIONS
from _awkward import X
from _awkward import _assert_ledger_is_the_sum_of_costs
from _awkward import _assert_legal
from _awkward import _costed
from _awkward import _fully_fixed_objective
from _awkward import _sampler
from _awkward import _study
import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest

from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._ledger.runs import mark_run


optuna.logging.set_verbosity(optuna.logging.ERROR)


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


def test_enqueued_trial_on_a_spent_budget_is_not_run_or_is_charged() -> None:
    # A trial whose parameters are all fixed never calls the sampler, so it cannot be pruned at
    # its first suggestion: either it is not run, or it runs and is charged like any other.
    # soft: the test is about an enqueued trial on a spent budget, not the hard budget
    sampler = _sampler("rollout", budget=3.0, overrun_risk=None)
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


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_added_trials_without_timestamps_or_costs(acquisition: str) -> None:
    # soft: the test is about importing added trials, not the hard budget
    sampler = _sampler(acquisition, budget=10.0, overrun_risk=None)
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
    # Added trials are imported: counted apart (costs 0, 0, 0, 0, 2, 1, 0), not charged.
    ledger = sampler.ledger(study)
    assert (ledger.spent, ledger.n_finished, ledger.n_imported) == (0.0, 0, 7)
    assert ledger.imported_cost == 3.0

    study.optimize(_costed(lambda t, x: (x - 0.4) ** 2))
    assert sampler.ledger(study).spent == 10.0
    assert len(study.trials) == 7 + 10
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
    trial_id = study._storage.create_new_trial(study._study_id, template_trial=running_long)
    mark_run(study, study._storage.get_trial(trial_id))  # the sampler started it
    ledger = sampler.ledger(study)
    # A running trial is not spent yet (only accrued), a waiting one costs nothing.
    assert ledger.spent == 0.0 and ledger.n_running == 1 and ledger.running_elapsed > 3000


@pytest.mark.parametrize("acquisition", ACQUISITIONS)
def test_hyperband_pruner_maximize(acquisition: str) -> None:
    # soft: the test is about HyperbandPruner and maximization, not the hard budget
    sampler = _sampler(acquisition, budget=6.0, overrun_risk=None)
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
    totals = list(itertools.accumulate(costs))  # left to right, as the ledger sums
    assert totals[-1] >= 6.0 > totals[-2]
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
