"""The learning-curve model of freeze-thaw BO, checked against plain references: the kernel
against its Gamma mixture by quadrature, the restricted likelihood against a dense Gaussian
with a wide level prior and its gradient by finite differences, the final-value measurement
against dense conditioning and its variance by Monte Carlo coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy import stats

from optuna_costbo._numerics.curves import StoppedCurves
from optuna_costbo._numerics.freeze_thaw import CurveKernel
from optuna_costbo._numerics.freeze_thaw import _neg_restricted_loglik
from optuna_costbo._numerics.freeze_thaw import _stack
from optuna_costbo._numerics.freeze_thaw import decay_kernel
from optuna_costbo._numerics.freeze_thaw import final_measurements
from optuna_costbo._numerics.freeze_thaw import fit_curve_kernel
from optuna_costbo._numerics.freeze_thaw import measured_values


KERNEL = CurveKernel(amplitude=0.5, alpha=1.5, beta=5.0, noise=1e-3)
STEPS = np.arange(1.0, 31.0)  # (30,)


def _curves(rng: np.random.Generator, n: int, kernel: CurveKernel = KERNEL) -> list[np.ndarray]:
    """``n`` full curves over STEPS drawn from the model: a level plus a decay plus noise."""
    S = decay_kernel(STEPS, STEPS, kernel) + kernel.noise * np.eye(len(STEPS))  # (30, 30)
    L = np.linalg.cholesky(S)
    return [rng.normal(0.3, 0.1) + L @ rng.normal(size=len(STEPS)) for _ in range(n)]


def test_the_kernel_is_the_gamma_mixture_of_exponential_decays() -> None:
    # k(t, u) = amplitude * E[exp(-lambda (t + u))], lambda ~ Gamma(alpha, rate beta)
    t, u = np.array([0.0, 1.0, 4.0]), np.array([2.0, 7.5])
    got = decay_kernel(t, u, KERNEL)  # (3, 2)
    density = stats.gamma(a=KERNEL.alpha, scale=1.0 / KERNEL.beta).pdf

    def mixture(lag: float) -> float:
        value, _ = integrate.quad(lambda lam: math.exp(-lam * lag) * density(lam), 0, np.inf)
        return float(value)

    for i, ti in enumerate(t):
        for j, uj in enumerate(u):
            assert got[i, j] == pytest.approx(KERNEL.amplitude * mixture(ti + uj), rel=1e-7)


def _drift(steps: np.ndarray) -> np.ndarray:
    """A typical move to the end (30), 0 there: what a falling curve still loses."""
    out: np.ndarray = -0.4 * (np.exp(-steps / 6.0) - math.exp(-5.0))
    return out


def test_the_restricted_likelihood_is_the_wide_level_prior_limit() -> None:
    rng = np.random.default_rng(1)
    full = _curves(rng, 3)
    curves = [(STEPS[:n] / 30.0, c[:n]) for c, n in zip(full, (5, 9, 3), strict=True)]
    drifts = [_drift(STEPS[:n]) for n in (5, 9, 3)]
    t, y, mask, d = _stack(curves, drifts)

    def dense(theta: np.ndarray, wide: float) -> float:
        # -log N(y; 0, S + wide 1 1') per curve, minus what the wide prior alone adds
        amplitude, alpha, beta, noise, drift_var = np.exp(theta)
        k = CurveKernel(amplitude, alpha, beta, noise)
        total = 0.0
        for (steps, values), dc in zip(curves, drifts, strict=True):
            S = decay_kernel(steps, steps, k) + noise * np.eye(len(steps)) + wide
            S += drift_var * np.outer(dc, dc)
            total -= stats.multivariate_normal(np.zeros(len(steps)), S).logpdf(values)
            total -= 0.5 * math.log(2.0 * math.pi * wide)
        return total

    a, b = np.log([0.7, 1.2, 0.2, 1e-2, 0.5]), np.log([0.3, 2.0, 0.05, 3e-3, 2.0])
    got = _neg_restricted_loglik(a, t, y, mask, d)[0] - _neg_restricted_loglik(b, t, y, mask, d)[0]
    assert got == pytest.approx(dense(a, 1e6) - dense(b, 1e6), rel=1e-5)
    # without a drift term (4 hyperparameters) the drift arrays are ignored
    four = _neg_restricted_loglik(a[:4], t, y, mask, d)[0]
    assert four == pytest.approx(_neg_restricted_loglik(a[:4], t, y, mask, 0 * d)[0])


@pytest.mark.parametrize("n_theta", [4, 5])
def test_the_restricted_likelihoods_gradient_matches_finite_differences(n_theta: int) -> None:
    rng = np.random.default_rng(2)
    full = _curves(rng, 6)
    lengths = (3, 30, 12, 7, 4, 20)
    curves = [(STEPS[:n] / 30.0, c[:n]) for c, n in zip(full, lengths, strict=True)]
    t, y, mask, d = _stack(curves, [_drift(STEPS[:n]) for n in lengths])
    theta = np.log([0.7, 1.2, 0.2, 1e-2, 0.3])[:n_theta]
    _, grad = _neg_restricted_loglik(theta, t, y, mask, d)
    eps = 1e-6
    for j in range(n_theta):
        step = eps * np.eye(n_theta)[j]
        up = _neg_restricted_loglik(theta + step, t, y, mask, d)[0]
        down = _neg_restricted_loglik(theta - step, t, y, mask, d)[0]
        assert grad[j] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("drift_var", [0.0, 0.7])
def test_a_measurement_is_dense_conditioning_under_a_wide_level_prior(drift_var: float) -> None:
    rng = np.random.default_rng(3)
    full = _curves(rng, 2)
    stopped = [(STEPS[:7], full[0][:7]), (STEPS[:1], full[1][:1])]
    kernel = CurveKernel(KERNEL.amplitude, KERNEL.alpha, KERNEL.beta, KERNEL.noise, drift_var)
    drifts = [_drift(c[0]) for c in stopped]
    mean, var = final_measurements(stopped, kernel, 30.0, drifts)
    wide = 1e6
    for i, (steps, values) in enumerate(stopped):
        at = np.append(steps, 30.0)  # the reports' steps, then the final one
        C = decay_kernel(at, at, kernel) + wide  # (k + 1, k + 1)
        C += drift_var * np.outer(_drift(at), _drift(at))  # the drift is 0 at the final step
        k = len(steps)
        C[:k, :k] += kernel.noise * np.eye(k)
        w = np.linalg.solve(C[:k, :k], C[:k, k])  # (k,)
        assert mean[i] == pytest.approx(float(w @ values), abs=1e-5)
        assert var[i] == pytest.approx(float(C[k, k] - w @ C[:k, k]), rel=1e-4)


def test_padding_leaves_each_measurement_as_it_is_alone() -> None:
    rng = np.random.default_rng(4)
    full = _curves(rng, 3)
    stopped = [(STEPS[:n], c[:n]) for c, n in zip(full, (2, 25, 6), strict=True)]
    together = final_measurements(stopped, KERNEL, 30.0)
    for i, curve in enumerate(stopped):
        alone = final_measurements([curve], KERNEL, 30.0)
        assert together[0][i] == pytest.approx(alone[0][0], abs=1e-12)
        assert together[1][i] == pytest.approx(alone[1][0], rel=1e-10)


def test_measurements_are_calibrated_over_curves_drawn_from_the_model() -> None:
    # Monte Carlo: the standardized errors of the final values have mean 0 and variance 1.
    rng = np.random.default_rng(5)
    full = _curves(rng, 2000)
    cut = rng.integers(1, 29, size=len(full))
    stopped = [(STEPS[:n], c[:n]) for c, n in zip(full, cut, strict=True)]
    truth = np.array([c[-1] for c in full])  # includes the last report's own noise
    mean, var = final_measurements(stopped, KERNEL, 30.0)
    z = (truth - mean) / np.sqrt(var + KERNEL.noise)
    assert abs(float(np.mean(z))) < 0.1
    assert float(np.var(z)) == pytest.approx(1.0, abs=0.1)
    # and a curve stopped later is measured more precisely
    assert np.corrcoef(cut, var)[0, 1] < -0.5


def test_the_fitted_kernel_measures_as_well_as_the_true_one() -> None:
    rng = np.random.default_rng(6)
    full = _curves(rng, 80)
    cut = rng.integers(2, 30, size=len(full))
    curves = [(STEPS[:n], c[:n]) for c, n in zip(full, cut, strict=True)]
    fitted = fit_curve_kernel(curves)
    assert fitted is not None
    test = _curves(rng, 400)
    cut = rng.integers(1, 29, size=len(test))
    stopped = [(STEPS[:n], c[:n]) for c, n in zip(test, cut, strict=True)]
    truth = np.array([c[-1] for c in test])
    errors = {}
    for name, kernel in (("true", KERNEL), ("fitted", fitted)):
        mean, _ = final_measurements(stopped, kernel, 30.0)
        errors[name] = float(np.mean((truth - mean) ** 2))
    last = np.array([c[1][-1] for c in stopped])
    assert errors["fitted"] < 1.2 * errors["true"]
    assert errors["fitted"] < 0.8 * float(np.mean((truth - last) ** 2))  # beats the last report


def test_too_few_curves_fit_no_kernel() -> None:
    one = (STEPS[:5], np.linspace(1.0, 0.5, 5))
    short = (STEPS[:2], np.array([1.0, 0.9]))
    assert fit_curve_kernel([one, short, short]) is None
    assert fit_curve_kernel([one, one]) is not None


def test_measured_values_replace_only_the_stopped_rows() -> None:
    rng = np.random.default_rng(7)
    full = _curves(rng, 6)
    complete = [(STEPS, c) for c in full[:4]]
    stopped = [(STEPS[:3], full[4][:3]), (STEPS[:10], full[5][:10])]
    y = np.array([c[-1] for c in full[:4]] + [0.0, 0.0])[[0, 4, 1, 2, 5, 3]]
    out = measured_values(y, StoppedCurves(complete, stopped, rows=np.array([1, 4])))
    assert out is not None
    values, extra = out
    np.testing.assert_array_equal(values[[0, 2, 3, 5]], y[[0, 2, 3, 5]])
    np.testing.assert_array_equal(extra[[0, 2, 3, 5]], 0.0)
    assert (extra[[1, 4]] > 0).all() and extra[1] > extra[4]  # stopped earlier: less known
