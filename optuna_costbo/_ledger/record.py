"""A finished trial's cost, written on it as its numeric user attr with its source."""

from __future__ import annotations

from collections.abc import Mapping
import datetime
from typing import Any
from typing import Protocol

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.costs import estimated_cost
from optuna_costbo._ledger.costs import previous_params
from optuna_costbo._ledger.costs import validate_cost
from optuna_costbo._ledger.keys import COST_FN_ERROR_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import INVALID_COST_ATTR
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import CostSource
from optuna_costbo._ledger.ledger import storage_trials
from optuna_costbo._numerics.cost_model import COST_FLOOR


class CostFunction(Protocol):
    """The sampler's ``cost_fn``, adapted (:class:`~optuna_costbo._sampler.user_cost.UserCost`)."""

    @property
    def moving(self) -> bool: ...

    def charge(
        self, params: Mapping[str, Any], previous: Mapping[str, Any] | None, what: str
    ) -> float: ...


class CostFnError(RuntimeError):
    """The user's ``cost_fn`` raised or returned a bad value (the trial's cost is estimated)."""


def record_finished_trial(
    study: optuna.Study,
    trial: FrozenTrial,
    *,
    sampler_seconds: float,
    cost_attr: str,
    user_cost: CostFunction | None,
    reported_unit: bool,
    overhead: float = 0.0,
    now: datetime.datetime | None = None,
) -> Exception | None:
    """Store the sampler's seconds and, unless skipped, the cost: a valid report, else
    ``user_cost``, else the median in the user's unit, else the wall clock; return any error."""
    storage, trial_id = study._storage, trial._trial_id
    storage.set_trial_system_attr(trial_id, SAMPLER_SECONDS_ATTR, sampler_seconds + overhead)
    if trial.system_attrs.get(SKIPPED_ATTR):
        return None
    raw = trial.user_attrs.get(cost_attr)
    bad_report: ValueError | None = None
    if raw is not None:
        try:
            validate_cost(raw, name=f"the reported cost {cost_attr!r}")
            storage.set_trial_system_attr(trial_id, COST_SOURCE_ATTR, CostSource.REPORTED.value)
            return None
        except ValueError as exc:
            bad_report = exc
            storage.set_trial_system_attr(trial_id, INVALID_COST_ATTR, repr(raw))
    failed: Exception | None = None  # what cost_fn raised
    if user_cost is not None and bad_report is None:
        previous = previous_params(storage_trials(study), trial) if user_cost.moving else None
        try:
            cost = user_cost.charge(trial.params, previous, f"trial {trial.number}")
            storage.set_trial_user_attr(trial_id, cost_attr, cost)
            storage.set_trial_system_attr(trial_id, COST_SOURCE_ATTR, CostSource.COST_FN.value)
            return None
        except Exception as exc:
            failed = exc
            storage.set_trial_system_attr(trial_id, COST_FN_ERROR_ATTR, repr(exc))
    if reported_unit or user_cost is not None or raw is not None:
        cost = estimated_cost(storage_trials(study), cost_attr)
        source = CostSource.ESTIMATED
        how = f"{cost:.6g}, the median cost so far (system attr {COST_SOURCE_ATTR!r}: estimated)"
    else:
        start = trial.datetime_start or datetime.datetime.now()
        elapsed = ((now or datetime.datetime.now()) - start).total_seconds()
        # NOTE: the floor keeps log(cost) defined below the clock's resolution.
        cost = max(elapsed - sampler_seconds, COST_FLOOR)
        source = CostSource.WALL_CLOCK
        how = "its wall-clock time"
    storage.set_trial_user_attr(trial_id, cost_attr, cost)
    storage.set_trial_system_attr(trial_id, COST_SOURCE_ATTR, source.value)
    if failed is not None:
        error = CostFnError(
            f"cost_fn failed for trial {trial.number}: {failed!r}. The trial "
            f"was charged {how}; the ledger and the study attrs agree."
        )
        error.__cause__ = failed
        return error
    if bad_report is not None:  # NOTE: a sampler cannot change the state; it treats it as failed
        return ValueError(
            f"Trial {trial.number} failed because of its cost: {bad_report}. It was charged "
            f"{how} instead, its value stays out of the models, and the reported cost is kept "
            f"in system attr {INVALID_COST_ATTR!r}."
        )
    return None
