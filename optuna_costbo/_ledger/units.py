"""Measured seconds or the user's unit: the unit for labels, and whether the sampler's time counts.

The sampler's time is charged exactly when the costs are the measured wall clock (reported and
``cost_fn`` costs are in the user's units); before the first priced trial, unless a ``cost_fn``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import UNIT_ATTR
from optuna_costbo._ledger.keys import CostSource


def measured_costs(trials: Sequence[FrozenTrial]) -> bool | None:
    """Whether the study's costs are measured, by its first trial with a wall-clock, reported or
    ``cost_fn`` cost (None: no such trial yet)."""
    for t in trials:
        source = t.system_attrs.get(COST_SOURCE_ATTR)
        if source in (CostSource.REPORTED, CostSource.COST_FN, CostSource.WALL_CLOCK):
            return bool(source == CostSource.WALL_CLOCK)
    return None


def charges_sampler_time(trials: Sequence[FrozenTrial]) -> bool:
    """Whether the sampler's time counts against the budget of the study of ``trials``."""
    return measured_costs(trials) is not False  # nothing priced yet: charged


class SamplerTimeCharge:
    """:func:`charges_sampler_time` per study, remembered once a priced trial decides it."""

    def __init__(self, has_cost_fn: bool) -> None:
        self._has_cost_fn = has_cost_fn
        self._known: dict[int, bool] = {}  # study id -> the decided rule

    def resolve(
        self, study_id: int, trials: Callable[[], Sequence[FrozenTrial]] | Sequence[FrozenTrial]
    ) -> bool:
        """The rule in study ``study_id``; ``trials`` may be a function, called only if needed."""
        known = self._known.get(study_id)
        if known is not None:
            return known
        if self._has_cost_fn:
            return False
        read = trials() if callable(trials) else trials
        measured = measured_costs(read)
        if measured is None:
            return True  # nothing priced yet: nothing is spent either but a running trial's time
        self._known[study_id] = measured
        return measured


def is_measured(trial: FrozenTrial, cost_attr: str) -> bool:
    """Whether ``trial`` is charged wall-clock seconds (no source recorded: no cost attr)."""
    source = trial.system_attrs.get(COST_SOURCE_ATTR)
    if source is None:
        return trial.user_attrs.get(cost_attr) is None
    return bool(source == CostSource.WALL_CLOCK)


def cost_unit(
    trials: Iterable[FrozenTrial],
    cost_attr: str,
    unit: str | None = None,
    study_attrs: Mapping[str, Any] | None = None,
) -> str | None:
    """The unit to print after costs: ``unit`` (``""``: none), else the study's ``cost_unit``
    user attr, else ``"s"`` if every finished trial was measured, else None (unknown)."""
    if unit is not None:
        return unit or None
    named = (study_attrs or {}).get(UNIT_ATTR)
    if isinstance(named, str):
        return named or None
    finished = [t for t in trials if t.state in FINISHED_STATES]
    if not finished or not all(is_measured(t, cost_attr) for t in finished):
        return None
    return "s"  # measured costs are wall-clock seconds
