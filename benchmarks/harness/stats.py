"""Statistics of benchmark runs, the one module every report of ``benchmarks/`` uses.

- best-so-far: :func:`best_within` (the best value among the trials whose cumulative cost is
  <= a limit), :func:`best_on_grid` (the same on a grid of cumulative costs, a step
  function), :func:`best_so_far` (per trial); for noisy problems, whose incumbent is a
  recorded trial rather than the lowest observation, :func:`last_within` and
  :func:`incumbent_within` (its noise-free value once the trials within a limit finished);
- the budget rule's bookkeeping: :func:`overrun`, :func:`started_after_budget`;
- :func:`ranks_in_cell`: ranks of the methods within one (problem, seed) (ties share);
- :func:`paired`: the paired comparison of two methods over the same seeds, with its
  :class:`Paired` verdict.

Every comparison is of values to minimize (regrets, errors): lower is better.

The verdict of a paired comparison follows the test that decides it. The Wilcoxon signed-rank
test ranks the absolute differences a - b and sums the ranks of the positive differences
(W+: ``a`` worse) and of the negative ones (W-: ``a`` better); its p-value measures how
unbalanced the two sums are. So when p < alpha, ``a`` is *better* if W- > W+ and *worse* if
W+ > W-. The mean difference can have the other sign (many small wins and two large losses:
the test says "better", the mean says "worse"); it is reported, never used for the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np
from scipy import stats as sp_stats


TIE_TOL = 1e-9
"""Differences within TIE_TOL x max(1, the largest |value| of the comparison) are ties."""
ALPHA = 0.05
VERDICTS = ("better", "same", "worse")


def mean_se(x: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and standard error of the finite entries (nan, nan if none; SE nan for one)."""
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    if not len(a):
        return math.nan, math.nan
    se = float(a.std(ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan
    return float(a.mean()), se


def mean_sd(x: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation (ddof=1) of the finite entries."""
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    if not len(a):
        return math.nan, math.nan
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else math.nan


def best_so_far(values: Sequence[float]) -> np.ndarray:
    """Running minimum of the values (nan: a trial without a value), shape (n,)."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return v
    best = np.fmin.accumulate(np.where(np.isnan(v), np.inf, v))
    return np.where(np.isfinite(best), best, np.nan)


def best_within(costs: Sequence[float], values: Sequence[float], limit: float) -> float:
    """Best value among the trials whose cumulative cost is <= ``limit`` (nan if none)."""
    c = np.asarray(costs, dtype=float)
    v = np.asarray(values, dtype=float)
    ok = (np.cumsum(c) <= limit + 1e-12) & np.isfinite(v)
    return float(v[ok].min()) if ok.any() else math.nan


def last_within(costs: Sequence[float], limit: float) -> int:
    """Index of the last trial whose cumulative cost is <= ``limit`` (-1 if none)."""
    cum = np.cumsum(np.asarray(costs, dtype=float))  # (n,)
    return int(np.searchsorted(cum, limit + 1e-12, side="right")) - 1


def incumbent_within(
    costs: Sequence[float], incumbent: Sequence[float], limit: float = math.inf
) -> float:
    """``incumbent[k]`` of the last trial k whose cumulative cost is <= ``limit`` (nan if
    none): the value, recorded per trial, of the incumbent as the study stood then."""
    k = last_within(costs, limit)
    return float(incumbent[k]) if k >= 0 and k < len(incumbent) else math.nan


def best_on_grid(costs: Sequence[float], values: Sequence[float], grid: np.ndarray) -> np.ndarray:
    """:func:`best_within` at every point of ``grid`` (len(grid),); nan before a value."""
    cum = np.cumsum(np.asarray(costs, dtype=float))
    best = best_so_far(values)
    idx = np.searchsorted(cum, grid, side="right") - 1  # the last trial within each point
    if not len(best):
        return np.full(len(grid), np.nan)
    return np.where(idx >= 0, best[np.maximum(idx, 0)], np.nan)


def overrun(costs: Sequence[float], budget: float) -> float:
    """How far the run's total cost went past the budget (0 if it did not)."""
    c = np.asarray(costs, dtype=float)
    return float(max(np.sum(c) - budget, 0.0)) if len(c) else 0.0


def spent_at_start(costs: Sequence[float]) -> np.ndarray:
    """What the earlier trials had spent when each trial started, (n,) (trials in order)."""
    cum = np.cumsum(np.asarray(costs, dtype=float))  # (n,)
    out: np.ndarray = np.concatenate([[0.0], cum[:-1]])[: len(cum)]
    return out


def started_after_budget(costs: Sequence[float], budget: float) -> int:
    """Trials that started although the finished trials had already spent the budget."""
    return int(np.sum(spent_at_start(costs) >= budget))


def ranks_in_cell(values: np.ndarray) -> np.ndarray:
    """Ranks (1 = lowest) of the methods' values in one cell, (m,) -> (m,). Values within
    TIE_TOL of the cell's scale tie and share the mean rank; nan ranks last."""
    v = np.where(np.isfinite(values), values, np.inf)
    scale = max(1.0, float(np.max(np.abs(v[np.isfinite(v)]))) if np.isfinite(v).any() else 1.0)
    keyed = np.where(np.isfinite(v), np.round(v / (TIE_TOL * scale)), np.inf)
    return np.asarray(sp_stats.rankdata(keyed))


@dataclass(frozen=True)
class Paired:
    """Paired comparison of ``a`` against ``b`` over the same seeds (lower is better).

    Differences are a - b. A run without a finite value counts as the worst (two such runs
    tie). ``mean_diff``/``se_diff`` are over the pairs where both are finite.
    """

    n: int
    wins: int  # a lower
    ties: int
    losses: int  # a higher
    w_plus: float  # signed-rank sum of the positive differences (a worse)
    w_minus: float  # signed-rank sum of the negative differences (a better)
    p_value: float  # two-sided Wilcoxon signed-rank; 1 when every pair ties
    mean_diff: float
    se_diff: float
    median_diff: float
    alpha: float = ALPHA

    @property
    def significant(self) -> bool:
        return self.p_value < self.alpha

    @property
    def verdict(self) -> str:
        """``"better"`` / ``"worse"`` (``a`` against ``b``) when significant, by the side with
        the larger signed-rank sum; else ``"same"``."""
        if not self.significant or self.w_minus == self.w_plus:
            return "same"
        return "better" if self.w_minus > self.w_plus else "worse"


def paired(a: Sequence[float], b: Sequence[float], *, alpha: float = ALPHA) -> Paired:
    """Compare ``a`` with ``b`` (same length, one entry per seed); see :class:`Paired`."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same shape, got {x.shape} and {y.shape}")
    x = np.where(np.isfinite(x), x, np.inf)
    y = np.where(np.isfinite(y), y, np.inf)
    with np.errstate(invalid="ignore"):
        d = x - y
    d = np.where(np.isnan(d), 0.0, d)  # inf - inf: a tie
    both = np.concatenate([x, y])
    scale = max(1.0, float(np.max(np.abs(both[np.isfinite(both)]), initial=0.0)))
    tol = TIE_TOL * scale
    wins = int(np.sum(d < -tol))
    losses = int(np.sum(d > tol))
    ties = len(d) - wins - losses
    dd = np.clip(np.where(np.abs(d) <= tol, 0.0, d), -1e300, 1e300)
    nonzero = dd[dd != 0.0]
    if len(nonzero):
        ranks = sp_stats.rankdata(np.abs(nonzero))
        w_plus = float(np.sum(ranks[nonzero > 0]))
        w_minus = float(np.sum(ranks[nonzero < 0]))
        p_value = float(sp_stats.wilcoxon(dd, zero_method="wilcox").pvalue)
    else:
        w_plus = w_minus = 0.0
        p_value = 1.0
    finite = np.isfinite(x) & np.isfinite(y)
    mean, se = mean_se(d[finite]) if finite.any() else (math.nan, math.nan)
    return Paired(
        n=len(d),
        wins=wins,
        ties=ties,
        losses=losses,
        w_plus=w_plus,
        w_minus=w_minus,
        p_value=p_value,
        mean_diff=mean,
        se_diff=se,
        median_diff=float(np.median(dd)) if len(dd) else math.nan,
        alpha=alpha,
    )


# -- multi-objective: hypervolume regret ------------------------------------------------------


def pareto_front(points: np.ndarray) -> np.ndarray:
    """The non-dominated rows of ``points`` (n, m) -> (k, m), all objectives minimized;
    duplicates kept once, order of first appearance."""
    p = np.unique(np.asarray(points, dtype=float), axis=0)  # (u, m)
    if not len(p):
        return p
    le = np.all(p[:, None, :] <= p[None, :, :], axis=2)  # (u, u): row i <= row j everywhere
    dominated = np.any(le & ~np.eye(len(p), dtype=bool), axis=0)  # j dominated by some i != j
    return p[~dominated]


def hypervolume(points: np.ndarray, reference: Sequence[float]) -> float:
    """The hypervolume dominated by ``points`` (n, m) and bounded by ``reference`` (m,), all
    objectives minimized; points not strictly below the reference in every objective add
    nothing. Exact: a sweep for m = 2, slices along the last objective above (m <= 4 and a
    few hundred points: what the benchmarks need)."""
    ref = np.asarray(reference, dtype=float)  # (m,)
    p = np.asarray(points, dtype=float).reshape(-1, len(ref))  # (n, m)
    p = p[np.all(np.isfinite(p), axis=1) & np.all(p < ref, axis=1)]
    if not len(p):
        return 0.0
    return _hv(pareto_front(p), ref)


def _hv(p: np.ndarray, ref: np.ndarray) -> float:
    """Hypervolume of the non-dominated ``p`` (k, m), every row below ``ref`` (m,)."""
    m = p.shape[1]
    if m == 1:
        return float(ref[0] - p[:, 0].min())
    if m == 2:
        order = np.lexsort((p[:, 1], p[:, 0]))  # by f1, then f2
        total, low = 0.0, float(ref[1])
        for f1, f2 in p[order]:
            if f2 < low:
                total += (ref[0] - f1) * (low - f2)
                low = float(f2)
        return float(total)
    order = np.argsort(p[:, -1], kind="stable")
    q = p[order]  # (k, m), by the last objective
    total = 0.0
    for i in range(len(q)):
        upper = q[i + 1, -1] if i + 1 < len(q) else ref[-1]
        depth = float(upper - q[i, -1])
        if depth > 0:
            total += depth * _hv(pareto_front(q[: i + 1, :-1]), ref[:-1])
    return total


def hv_regret_trace(
    objectives: np.ndarray, reference: Sequence[float], hv_star: float
) -> np.ndarray:
    """Per trial, the normalized hypervolume regret of the front found so far:
    (HV* - HV(trials 0..k)) / HV*, (n, m) -> (n,); a row with a nan (the trial did not
    complete) adds nothing. 1 before any point dominates part of the box, 0 at the best known
    front (clamped at 0: a front beyond the best known one scores 0). Non-increasing."""
    obj = np.asarray(objectives, dtype=float).reshape(-1, len(reference))  # (n, m)
    out = np.empty(len(obj))  # (n,)
    hv = 0.0
    for k in range(len(obj)):
        row = obj[k]
        if np.all(np.isfinite(row)) and np.all(row < np.asarray(reference)):
            hv = hypervolume(obj[: k + 1], reference)
        out[k] = max(hv_star - hv, 0.0) / hv_star
    return out
