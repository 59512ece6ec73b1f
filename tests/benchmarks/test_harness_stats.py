"""The statistics of benchmarks/harness/stats.py, against constructed cases and a brute force."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
import sys

import numpy as np
import pytest


sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.harness import stats


def _many_small_wins_two_large_losses() -> tuple[np.ndarray, np.ndarray]:
    """18 seeds where ``a`` is lower by 0.01-0.18, 2 where it is higher by 5 and 6."""
    b = np.linspace(1.0, 2.0, 20)
    d = np.concatenate([-0.01 * np.arange(1, 19), [5.0, 6.0]])
    return b + d, b


def test_verdict_follows_the_signed_rank_statistic_not_the_mean() -> None:
    a, b = _many_small_wins_two_large_losses()
    t = stats.paired(a, b)
    assert t.mean_diff > 0  # the two losses outweigh the wins in the mean ...
    assert t.median_diff < 0
    assert (t.wins, t.ties, t.losses) == (18, 0, 2)
    assert (t.w_minus, t.w_plus) == (171.0, 39.0)  # ranks 1..18 against 19 + 20
    assert t.p_value < 0.05
    assert t.verdict == "better"  # ... but the test says a is lower on most seeds


def test_mirror_is_worse() -> None:
    a, b = _many_small_wins_two_large_losses()
    t = stats.paired(b, a)
    assert t.mean_diff < 0 and t.p_value < 0.05
    assert (t.w_minus, t.w_plus) == (39.0, 171.0)
    assert t.verdict == "worse"
    assert t.p_value == pytest.approx(stats.paired(a, b).p_value)


def test_p_value_is_the_exact_signed_rank_distribution() -> None:
    """Two-sided p against the enumeration of every sign assignment (n = 12, no ties)."""
    rng = np.random.default_rng(3)
    d = rng.normal(0.4, 1.0, 12)
    d[np.argsort(np.abs(d))] = np.sign(d[np.argsort(np.abs(d))]) * np.arange(1, 13)
    t = stats.paired(d, np.zeros(12))
    ranks = np.arange(1, 13)
    w_obs = min(t.w_plus, t.w_minus)
    totals = [
        float(np.sum(ranks[np.array(signs, dtype=bool)]))
        for signs in itertools.product([0, 1], repeat=12)
    ]
    lower = np.mean([w <= w_obs for w in totals])
    assert t.p_value == pytest.approx(min(1.0, 2 * lower))
    assert t.w_plus + t.w_minus == 78.0  # 12 * 13 / 2


def test_ties_and_missing_values() -> None:
    t = stats.paired([1.0, 2.0, 3.0], [1.0, 2.0, 3.0 + 1e-12])
    assert (t.wins, t.ties, t.losses, t.p_value, t.verdict) == (0, 3, 0, 1.0, "same")
    # a run without a finite value is the worst; two of them tie
    t = stats.paired([math.nan, 1.0, math.nan], [0.5, math.nan, math.nan])
    assert (t.wins, t.ties, t.losses) == (1, 1, 1)
    assert math.isnan(t.mean_diff)  # no pair where both are finite
    with pytest.raises(ValueError, match="same shape"):
        stats.paired([1.0], [1.0, 2.0])


def test_best_so_far_on_a_cost_grid() -> None:
    costs = [1.0, 2.0, 1.0, 5.0]
    values = [3.0, math.nan, 1.0, 0.5]
    np.testing.assert_array_equal(stats.best_so_far(values), [3.0, 3.0, 1.0, 0.5])
    assert stats.best_within(costs, values, 3.0) == 3.0  # trials 0, 1 fit; 1 has no value
    assert stats.best_within(costs, values, 4.0) == 1.0
    assert math.isnan(stats.best_within(costs, values, 0.5))
    grid = np.array([0.0, 1.0, 3.9, 4.0, 100.0])
    expected = [math.nan, 3.0, 3.0, 1.0, 0.5]
    np.testing.assert_array_equal(stats.best_on_grid(costs, values, grid), expected)
    assert stats.overrun(costs, 6.0) == 3.0
    assert stats.started_after_budget(costs, 3.0) == 2  # trials 2 and 3 started at 3 and 4


def test_ranks_in_cell() -> None:
    ranks = stats.ranks_in_cell(np.array([0.3, math.nan, 0.1, 0.3 + 1e-12]))
    np.testing.assert_array_equal(ranks, [2.5, 4.0, 1.0, 2.5])
