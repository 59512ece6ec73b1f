"""The budget rule of a study: hard (a trial starts only if its cost is predicted to fit) or
soft (a trial starts whenever budget is left), and the user's ``overrun_risk`` option.

``overrun_risk`` is the largest probability, under the cost model, that the study overruns its
budget: each proposal takes its chance out of what earlier ones left
(:func:`.snapshot.risk_left`); ``None`` is the soft budget, whose overrun is at most one trial's
cost per worker. ``"auto"`` (the default) is a hard budget at :data:`AUTO_RISK` where costs are
in the user's units (reported by the objective, or given by ``cost_fn``: money, energy), and a
soft one where the cost is the study's own wall clock, whose last trial the user usually wants
to run. Whether costs are measured is decided by the same rule that decides whether the
sampler's time counts (:mod:`optuna_costbo._ledger.sampler_time`).
"""

from __future__ import annotations

from typing import Any

from optuna_costbo._numerics.checks import is_real


__all__ = ["AUTO", "AUTO_RISK", "check_overrun_risk", "overrun_risk"]

AUTO = "auto"
AUTO_RISK = 0.05
"""The risk of ``overrun_risk="auto"`` where costs are in the user's units."""


def check_overrun_risk(value: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is ``"auto"``, ``None`` or a number in (0, 1)."""
    if value is None or value == AUTO:
        return
    if isinstance(value, bool) or not is_real(value) or not 0.0 < float(value) < 1.0:
        raise ValueError(
            "overrun_risk must be 'auto', None (a soft budget) or a probability in (0, 1) (a "
            "hard budget: the largest chance that a trial overruns the budget left), got "
            f"{value!r}"
        )


def overrun_risk(option: float | str | None, measured: bool) -> float | None:
    """The risk a suggestion obeys (None: soft), given whether the study's costs are its
    measured wall clock."""
    if option == AUTO:
        return None if measured else AUTO_RISK
    return None if option is None else float(option)
