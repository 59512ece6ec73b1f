"""Small Optuna studies built from known values, shared by tests of pruners, and the request
the sampler reads from one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial


def reporting_study(curves: np.ndarray, direction: str = "minimize") -> optuna.Study:
    """A study (of ``direction``) whose COMPLETE trials reported ``curves`` (n, S) at steps
    1..S, each trial's value its last report."""
    study = optuna.create_study(direction=direction)
    for row in curves:
        trial = study.ask()
        for step, value in enumerate(row, start=1):
            trial.report(float(value), step)
        study.tell(trial, float(row[-1]))
    return study


def better_half_reversed() -> tuple[np.ndarray, np.ndarray]:
    """12 trials' values at an early step (12,) and their final values (12,): the step puts
    the worse half behind the better half (rho >= 0.5 over all 12) but ranks the better half
    backwards (rho -1 over it)."""
    final = np.arange(12, dtype=float)  # (12,)
    early = np.where(final < 6, 10.0 - final, 20.0 + final)  # (12,)
    return early, final


def read_request(
    trials: Sequence[FrozenTrial], trial: FrozenTrial, bridge: Any, sign: float = 1.0
) -> Any:
    """The policy's request that :func:`optuna_costbo._sampler.snapshot.read_snapshot` builds
    for ``trial`` from ``trials`` (minimize, costs in user attr ``cost``, no pending proposals,
    a budget of 1e3 untouched, no known cost)."""
    from optuna_costbo._numerics.request import FitSchedule
    from optuna_costbo._sampler.snapshot import read_snapshot

    return read_snapshot(
        trials,
        trial,
        bridge,
        sign=sign,
        cost_attr="cost",
        pending={},
        remaining=1e3,
        budget=1e3,
        known_cost=None,
        warm=None,
        deterministic=False,
        schedule=FitSchedule(),
        rate_needed=False,
    )
