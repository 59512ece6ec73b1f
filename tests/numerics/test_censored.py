"""Trials stopped early as censored observations: the truncated-normal mean against scipy and
brute-force Monte Carlo, the bound on a stopped curve's final value against a hand count, and
the objective model that takes censored values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import truncnorm

from optuna_costbo._numerics.censored import impute_censored
from optuna_costbo._numerics.censored import truncated_mean
from optuna_costbo._numerics.curves import finals_and_bounds
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.models import build_models
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.search_space import BoxCodec


def _curve(steps: list[int], values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    return np.array(steps, dtype=float), np.array(values, dtype=float)


def test_the_truncated_mean_matches_scipy_over_the_tails() -> None:
    rng = np.random.default_rng(0)
    mean = rng.normal(size=200) * 3.0  # (200,)
    sd = rng.uniform(0.05, 2.0, size=200)  # (200,)
    a = np.concatenate([np.linspace(-30.0, 30.0, 100), rng.normal(size=100) * 2.0])  # (200,)
    lower = mean + a * sd
    expected = truncnorm.mean(a, np.inf, loc=mean, scale=sd)
    np.testing.assert_allclose(truncated_mean(mean, sd, lower), expected, rtol=1e-9, atol=1e-12)
    # Far in the upper tail the mean is just above the bound: a + 1/a - 2/a^3 + 10/a^5 - 74/a^7 ...
    assert truncated_mean(np.array(0.0), np.array(1.0), np.array(40.0)) == pytest.approx(
        40.0 + 1 / 40.0 - 2 / 40.0**3 + 10 / 40.0**5 - 74 / 40.0**7, rel=1e-12
    )
    # No truncation: the mean itself.
    assert truncated_mean(np.array(1.5), np.array(2.0), np.array(-np.inf)) == 1.5


def test_the_truncated_mean_matches_monte_carlo() -> None:
    rng = np.random.default_rng(1)
    draws = rng.normal(size=2_000_000)  # (N,)
    for mean, sd, lower in [(0.0, 1.0, 0.5), (2.0, 0.5, 1.0), (-1.0, 3.0, 2.0)]:
        y = mean + sd * draws
        kept = y[y >= lower]
        se = kept.std() / np.sqrt(len(kept))
        got = float(truncated_mean(np.array(mean), np.array(sd), np.array(lower)))
        assert abs(got - kept.mean()) < 5 * se


def test_the_bound_is_the_last_report_plus_the_largest_completed_move() -> None:
    complete = [
        _curve([0, 1, 2, 3], [1.0, 0.6, 0.5, 0.4]),  # from step 1: -0.2
        _curve([0, 1, 2, 3], [2.0, 1.5, 1.4, 1.2]),  # from step 1: -0.3
        _curve([0, 2, 3], [3.0, 2.0, 1.0]),  # at step 1 its last report is step 0: -2.0
    ]
    stopped = [_curve([0, 1], [0.9, 0.7]), _curve([0, 1, 2], [5.0, 4.0, 3.0])]
    bounds = finals_and_bounds(complete, stopped)[1]
    np.testing.assert_allclose(bounds, [0.7 - 2.0, 3.0 - 1.0])  # from step 2: -0.1, -0.2, -1.0
    assert np.isnan(finals_and_bounds([], stopped)[1]).all()


def test_the_censored_value_is_the_posterior_mean_given_the_bound_by_monte_carlo() -> None:
    X = np.array([[0.1], [0.4], [0.9]])  # (3, 1)
    y = np.array([1.0, 0.2, 0.8])
    hyper = GPHyperparams(np.array([0.3]), signal_var=1.0, noise_var=0.05, mean=0.0)
    model = GPModel(X, y, hyper)
    Xc = np.array([[0.5], [0.7]])  # (2, 1)
    lower = np.array([0.9, -5.0])
    got = impute_censored(model, Xc, lower)
    mean, var = model.predict(Xc)
    sd = np.sqrt(var + hyper.noise_var * model.y_std**2)
    rng = np.random.default_rng(2)
    for j in range(2):
        draws = mean[j] + sd[j] * rng.normal(size=1_000_000)  # observations at Xc[j]
        kept = draws[draws >= lower[j]]
        assert abs(got[j] - kept.mean()) < 5 * kept.std() / np.sqrt(len(kept))
    assert got[0] > 0.9  # above its bound
    assert got[1] == pytest.approx(mean[1], abs=1e-9)  # a bound far below: the mean


def _request(y_lower: np.ndarray | None) -> ProposalRequest:
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(12, 2))  # (12, 2)
    y = np.sin(4 * X[:, 0]) + X[:, 1]  # (12,)
    codec = BoxCodec([NumericParam(0.0, 1.0), NumericParam(0.0, 1.0)])
    return ProposalRequest(codec=codec, X=X, y=y, remaining=10.0, budget=10.0, y_lower=y_lower)


def test_the_model_sees_censored_values_above_their_bounds_and_exact_ones_unchanged() -> None:
    base = _request(None)
    lower = np.full(12, np.nan)
    lower[[2, 5, 7]] = base.y[[2, 5, 7]] + 1.0  # bounds above the imputed values
    censored = build_models(_request(lower), np.random.default_rng(0), needs_cost=False)
    exact = np.isnan(lower)
    np.testing.assert_array_equal(censored.y[exact], base.y[exact])
    assert (censored.y[~exact] >= lower[~exact]).all()
    # Hyperparameters come from the exact observations alone.
    alone = build_models(
        ProposalRequest(**{**base.__dict__, "X": base.X[exact], "y": base.y[exact]}),
        np.random.default_rng(0),
        needs_cost=False,
    )
    np.testing.assert_allclose(censored.fitted.hyper.lengthscales, alone.fitted.hyper.lengthscales)
    # ... and the censored values are that model's means given the bounds.
    np.testing.assert_allclose(
        censored.y[~exact], impute_censored(alone.fitted, base.X[~exact], lower[~exact])
    )


def test_without_bounds_or_exact_observations_the_values_are_taken_as_given() -> None:
    base = build_models(_request(None), np.random.default_rng(0), needs_cost=False)
    for lower in (np.full(12, np.nan), np.r_[np.full(11, 0.0), np.nan]):
        other = build_models(_request(lower), np.random.default_rng(0), needs_cost=False)
        np.testing.assert_array_equal(other.y, base.y)
        np.testing.assert_allclose(other.fitted.hyper.lengthscales, base.fitted.hyper.lengthscales)


def test_imputations_and_bounds_match_a_pair_by_pair_count_on_random_curves() -> None:
    rng = np.random.default_rng(4)

    def random_curve() -> tuple[np.ndarray, np.ndarray]:
        steps = np.sort(rng.choice(np.arange(1, 30), size=int(rng.integers(1, 10)), replace=False))
        return steps.astype(float), rng.normal(size=len(steps))

    complete = [random_curve() for _ in range(15)]
    stopped = [random_curve() for _ in range(25)]

    def value_at(curve: tuple[np.ndarray, np.ndarray], step: float) -> float:
        before = [v for s, v in zip(*curve, strict=True) if s <= step]
        return float(before[-1]) if before else float(curve[1][0])

    for (steps, values), finals, bound in zip(
        stopped, *finals_and_bounds(complete, stopped), strict=True
    ):
        moves = [c[1][-1] - value_at(c, steps[-1]) for c in complete]
        assert finals == pytest.approx(values[-1] + np.median(moves))
        assert bound == pytest.approx(values[-1] + min(moves))
