"""The unit of a study's costs, for labels: the one the user named, else seconds when every
cost was measured."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import UNIT_ATTR
from optuna_costbo._ledger.keys import CostSource


WALL_CLOCK_UNIT = "s"  # the unit of measured costs


def is_measured(trial: FrozenTrial, cost_attr: str) -> bool:
    """Whether ``trial`` is charged wall-clock seconds (no source recorded: no cost attr)."""
    source = trial.system_attrs.get(COST_SOURCE_ATTR)
    if source is not None:
        return bool(source == CostSource.WALL_CLOCK)
    return trial.user_attrs.get(cost_attr) is None


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
    return WALL_CLOCK_UNIT
