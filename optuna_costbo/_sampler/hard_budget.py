"""The budget rule, hard or soft: ``"auto"`` is hard where costs are in the user's units
(reported, or ``cost_fn``), soft where they are the wall clock (whose last trial should run)."""

from __future__ import annotations

from typing import Any

from optuna_costbo._numerics.checks import is_real


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
