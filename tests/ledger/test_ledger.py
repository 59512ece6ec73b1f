"""The ledger, cost validation and the budget pruner."""

from __future__ import annotations

import datetime
import math

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostBudgetPruner
from optuna_costbo import report_cost
from optuna_costbo._ledger import ledger as ledger_module
from optuna_costbo._ledger.costs import charged_cost
from optuna_costbo._ledger.costs import objective_cost
from optuna_costbo._ledger.costs import validate_budget
from optuna_costbo._ledger.costs import validate_cost
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo._ledger.ledger import refresh_ledger
from optuna_costbo._ledger.ledger import storage_trials
from optuna_costbo._ledger.runs import mark_run
from optuna_costbo._ledger.units import measured_costs


optuna.logging.set_verbosity(optuna.logging.ERROR)

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)


def _trial(
    state: TrialState, seconds: float | None, **user_attrs: object
) -> optuna.trial.FrozenTrial:
    finished = seconds is not None and state != TrialState.RUNNING
    return optuna.trial.FrozenTrial(
        number=0,
        state=state,
        value=1.0 if state == TrialState.COMPLETE else None,
        datetime_start=T0,
        datetime_complete=T0 + datetime.timedelta(seconds=seconds) if finished else None,
        params={"x": 0.5},
        distributions={"x": FloatDistribution(0, 1)},
        user_attrs=dict(user_attrs),
        system_attrs={},
        intermediate_values={},
        trial_id=0,
    )


@pytest.mark.parametrize(
    "bad", [-1.0, -1e-12, float("nan"), float("inf"), -float("inf"), "3", None, True, [1.0]]
)
def test_validate_cost_rejects_bad_values(bad: object) -> None:
    with pytest.raises(ValueError, match="non-negative finite number"):
        validate_cost(bad)


def test_validate_cost_accepts_zero_a_free_evaluation() -> None:
    assert validate_cost(0) == 0.0 and validate_cost(0.0) == 0.0


@pytest.mark.parametrize("good", [1e-9, 1, 2.5, np.float32(0.5), np.int64(3), 1e12])
def test_validate_cost_accepts_positive_numbers(good: object) -> None:
    assert validate_cost(good) == pytest.approx(float(good))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -3, float("nan"), float("inf"), "10", None, True])
def test_validate_budget_message_names_argument(bad: object) -> None:
    with pytest.raises(ValueError, match=r"budget must be a positive finite number, got"):
        validate_budget(bad)


def test_ledger_counts_complete_pruned_and_failed_and_separates_running() -> None:
    trials = [
        _trial(TrialState.COMPLETE, 2.0),
        _trial(TrialState.PRUNED, 3.0),
        _trial(TrialState.FAIL, 4.0),
        _trial(TrialState.COMPLETE, 100.0, cost=0.5),  # a reported cost wins over duration
        _trial(TrialState.RUNNING, None),
        _trial(TrialState.WAITING, None),
    ]
    now = T0 + datetime.timedelta(seconds=7.0)
    ledger = compute_ledger(trials, budget=20.0, cost_attr="cost", now=now)
    assert ledger.spent == pytest.approx(2.0 + 3.0 + 4.0 + 0.5)
    assert ledger.running_elapsed == pytest.approx(7.0)
    assert (ledger.n_finished, ledger.n_running) == (4, 1)
    assert ledger.remaining == pytest.approx(20.0 - 9.5)
    assert not ledger.exhausted
    assert compute_ledger(trials, budget=9.5, cost_attr="cost", now=now).exhausted


def test_ledger_ignores_invalid_reported_cost_and_uses_duration() -> None:
    trials = [
        _trial(TrialState.COMPLETE, 2.0, cost="oops"),
        _trial(TrialState.COMPLETE, 1.0, cost=-5.0),
    ]
    ledger = compute_ledger(trials, budget=10.0, cost_attr="cost")
    assert ledger.spent == pytest.approx(3.0)
    assert math.isfinite(ledger.spent)


def test_sampler_time_subtracted_from_duration_and_charged_on_request() -> None:
    t = _trial(TrialState.COMPLETE, 5.0)
    t.system_attrs[SAMPLER_SECONDS_ATTR] = 1.5
    assert objective_cost(t, "cost") == pytest.approx(3.5)
    assert charged_cost(t, "cost", charge_sampler_time=False) == pytest.approx(3.5)
    assert charged_cost(t, "cost", charge_sampler_time=True) == pytest.approx(5.0)


def test_skipped_trial_costs_nothing() -> None:
    t = _trial(TrialState.PRUNED, 5.0)
    t.system_attrs[SKIPPED_ATTR] = True
    assert charged_cost(t, "cost", charge_sampler_time=True) == 0.0


def test_ledger_from_storage_sees_add_trial_and_heartbeat_style_failures() -> None:
    study = optuna.create_study()
    # add_trial: start == complete, so duration 0 unless a cost is given
    study.add_trial(optuna.create_trial(value=1.0, params={}, distributions={}))
    study.add_trial(
        optuna.create_trial(value=1.0, params={}, distributions={}, user_attrs={"cost": 4.0})
    )
    # a FAIL trial written directly to storage (as fail_stale_trials does), with timestamps
    trial = study.ask()
    study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    # As CostBudgetPruner sees a study the sampler never ran: every trial charged ...
    ledger = charge_and_sum(study, storage_trials(study), budget=10.0, cost_attr="cost")
    assert ledger.n_finished == 3
    assert ledger.spent >= 4.0
    assert ledger.spent < 4.0 + 5.0  # the failed trial lasted well under 5 s
    # ... and the sampler, which started none of them: all imported.
    ledger = refresh_ledger(study, budget=10.0, cost_attr="cost")
    assert (ledger.spent, ledger.n_finished, ledger.n_imported) == (0.0, 0, 3)


def test_report_cost_validates_inside_objective() -> None:
    study = optuna.create_study()

    def objective(trial: optuna.Trial) -> float:
        report_cost(trial, -1.0)
        return 0.0

    study.optimize(objective, n_trials=1, catch=(ValueError,))
    assert study.trials[0].state == TrialState.FAIL
    assert "cost" not in study.trials[0].user_attrs

    study.optimize(lambda t: report_cost(t, 2.0) or 0.0, n_trials=1)  # type: ignore[func-returns-value]
    assert study.trials[1].user_attrs["cost"] == 2.0


def test_budget_pruner_prunes_when_spent_plus_own_cost_exceeds_budget() -> None:
    study = optuna.create_study(pruner=CostBudgetPruner(budget=10.0))
    study.add_trial(
        optuna.create_trial(value=1.0, params={}, distributions={}, user_attrs={"cost": 8.0})
    )
    pruned_at = []

    def objective(trial: optuna.Trial) -> float:
        for step in range(10):
            report_cost(trial, 0.5 * (step + 1))  # running cost so far, in money
            trial.report(1.0, step)
            if trial.should_prune():
                pruned_at.append(step)
                raise optuna.TrialPruned()
        return 1.0

    study.optimize(objective, n_trials=1)
    # 8 + 0.5 * (step + 1) > 10 first at step 4 (cost 2.5)
    assert pruned_at == [4]
    assert study.trials[-1].state == TrialState.PRUNED


def test_budget_pruner_reads_budget_from_study_and_wraps_another_pruner() -> None:
    class Always(optuna.pruners.BasePruner):
        def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
            return True

    study = optuna.create_study(pruner=CostBudgetPruner())
    trial = study.ask()
    trial.report(1.0, 0)
    assert not study.pruner.prune(
        study, study._storage.get_trial(trial._trial_id)
    )  # no budget stored
    study.set_user_attr(BUDGET_ATTR, 1e-9)
    assert study.pruner.prune(study, study._storage.get_trial(trial._trial_id))
    wrapped = CostBudgetPruner(budget=1e9, wrapped_pruner=Always())
    assert wrapped.prune(study, study._storage.get_trial(trial._trial_id))


def test_budget_pruner_keeps_only_its_budget_check_for_several_objectives() -> None:
    class Always(optuna.pruners.BasePruner):
        def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
            return True

    study = optuna.create_study(directions=["minimize", "minimize"])
    study.set_user_attr(BUDGET_ATTR, 10.0)
    study.add_trial(optuna.create_trial(values=[1.0, 2.0], user_attrs={"cost": 8.0}))
    trial = study.ask()
    pruner = CostBudgetPruner(optuna.pruners.MedianPruner(n_startup_trials=0))
    for cost, crosses in ((1.0, False), (2.5, True)):
        report_cost(trial, cost)
        frozen = study._storage.get_trial(trial._trial_id)
        assert pruner.prune(study, frozen) is crosses  # the Median pruner is not asked
        assert CostBudgetPruner(Always()).prune(study, frozen) is crosses


def test_budget_pruner_takes_a_positional_pruner_as_the_wrapped_one() -> None:
    """``CostBudgetPruner(MedianPruner())``, as wrapping pruners are written, wraps it."""
    median = optuna.pruners.MedianPruner(n_startup_trials=1, n_warmup_steps=0)
    pruner = CostBudgetPruner(median)
    study = optuna.create_study(pruner=pruner)
    study.set_user_attr(BUDGET_ATTR, 100.0)  # the budget comes from the study
    pruned: list[int] = []

    def objective(trial: optuna.Trial) -> float:
        report_cost(trial, 1.0)
        value = [1.0, 5.0][trial.number]  # the second trial is worse than the median
        trial.report(value, 0)
        if trial.should_prune():
            pruned.append(trial.number)
            raise optuna.TrialPruned()
        return value

    study.optimize(objective, n_trials=2)
    assert pruned == [1]  # the median pruner spoke: 2 of 100 spent is far from the budget
    # The budget is still the study's: a spent one prunes too.
    study.set_user_attr(BUDGET_ATTR, 1.5)
    trial = study.ask()
    report_cost(trial, 1.0)
    assert pruner.prune(study, study._storage.get_trial(trial._trial_id))


def test_budget_pruner_rejects_two_pruners_and_names_wrapped_pruner_for_other_objects() -> None:
    median = optuna.pruners.MedianPruner()
    with pytest.raises(ValueError, match="two pruners"):
        CostBudgetPruner(median, wrapped_pruner=optuna.pruners.NopPruner())
    with pytest.raises(ValueError, match=r"wrapped_pruner=.*got 'median'"):
        CostBudgetPruner("median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive finite number, got -1"):
        CostBudgetPruner(-1.0)  # the budget, unlike a cost, must be positive


def test_budget_pruner_charges_the_samplers_time_as_the_sampler_does_by_default() -> None:
    # Wall-clock costs: the sampler charges its own seconds, and so does the pruner (one rule,
    # _ledger/units.py); with a budget between the two ledgers the pruner prunes.
    from optuna_costbo import CostRolloutSampler

    sampler = CostRolloutSampler(budget=1e6, n_startup_trials=2, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0) - 0.3) ** 2, n_trials=5)
    charged = sampler.ledger(study).spent
    plain = compute_ledger(study.get_trials(), 1e6, "cost", False).spent
    assert measured_costs(study.get_trials()) is True
    assert charged - plain > 1e-3  # the sampler's seconds of the model-based trials
    budget = 0.5 * (charged + plain)
    running = study.ask()
    frozen = study._storage.get_trial(running._trial_id)
    assert CostBudgetPruner(budget).prune(study, frozen)
    # Uncharged, it would not have pruned: the plain ledger and the trial's own time fit.
    assert plain + charged_cost(frozen, "cost", charge_sampler_time=False) < budget


def _finished_with_cost(study: optuna.Study, cost: float) -> None:
    """Another worker's trial, run under the budget, finished with its cost recorded."""
    trial = study.ask()
    mark_run(study, trial)  # type: ignore[arg-type]
    trial.set_user_attr("cost", cost)
    study.tell(trial, 0.0)


def test_store_ledger_does_not_leave_a_stale_spent_when_workers_interleave(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The interleaving of a 4-process stress run: between this worker's read-back and its
    # second write, worker D finishes a trial and stores the full ledger; this worker's second
    # write (computed before D's trial) then lands on top of it. The stored spent must still
    # end as the ledger of every finished trial.
    study = optuna.create_study()
    _finished_with_cost(study, 1.0)
    real = ledger_module.storage_trials
    calls = [0]

    def interleaved(study_: optuna.Study) -> list[FrozenTrial]:
        calls[0] += 1
        if calls[0] == 2:
            _finished_with_cost(study_, 2.0)  # worker B, before this worker's read-back
        out = real(study_)
        if calls[0] == 2:
            _finished_with_cost(study_, 4.0)  # worker D, after it: D stores the full ledger
            full = ledger_module.charge_and_sum(study_, real(study_), 100.0, "cost")
            ledger_module.write_ledger(study_, full)
        return out

    monkeypatch.setattr(ledger_module, "storage_trials", interleaved)
    spent, _ = ledger_module.store_ledger(study, 100.0, "cost")
    assert spent == pytest.approx(7.0)
    assert study.user_attrs[SPENT_ATTR] == pytest.approx(7.0)
    assert calls[0] >= 4  # the stale second write was followed by another read-back
