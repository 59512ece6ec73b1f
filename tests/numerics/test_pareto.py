"""Pareto fronts, the reference point, hypervolume and the non-dominated boxes, against a
double loop, inclusion-exclusion, hand-computed cases and Monte Carlo."""

from __future__ import annotations

import math

from _pareto_reference import brute_non_dominated
from _pareto_reference import hypervolume_ie
from _pareto_reference import mixed_points
from _pareto_reference import random_front
import numpy as np
import pytest

from optuna_costbo._numerics.pareto import hypervolume
from optuna_costbo._numerics.pareto import non_dominated_boxes
from optuna_costbo._numerics.pareto import non_dominated_mask
from optuna_costbo._numerics.pareto import pareto_front
from optuna_costbo._numerics.pareto import reference_point


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_the_non_dominated_mask_matches_a_double_loop(m: int) -> None:
    rng = np.random.default_rng(m)
    for n in (0, 1, 7, 60):
        Y = mixed_points(rng, n, m)  # ties and copies on a grid of 0.1
        np.testing.assert_array_equal(non_dominated_mask(Y), brute_non_dominated(Y))
    Y = rng.standard_normal((300, m))  # more rows than one chunk's worth of m = 1 pairs
    np.testing.assert_array_equal(non_dominated_mask(Y), brute_non_dominated(Y))


def test_copies_are_kept_by_the_mask_and_dropped_by_the_front() -> None:
    Y = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0], [2.0, 2.0], [0.5, 5.0]])
    np.testing.assert_array_equal(non_dominated_mask(Y), [True, True, True, False, True])
    np.testing.assert_array_equal(pareto_front(Y), [[0.5, 5.0], [1.0, 2.0], [2.0, 1.0]])
    # Rows not strictly below ref in every objective are left out first.
    np.testing.assert_array_equal(pareto_front(Y, np.array([3.0, 5.0])), [[1.0, 2.0], [2.0, 1.0]])


def test_hand_computed_hypervolumes() -> None:
    # Three steps of a staircase: 1 * 1 + 1 * 2 + 1 * 3.
    front = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    assert hypervolume(front, np.array([4.0, 4.0])) == pytest.approx(6.0, rel=1e-15)
    # A dominated row, a copy and a row beyond ref change nothing.
    more = np.vstack([front, [[2.5, 2.5], [1.0, 3.0], [0.0, 9.0]]])
    assert hypervolume(more, np.array([4.0, 4.0])) == pytest.approx(6.0, rel=1e-15)
    # Three objectives: one box 1 x 2 x 3; two boxes 4 + 2 sharing a unit cube.
    assert hypervolume(np.zeros((1, 3)), np.array([1.0, 2.0, 3.0])) == pytest.approx(6.0)
    two = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    assert hypervolume(two, np.array([2.0, 2.0, 2.0])) == pytest.approx(5.0, rel=1e-15)
    # Four objectives, the same two points lifted: 8 + 4 - 2.
    four = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    assert hypervolume(four, np.full(4, 2.0)) == pytest.approx(10.0, rel=1e-15)
    assert hypervolume(np.empty((0, 3)), np.ones(3)) == 0.0
    assert hypervolume(np.full((2, 3), 5.0), np.ones(3)) == 0.0  # nothing below ref


@pytest.mark.parametrize("m", [2, 3, 4])
def test_hypervolume_matches_inclusion_exclusion_and_monte_carlo(m: int) -> None:
    rng = np.random.default_rng(10 + m)
    for n in (1, 2, 5, 10):
        for Y in (random_front(rng, n, m), mixed_points(rng, n, m), rng.random((n, m))):
            ref = reference_point(Y)
            assert hypervolume(Y, ref) == pytest.approx(hypervolume_ie(Y, ref), rel=1e-12)
    # Monte Carlo in [ideal, ref]: the dominated fraction of 2e5 uniform draws.
    Y = rng.random((12, m))
    ref = reference_point(Y)
    ideal = Y.min(axis=0)
    draws = ideal + rng.random((200_000, m)) * (ref - ideal)  # (N, m)
    dominated = np.zeros(len(draws), dtype=bool)
    for p in Y:
        dominated |= np.all(p <= draws, axis=1)
    volume = float(np.prod(ref - ideal))
    estimate = volume * dominated.mean()
    se = volume * dominated.std() / math.sqrt(len(draws))
    assert abs(hypervolume(Y, ref) - estimate) < 4.0 * se
    assert se < 0.02 * estimate  # sharp enough to mean something


def test_the_reference_point_is_the_nadir_plus_a_tenth_of_the_observed_range() -> None:
    Y = np.array([[0.0, 4.0], [1.0, 1.0], [3.0, 0.0], [5.0, 5.0]])  # the last is dominated
    # Front nadir (3, 4), range of all rows (5, 5): ref = (3.5, 4.5).
    np.testing.assert_allclose(reference_point(Y), [3.5, 4.5], rtol=1e-15)
    np.testing.assert_allclose(reference_point(Y, scale=0.5), [5.5, 6.5], rtol=1e-15)
    # A one-point front with a zero coordinate keeps a box as wide as a tenth of what was
    # observed (BoTorch's rule, the range over the front, |p| for one point, gave 1e-8 in f1).
    Y = np.array([[0.0, 1.0], [0.5, 3.0], [0.9, 4.0]])  # (0, 1) dominates the others
    np.testing.assert_allclose(reference_point(Y), [0.09, 1.3], rtol=1e-15)
    # All rows equal: the margin stays positive.
    assert np.all(reference_point(np.array([[-2.0, 0.0], [-2.0, 0.0]])) > [-2.0, 0.0])


@pytest.mark.parametrize("m", [2, 3, 4])
def test_the_reference_point_commutes_with_shifts_and_scales_and_bounds_the_front(m: int) -> None:
    rng = np.random.default_rng(20 + m)
    Y = rng.standard_normal((30, m))
    shift, scale = rng.standard_normal(m) * 10.0, rng.uniform(0.1, 10.0, m)
    np.testing.assert_allclose(
        reference_point(Y * scale + shift), reference_point(Y) * scale + shift, rtol=1e-12
    )
    assert np.all(pareto_front(Y) < reference_point(Y))


def _overlap_volumes(lower: np.ndarray, upper: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """(B, B) volumes of the pairwise intersections of boxes clipped below at lo."""
    low = np.maximum(lower, lo)
    inter_low = np.maximum(low[:, None, :], low[None, :, :])
    inter_up = np.minimum(upper[:, None, :], upper[None, :, :])
    out: np.ndarray = np.prod(np.clip(inter_up - inter_low, 0.0, None), axis=2)
    return out


@pytest.mark.parametrize("m", [2, 3, 4])
def test_the_boxes_fill_the_non_dominated_region_without_overlap(m: int) -> None:
    rng = np.random.default_rng(30 + m)
    for Y in (random_front(rng, 9, m), mixed_points(rng, 10, m), rng.random((10, m))):
        ref = reference_point(Y)
        lower, upper = non_dominated_boxes(Y, ref)  # (B, m) each
        front = pareto_front(Y, ref)
        assert np.all(upper <= ref) and np.all(upper > lower)
        # Outside the dominated region: no front point below a box's upper corner.
        assert not np.any(np.all(front[None, :, :] < upper[:, None, :], axis=2))
        # Clipped to a finite box [lo, ref]: the volumes add up to its volume less HV, and
        # no two boxes share any volume.
        lo = Y.min(axis=0) - 1.0
        widths = np.clip(upper - np.maximum(lower, lo), 0.0, None)
        total = float(np.sum(np.prod(widths, axis=1)))
        expected = float(np.prod(ref - lo)) - hypervolume_ie(Y, ref)
        assert total == pytest.approx(expected, rel=1e-12)
        overlap = _overlap_volumes(lower, upper, lo)
        np.fill_diagonal(overlap, 0.0)
        assert overlap.max() == 0.0
        if m == 2:
            assert len(lower) == len(front) + 1  # the sorted strips: minimal


@pytest.mark.parametrize("m", [3, 4])
def test_on_a_large_front_every_point_is_in_one_box_exactly_when_not_dominated(m: int) -> None:
    rng = np.random.default_rng(40 + m)
    front = random_front(rng, 60, m)
    ref = np.zeros(m)
    lower, upper = non_dominated_boxes(front, ref)
    draws = -rng.random((20_000, m))  # (N, m) in [-1, 0]^m, which holds the front
    inside = np.all((draws[:, None, :] > lower) & (draws[:, None, :] < upper), axis=2)  # (N, B)
    dominated = np.any(np.all(front[None, :, :] <= draws[:, None, :], axis=2), axis=1)
    np.testing.assert_array_equal(inside.sum(axis=1), (~dominated).astype(int))
    assert 0.1 < dominated.mean() < 0.9  # both kinds of draws are there


def test_bad_inputs_are_rejected_with_what_was_wrong() -> None:
    with pytest.raises(ValueError, match="2-D array"):
        non_dominated_mask(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        hypervolume(np.array([[np.nan, 1.0]]), np.ones(2))
    with pytest.raises(ValueError, match="ref must be"):
        non_dominated_boxes(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="at least one observation"):
        reference_point(np.empty((0, 2)))
    with pytest.raises(ValueError, match="scale"):
        reference_point(np.ones((1, 2)), scale=0.0)
