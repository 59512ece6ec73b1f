"""The unit of a study's costs, for labels: the one the user named, else seconds when every
cost was measured.

A cost the sampler measured is wall-clock seconds; a cost the objective reported (money,
energy, ...) or a ``cost_fn`` gave is in the budget's units, which only the user can name: as
the study user attr ``cost_unit`` (``study.set_user_attr("cost_unit", "$")``), or as the
``unit`` argument of a label's maker. The progress bar, the plots and the dashboard chart
label their numbers with :func:`cost_unit`.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import UNIT_ATTR
from optuna_costbo._ledger.keys import CostSource


__all__ = ["WALL_CLOCK_UNIT", "cost_unit", "is_measured"]


WALL_CLOCK_UNIT = "s"
"""The unit of measured costs: seconds."""

_MEASURED_SOURCES = (CostSource.WALL_CLOCK,)


def is_measured(trial: FrozenTrial, cost_attr: str) -> bool:
    """Whether the ledger charges ``trial`` wall-clock seconds (not a reported cost).

    The sampler records where each cost came from (system attr ``costbo:cost_source``:
    ``wall_clock``, ``reported`` or ``cost_fn``). A trial without that record (another sampler,
    ``add_trial``) is measured unless it carries the user attr ``cost_attr``.
    """
    source = trial.system_attrs.get(COST_SOURCE_ATTR)
    if source is not None:
        return source in _MEASURED_SOURCES
    return trial.user_attrs.get(cost_attr) is None


def cost_unit(
    trials: Iterable[FrozenTrial],
    cost_attr: str,
    unit: str | None = None,
    study_attrs: Mapping[str, Any] | None = None,
) -> str | None:
    """The unit to print after costs: ``unit`` if given, else the study's user attr
    ``cost_unit`` if set, else inferred from ``trials``.

    Inferred: ``"s"`` when every finished trial was charged measured wall-clock time,
    ``None`` (unknown: no unit is printed) as soon as one cost was reported or came from a
    ``cost_fn``, or when no trial has finished yet.

    Args:
        trials: The study's trials (unfinished ones are ignored).
        cost_attr: The trial user attr holding reported costs (the sampler's ``cost_attr``).
        unit: The unit the caller named (``"$"``, ``"kWh"``); returned as is. ``""`` means no
            unit.
        study_attrs: The study's user attrs, where the user may have named the unit.
    """
    if unit is not None:
        return unit or None
    named = (study_attrs or {}).get(UNIT_ATTR)
    if isinstance(named, str):
        return named or None
    finished = [t for t in trials if t.state in FINISHED_STATES]
    if not finished or not all(is_measured(t, cost_attr) for t in finished):
        return None
    return WALL_CLOCK_UNIT
