"""Checks of the sampler's plain options (the others are checked where they are used), and the
budget rule, hard or soft: ``"auto"`` is hard where costs are in the user's units (reported, or
``cost_fn``), soft where they are the wall clock (whose last trial should run)."""

from __future__ import annotations

import math
from typing import Any

from optuna_costbo._numerics.checks import is_int
from optuna_costbo._numerics.checks import is_real


def check_options(*, horizon: Any, n_startup_trials: Any, cost_attr: Any, seed: Any) -> None:
    """Raise ``ValueError`` for the first option outside what is allowed."""
    if horizon is not None and (not is_int(horizon) or horizon < 1):
        raise ValueError(f"horizon must be an int >= 1 (or None: the default), got {horizon!r}")
    if n_startup_trials is not None and (not is_int(n_startup_trials) or n_startup_trials < 0):
        raise ValueError(
            f"n_startup_trials must be None or a non-negative int, got {n_startup_trials!r}"
        )
    if not isinstance(cost_attr, str) or not cost_attr:
        raise ValueError(f"cost_attr must be a non-empty str, got {cost_attr!r}")
    if seed is not None and not is_int(seed):
        raise ValueError(f"seed must be None or an int, got {seed!r}")


def check_stopping(budget: Any, value_per_cost: Any) -> None:
    """Raise ValueError unless ``value_per_cost`` is None or positive finite, and given if the
    budget is None."""
    if value_per_cost is not None and not (
        is_real(value_per_cost) and 0.0 < float(value_per_cost) < math.inf
    ):
        raise ValueError(
            "value_per_cost must be None or a positive finite number (objective units one cost "
            f"unit is worth), got {value_per_cost!r}"
        )
    if budget is None and value_per_cost is None:
        raise ValueError(
            "budget=None needs a stopping rule: give value_per_cost (objective units one cost "
            "unit is worth), or a budget (a positive finite number)"
        )


AUTO = "auto"
AUTO_RISK = 0.05  # the risk of "auto" where costs are in the user's units


def check_overrun_risk(value: Any) -> None:
    if value is None or value == AUTO:
        return
    if isinstance(value, bool) or not is_real(value) or not 0.0 < float(value) < 1.0:
        raise ValueError(
            "overrun_risk must be 'auto', None (a soft budget) or a probability in (0, 1) (a "
            "hard budget: the largest chance that a trial overruns the budget left), got "
            f"{value!r}"
        )


def overrun_risk(option: float | str | None, measured: bool) -> float | None:
    """The risk a suggestion obeys (None: soft), given whether costs are the wall clock."""
    if option == AUTO:
        return None if measured else AUTO_RISK
    return None if option is None else float(option)
