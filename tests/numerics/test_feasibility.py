"""The probability of feasibility under constraint GPs, against Monte Carlo and finite
differences, and its place in the acquisitions (log EI + log PF; PF alone before a feasible
point; the rollout's weighted improvements)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.ei import ei
from optuna_costbo._numerics.acquisition.rollout_values import qmc_normals
from optuna_costbo._numerics.acquisition.rollout_values import rollout_values
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.feasibility import feasible_rows
from optuna_costbo._numerics.feasibility import fit_constraints
from optuna_costbo._numerics.gp.fit import fit_gp


def _feasibility() -> tuple[Feasibility, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.random((16, 2))
    C = np.stack([X[:, 0] + X[:, 1] - 1.0, 0.3 - X[:, 0]], axis=1)  # (16, 2)
    C[3, 1] = np.nan  # one value not known: that model fits on 15 rows
    return fit_constraints(X, C, rng), X


def test_the_probability_of_feasibility_is_the_monte_carlo_frequency() -> None:
    feasibility, _ = _feasibility()
    assert len(feasibility.models) == 2 and feasibility.models[1].n == 15
    Z = np.random.default_rng(1).random((5, 2))
    rng = np.random.default_rng(2)
    draws = []
    for model in feasibility.models:
        mean, var = model.predict(Z)
        draws.append(mean + np.sqrt(var) * rng.standard_normal((200_000, len(Z))))
    frequency = np.mean((draws[0] <= 0.0) & (draws[1] <= 0.0), axis=0)  # (5,)
    np.testing.assert_allclose(feasibility.pf(Z), frequency, atol=5e-3)
    # and the closed form, one factor per constraint
    closed = np.prod(
        [norm.cdf(-m.predict(Z)[0] / np.sqrt(m.predict(Z)[1])) for m in feasibility.models],
        axis=0,
    )
    np.testing.assert_allclose(feasibility.pf(Z), closed, rtol=1e-10)


def test_the_gradient_of_log_pf_matches_finite_differences() -> None:
    feasibility, _ = _feasibility()
    Z = np.random.default_rng(3).random((400, 2)) * 0.8 + 0.1
    # Where finite differences resolve it: log PF from about 0 down to -60 (deeper in the
    # tail the function is too steep for them; the same formula, in log space, holds there).
    Z = Z[feasibility.log_pf(Z)[0] > -60.0][:12]
    assert len(Z) >= 6
    _, grad = feasibility.log_pf(Z, return_grad=True)
    h = 1e-6
    for d in range(2):
        up, down = Z.copy(), Z.copy()
        up[:, d] += h
        down[:, d] -= h
        fd = (feasibility.log_pf(up)[0] - feasibility.log_pf(down)[0]) / (2 * h)  # central
        np.testing.assert_allclose(grad[:, d], fd, rtol=1e-5, atol=1e-6)


def test_feasible_rows() -> None:
    C = np.array([[-1.0, 0.0], [0.5, -1.0], [np.nan, -1.0]])
    assert feasible_rows(C).tolist() == [True, False, False]


def test_constrained_log_ei_adds_log_pf_and_uses_pf_alone_before_a_feasible_point() -> None:
    feasibility, X = _feasibility()
    y = np.sin(3 * X[:, 0]) + X[:, 1]
    model = fit_gp(X, y, rng=np.random.default_rng(0))
    Z = np.random.default_rng(4).random((20, 2))
    plain = LogEIPerCost(model, 0.5)(Z)
    weighted = LogEIPerCost(model, 0.5, feasibility=feasibility)
    np.testing.assert_allclose(weighted(Z), plain + feasibility.log_pf(Z)[0], rtol=1e-12)
    values, _ = weighted.value_and_grad(Z)
    np.testing.assert_allclose(values, weighted(Z), rtol=1e-12)
    alone = LogEIPerCost(model, None, feasibility=feasibility)
    np.testing.assert_allclose(alone(Z), feasibility.log_pf(Z)[0], rtol=1e-12)
    with pytest.raises(ValueError, match="feasibility model"):
        LogEIPerCost(model, None)


def test_the_rollout_weights_improvements_by_feasibility() -> None:
    rng = np.random.default_rng(5)
    P, B = 12, 4
    A = rng.standard_normal((P, P))
    cov = A @ A.T / P + 0.1 * np.eye(P)
    mean = rng.standard_normal(P)
    cost = 1.0 + rng.random(P)
    normals = qmc_normals(64, 2, 0)
    args = (mean, cov, 1e-6, 0.0, B, cost, 50.0, 2, normals)
    # All feasible for sure: the unconstrained values.
    np.testing.assert_allclose(
        rollout_values(*args, feasible=np.ones(P)), rollout_values(*args), rtol=1e-12
    )
    # One step: EI * PF, per unit cost as the shipped rollout values it.
    pf = rng.random(P)
    one = rollout_values(
        mean, cov, 1e-6, 0.0, B, cost, 50.0, 1, normals, per_unit_cost=True,
        last_overruns=True, feasible=pf,
    )  # fmt: skip
    expected = ei(mean[:B], np.diag(cov)[:B], 0.0) * pf[:B] / cost[:B]
    np.testing.assert_allclose(one, expected, rtol=1e-10)
    # Infeasible for sure: no improvement counts, the value is zero.
    np.testing.assert_allclose(rollout_values(*args, feasible=np.zeros(P)), np.zeros(B))


def test_completion_is_one_more_constraint_only_when_a_trial_was_stopped() -> None:
    from optuna_costbo._numerics.feasibility import with_completion

    stopped = np.array([False, True, False])
    np.testing.assert_array_equal(with_completion(None, stopped), [[-1.0], [1.0], [-1.0]])
    C = np.array([[0.5], [-1.0], [np.nan]])
    got = with_completion(C, stopped)
    assert got is not None and got.shape == (3, 2)
    np.testing.assert_array_equal(got[:, 0], C[:, 0])  # the user's columns keep their order
    np.testing.assert_array_equal(got[:, 1], [-1.0, 1.0, -1.0])
    assert with_completion(C, np.zeros(3, dtype=bool)) is C
    assert with_completion(None, None) is None


def test_recency_weights_are_the_closed_form() -> None:
    from optuna_costbo._numerics.feasibility import recency_weights

    # tau = max(0.5 * 40, 10) = 20: the newest weighs 1, the one 20 trials older 1/e.
    w = recency_weights(40, memory=0.5, min_trials=10.0)
    np.testing.assert_allclose(w, np.exp(-np.arange(39, -1, -1) / 20.0), rtol=1e-15)
    assert w[-1] == 1.0 and abs(w[-21] - np.exp(-1.0)) < 1e-15
    # A short study: the memory is min_trials.
    np.testing.assert_allclose(recency_weights(6, 0.5, 10.0), np.exp(-np.arange(5, -1, -1) / 10))
    assert recency_weights(0).shape == (0,)
    with pytest.raises(ValueError, match="positive"):
        recency_weights(5, memory=0.0)
    with pytest.raises(ValueError, match="n must be"):
        recency_weights(-1)


def _dense_posterior(
    X: np.ndarray, z: np.ndarray, noise: np.ndarray, ls: np.ndarray, s2: float, Xq: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """A plain reference: Matern-5/2 (scikit-learn's kernel), per-observation noise, the
    constant mean by generalized least squares; the standardized posterior mean and latent
    variance at Xq."""
    from sklearn.gaussian_process.kernels import Matern

    kern = Matern(length_scale=ls, nu=2.5)
    K = s2 * kern(X) + np.diag(noise)  # (n, n)
    Kinv = np.linalg.inv(K)
    ones = np.ones(len(z))
    m = float(ones @ Kinv @ z / (ones @ Kinv @ ones))
    Kq = s2 * kern(Xq, X)  # (q, n)
    mean = m + Kq @ Kinv @ (z - m)
    var = s2 - np.einsum("qi,ij,qj->q", Kq, Kinv, Kq)
    return m, mean, var


def test_a_discounted_model_is_the_dense_weighted_posterior() -> None:
    from optuna_costbo._numerics.feasibility import discounted

    rng = np.random.default_rng(3)
    X = rng.random((30, 2))
    y = np.where(X[:, 0] + 0.2 * rng.standard_normal(30) > 0.5, 1.0, -1.0)
    fitted = fit_gp(X, y, rng=rng)
    w = np.exp(-np.arange(29, -1, -1) / 8.0)  # (30,)
    model = discounted(fitted, w)
    h = fitted.hyper
    noise = h.noise_var + (1.0 / w - 1.0) * (h.signal_var + h.noise_var)  # standardized
    z = (y - fitted.y_mean) / fitted.y_std
    Xq = rng.random((7, 2))
    m, mean_z, var_z = _dense_posterior(X, z, noise, h.lengthscales, h.signal_var, Xq)
    assert abs(model.hyper.mean - m) < 1e-9
    mean, var = model.predict(Xq)
    np.testing.assert_allclose(mean, fitted.y_mean + fitted.y_std * mean_z, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(var, fitted.y_std**2 * var_z, rtol=1e-7, atol=1e-10)
    # Weights of 1 change only the mean, to the plain GLS mean (the fit's mean includes its
    # weak prior): the same predictions as re-profiling the fitted model itself.
    same = discounted(fitted, np.ones(30))
    np.testing.assert_allclose(same.predict(Xq)[0], fitted.with_gls_mean().predict(Xq)[0])
    np.testing.assert_allclose(same.predict(Xq)[1], fitted.predict(Xq)[1], rtol=1e-12)
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        discounted(fitted, np.zeros(30))


def test_old_completions_count_less_than_recent_stops() -> None:
    # The pruner's bar tightened: the first 30 trials completed everywhere, the last 30 were
    # stopped on the left half (x0 < 0.5) and completed on the right. Undiscounted, the left
    # half's old completions hold its probability of completing up; discounted by age it
    # follows the recent stops.
    from optuna_costbo._numerics.feasibility import completion_weights

    rng = np.random.default_rng(5)
    X = rng.random((60, 2))
    stopped = np.zeros(60, dtype=bool)
    stopped[30:] = X[30:, 0] < 0.5
    label = np.where(stopped, 1.0, -1.0)[:, None]  # (60, 1)
    plain = fit_constraints(X, label, np.random.default_rng(0))
    recent = fit_constraints(
        X, label, np.random.default_rng(0), weights=[completion_weights(stopped, 0.25, 10.0)]
    )
    left = np.column_stack([np.linspace(0.05, 0.4, 8), np.full(8, 0.5)])  # (8, 2)
    right = left + np.array([0.55, 0.0])
    assert recent.pf(left).mean() < 0.6 * plain.pf(left).mean()
    # Near the border the old completions weigh most in the plain model.
    assert np.all(recent.pf(left[-3:]) < 0.8 * plain.pf(left[-3:]))
    assert recent.pf(left).max() < 0.2 and recent.pf(right).mean() > 0.5


def test_only_completions_are_discounted() -> None:
    from optuna_costbo._numerics.feasibility import completion_weights
    from optuna_costbo._numerics.feasibility import recency_weights

    stopped = np.array([True, False, True, False, False])
    w = completion_weights(stopped, memory=0.5, min_trials=2.0)
    np.testing.assert_array_equal(w[stopped], 1.0)
    np.testing.assert_allclose(w[~stopped], recency_weights(5, 0.5, 2.0)[~stopped])
    np.testing.assert_allclose(w[1], np.exp(-3.0 / 2.5))
