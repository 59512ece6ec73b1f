"""What a trial stopped early (pruned, or still running) tells about its final value and cost.

Its final value is its last report plus the completed curves' median move from that step to
their end (Domhan et al., IJCAI 2015, in its simplest form), bounded by their largest move; its
full cost is its cost over the fraction of a full trial's steps it ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np
from scipy import stats


Curve = tuple[np.ndarray, np.ndarray]  # steps (k,), increasing, and the values (k,) reported


@dataclass(frozen=True)
class PruningStats:
    """How the study's pruner has treated its trials so far."""

    pruned_share: float  # stopped trials over those that ended with a value, in [0, 1)
    run_fraction: float  # mean fraction of a full trial's steps the stopped ones ran, in (0, 1]


def _moves(complete: Sequence[Curve], stopped: Sequence[Curve]) -> tuple[np.ndarray, np.ndarray]:
    """Each stopped curve's last value (p,), and each completed curve's move from that step
    (its last report at or before it, else its first) to its end (p, c)."""
    last_steps = np.array([float(c[0][-1]) for c in stopped], dtype=float)  # (p,)
    last = np.array([float(c[1][-1]) for c in stopped], dtype=float)  # (p,)
    curves = [c for c in complete if len(c[0])]
    moves = np.empty((len(stopped), len(curves)))  # (p, c)
    for j, (steps, values) in enumerate(curves):
        i = np.searchsorted(steps, last_steps, side="right") - 1  # (p,)
        moves[:, j] = float(values[-1]) - values[np.maximum(i, 0)]
    return last, moves


def finals_and_bounds(
    complete: Sequence[Curve], stopped: Sequence[Curve]
) -> tuple[np.ndarray, np.ndarray]:
    """Each stopped curve's imputed final value and lower bound, (p,) each (NaN: none complete)."""
    last, moves = _moves(complete, stopped)  # (p,), (p, c)
    if moves.shape[1] == 0:
        return last, np.full(len(stopped), np.nan)
    return last + np.median(moves, axis=1), last + moves.min(axis=1)


def impute_finals(complete: Sequence[Curve], stopped: Sequence[Curve]) -> np.ndarray:
    """The imputed final value of each stopped curve, (p,)."""
    return finals_and_bounds(complete, stopped)[0]


def run_fractions(complete: Sequence[Curve], stopped: Sequence[Curve]) -> np.ndarray:
    """The fraction ``(s - s0 + 1) / (S - s0 + 1)`` of a full trial each stopped curve ran, (p,):
    ``s`` its last step, ``S`` the completed curves' (all curves' if none), ``s0`` the first."""
    curves = [c for c in (*complete, *stopped) if len(c[0])]
    ends = [float(c[0][-1]) for c in complete if len(c[0])] or [float(c[0][-1]) for c in curves]
    if not ends:
        return np.ones(len(stopped))
    first = min(float(c[0][0]) for c in curves)
    full = max(ends) - first + 1.0
    last = np.array([float(c[0][-1]) for c in stopped], dtype=float)  # (p,)
    out: np.ndarray = np.clip((last - first + 1.0) / full, 1.0 / full, 1.0)
    return out


def step_rank_correlation(early: np.ndarray, final: np.ndarray) -> float:
    """Spearman's rho between values at one step ``early`` (n,) and final values ``final`` (n,);
    NaN below 3 trials or without spread."""
    early, final = np.asarray(early, dtype=float), np.asarray(final, dtype=float)
    if len(early) < 3 or np.ptp(early) == 0.0 or np.ptp(final) == 0.0:
        return math.nan
    return float(stats.spearmanr(early, final).statistic)
