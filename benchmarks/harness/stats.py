"""Statistics of benchmark runs: best-so-far on a cost grid, overruns, paired comparisons.

:func:`best_at` is the best value among the trials whose cumulative cost is <= each grid point
(a step function); :func:`paired` compares two methods over the same seeds (mean difference,
wins/ties/losses, Wilcoxon signed-rank test).
"""

from __future__ import annotations

import math

import numpy as np
from runner import Run
from scipy.stats import wilcoxon


TIE_TOL = 1e-9


def mean_se(a: np.ndarray) -> tuple[float, float]:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    if len(a) == 0:
        return math.nan, math.nan
    se = float(np.std(a, ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan
    return float(np.mean(a)), se


def mean_sd(a: np.ndarray) -> tuple[float, float]:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    if len(a) == 0:
        return math.nan, math.nan
    return float(np.mean(a)), float(np.std(a, ddof=1)) if len(a) > 1 else math.nan


def best_at(run: Run, grid: np.ndarray) -> np.ndarray:
    """Best value among trials whose cumulative cost is <= each grid point (nan: none yet)."""
    cum, best = run.cumcost, run.best
    idx = np.searchsorted(cum, grid, side="right") - 1  # last trial within each grid point
    out = np.where(idx >= 0, best[np.maximum(idx, 0)] if len(best) else np.nan, np.nan)
    return np.where(np.isfinite(out), out, np.nan)


def overrun(run: Run, budget: float) -> float:
    cum = run.cumcost
    return float(max(cum[-1] - budget, 0.0)) if len(cum) else 0.0


def started_after_budget(run: Run, budget: float) -> int:
    """Trials that started although the finished trials had already spent the budget."""
    before = np.concatenate([[0.0], run.cumcost[:-1]])
    return int(np.sum(before >= budget))


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float, int, int, int, float, int]:
    """Mean and SE of a - b over pairs, wins/ties/losses of a (lower is better), Wilcoxon p."""
    ok = np.isfinite(a) & np.isfinite(b)
    d = a[ok] - b[ok]
    mean, se = mean_se(d)
    wins = int(np.sum(d < -TIE_TOL))
    losses = int(np.sum(d > TIE_TOL))
    ties = len(d) - wins - losses
    p = math.nan
    if wins + losses > 0:
        p = float(wilcoxon(d[np.abs(d) > TIE_TOL]).pvalue)
    return mean, se, wins, ties, losses, p, len(d)
