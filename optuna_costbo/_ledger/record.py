"""What a finished trial cost: the objective's report, the user's cost_fn, an estimate in the
user's unit when neither gives one, or the wall clock.

Written on the trial as its numeric user attr (``cost`` by default, where optuna-dashboard shows
and sorts it), with where it came from in a system attr; the ledger then reads it from storage.
"""

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


__all__ = ["CostFnError", "CostFunction", "record_finished_trial", "store_cost"]


class CostFunction(Protocol):
    """A known cost (the sampler's ``cost_fn``, adapted), as the ledger charges it."""

    @property
    def moving(self) -> bool:
        """Whether the cost depends on the previous trial's parameters."""
        ...

    def charge(
        self, params: Mapping[str, Any], previous: Mapping[str, Any] | None, what: str
    ) -> float:
        """The checked cost of one evaluation at ``params`` (coming from ``previous``)."""
        ...


class CostFnError(RuntimeError):
    """The user's ``cost_fn`` raised or returned a bad value for a finished trial."""


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
    """After a trial: store the sampler's seconds on it and, unless the trial was cut short
    because the budget was already spent (it costs nothing), its cost (:func:`store_cost`).

    Once the cost is stored the ledger counts the trial as spent, although its state is
    stored only after the sampler's ``after_trial`` (see :func:`.ledger.compute_ledger`).
    ``overhead``: seconds charged beyond ``sampler_seconds`` (the work between trials, less a
    one-time import); ``now``: when the trial's clock stops.
    """
    study._storage.set_trial_system_attr(
        trial._trial_id, SAMPLER_SECONDS_ATTR, sampler_seconds + overhead
    )
    if trial.system_attrs.get(SKIPPED_ATTR):
        return None
    return store_cost(
        study,
        trial,
        sampler_seconds=sampler_seconds,
        cost_attr=cost_attr,
        user_cost=user_cost,
        reported_unit=reported_unit,
        now=now,
    )


def store_cost(
    study: optuna.Study,
    trial: FrozenTrial,
    *,
    sampler_seconds: float,
    cost_attr: str,
    user_cost: CostFunction | None,
    reported_unit: bool,
    now: datetime.datetime | None = None,
) -> Exception | None:
    """Store the trial's cost as a numeric user attr; return the error of a bad report (a
    ValueError) or of a failed ``cost_fn`` (a :class:`CostFnError`), the trial charged.

    NOTE: the caller logs a bad report as a warning and the run goes on, as Optuna treats a
    bad return value. Optuna stores the trial's state after the sampler's ``after_trial`` and
    gives a sampler no way to change it, so the trial keeps its state; the sampler treats it
    as failed (its value stays out of the models).

    Precedence: a valid cost the objective reported (kept as is); else ``user_cost`` of the
    trial's parameters; else, in a study whose costs are in the user's unit (``cost_fn``,
    ``reported_unit``, or a report was attempted), the median cost so far, marked as
    estimated (never seconds charged as dollars); else the wall-clock time since the trial
    started, less the sampler's own time.
    """
    storage, trial_id = study._storage, trial._trial_id
    raw = trial.user_attrs.get(cost_attr)
    if raw is not None:
        try:
            validate_cost(raw, name=f"the reported cost {cost_attr!r}")
            storage.set_trial_system_attr(trial_id, COST_SOURCE_ATTR, CostSource.REPORTED.value)
            return None
        except ValueError as exc:
            bad_report: ValueError | None = exc
            storage.set_trial_system_attr(trial_id, INVALID_COST_ATTR, repr(raw))
    else:
        bad_report = None
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
        # NOTE: the floor keeps log(cost) defined for an objective that returns in less than
        # the clock's resolution.
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
    if bad_report is not None:
        return ValueError(
            f"Trial {trial.number} failed because of its cost: {bad_report}. It was charged "
            f"{how} instead, its value stays out of the models, and the reported cost is kept "
            f"in system attr {INVALID_COST_ATTR!r}."
        )
    return None
