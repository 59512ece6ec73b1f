"""Small Optuna studies built from known values, shared by tests of pruners."""

from __future__ import annotations

import numpy as np
import optuna


def reporting_study(curves: np.ndarray) -> optuna.Study:
    """A study whose COMPLETE trials reported ``curves`` (n, S) at steps 1..S, each trial's
    value its last report."""
    study = optuna.create_study()
    for row in curves:
        trial = study.ask()
        for step, value in enumerate(row, start=1):
            trial.report(float(value), step)
        study.tell(trial, float(row[-1]))
    return study
