"""log EI, EI and the cost-aware acquisition, against Monte Carlo, quadrature and FD."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr
from scipy.special import ndtr

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.ei import cool_exponent
from optuna_costbo._numerics.acquisition.ei import cool_power
from optuna_costbo._numerics.acquisition.ei import default_cool_exponent
from optuna_costbo._numerics.acquisition.ei import ei
from optuna_costbo._numerics.acquisition.ei import log_ei
from optuna_costbo._numerics.acquisition.ei import log_ei_and_grad
from optuna_costbo._numerics.acquisition.ei import log_h
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.search_space import NumericParam


def _classical_ei(mean: np.ndarray, var: np.ndarray, best: float) -> np.ndarray:
    """Textbook EI, sigma (phi(z) + z Phi(z)); accurate while it does not underflow."""
    sigma = np.sqrt(var)
    z = (best - mean) / sigma
    return sigma * (np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) + z * ndtr(z))


def _log_h_quadrature(z: float) -> float:
    """log h(z) = log of the integral of Phi over (-inf, z], by quadrature (independent)."""
    log_phi_z = float(log_ndtr(z))
    span = 40.0 / max(1.0, abs(z)) + 10.0  # Phi(t) / Phi(z) < e^-40 beyond this span
    lo = z - span - (60.0 if z > 0 else 0.0)
    value, _ = integrate.quad(
        lambda t: math.exp(float(log_ndtr(t)) - log_phi_z), lo, z, epsabs=0.0, epsrel=1e-12
    )
    return log_phi_z + math.log(value)


@pytest.mark.parametrize(
    ("mean", "var", "best"),
    [(0.0, 1.0, 0.0), (1.0, 0.25, 0.0), (-2.0, 4.0, 0.5), (0.3, 0.01, 0.0), (5.0, 9.0, 4.0)],
)
def test_ei_matches_monte_carlo(mean: float, var: float, best: float) -> None:
    rng = np.random.default_rng(12345)
    y = mean + math.sqrt(var) * rng.standard_normal(2_000_000)
    improvement = np.maximum(best - y, 0.0)
    mc, se = improvement.mean(), improvement.std() / math.sqrt(len(y))
    m, v = np.array([mean]), np.array([var])
    assert abs(ei(m, v, best)[0] - mc) < 4 * se
    assert abs(math.exp(log_ei(m, v, best)[0]) - mc) < 4 * se
    assert se < 0.03 * mc  # the check is sharp enough to mean something


def test_log_ei_matches_log_of_classical_ei() -> None:
    z = np.linspace(-36.0, 12.0, 2001)
    mean, var, best = 1.5 - 0.7 * z, np.full_like(z, 0.49), 1.5
    reference = _classical_ei(mean, var, best)
    assert np.all(reference > 1e-300)
    # The textbook formula cancels for z < 0: phi and z Phi agree to ~1 / z^2, so its relative
    # error is ~eps * z^2 * |z^2 / 2| from the rounding of z; allow 1e-12 (1 + z^2).
    tol = 1e-12 * (1 + z**2)
    assert np.all(np.abs(log_ei(mean, var, best) - np.log(reference)) < tol)
    assert np.all(np.abs(ei(mean, var, best) / reference - 1) < 2 * tol)


@pytest.mark.parametrize(
    "z", [5.0, 0.3, -0.999, -1.0, -1.001, -3.0, -12.0, -29.99, -30.0, -30.01, -45.0, -120.0]
)
def test_log_h_matches_quadrature(z: float) -> None:
    assert log_h(np.array([z]))[0] == pytest.approx(_log_h_quadrature(z), rel=1e-11, abs=1e-11)


def test_log_h_extreme_z_is_finite_monotone_and_asymptotic() -> None:
    z = -np.logspace(0, 150, 3000)  # -1 down to -1e150
    value = log_h(z)
    assert np.all(np.isfinite(value))
    assert np.all(np.diff(value) < 0)  # z decreases, so log h decreases
    # Asymptotic expansion h(z) = phi(z) / z^2 * (1 - 3 / z^2 + 15 / z^4 - ...) for z << 0.
    far = z <= -50
    zf = z[far]
    w = 1.0 / (zf * zf)
    asym = (
        -0.5 * zf * zf
        - 0.5 * math.log(2 * math.pi)
        - 2 * np.log(-zf)
        + np.log1p(-3 * w + 15 * w**2 - 105 * w**3 + 945 * w**4)
    )
    np.testing.assert_allclose(value[far], asym, rtol=1e-14, atol=1e-10)
    assert math.isfinite(log_ei(np.array([1e3]), np.array([1.0]), 0.0)[0])  # z = -1e3
    assert (
        log_ei(np.array([40.0]), np.array([1.0]), 0.0)[0]
        < log_ei(np.array([39.0]), np.array([1.0]), 0.0)[0]
    )


def test_log_h_is_smooth_across_branch_points() -> None:
    for zb in (-1.0, -30.0):
        z = zb + np.array([-1e-7, 0.0, 1e-7])
        value = log_h(z)
        slope = log_ei_and_grad(-z, np.ones(3), 0.0)[1]  # d/dmean = -d/dz at sigma = 1
        assert np.all(np.diff(value) > 0)
        # Secants across the branch point match the analytic slope: no jump, no kink.
        np.testing.assert_allclose(np.diff(value), -slope[:2] * 1e-7, rtol=1e-6)


@pytest.mark.parametrize("z", [6.0, 1.0, 0.0, -0.5, -1.5, -8.0, -29.0, -31.0, -200.0, -1e4])
def test_log_ei_gradients_match_finite_differences(z: float) -> None:
    var, best = 0.64, 0.2
    mean = best - z * math.sqrt(var)
    value, d_mean, d_var = log_ei_and_grad(np.array([mean]), np.array([var]), best)
    assert value[0] == pytest.approx(log_ei(np.array([mean]), np.array([var]), best)[0], rel=1e-15)
    h_m = 1e-6 * max(1.0, abs(mean))
    h_v = 1e-6 * var
    fd_mean = (
        log_ei(np.array([mean + h_m]), np.array([var]), best)
        - log_ei(np.array([mean - h_m]), np.array([var]), best)
    )[0] / (2 * h_m)
    fd_var = (
        log_ei(np.array([mean]), np.array([var + h_v]), best)
        - log_ei(np.array([mean]), np.array([var - h_v]), best)
    )[0] / (2 * h_v)
    # FD of a function of size |log EI| loses ~eps |log EI| / h; allow for it.
    slack = 1e-15 * abs(value[0]) / min(h_m, h_v)
    assert d_mean[0] == pytest.approx(fd_mean, rel=1e-6, abs=slack + 1e-9)
    assert d_var[0] == pytest.approx(fd_var, rel=1e-6, abs=slack + 1e-9)


def test_plain_ei_agrees_with_log_ei_until_it_underflows() -> None:
    # The plain closed form (used by the rollout on batches) and log EI (used by the
    # optimizer) are one quantity: they agree to rounding for z down to -25, and the plain
    # form is clipped to exactly 0 far below the incumbent instead of going negative or NaN.
    z = np.linspace(-25.0, 8.0, 661)
    mean, var, best = -z * 0.7, np.full_like(z, 0.49), 0.0
    plain = ei(mean, var, best)
    np.testing.assert_allclose(
        plain[z > -5.0], np.exp(log_ei(mean, var, best))[z > -5.0], rtol=1e-9
    )
    np.testing.assert_allclose(plain, np.exp(log_ei(mean, var, best)), rtol=1e-3, atol=1e-300)
    far = ei(np.array([60.0, 1e3]), np.array([1.0, 1.0]), 0.0)
    assert np.all(far == 0.0)


def test_best_broadcasts_and_tiny_variance_is_finite() -> None:
    mean, var = np.array([0.0, 0.0]), np.array([1.0, 1.0])
    per_point = log_ei(mean, var, np.array([0.0, 1.0]))
    assert per_point[0] == log_ei(mean[:1], var[:1], 0.0)[0]
    assert per_point[1] == log_ei(mean[:1], var[:1], 1.0)[0]
    value, d_mean, d_var = log_ei_and_grad(np.array([1.0, -1.0]), np.array([0.0, 0.0]), 0.0)
    assert (
        np.all(np.isfinite(value)) and np.all(np.isfinite(d_mean)) and np.all(np.isfinite(d_var))
    )
    assert value[1] == pytest.approx(0.0, abs=1e-12)  # EI -> best - mean = 1 as var -> 0


# ---------------------------------------------------------------- LogEIPerCost


class _AnalyticModel:
    """A smooth fake posterior: mean = a . sin(3 Z) + c, var = s + |Z - b|^2, with gradients."""

    def __init__(self, seed: int, dim: int) -> None:
        rng = np.random.default_rng(seed)
        self.a, self.b = rng.normal(size=dim), rng.random(dim)
        self.c, self.s = float(rng.normal()), 0.05 + rng.random()

    def predict(self, Xq: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        mean = np.sin(3 * Xq) @ self.a + self.c
        var = self.s + np.sum((Xq - self.b) ** 2, axis=1)
        if not return_grad:
            return mean, var
        return mean, var, 3 * np.cos(3 * Xq) * self.a, 2 * (Xq - self.b)

    def log_cost(self, Z: np.ndarray) -> np.ndarray:  # as a cost model: its mean
        return self.predict(Z)[0]

    def log_cost_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, _, dmean, _ = self.predict(Z, True)
        return mean, dmean


def _fd_grad(f: LogEIPerCost, Z: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grad = np.empty_like(Z)
    for d in range(Z.shape[1]):
        e = np.zeros(Z.shape[1])
        e[d] = h
        grad[:, d] = (f(Z + e) - f(Z - e)) / (2 * h)
    return grad


@pytest.mark.parametrize("cost_exponent", [0.0, 0.4, 1.0])
def test_value_and_grad_matches_finite_differences_on_fake_models(cost_exponent: float) -> None:
    model, cost = _AnalyticModel(0, 3), _AnalyticModel(1, 3)
    acq = LogEIPerCost(model, best=-0.5, cost_model=cost, cost_exponent=cost_exponent)
    Z = np.random.default_rng(2).random((6, 3))
    value, grad = acq.value_and_grad(Z)
    np.testing.assert_array_equal(value, acq(Z))
    np.testing.assert_allclose(grad, _fd_grad(acq, Z), rtol=1e-6, atol=1e-7)


def test_cost_exponent_subtracts_the_log_cost_mean() -> None:
    model, cost = _AnalyticModel(3, 2), _AnalyticModel(4, 2)
    Z = np.random.default_rng(5).random((10, 2))
    mean, var = model.predict(Z)
    plain = LogEIPerCost(model, 0.1)(Z)
    np.testing.assert_array_equal(plain, log_ei(mean, var, 0.1))
    # The cost model is ignored at exponent 0.
    np.testing.assert_array_equal(LogEIPerCost(model, 0.1, cost_model=cost)(Z), plain)
    eipu = LogEIPerCost(model, 0.1, cost_model=cost, cost_exponent=1.0)(Z)
    np.testing.assert_allclose(eipu, plain - cost.predict(Z)[0], rtol=1e-15, atol=1e-15)
    cool = LogEIPerCost(model, 0.1, cost_model=cost, cost_exponent=0.3)(Z)
    np.testing.assert_allclose(cool, plain - 0.3 * cost.predict(Z)[0], rtol=1e-15, atol=1e-15)
    # EI per unit cost, in linear space.
    np.testing.assert_allclose(
        np.exp(eipu), ei(mean, var, 0.1) / np.exp(cost.predict(Z)[0]), rtol=1e-12
    )


def test_value_and_grad_with_real_gp() -> None:
    from optuna_costbo._numerics.gp import fit as gp

    rng = np.random.default_rng(0)
    X = rng.random((25, 3))
    y = np.sin(4 * X).sum(axis=1) + 0.1 * rng.normal(size=25)
    log_cost = X @ np.array([1.0, -0.5, 2.0])
    model = gp.fit_gp(X, y, rng=rng)
    cost_model = FittedLogCost(gp.fit_gp(X, log_cost, rng=rng))
    acq = LogEIPerCost(model, float(y.min()), cost_model=cost_model, cost_exponent=1.0)
    Z = np.vstack([rng.random((8, 3)), X[:2] + 1e-3])  # random points and near the data
    value, grad = acq.value_and_grad(Z)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(value, acq(Z), rtol=1e-12)
    np.testing.assert_allclose(grad, _fd_grad(acq, Z), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        value,
        log_ei(*model.predict(Z), float(y.min())) - cost_model.model.predict(Z)[0],
        rtol=1e-12,
    )


def test_invalid_arguments_raise() -> None:
    model = _AnalyticModel(0, 2)
    with pytest.raises(ValueError, match="needs a cost_model"):
        LogEIPerCost(model, 0.0, cost_exponent=1.0)
    with pytest.raises(ValueError, match="cost_exponent must be finite and >= 0"):
        LogEIPerCost(model, 0.0, cost_model=model, cost_exponent=-0.5)
    with pytest.raises(ValueError, match="best must be a finite number"):
        LogEIPerCost(model, math.nan)


@pytest.mark.parametrize("pruned", [False, True])
def test_for_rows_is_the_acquisition_constructed_with_those_exponents(pruned: bool) -> None:
    # for_rows (the rows of a batch of runs under several exponents) skips the checks only:
    # the same values and gradients, bit for bit, as a new acquisition, also for rows that
    # are all under exponent 0 (no cost) and a cost model that reads the objective model.
    from optuna_costbo._numerics.cost_model import PrunedCost
    from optuna_costbo._numerics.gp import fit as gp

    rng = np.random.default_rng(4)
    X = rng.random((20, 2))
    y = np.cos(3 * X).sum(axis=1)
    model = gp.fit_gp(X, y, rng=rng)
    cost_model = FittedLogCost(gp.fit_gp(X, X @ np.array([1.0, 2.0]), rng=rng))
    cost = PrunedCost(cost_model, model, 0.5, 0.4, 0.25) if pruned else cost_model
    exponents = np.array([0.0, 1.0, 0.3])  # (U,)
    every = LogEIPerCost(model, float(y.min()), cost_model=cost, cost_exponent=exponents)
    Z = rng.random((6, 2))  # (m, D)
    for which in (np.array([0, 1, 2, 2, 1, 0]), np.zeros(6, dtype=int), np.full(6, 2)):
        new = LogEIPerCost(model, float(y.min()), cost_model=cost, cost_exponent=exponents[which])
        for got, want in zip(
            every.for_rows(which).value_and_grad(Z), new.value_and_grad(Z), strict=True
        ):
            assert got.tobytes() == want.tobytes()
        assert every.for_rows(which)(Z).tobytes() == new(Z).tobytes()
    with pytest.raises(ValueError, match="array of cost exponents"):
        LogEIPerCost(model, float(y.min()), cost_model=cost, cost_exponent=1.0).for_rows(Z)


def _step_cost(ratio: float) -> KnownCost:
    """Cost 1 on the lower half of the first coordinate, ``ratio`` on the upper half: over a
    Sobol sample c5 = 1 and c95 = ratio exactly, so S = log(ratio)."""
    return KnownCost(lambda Z: np.where(Z[:, 0] < 0.5, 1.0, ratio))


@pytest.mark.parametrize(("ratio", "power"), [(1e3, 2 / 3), (1e4, 1 / 2), (1e5, 2 / 5)])
def test_cool_power_is_log100_over_the_spread(ratio: float, power: float) -> None:
    assert cool_power(math.log(ratio)) == pytest.approx(power, rel=1e-12)
    assert cool_power(math.log(100.0)) == 1.0
    assert cool_power(math.log(30.0)) == 1.0
    assert cool_power(0.0) == 1.0


@pytest.mark.parametrize("ratio", [1.0, 30.0, 99.0])
def test_the_default_cools_as_today_while_costs_span_at_most_100x(ratio: float) -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 2)
    for remaining in (0.0, 0.05, 3.0, 7.5, 10.0, 12.0):
        today = cool_exponent(remaining, 10.0)
        assert default_cool_exponent(remaining, 10.0, _step_cost(ratio), codec) == today
    assert default_cool_exponent(1.0, math.inf, _step_cost(1e5), codec) == 1.0


def test_the_default_cools_as_r_to_the_power_log100_over_the_spread() -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 3)
    cost = _step_cost(1e4)  # S = log 1e4: alpha = sqrt(r)
    for remaining, alpha in [(0.0, 0.0), (2.5, 0.5), (4.0, 0.4**0.5), (10.0, 1.0)]:
        assert default_cool_exponent(remaining, 10.0, cost, codec) == pytest.approx(alpha)
    # A smooth cost: S is read off the percentiles of the predicted costs (a plain reference).
    smooth = KnownCost(lambda Z: np.exp(12.0 * Z[:, 1]))
    c = smooth.cost(codec.sobol_points(1024, seed=0))
    spread = math.log(np.percentile(c, 95) / np.percentile(c, 5))  # about 0.9 * 12
    expected = 0.1 ** (math.log(100.0) / spread)
    assert default_cool_exponent(1.0, 10.0, smooth, codec) == pytest.approx(expected, rel=1e-12)
