"""EHVI: the closed form against brute-force Monte Carlo and a textbook evaluation, the QMC
estimate against Monte Carlo, the limit of a vanishing deviation, the far field and the
gradient against finite differences."""

from __future__ import annotations

import math

from _ehvi_qmc import ehvi_qmc
from _ehvi_qmc import log_ehvi_qmc
from _ehvi_qmc import normal_base_samples
from _pareto_reference import hvi_of_draws
from _pareto_reference import hypervolume_ie
from _pareto_reference import random_front
import numpy as np
import pytest
from scipy.special import ndtr

from optuna_costbo._numerics.acquisition.ehvi import log_ehvi
from optuna_costbo._numerics.acquisition.ehvi import log_ehvi_and_grad
from optuna_costbo._numerics.pareto import non_dominated_boxes
from optuna_costbo._numerics.pareto import pareto_front
from optuna_costbo._numerics.pareto import reference_point


def ehvi(mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.exp(log_ehvi(mean, std, lower, upper))  # (n,)
    return out


Problem = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _problem(m: int, kind: int) -> Problem:
    """A front, its reference point and boxes, and points of every kind with their deviations:
    near the front, far below it (a large improvement), inside the dominated region, and far
    inside it (EHVI ~ 0). Returns (Y, ref, lower, upper, mean (5, m), std (5, m))."""
    rng = np.random.default_rng(100 * m + kind)
    Y = random_front(rng, 6, m) if kind == 0 else rng.random((8, m))
    ref = reference_point(Y)
    lower, upper = non_dominated_boxes(Y, ref)
    front = pareto_front(Y, ref)
    ideal = front.min(axis=0)
    mean = np.array(
        [
            front[0] + 0.05 * rng.standard_normal(m),  # at the front
            front.mean(axis=0),  # among the front
            ideal - 1.0,  # far below: improves on everything
            front[-1] + 0.02,  # inside the dominated region, behind a front point
            ref + 2.0,  # far inside: no improvement in practice
        ]
    )  # (5, m)
    std = rng.uniform(0.05, 0.3, size=mean.shape)  # (5, m)
    return Y, ref, lower, upper, mean, std


def _monte_carlo(
    mean: np.ndarray,
    std: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    n_draws: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force MC of E[HVI] per point and its standard error: (n,), (n,)."""
    rng = np.random.default_rng(seed)
    estimate, se = np.empty(len(mean)), np.empty(len(mean))
    for i in range(len(mean)):
        draws = mean[i] + std[i] * rng.standard_normal((n_draws, mean.shape[1]))
        hvi = hvi_of_draws(draws, lower, upper)
        estimate[i], se[i] = hvi.mean(), hvi.std() / math.sqrt(n_draws)
    return estimate, se


@pytest.mark.parametrize("m", [2, 3, 4])
def test_the_box_sum_is_the_hypervolume_improvement(m: int) -> None:
    rng = np.random.default_rng(m)
    Y = rng.random((7, m))
    ref = reference_point(Y)
    lower, upper = non_dominated_boxes(Y, ref)
    y = rng.uniform(-0.2, 1.2, size=(40, m))  # (40, m), dominated and not
    base = hypervolume_ie(Y, ref)
    expected = [hypervolume_ie(np.vstack([Y, p]), ref) - base for p in y]
    np.testing.assert_allclose(hvi_of_draws(y, lower, upper), expected, rtol=1e-10, atol=1e-14)
    assert 0 < np.count_nonzero(expected) < len(y)


@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize("kind", [0, 1])
def test_the_closed_form_matches_brute_force_monte_carlo(m: int, kind: int) -> None:
    _, _, lower, upper, mean, std = _problem(m, kind)
    exact = ehvi(mean, std, lower, upper)  # (5,)
    mc, se = _monte_carlo(mean, std, lower, upper, 200_000, seed=m + 10 * kind)
    assert np.all(np.abs(exact - mc)[:4] <= 4.5 * se[:4])
    assert np.all(se[:4] < 0.05 * mc[:4])  # sharp enough to mean something where HVI > 0
    assert mc[4] == 0.0 and 0.0 <= exact[4] < 1e-12  # far inside: no draw improves


@pytest.mark.parametrize("m", [2, 3, 4])
def test_log_ehvi_matches_a_textbook_evaluation(m: int) -> None:
    _, _, lower, upper, mean, std = _problem(m, 1)
    mean, std = mean[:4], std[:4]  # moderate z, where the textbook h does not cancel badly

    def h(z: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) + z * ndtr(z)

    zu = (upper[None] - mean[:, None]) / std[:, None]  # (4, B, m)
    zl = (lower[None] - mean[:, None]) / std[:, None]
    h_l = np.where(np.isinf(zl), 0.0, h(np.where(np.isinf(zl), 0.0, zl)))
    reference = np.sum(np.prod(std[:, None] * (h(zu) - h_l), axis=2), axis=1)  # (4,)
    np.testing.assert_allclose(log_ehvi(mean, std, lower, upper), np.log(reference), atol=1e-9)


@pytest.mark.parametrize("m", [3, 4])
def test_the_qmc_estimate_matches_brute_force_monte_carlo_and_the_closed_form(m: int) -> None:
    _, _, lower, upper, mean, std = _problem(m, 1)
    mean, std = mean[:4], std[:4]
    # Randomized QMC: 16 scramblings of 512 draws; their spread is the estimate's error.
    runs = np.array(
        [ehvi_qmc(mean, std, lower, upper, normal_base_samples(512, m, seed=s)) for s in range(16)]
    )  # (16, 4)
    q, q_se = runs.mean(axis=0), runs.std(axis=0, ddof=1) / 4.0
    mc, mc_se = _monte_carlo(mean, std, lower, upper, 200_000, seed=7 * m)
    assert np.all(np.abs(q - mc) <= 4.0 * np.hypot(q_se, mc_se))
    assert np.all(q_se < 0.05 * q)  # sharp enough to mean something
    exact = ehvi(mean, std, lower, upper)
    assert np.all(np.abs(q - exact) <= 4.0 * q_se)
    # One fixed scrambling of 2^13 draws, as an acquisition would use: within 1 % (0.2 % here).
    fixed = ehvi_qmc(mean, std, lower, upper, normal_base_samples(8192, m, seed=0))
    np.testing.assert_allclose(fixed, exact, rtol=0.01)


def test_the_qmc_estimate_is_deterministic_and_its_log_is_safe() -> None:
    _, _, lower, upper, mean, std = _problem(3, 0)
    base = normal_base_samples(256, 3, seed=5)
    np.testing.assert_array_equal(base, normal_base_samples(256, 3, seed=5))
    value = ehvi_qmc(mean, std, lower, upper, base)
    np.testing.assert_array_equal(value, ehvi_qmc(mean, std, lower, upper, base))
    log_value = log_ehvi_qmc(mean, std, lower, upper, base)
    positive = value > 1e-100
    assert positive[:4].all() and value[4] == 0.0
    np.testing.assert_allclose(log_value[positive], np.log(value[positive]), rtol=1e-12)
    assert np.isfinite(log_value[4]) and log_value[4] < -690.0  # the floor, well below the rest


@pytest.mark.parametrize("m", [2, 3, 4])
def test_ehvi_tends_to_the_improvement_of_the_mean_as_the_deviation_vanishes(m: int) -> None:
    rng = np.random.default_rng(50 + m)
    Y = rng.random((6, m))
    ref = reference_point(Y)
    lower, upper = non_dominated_boxes(Y, ref)
    mean = rng.uniform(-0.1, 1.0, size=(30, m))  # (30, m)
    base = hypervolume_ie(Y, ref)
    hvi = np.array([hypervolume_ie(np.vstack([Y, p]), ref) - base for p in mean])
    assert 0 < np.count_nonzero(hvi) < len(mean)
    for sd, tol in ((1e-4, 1e-2), (1e-9, 1e-7), (0.0, 1e-12)):
        value = ehvi(mean, np.full_like(mean, sd), lower, upper)
        # The gap is of the order of the deviation times the front's extent (1e-14: the
        # rounding of the inclusion-exclusion reference).
        np.testing.assert_allclose(value, hvi, rtol=tol, atol=10.0 * sd + 1e-14)


@pytest.mark.parametrize("m", [2, 3, 4])
def test_log_ehvi_is_finite_and_falls_deep_into_the_dominated_region(m: int) -> None:
    _, ref, lower, upper, _, _ = _problem(m, 0)
    mean = ref + np.logspace(-2, 4, 60)[:, None] * np.ones(m)  # (60, m), ever deeper
    std = np.full_like(mean, 0.1)
    value, g_mean, g_std = log_ehvi_and_grad(mean, std, lower, upper)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(g_mean))
    assert np.all(np.isfinite(g_std))
    assert np.all(np.diff(value) < 0) and value[-1] < -1e8
    assert np.all(g_mean < 0) and np.all(g_std > 0)  # lower means and wider spreads help


@pytest.mark.parametrize("m", [2, 3, 4])
def test_the_gradient_matches_finite_differences(m: int) -> None:
    _, _, lower, upper, mean, std = _problem(m, 1)
    value, g_mean, g_std = log_ehvi_and_grad(mean, std, lower, upper)
    np.testing.assert_array_equal(value, log_ehvi(mean, std, lower, upper))
    eps = 1e-6
    for j in range(m):
        step = np.zeros_like(mean)
        step[:, j] = eps
        fd_mean = log_ehvi(mean + step, std, lower, upper) - log_ehvi(
            mean - step, std, lower, upper
        )
        fd_std = log_ehvi(mean, std + step, lower, upper) - log_ehvi(
            mean, std - step, lower, upper
        )
        np.testing.assert_allclose(g_mean[:, j], fd_mean / (2 * eps), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_std[:, j], fd_std / (2 * eps), rtol=1e-5, atol=1e-6)


def test_bad_inputs_are_rejected_with_what_was_wrong() -> None:
    lower, upper = np.full((1, 2), -np.inf), np.ones((1, 2))
    with pytest.raises(ValueError, match="std"):
        log_ehvi(np.zeros((1, 2)), -np.ones((1, 2)), lower, upper)
    with pytest.raises(ValueError, match="one shape"):
        log_ehvi(np.zeros((1, 2)), np.ones((2, 2)), lower, upper)
    with pytest.raises(ValueError, match="lower and upper"):
        log_ehvi(np.zeros((1, 3)), np.ones((1, 3)), lower, upper)
    with pytest.raises(ValueError, match="lower < upper"):
        log_ehvi(np.zeros((1, 2)), np.ones((1, 2)), np.ones((1, 2)), np.ones((1, 2)))
    with pytest.raises(ValueError, match="power of 2"):
        normal_base_samples(100, 2)
    with pytest.raises(ValueError, match="base"):
        ehvi_qmc(np.zeros((1, 2)), np.ones((1, 2)), lower, upper, np.ones((4, 3)))
