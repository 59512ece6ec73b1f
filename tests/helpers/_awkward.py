"""Shared by the awkward-input tests: samplers past their start-up, legality and ledger
checks, a costed objective."""

from __future__ import annotations

import math
from typing import Any

import optuna
from optuna.distributions import FloatDistribution
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.costs import sampler_seconds
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR


ACQUISITIONS = ["rollout", "ei"]


X = FloatDistribution(0.0, 1.0)


def _sampler(acquisition: str, budget: float = 1e9, **kwargs: Any) -> CostRolloutSampler:
    kwargs.setdefault("n_startup_trials", 2)
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


BAD_COSTS = [-1.0, -1e-9, -math.inf, math.nan, math.inf, "1.0", None, True, [1.0]]


def _fully_fixed_objective(ran: list[int]) -> Any:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        ran.append(trial.number)
        report_cost(trial, 1.0)
        return x

    return objective
