"""Stopping when the next trial is not worth its cost (value_per_cost), with or without a budget,
for CostRolloutSampler and, as a callback, for any sampler; why a study stopped is recorded."""

from __future__ import annotations

import math

import numpy as np
import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import CHOSEN_EI_ATTR
from optuna_costbo._ledger.keys import NEXT_RATE_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._numerics.acquisition.ei import ei
from optuna_costbo._sampler.stopping import StopRule
from optuna_costbo._sampler.stopping import calibration
from optuna_costbo.stopping import CostAwareStopping


optuna.logging.set_verbosity(optuna.logging.WARNING)


def _objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", 0.0, 1.0)
    y = trial.suggest_float("y", 0.0, 1.0)
    report_cost(trial, 1.0 + 4.0 * x)
    return (x - 0.3) ** 2 + (y - 0.6) ** 2


def test_the_rule_compares_the_best_rate_with_the_exchange_rate() -> None:
    rule = StopRule(0.01)
    assert rule.reason(None) is None  # no cost model yet: go on
    assert rule.reason(math.log(0.02)) is None
    reason = rule.reason(math.log(0.005))
    assert reason is not None and "0.005" in reason and "0.01" in reason
    # Discounted by the share of its promises the model kept: 0.02 x 0.4 < 0.01.
    assert rule.reason(math.log(0.02), 0.6) is None
    discounted = rule.reason(math.log(0.02), 0.4)
    assert discounted is not None and "0.008" in discounted and "0.4" in discounted


@pytest.mark.parametrize("value_per_cost", [1e-2, 1e-4])
def test_a_study_without_a_budget_stops_when_the_next_trial_is_not_worth_it(
    value_per_cost: float,
) -> None:
    sampler = CostRolloutSampler(None, value_per_cost=value_per_cost, seed=0, acquisition="eipu")
    study = optuna.create_study(sampler=sampler)
    study.optimize(_objective)  # no n_trials, no budget: the rule ends it
    last = study.trials[-1]
    assert last.state == TrialState.PRUNED and last.system_attrs.get(SKIPPED_ATTR)
    assert sampler.ledger(study).spent == pytest.approx(
        sum(t.user_attrs["cost"] for t in study.trials[:-1])  # the last one cost nothing
    )
    reason = sampler.stop_reason(study)
    assert reason is not None and "not worth its cost" in reason
    assert study.user_attrs["cost_stop_reason"] == reason
    assert "cost_budget" not in study.user_attrs  # JSON has no infinity
    assert math.isinf(sampler.budget)


def test_each_model_trial_records_what_the_rule_read_and_only_the_last_is_below() -> None:
    value_per_cost = 1e-3
    sampler = CostRolloutSampler(None, value_per_cost=value_per_cost, seed=2, acquisition="eipu")
    study = optuna.create_study(sampler=sampler)
    study.optimize(_objective)
    trials = study.trials
    rates = [t.system_attrs.get(NEXT_RATE_ATTR) for t in trials]
    recorded = [i for i, r in enumerate(rates) if r is not None]
    # The start-up design has no rate; every trial after it has one, and the log EI of its point.
    assert recorded and recorded == list(range(recorded[0], len(rates)))
    assert all(CHOSEN_EI_ATTR in trials[i].system_attrs for i in recorded)
    # The rule's quantity, the rate discounted by the calibration of the trials before it:
    discounted = [
        rates[i] + math.log(calibration(trials[:i], 1.0, trials[i].system_attrs[CHOSEN_EI_ATTR]))
        for i in recorded
    ]
    below = [i for i, d in zip(recorded, discounted, strict=True) if d < math.log(value_per_cost)]
    assert below == [len(rates) - 1]  # the rule stopped at the first trial below its rate
    # The same study at a higher exchange rate is this one cut at the first trial whose
    # discounted rate is below it (the records predict where it stops).
    middle = len(recorded) // 2
    higher = math.exp(discounted[middle]) * 1.0001
    cut = next(i for i, d in zip(recorded, discounted, strict=True) if d < math.log(higher))
    again = optuna.create_study(
        sampler=CostRolloutSampler(None, value_per_cost=higher, seed=2, acquisition="eipu")
    )
    again.optimize(_objective)
    assert len(again.trials) == cut + 1
    assert [t.params for t in again.trials[:cut]] == [t.params for t in trials[:cut]]


def test_the_calibration_is_the_share_of_expected_improvement_achieved() -> None:
    def trial(number: int, value: float, log_ei: float | None) -> optuna.trial.FrozenTrial:
        attrs = {} if log_ei is None else {NEXT_RATE_ATTR: 0.0, CHOSEN_EI_ATTR: log_ei}
        t = optuna.trial.create_trial(value=value, system_attrs=attrs)
        t.number = number
        return t

    # Start-up 5.0, then model trials expecting EI 1, 1, 2 and reaching 4.5 (gain 0.5), 6.0
    # (gain 0) and 2.5 (gain 2): G = 2.5, P = 4. The next trial expects e^0 = 1, so the prior's
    # mean expectation is (4 + 1) / 4 and k = (2.5 + 1.25) / (4 + 1.25).
    trials = [
        trial(0, 5.0, None),
        trial(1, 4.5, 0.0),
        trial(2, 6.0, 0.0),
        trial(3, 2.5, math.log(2)),
    ]
    assert calibration(trials, 1.0, 0.0) == pytest.approx(3.75 / 5.25)
    assert calibration(trials[:1], 1.0, 0.0) == 1.0  # no record yet
    # A maximize study: the same trials with values negated give the same calibration.
    maximize = [
        trial(0, -5.0, None),
        trial(1, -4.5, 0.0),
        trial(2, -6.0, 0.0),
        trial(3, -2.5, math.log(2)),
    ]
    assert calibration(maximize, -1.0, 0.0) == pytest.approx(3.75 / 5.25)
    # Promises kept in full: no discount.
    kept = [trial(0, 5.0, None), trial(1, 4.0, 0.0), trial(2, 3.0, 0.0)]
    assert calibration(kept, 1.0, 0.0) == 1.0


def test_with_eipu_the_chosen_points_ei_per_known_cost_is_the_recorded_best_rate() -> None:
    # EIpu's point is the maximizer of EI / c, so its recorded log EI less log c(x) (a known
    # cost) is the best rate the rule read: the two records come from one model and point.
    def cost(params: dict[str, float]) -> float:
        return 1.0 + 4.0 * params["x"]

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        return (x - 0.3) ** 2 + (y - 0.6) ** 2

    sampler = CostRolloutSampler(
        None, value_per_cost=1e-8, seed=3, acquisition="eipu", cost_fn=cost
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=25)
    checked = 0
    for t in study.trials:
        if NEXT_RATE_ATTR not in t.system_attrs or not t.params:
            continue
        assert t.system_attrs[CHOSEN_EI_ATTR] - math.log(cost(t.params)) == pytest.approx(
            t.system_attrs[NEXT_RATE_ATTR], rel=1e-6, abs=1e-6
        )
        checked += 1
    assert checked >= 10


def test_a_lower_exchange_rate_buys_more_trials_and_a_better_value() -> None:
    runs = {}
    for value_per_cost in (1e-2, 1e-5):
        sampler = CostRolloutSampler(None, value_per_cost=value_per_cost, seed=1)
        study = optuna.create_study(sampler=sampler)
        study.optimize(_objective)
        runs[value_per_cost] = (len(study.trials), study.best_value)
    assert runs[1e-5][0] > runs[1e-2][0]
    assert runs[1e-5][1] <= runs[1e-2][1]


def test_the_best_rate_is_the_brute_force_maximum_of_ei_per_unit_cost() -> None:
    from optuna_costbo._numerics.acquisition.registry import make_acquisition
    from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
    from optuna_costbo._numerics.param_specs import NumericParam
    from optuna_costbo._numerics.policy import Plan
    from optuna_costbo._numerics.policy import propose
    from optuna_costbo._numerics.request import CostData
    from optuna_costbo._numerics.request import ProposalRequest
    from optuna_costbo._numerics.search_space import BoxCodec

    X = np.array([[0.05], [0.25], [0.5], [0.7], [0.95]])
    y = np.sin(6 * X[:, 0])
    request = ProposalRequest(
        codec=BoxCodec([NumericParam(0.0, 1.0)]),
        X=X,
        y=y,
        remaining=math.inf,
        budget=math.inf,
        cost_data=CostData(X, 1.0 + 3.0 * X[:, 0]),
        rate_needed=True,
    )
    for name in ("ei", "eipu", "rollout"):
        proposal = propose(
            request, Plan(make_acquisition(name, AcquisitionOptions())), np.random.default_rng(0)
        )
        grid = np.linspace(0.0, 1.0, 20001)[:, None]
        mean, var = proposal.objective_model.predict(grid)
        cost = proposal.cost_model.cost(grid)  # type: ignore[union-attr]
        brute = np.max(ei(mean, var, float(y.min())) / cost)
        assert proposal.best_log_rate == pytest.approx(math.log(brute), abs=1e-4), name


@pytest.mark.parametrize(
    ("overrun_risk", "reason"),
    [("auto", "no configuration's cost fits the budget left"), (None, "the budget is spent")],
)
def test_the_budget_ends_it_first_and_says_so(overrun_risk: str | None, reason: str) -> None:
    # Reported costs: "auto" is the hard budget, which stops before the spend reaches it.
    sampler = CostRolloutSampler(8.0, value_per_cost=1e-9, seed=0, overrun_risk=overrun_risk)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_objective)
    assert sampler.stop_reason(study) is not None
    assert sampler.stop_reason(study).startswith(reason)  # type: ignore[union-attr]


def test_under_ask_and_tell_the_reason_is_recorded_and_the_trial_runs() -> None:
    sampler = CostRolloutSampler(None, value_per_cost=10.0, seed=0, n_startup_trials=3)
    study = optuna.create_study(sampler=sampler)
    for _ in range(5):
        trial = study.ask()
        study.tell(trial, _objective(trial))  # no exception: there is no loop to stop
    assert sampler.stop_reason(study) is not None
    assert all(t.state == TrialState.COMPLETE for t in study.trials)


def test_bad_stopping_options_are_refused_with_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="budget=None needs a stopping rule"):
        CostRolloutSampler(None)
    for bad in (0.0, -1.0, math.inf, "1"):
        with pytest.raises(ValueError, match="value_per_cost must be None or a positive"):
            CostRolloutSampler(10.0, value_per_cost=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="value_per_cost must be a positive finite number"):
        CostAwareStopping(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_trials"):
        CostAwareStopping(1.0, min_trials=1)


def test_the_callback_stops_any_sampler() -> None:
    found = {}
    for value_per_cost in (1e-2, 1e-4):
        callback = CostAwareStopping(value_per_cost)
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
        study.optimize(_objective, n_trials=300, callbacks=[callback])
        assert len(study.trials) < 300
        assert callback.last_rate is not None and callback.last_rate < value_per_cost
        assert "not worth its cost" in study.user_attrs["cost_stop_reason"]
        found[value_per_cost] = len(study.trials)
    assert found[1e-4] > found[1e-2]
