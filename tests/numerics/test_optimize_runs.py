"""L-BFGS-B runs from many starts, each its own run, evaluated in batches.

The reference is scipy itself: each run must make the iterates of ``scipy.optimize.minimize``
on that run alone (each run is ``minimize`` in a thread of its own, evaluated in batches).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from scipy.optimize import minimize

from optuna_costbo._numerics import optimize
from optuna_costbo._numerics.optimize import lbfgsb_runs


D = 4
_WEIGHTS = 1.0 + 10.0 * np.arange(D)  # (D,) an ill-conditioned bowl


class _Bowls:
    """Run r maximizes -sum w (z - c_r)^2 + sin(5 z) (a bowl with ripples, its own centre
    c_r); counts evaluations per run and calls."""

    def __init__(self, n_runs: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.centres = rng.uniform(-0.2, 1.2, (n_runs, D))  # (R, D), some outside the box
        self.evals = np.zeros(n_runs, dtype=int)
        self.calls = 0

    def __call__(self, Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        np.add.at(self.evals, runs, 1)
        d = Z - self.centres[runs]  # (m, D)
        values = -np.sum(_WEIGHTS * d**2, axis=1) + np.sin(5.0 * Z).sum(axis=1)
        return values, -2.0 * _WEIGHTS * d + 5.0 * np.cos(5.0 * Z)


def _scipy_alone(fun: _Bowls, z0: np.ndarray, r: int, low: np.ndarray, high: np.ndarray):
    """scipy's L-BFGS-B on run r alone: its best value and point."""

    def neg(x: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = fun(x[None, :], np.array([r]))
        return -float(v[0]), -g[0]

    res = minimize(neg, z0, jac=True, method="L-BFGS-B", bounds=np.stack([low, high], axis=1))
    return -res.fun, res.x


@pytest.mark.parametrize("seed", range(4))
def test_each_run_is_scipys_run_alone(seed: int) -> None:
    rng = np.random.default_rng(seed)
    R = 9
    fun = _Bowls(R, seed)
    Z0 = rng.random((R, D))  # (R, D)
    V0 = fun(Z0, np.arange(R))[0]  # (R,)
    low = np.clip(Z0 - 0.3, 0.0, 1.0)  # (R, D) a box of its own for each run
    high = np.clip(Z0 + 0.3, 0.0, 1.0)
    Z, V = lbfgsb_runs(fun, Z0, V0, np.arange(D), np.stack([low, high], axis=-1))
    for r in range(R):
        value, x = _scipy_alone(fun, Z0[r], r, low[r], high[r])
        assert V[r] == pytest.approx(value, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(Z[r], x, atol=1e-12)
        assert np.all((Z[r] >= low[r]) & (Z[r] <= high[r]))
    assert np.all(V >= V0)  # never worse than the start


@pytest.mark.parametrize("max_evals", [None, 1, 4, 9])
def test_batched_and_sequential_runs_agree_and_obey_the_evaluation_cap(
    max_evals: int | None,
) -> None:
    rng = np.random.default_rng(7)
    R = 12
    Z0 = rng.random((R, D))
    cols = np.array([0, 2, 3])  # column 1 stays where it starts
    batched, sequential = _Bowls(R, 1), _Bowls(R, 1)
    V0 = batched(Z0, np.arange(R))[0]
    sequential(Z0, np.arange(R))
    Zb, Vb = lbfgsb_runs(batched, Z0, V0, cols, max_evals=max_evals)
    Zs, Vs = lbfgsb_runs(sequential, Z0, V0, cols, max_evals=max_evals, sequential=True)
    np.testing.assert_array_equal(Zb, Zs)
    np.testing.assert_array_equal(Vb, Vs)
    np.testing.assert_array_equal(batched.evals, sequential.evals)
    np.testing.assert_array_equal(Zb[:, 1], Z0[:, 1])
    if max_evals is not None:
        assert np.all(batched.evals - 1 <= max_evals)  # 1: the evaluation of the starts
    # Batched: one call per round, as many rounds as the longest run took.
    assert batched.calls - 1 == (batched.evals - 1).max()
    assert sequential.calls - 1 == (sequential.evals - 1).sum()


def test_runs_from_stationary_starts_end_after_one_evaluation_as_scipys() -> None:
    # Runs 0 and 1 start where scipy stops at once (at the interior maximum; at a corner the
    # gradient pushes out of), runs 2 and 3 where it does not.
    fun, seq = _Bowls(4, 0), _Bowls(4, 0)
    for bowls in (fun, seq):
        bowls.centres[:] = [[0.5] * D, [1.5] * D, [0.5] * D, [0.5] * D]
    Z0 = np.array([[0.5] * D, [1.0] * D, [0.2] * D, [1.0] * D])  # (4, D)
    first = _Bowls(4, 0)  # the ripples move the maximum off 0.5: run 0 starts where one run
    first.centres[:] = fun.centres  # from 0.5 ended
    Z0[0] = lbfgsb_runs(first, Z0[:1], first(Z0[:1], np.zeros(1, int))[0], np.arange(D))[0]
    V0 = fun(Z0, np.arange(4))[0]
    seq(Z0, np.arange(4))
    got = lbfgsb_runs(fun, Z0, V0, np.arange(D))
    expected = lbfgsb_runs(seq, Z0, V0, np.arange(D), sequential=True)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(fun.evals, seq.evals)
    assert list(fun.evals[:2] - 1) == [1, 1] and np.all(fun.evals[2:] - 1 > 1)


def test_the_runs_are_deterministic_and_an_evaluation_error_ends_them_all() -> None:
    rng = np.random.default_rng(3)
    Z0 = rng.random((6, D))
    first, second = _Bowls(6, 2), _Bowls(6, 2)
    V0 = _Bowls(6, 2)(Z0, np.arange(6))[0]
    expected = lbfgsb_runs(first, Z0, V0, np.arange(D))
    got = lbfgsb_runs(second, Z0, V0, np.arange(D))
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(second.evals, first.evals)

    failing = _Bowls(6, 2)

    def fails_on_the_third_round(Z: np.ndarray, runs: np.ndarray):
        if failing.calls == 3:
            raise ZeroDivisionError("the acquisition failed")
        return failing(Z, runs)

    with pytest.raises(ZeroDivisionError, match="the acquisition failed"):
        lbfgsb_runs(fails_on_the_third_round, Z0, V0, np.arange(D))
    # No run is left waiting: every thread of the module's pool goes back to idle.
    for _ in range(500):
        threads = [t for t in threading.enumerate() if t.name == "costbo-lbfgsb"]
        if len(optimize._POOL.idle) == len(threads):
            break
        time.sleep(0.01)
    assert len(optimize._POOL.idle) == len(threads) >= 6


def test_a_run_whose_scipy_call_fails_reports_the_error() -> None:
    Z0 = np.full((3, D), 0.5)
    bounds = np.stack([np.zeros((3, D)), np.ones((3, D))], axis=-1)  # (3, D, 2)
    bounds[1, 0] = [0.8, 0.2]  # run 1: a lower bound above its upper bound
    with pytest.raises(ValueError, match="lower bound"):
        lbfgsb_runs(_Bowls(3, 0), Z0, np.zeros(3), np.arange(D), bounds)


def test_a_run_that_meets_non_finite_values_keeps_its_best_finite_point() -> None:
    # Run 0 climbs towards z0 = 1 but every point with z0 > 0.6 is NaN; run 1 is a plain bowl.
    def fun(Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values = np.where(runs == 0, Z[:, 0], -np.sum((Z - 0.5) ** 2, axis=1))
        grads = np.where((runs == 0)[:, None], np.eye(2)[[0] * len(Z)], -2.0 * (Z - 0.5))
        values = np.where((runs == 0) & (Z[:, 0] > 0.6), np.nan, values)
        return values, grads

    Z0 = np.array([[0.1, 0.3], [0.9, 0.1]])
    V0 = np.array([0.1, -np.sum((Z0[1] - 0.5) ** 2)])
    Z, V = lbfgsb_runs(fun, Z0, V0, np.arange(2))
    assert np.isfinite(V).all()
    assert 0.1 <= Z[0, 0] <= 0.6 and V[0] == Z[0, 0]
    np.testing.assert_allclose(Z[1], [0.5, 0.5], atol=1e-5)


def test_runs_on_quadratics_end_at_their_closed_form_maxima() -> None:
    # Run r maximizes -sum w (z - c_r)^2 over [0, 1]^D: its maximum is c_r clipped to the box.
    rng = np.random.default_rng(5)
    R = 7
    centres = rng.uniform(-0.5, 1.5, (R, D))  # (R, D)

    def fun(Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = Z - centres[runs]  # (m, D)
        return -np.sum(_WEIGHTS * d**2, axis=1), -2.0 * _WEIGHTS * d

    Z0 = rng.random((R, D))
    Z, V = lbfgsb_runs(fun, Z0, fun(Z0, np.arange(R))[0], np.arange(D))
    best = np.clip(centres, 0.0, 1.0)
    np.testing.assert_allclose(Z, best, atol=1e-5)  # |gradient| <= gtol = 1e-5 at the end
    np.testing.assert_allclose(V, fun(best, np.arange(R))[0], atol=1e-9)


def test_no_runs_or_no_columns_return_the_starts() -> None:
    fun = _Bowls(3, 0)
    Z0 = np.full((3, D), 0.5)
    V0 = np.zeros(3)
    Z, V = lbfgsb_runs(fun, Z0, V0, np.zeros(0, dtype=np.intp))
    np.testing.assert_array_equal(Z, Z0)
    assert fun.calls == 0
    Z, V = lbfgsb_runs(fun, Z0[:0], V0[:0], np.arange(D))
    assert Z.shape == (0, D) and V.shape == (0,)
