"""What one trial costs: checked values, the objective's cost (models), the charge (budget)."""

from __future__ import annotations

from collections.abc import Sequence
import datetime
import math
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.dead_trials import alive_seconds
from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import CostSource
from optuna_costbo._numerics.checks import is_real
from optuna_costbo._numerics.cost_model import COST_FLOOR


def validate_budget(budget: Any) -> float:
    """Return ``budget`` as a float, or raise a ValueError saying what is allowed."""
    if not is_real(budget) or not 0.0 < float(budget) < math.inf:
        raise ValueError(f"budget must be a positive finite number, got {budget!r}")
    return float(budget)


def validate_cost(cost: Any, *, name: str = "cost") -> float:
    """A cost as a float: real, finite and >= 0 (0: a free, cached result), else ValueError."""
    if not is_real(cost):
        raise ValueError(
            f"{name} must be a non-negative finite number (int or float), got {cost!r} "
            f"of type {type(cost).__name__}"
        )
    value = float(cost)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be a non-negative finite number, got {cost!r}")
    return value


def report_cost(trial: optuna.trial.BaseTrial, cost: float, *, cost_attr: str = COST_ATTR) -> None:
    """Report the cost of ``trial`` from inside the objective (money, energy, a simulated cost).

    Equivalent to ``trial.set_user_attr(cost_attr, cost)``, but a bad cost fails the trial at
    once with a clear ValueError instead of reaching the ledger.

    Args:
        trial: The running trial.
        cost: A non-negative finite number (0: a free trial, e.g. a cached result), in the
            same units as the sampler's budget.
        cost_attr: The user attr name the sampler reads (its ``cost_attr`` argument).
    """
    trial.set_user_attr(cost_attr, validate_cost(cost, name=f"the reported cost {cost_attr!r}"))


def _reported_cost(trial: FrozenTrial, cost_attr: str) -> float | None:
    raw = trial.user_attrs.get(cost_attr)
    if raw is None:
        return None
    try:
        return validate_cost(raw)
    except ValueError:
        return None


def sampler_seconds(trial: FrozenTrial) -> float:
    """Seconds the sampler spent choosing this trial's parameters, as recorded on it."""
    value = trial.system_attrs.get(SAMPLER_SECONDS_ATTR, 0.0)
    if not is_real(value):
        return 0.0
    return float(value) if math.isfinite(value) and value > 0.0 else 0.0


def objective_cost(
    trial: FrozenTrial, cost_attr: str, now: datetime.datetime | None = None
) -> float:
    """The objective's cost alone: the valid ``cost_attr``, else a dead trial's last stamp, else
    the wall clock (to ``now`` while running) less the sampler's time."""
    reported = _reported_cost(trial, cost_attr)
    if reported is not None:
        return reported
    alive = alive_seconds(trial)
    if alive is not None:
        return alive
    end = trial.datetime_complete
    if end is None and trial.state == TrialState.RUNNING:
        end = now or datetime.datetime.now()
    start = trial.datetime_start
    if start is None or end is None:
        return 0.0
    return max(max((end - start).total_seconds(), 0.0) - sampler_seconds(trial), 0.0)


def charged_cost(
    trial: FrozenTrial,
    cost_attr: str,
    charge_sampler_time: bool,
    now: datetime.datetime | None = None,
) -> float:
    """What ``trial`` costs the budget: its objective cost, plus sampler time if charged."""
    if trial.system_attrs.get(SKIPPED_ATTR):
        return 0.0
    cost = objective_cost(trial, cost_attr, now)
    if charge_sampler_time:
        cost += sampler_seconds(trial)
    return cost


def checked_costs(values: list[Any], what: str) -> np.ndarray:
    """``cost_fn``'s values as an array raised to the cost floor, or a ValueError if not >= 0."""
    try:
        costs = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"cost_fn must return numbers; got {values[:3]!r}... for {what}"
        ) from None
    bad = ~np.isfinite(costs) | (costs < 0.0)
    if bad.any():
        raise ValueError(
            f"cost_fn must return non-negative finite numbers; got {costs[bad][0]!r} for {what}"
        )
    out: np.ndarray = np.maximum(costs, COST_FLOOR)
    return out


def previous_params(trials: Sequence[FrozenTrial], trial: FrozenTrial) -> dict[str, Any] | None:
    """Parameters of the latest trial before ``trial``: where a moving cost starts from."""
    earlier = [
        t
        for t in trials
        if t.number < trial.number
        and t.state in (*FINISHED_STATES, TrialState.RUNNING)
        and not t.system_attrs.get(SKIPPED_ATTR)
    ]
    return dict(max(earlier, key=lambda t: t.number).params) if earlier else None


def estimated_cost(trials: Sequence[FrozenTrial], cost_attr: str) -> float:
    """Median cost reported or from ``cost_fn`` so far (0 before any): a missing cost's charge."""
    known = [
        cost
        for t in trials
        if t.system_attrs.get(COST_SOURCE_ATTR) in (CostSource.REPORTED, CostSource.COST_FN)
        and (cost := _reported_cost(t, cost_attr)) is not None
    ]
    return float(np.median(known)) if known else 0.0
