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
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.models import fit_constraints


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
    # and the closed form, one factor per constraint, each met 1e-3 of its scale below 0
    closed = np.prod(
        [
            norm.cdf(-(m.predict(Z)[0] + 1e-3 * m.y_std) / np.sqrt(m.predict(Z)[1]))
            for m in feasibility.models
        ],
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
        mean, cov, 1e-6, 0.0, B, cost, 50.0, 1, normals, rate=True,
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
