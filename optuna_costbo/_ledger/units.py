"""The unit of a study's costs, for labels: seconds when every cost was measured.

A cost the sampler measured is wall-clock seconds; a cost the objective reported (money,
energy, ...) or a ``cost_fn`` gave is in the budget's units, which only the user can name. The
progress bar and the plots label their numbers with :func:`cost_unit`.
"""

from __future__ import annotations

from collections.abc import Iterable

from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
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
    trials: Iterable[FrozenTrial], cost_attr: str, unit: str | None = None
) -> str | None:
    """The unit to print after costs: ``unit`` if given, else inferred from ``trials``.

    Inferred: ``"s"`` when every finished trial was charged measured wall-clock time,
    ``None`` (unknown: no unit is printed) as soon as one cost was reported or came from a
    ``cost_fn``, or when no trial has finished yet.

    Args:
        trials: The study's trials (unfinished ones are ignored).
        cost_attr: The trial user attr holding reported costs (the sampler's ``cost_attr``).
        unit: The unit the user named (``"$"``, ``"kWh"``); returned as is. ``""`` means no
            unit.
    """
    if unit is not None:
        return unit or None
    finished = [t for t in trials if t.state in FINISHED_STATES]
    if not finished or not all(is_measured(t, cost_attr) for t in finished):
        return None
    return WALL_CLOCK_UNIT
