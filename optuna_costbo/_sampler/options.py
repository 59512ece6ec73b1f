"""Checks of the sampler's plain options, with errors that say what is allowed.

The budget, the acquisition, ``cost_fn`` and ``max_sampler_share`` are checked where they are
used (:func:`optuna_costbo._ledger.costs.validate_budget`, the acquisition registry,
:class:`optuna_costbo._sampler.user_cost.UserCost`,
:class:`optuna_costbo._sampler.effort.EffortRule`).
"""

from __future__ import annotations

import math
from typing import Any

from optuna_costbo._numerics.checks import is_int
from optuna_costbo._numerics.checks import is_real


__all__ = ["PRUNED_ROUTES", "check_options", "check_stopping"]

PRUNED_ROUTES = ("censored", "impute", "curves")
"""How a trial a pruner stopped may inform the objective model (``pruned_trials``)."""


def check_options(
    *,
    horizon: Any,
    n_samples: Any,
    n_startup_trials: Any,
    cost_attr: Any,
    seed: Any,
    charge_sampler_time: Any,
    cost_unit: Any = None,
    prefetch: Any = False,
    pruned_trials: Any = "censored",
) -> None:
    """Raise ``ValueError`` for the first option outside what is allowed."""
    for name, value, default in (("horizon", horizon, 2), ("n_samples", n_samples, 64)):
        if value is not None and (not is_int(value) or value < 1):
            raise ValueError(f"{name} must be an int >= 1 (or None: {default}), got {value!r}")
    if n_startup_trials is not None and (not is_int(n_startup_trials) or n_startup_trials < 0):
        raise ValueError(
            f"n_startup_trials must be None or a non-negative int, got {n_startup_trials!r}"
        )
    if not isinstance(cost_attr, str) or not cost_attr:
        raise ValueError(f"cost_attr must be a non-empty str, got {cost_attr!r}")
    if seed is not None and not is_int(seed):
        raise ValueError(f"seed must be None or an int, got {seed!r}")
    if charge_sampler_time is not None and not isinstance(charge_sampler_time, bool):
        raise ValueError(
            f"charge_sampler_time must be None, True or False, got {charge_sampler_time!r}"
        )
    if not isinstance(prefetch, bool):
        raise ValueError(f"prefetch must be True or False, got {prefetch!r}")
    if pruned_trials not in PRUNED_ROUTES:
        raise ValueError(
            f"pruned_trials must be one of {', '.join(map(repr, PRUNED_ROUTES))}, "
            f"got {pruned_trials!r}"
        )
    if cost_unit is not None and not isinstance(cost_unit, str):
        raise ValueError(f"cost_unit must be None or a str such as '$', got {cost_unit!r}")


def check_stopping(budget: Any, value_per_cost: Any) -> None:
    """Raise ``ValueError`` unless ``value_per_cost`` is None or a positive finite number, and
    a budget of None comes with it (something must end the study)."""
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
