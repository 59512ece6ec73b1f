"""The Pareto front and hypervolume of a multi-objective study's trials, as the monitors show
them: against a reference point that only moves outward, so the hypervolume shown never falls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._numerics.pareto import hypervolume
from optuna_costbo._numerics.pareto import non_dominated_mask
from optuna_costbo._optuna_compat import trial_constraints
from optuna_costbo._sampler.snapshot import minimize_signs


def minimized_values(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> np.ndarray:
    """Each trial's values to minimize, (n, m); NaN unless COMPLETE and feasible."""
    signs = minimize_signs(directions)  # (m,)
    out = np.full((len(trials), len(signs)), np.nan)  # (n, m)
    for i, trial in enumerate(trials):
        if trial.state != TrialState.COMPLETE or trial.values is None:
            continue
        if any(v > 0.0 for v in (trial_constraints(trial) or ())):
            continue
        out[i] = signs * np.asarray(trial.values, dtype=float)
    return out


def _reference(
    Y: np.ndarray, directions: Sequence[StudyDirection], reference: Sequence[float] | None
) -> np.ndarray | None:
    if reference is not None:
        given = np.asarray(reference, dtype=float)
        if given.shape != (len(directions),) or not np.all(np.isfinite(given)):
            raise ValueError(
                f"reference_point must be {len(directions)} finite numbers, got {reference!r}"
            )
        ref: np.ndarray = minimize_signs(directions) * given  # (m,)
        return ref
    usable = Y[np.all(np.isfinite(Y), axis=1)]  # (k, m)
    return monitor_reference(usable) if len(usable) else None


def monitor_reference(Y: np.ndarray) -> np.ndarray:
    """The worst of each objective of Y (k, m), k >= 1, plus a tenth of its range (where 0,
    of its magnitude or 1e-7): (m,)."""
    worst, best = Y.max(axis=0), Y.min(axis=0)  # (m,) each
    spread = np.where(worst > best, worst - best, np.maximum(np.abs(worst), 1e-7))  # (m,)
    out: np.ndarray = worst + 0.1 * spread
    return out


def front_size_and_hypervolume(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> tuple[int, float | None]:
    """The number of trials on the front and their hypervolume, None until every objective
    has a range (the reference point could move inward before)."""
    Y = minimized_values(trials, directions)  # (n, m)
    usable = Y[np.all(np.isfinite(Y), axis=1)]  # (k, m)
    size = int(non_dominated_mask(usable).sum()) if len(usable) else 0
    if len(usable) == 0 or np.any(usable.max(axis=0) <= usable.min(axis=0)):
        return size, None
    return size, hypervolume(usable, monitor_reference(usable))


def hypervolume_history(
    ordered: Sequence[FrozenTrial],
    directions: Sequence[StudyDirection],
    reference: Sequence[float] | None = None,
) -> np.ndarray:
    """The front's hypervolume after each trial of ``ordered`` (n,), against ``reference``
    (the study's units) or :func:`monitor_reference` of all; NaN before the first."""
    Y = minimized_values(ordered, directions)  # (n, m)
    out = np.full(len(ordered), np.nan)  # (n,)
    ref = _reference(Y, directions, reference)
    if ref is None:
        return out
    usable = np.all(np.isfinite(Y), axis=1)  # (n,)
    current = np.nan
    for i in range(len(ordered)):
        before = Y[:i][usable[:i]]  # (k, m)
        # Only a point that no earlier one weakly dominates can change it.
        if usable[i] and not np.any(np.all(before <= Y[i], axis=1)):
            current = hypervolume(Y[: i + 1][usable[: i + 1]], ref)
        out[i] = current
    return out
