"""Tests for the GP: :mod:`optuna_costbo._numerics.gp.model`, ``.fit``, ``.prior``, ``.kernel``.

References: scikit-learn's Matern kernel and GaussianProcessRegressor (fixed hyperparameters)
for the kernel, the posterior and the log marginal likelihood; central finite differences for
every analytic gradient; a model refactorized from scratch for the bordered Cholesky update.

NOTE(test): sklearn's regressor has a zero prior mean and (with ``normalize_y=False``) no
standardization, while :class:`GPModel` standardizes ``y`` and has a constant mean. The two are
compared by fitting sklearn on the residuals ``r = (y - y_mean) / y_std - mean`` that GPModel
itself models, and mapping sklearn's predictions back with ``y_mean + y_std * (mean + mu)`` and
``y_std^2 * var``. sklearn's predictive std includes the WhiteKernel noise, which is subtracted.
"""

from __future__ import annotations

from collections.abc import Iterator
import math
from typing import Any

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel
from sklearn.gaussian_process.kernels import Matern
from sklearn.gaussian_process.kernels import WhiteKernel
from threadpoolctl import threadpool_limits

from optuna_costbo._numerics.gp.fit import LENGTHSCALE_BOUNDS
from optuna_costbo._numerics.gp.fit import _nll_core
from optuna_costbo._numerics.gp.fit import _sq_diffs
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.kernel import matern52
from optuna_costbo._numerics.gp.kernel import scaled_sq_dist
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.gp.prior import LENGTHSCALE_PRIOR_WEIGHT
from optuna_costbo._numerics.gp.prior import log_prior
from optuna_costbo._numerics.gp.subsets import fit_subset
from optuna_costbo._numerics.gp.subsets import model_subset


def _toy_data(
    n: int, D: int, seed: int = 0, scale: float = 1.0, offset: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, D))  # (n, D)
    y = np.sin(3.0 * X[:, 0]) + np.cos(2.0 * X[:, -1]) + 0.3 * X.sum(axis=1)  # (n,)
    return X, scale * y + offset


def _hyper(D: int, seed: int = 1, noise_var: float = 1e-3) -> GPHyperparams:
    rng = np.random.default_rng(seed)
    return GPHyperparams(
        lengthscales=rng.uniform(0.2, 1.5, size=D),
        signal_var=1.7,
        noise_var=noise_var,
        mean=0.3,
    )


def neg_log_marginal_likelihood(
    theta: np.ndarray,
    X: np.ndarray,
    z: np.ndarray,
    *,
    mean: float | None = None,
    prior: bool = False,
) -> tuple[float, np.ndarray]:
    """The fit's NLL (and its gradient) of standardized z at the packed theta (D+2,)."""
    value, grad, _ = _nll_core(theta, _sq_diffs(X), z, mean, log_prior if prior else None)
    return value, grad


def _log_params(h: GPHyperparams) -> np.ndarray:  # (D+2,)
    out: np.ndarray = np.log(np.r_[h.lengthscales, h.signal_var, h.noise_var])
    return out


def _sklearn_gpr(
    X: np.ndarray, r: np.ndarray, hyper: GPHyperparams, *, fixed: bool = True
) -> GaussianProcessRegressor:
    bounds: str | tuple[float, float] = "fixed" if fixed else (1e-8, 1e8)
    kernel = ConstantKernel(hyper.signal_var, constant_value_bounds=bounds) * Matern(
        length_scale=hyper.lengthscales.copy(), length_scale_bounds=bounds, nu=2.5
    ) + WhiteKernel(hyper.noise_var, noise_level_bounds=bounds)
    gpr = GaussianProcessRegressor(kernel=kernel, alpha=0.0, optimizer=None, normalize_y=False)
    return gpr.fit(X, r)


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas() -> Iterator[None]:
    # NOTE(test): Multi-threaded OpenBLAS on small matrices is 100-1000x slower on a loaded
    # 2-core machine (threads spin-wait for cores); the sampler runs single-threaded too.
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _residuals(model: GPModel) -> np.ndarray:
    return (model.y - model.y_mean) / model.y_std - model.hyper.mean  # (n,)


# ----------------------------------------------------------------------------- kernel


def test_matern52_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    X1 = rng.uniform(size=(7, 3))
    X2 = rng.uniform(size=(5, 3))
    ls = np.array([0.1, 0.7, 3.0])
    expected = Matern(length_scale=ls, nu=2.5)(X1, X2)
    np.testing.assert_allclose(matern52(X1, X2, ls), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.diag(matern52(X1, X1, ls)), 1.0, rtol=0, atol=1e-15)


# ----------------------------------------------------------------------------- posterior


@pytest.mark.parametrize("scale", [1.0, 250.0])
def test_predict_matches_sklearn_with_fixed_hyperparameters(scale: float) -> None:
    X, y = _toy_data(15, 3, scale=scale, offset=4.0)
    hyper = _hyper(3)
    model = GPModel(X, y, hyper)
    gpr = _sklearn_gpr(X, _residuals(model), hyper)

    Xq = np.random.default_rng(5).uniform(size=(20, 3))
    mean, var = model.predict(Xq)
    mu_sk, std_sk = gpr.predict(Xq, return_std=True)
    expected_mean = model.y_mean + model.y_std * (hyper.mean + mu_sk)
    expected_var = model.y_std**2 * (std_sk**2 - hyper.noise_var)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-8)
    np.testing.assert_allclose(var, expected_var, rtol=1e-8)
    assert model.y_std == pytest.approx(np.std(y))
    assert model.y_mean == pytest.approx(np.mean(y))


def test_nll_and_gradient_match_sklearn() -> None:
    X, y = _toy_data(15, 3, scale=3.0)
    hyper = _hyper(3)
    model = GPModel(X, y, hyper)
    z = (y - model.y_mean) / model.y_std  # standardized targets
    value, grad = neg_log_marginal_likelihood(_log_params(hyper), X, z, mean=hyper.mean)

    gpr = _sklearn_gpr(X, z - hyper.mean, hyper, fixed=False)
    lml, lml_grad = gpr.log_marginal_likelihood(gpr.kernel_.theta, eval_gradient=True)
    assert value == pytest.approx(-lml, rel=1e-10)
    # sklearn packs theta as [log s2, log ls (D), log noise]; we pack [log ls, log s2, log noise].
    D = X.shape[1]
    np.testing.assert_allclose(grad[:D], -lml_grad[1 : D + 1], rtol=1e-7, atol=1e-10)
    assert grad[D] == pytest.approx(-lml_grad[0], rel=1e-7)
    assert grad[D + 1] == pytest.approx(-lml_grad[D + 1], rel=1e-7)


@pytest.mark.parametrize("prior", [False, True])
def test_profiled_mean_minimizes_nll_over_the_mean(prior: bool) -> None:
    X, y = _toy_data(12, 2)
    z = (y - y.mean()) / y.std()
    theta = _log_params(_hyper(2))
    profiled, _ = neg_log_marginal_likelihood(theta, X, z, prior=prior)
    res = minimize_scalar(
        lambda m: neg_log_marginal_likelihood(theta, X, z, mean=m, prior=prior)[0],
        bracket=(-1.0, 1.0),
        tol=1e-10,
    )
    assert profiled == pytest.approx(res.fun, rel=1e-10)
    # The profiled objective is the minimum over the mean, never above any fixed mean.
    for m in (-3.0, 0.0, 0.5, 3.0):
        assert profiled <= neg_log_marginal_likelihood(theta, X, z, mean=m, prior=prior)[0]


def _central_diff(f, x: np.ndarray, h: float) -> np.ndarray:  # type: ignore[no-untyped-def]
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2.0 * h)
    return g


@pytest.mark.parametrize("mean", [None, 0.4])
@pytest.mark.parametrize("prior", [False, True])
def test_nll_gradient_finite_differences(mean: float | None, prior: bool) -> None:
    X, y = _toy_data(12, 3, seed=3)
    z = (y - y.mean()) / y.std()
    rng = np.random.default_rng(4)
    for theta in (_log_params(_hyper(3)), rng.normal(size=5) * 0.7 - 0.5):
        _, grad = neg_log_marginal_likelihood(theta, X, z, mean=mean, prior=prior)
        fd = _central_diff(
            lambda t: neg_log_marginal_likelihood(t, X, z, mean=mean, prior=prior)[0], theta, 1e-6
        )
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_log_prior_gradient_finite_differences() -> None:
    theta = np.array([-1.0, 0.5, 2.0, 0.3, -5.0])
    _, grad = log_prior(theta)
    fd = _central_diff(lambda t: log_prior(t)[0], theta, 1e-6)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_log_prior_lengthscale_term_is_the_closed_form() -> None:
    # w * (ls^2 + ls^-2) per dimension: the other terms cancel in the differences.
    base = np.array([0.0, 0.0, 0.0, 0.3, -5.0])
    v0, _ = log_prior(base)
    for ls in (0.1, 0.5, 2.0, 10.0):
        theta = base.copy()
        theta[1] = math.log(ls)
        v, _ = log_prior(theta)
        assert v - v0 == pytest.approx(LENGTHSCALE_PRIOR_WEIGHT * (ls**2 + ls**-2 - 2.0))
    # Smallest at ls = 1, and as costly a factor of 10 below as above.
    up, _ = log_prior(base + np.array([0.0, math.log(10.0), 0, 0, 0]))
    down, _ = log_prior(base - np.array([0.0, math.log(10.0), 0, 0, 0]))
    assert up == pytest.approx(down) and up > v0


def test_fit_on_structureless_data_in_20d_is_not_over_confident() -> None:
    # Independent targets in 20-D: nothing to learn, so predictions at new points should stay
    # near the data mean with honest variances. The dimension-scaled log-normal prior that
    # this one replaced fitted one or two lengthscales near 0.1 and the rest near 18 here and
    # predicted worse than the mean (normalized RMSE 1.34 on this data).
    nrmse, cover = [], []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        X, Xt = rng.uniform(size=(30, 20)), rng.uniform(size=(300, 20))
        y, yt = rng.normal(size=30), rng.normal(size=300)
        model = fit_gp(X, y, rng=rng)
        mean, var = model.predict(Xt)
        sd = np.sqrt(var + model.hyper.noise_var * model.y_std**2)
        nrmse.append(np.sqrt(np.mean((mean - yt) ** 2)) / yt.std())
        cover.append(np.mean(np.abs(mean - yt) <= 2 * sd))
    assert np.mean(nrmse) < 1.15
    assert np.mean(cover) > 0.85


def test_predict_gradients_finite_differences() -> None:
    X, y = _toy_data(10, 3, scale=5.0, offset=1.0)
    model = GPModel(X, y, _hyper(3, noise_var=1e-4))
    rng = np.random.default_rng(7)
    Xq = np.vstack([rng.uniform(size=(5, 3)), X[:1] + 1e-3])  # (6, 3), one next to data
    _, _, dmean, dvar = model.predict(Xq, return_grad=True)
    h = 1e-6
    for i in range(Xq.shape[0]):
        fd_mean = _central_diff(lambda x: model.predict(x[None, :])[0][0], Xq[i], h)
        fd_var = _central_diff(lambda x: model.predict(x[None, :])[1][0], Xq[i], h)
        np.testing.assert_allclose(dmean[i], fd_mean, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(dvar[i], fd_var, rtol=1e-5, atol=1e-7)


def test_predict_gradient_at_training_point_is_finite() -> None:
    X, y = _toy_data(10, 2)
    model = GPModel(X, y, _hyper(2, noise_var=1e-6))
    mean, var, dmean, dvar = model.predict(X, return_grad=True)
    assert np.all(np.isfinite(dmean)) and np.all(np.isfinite(dvar))
    assert np.all(var > 0.0)
    np.testing.assert_allclose(mean, y, atol=1e-4)


def test_predict_without_grad_matches_with_grad() -> None:
    X, y = _toy_data(10, 2)
    model = GPModel(X, y, _hyper(2))
    Xq = np.random.default_rng(0).uniform(size=(4, 2))
    mean, var = model.predict(Xq)
    mean_g, var_g, dmean, dvar = model.predict(Xq, return_grad=True)
    np.testing.assert_array_equal(mean, mean_g)
    np.testing.assert_array_equal(var, var_g)
    assert dmean.shape == (4, 2) and dvar.shape == (4, 2)


@pytest.mark.parametrize(("n", "m"), [(10, 4), (300, 40)])
def test_predict_mean_is_the_mean_of_predict_and_its_gradient(n: int, m: int) -> None:
    # Small and large blocks (the kernel's distances are formed two ways, see kernel.py).
    X, y = _toy_data(n, 3, scale=5.0)
    model = GPModel(X, y, _hyper(3))
    Xq = np.vstack([np.random.default_rng(1).uniform(size=(m, 3)), X[:2]])
    mean, _, dmean, _ = model.predict(Xq, return_grad=True)
    np.testing.assert_allclose(model.predict_mean(Xq), mean, rtol=1e-13, atol=1e-13)
    got, grad = model.predict_mean(Xq, return_grad=True)
    np.testing.assert_allclose(got, mean, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(grad, dmean, rtol=1e-13, atol=1e-13)
    fd = _central_diff(lambda x: model.predict_mean(x[None, :])[0], Xq[0], 1e-6)
    np.testing.assert_allclose(grad[0], fd, rtol=1e-5, atol=1e-7)


def test_scaled_sq_dist_is_the_same_for_small_and_large_blocks() -> None:
    rng = np.random.default_rng(3)
    A, B, ls = rng.uniform(size=(200, 4)), rng.uniform(size=(30, 4)), rng.uniform(0.2, 2, 4)
    brute = (((A[:, None, :] - B[None, :, :]) / ls) ** 2).sum(axis=2)  # (200, 30)
    large = scaled_sq_dist(A, B, ls)  # 24000 differences: the loop over D
    small = np.vstack([scaled_sq_dist(A[i : i + 5], B, ls) for i in range(0, 200, 5)])
    np.testing.assert_allclose(large, brute, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(small, brute, rtol=1e-13, atol=1e-15)


def test_posterior_cov_diagonal_and_symmetry() -> None:
    X, y = _toy_data(12, 2, scale=7.0)
    model = GPModel(X, y, _hyper(2))
    Xq = np.vstack([np.random.default_rng(2).uniform(size=(8, 2)), X[:2]])  # (10, 2)
    cov = model.posterior_cov(Xq)
    _, var = model.predict(Xq)
    np.testing.assert_array_equal(np.diag(cov), var)
    np.testing.assert_array_equal(cov, cov.T)
    assert np.linalg.eigvalsh(cov).min() > -1e-10 * np.abs(cov).max()
    # Versus sklearn's joint covariance (which adds the noise on the diagonal).
    gpr = _sklearn_gpr(X, _residuals(model), model.hyper)
    _, cov_sk = gpr.predict(Xq, return_cov=True)
    cov_sk = model.y_std**2 * (cov_sk - model.hyper.noise_var * np.eye(len(Xq)))
    np.testing.assert_allclose(cov, cov_sk, rtol=1e-7, atol=1e-9 * np.abs(cov).max())


# ----------------------------------------------------------------------------- fantasies


def test_condition_on_matches_model_built_from_scratch() -> None:
    X, y = _toy_data(10, 2, scale=3.0, offset=-2.0)
    model = GPModel(X, y, _hyper(2))
    x_new, y_new = np.array([0.25, 0.8]), 1.7
    fantasy = model.condition_on(x_new, y_new)
    scratch = GPModel(
        np.vstack([X, x_new]),
        np.append(y, y_new),
        model.hyper,
        y_mean=model.y_mean,
        y_std=model.y_std,
    )
    assert fantasy.n == 11 and model.n == 10  # the parent is untouched
    assert fantasy.y_mean == model.y_mean and fantasy.y_std == model.y_std
    assert fantasy.hyper == model.hyper

    Xq = np.vstack([np.random.default_rng(3).uniform(size=(7, 2)), x_new])
    for got, want in zip(fantasy.predict(Xq, True), scratch.predict(Xq, True), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(
        fantasy.posterior_cov(Xq), scratch.posterior_cov(Xq), rtol=1e-8, atol=1e-11
    )
    np.testing.assert_allclose(np.diag(fantasy.posterior_cov(Xq)), fantasy.predict(Xq)[1])
    # The fantasy observation shrinks the variance at x_new to about the noise level.
    var_before = model.predict(x_new[None])[1][0]
    var_after = fantasy.predict(x_new[None])[1][0]
    assert var_after < 0.1 * var_before
    assert var_after < 2.0 * model.hyper.noise_var * model.y_std**2

    # Chained fantasies, including a duplicate of a training point.
    chained = fantasy.condition_on(X[0], -5.0).condition_on(np.array([0.9, 0.1]), 0.0)
    scratch2 = GPModel(chained.X, chained.y, model.hyper, y_mean=model.y_mean, y_std=model.y_std)
    for got, want in zip(chained.predict(Xq), scratch2.predict(Xq), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_condition_on_validates_inputs() -> None:
    X, y = _toy_data(5, 2)
    model = GPModel(X, y, _hyper(2))
    with pytest.raises(ValueError, match="shape"):
        model.condition_on(np.array([0.1, 0.2, 0.3]), 1.0)
    with pytest.raises(ValueError, match="NaN"):
        model.condition_on(np.array([np.nan, 0.2]), 1.0)
    with pytest.raises(ValueError, match="finite"):
        model.condition_on(np.array([0.1, 0.2]), float("inf"))


# ----------------------------------------------------------------------------- robustness


def _assert_finite_model(model: GPModel, n_query: int = 6) -> None:
    Xq = np.random.default_rng(11).uniform(size=(n_query, model.dim))
    Xq = np.vstack([Xq, model.X[:1]])
    mean, var, dmean, dvar = model.predict(Xq, return_grad=True)
    for arr in (mean, var, dmean, dvar, model.posterior_cov(Xq)):
        assert np.all(np.isfinite(arr))
    assert np.all(var > 0.0)
    assert np.all(np.isfinite(model.hyper.lengthscales))


def test_fit_single_point() -> None:
    X = np.array([[0.3, 0.6]])
    model = fit_gp(X, np.array([42.0]), rng=np.random.default_rng(0))
    _assert_finite_model(model)
    assert model.y_std == 1.0
    mean, var = model.predict(np.array([[0.3, 0.6], [1.0, 0.0]]))
    assert mean[0] == pytest.approx(42.0, abs=1e-6)
    assert var[1] > var[0]


def test_fit_duplicate_points() -> None:
    X = np.tile([[0.2, 0.4, 0.6]], (20, 1))  # 20 copies of one point
    rng = np.random.default_rng(1)
    y = rng.normal(size=20)
    model = fit_gp(X, y, rng=rng)
    _assert_finite_model(model)
    mean, _ = model.predict(X[:1])
    assert mean[0] == pytest.approx(y.mean(), abs=0.05 * y.std())
    # Zero noise on duplicates: only jitter makes the matrix factorizable.
    hyper = GPHyperparams(np.full(3, 0.5), signal_var=1.0, noise_var=0.0, mean=0.0)
    _assert_finite_model(GPModel(X, np.ones(20), hyper))


@pytest.mark.parametrize("value", [0.0, 0.1, -3e7])
def test_fit_constant_objective(value: float) -> None:
    X = np.random.default_rng(2).uniform(size=(8, 2))
    model = fit_gp(X, np.full(8, value), rng=np.random.default_rng(0))
    _assert_finite_model(model)
    assert model.y_std == 1.0
    mean, _ = model.predict(np.random.default_rng(3).uniform(size=(5, 2)))
    np.testing.assert_allclose(mean, value, rtol=1e-9, atol=1e-9)


def test_nearly_constant_rounding_noise_is_treated_as_constant() -> None:
    X = np.random.default_rng(2).uniform(size=(10, 1))
    y = np.full(10, 0.1)
    y[3] = np.nextafter(0.1, 1.0)  # one ulp apart: rounding noise, not signal
    model = fit_gp(X, y, rng=np.random.default_rng(0))
    assert model.y_std == 1.0


@pytest.mark.parametrize("scale", [1e-12, 1e12])
def test_fit_is_scale_invariant(scale: float) -> None:
    X, y = _toy_data(15, 2, seed=4)
    base = fit_gp(X, y, rng=np.random.default_rng(0))
    scaled = fit_gp(X, scale * y, rng=np.random.default_rng(0))
    _assert_finite_model(scaled)
    np.testing.assert_allclose(scaled.hyper.lengthscales, base.hyper.lengthscales, rtol=1e-4)
    Xq = np.random.default_rng(5).uniform(size=(10, 2))
    mean_b, var_b = base.predict(Xq)
    mean_s, var_s = scaled.predict(Xq)
    np.testing.assert_allclose(mean_s, scale * mean_b, rtol=1e-5)
    np.testing.assert_allclose(var_s, scale**2 * var_b, rtol=1e-3)


def test_fit_high_dimension_few_points() -> None:
    X, y = _toy_data(5, 30, seed=6)
    model = fit_gp(X, y, rng=np.random.default_rng(0))
    _assert_finite_model(model)
    assert model.hyper.lengthscales.shape == (30,)


def test_near_singular_kernel_does_not_fail() -> None:
    # Long lengthscales make the kernel matrix numerically rank one; no noise leaves only jitter.
    X = np.random.default_rng(3).uniform(size=(40, 2))
    hyper = GPHyperparams(np.full(2, 1e2), signal_var=1e3, noise_var=0.0, mean=0.0)
    model = GPModel(X, X[:, 0], hyper)
    _assert_finite_model(model)
    fantasy = model.condition_on(X[0], 0.5)
    _assert_finite_model(fantasy)


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.array([[0.1, np.nan], [0.2, 0.3]]), np.array([1.0, 2.0]), "NaN"),
        (np.array([[0.1, np.inf], [0.2, 0.3]]), np.array([1.0, 2.0]), "NaN"),
        (np.array([[0.1, 0.2], [0.2, 0.3]]), np.array([1.0, np.nan]), "NaN"),
        (np.array([[0.1, 0.2], [0.2, 0.3]]), np.array([1.0, -np.inf]), "NaN"),
        (np.array([[0.1, 0.2], [0.2, 0.3]]), np.array([1.0, 2.0, 3.0]), "length"),
        (np.array([0.1, 0.2]), np.array([1.0, 2.0]), "2-D"),
        (np.zeros((0, 2)), np.zeros(0), "n >= 1"),
    ],
)
def test_invalid_inputs_raise_value_error(X: np.ndarray, y: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fit_gp(X, y, rng=np.random.default_rng(0))


def test_invalid_arguments_raise_value_error() -> None:
    X, y = _toy_data(5, 2)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="min_noise_var"):
        fit_gp(X, y, rng=rng, min_noise_var=0.0)
    with pytest.raises(ValueError, match="n_restarts"):
        fit_gp(X, y, rng=rng, n_restarts=-1)
    with pytest.raises(ValueError, match="warm_start"):
        fit_gp(X, y, rng=rng, warm_start=_hyper(3))
    model = GPModel(X, y, _hyper(2))
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.array([[0.1, np.nan]]))
    with pytest.raises(ValueError, match="columns"):
        model.predict(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="lengthscales"):
        GPHyperparams(np.array([0.1, -1.0]), signal_var=1.0, noise_var=1e-6, mean=0.0)
    with pytest.raises(ValueError, match="signal_var"):
        GPHyperparams(np.array([0.1]), signal_var=float("nan"), noise_var=1e-6, mean=0.0)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 12),
    log_ls=st.floats(np.log(LENGTHSCALE_BOUNDS[0]), np.log(LENGTHSCALE_BOUNDS[1])),
    log_noise=st.floats(-30.0, 1.0),
    log_scale=st.floats(-28.0, 28.0),
)
def test_predictions_finite_and_positive_for_any_hyperparameters(
    seed: int, n: int, log_ls: float, log_noise: float, log_scale: float
) -> None:
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(size=(n, 2)), 1)  # rounding creates duplicate rows
    y = np.exp(log_scale) * rng.normal(size=n)
    hyper = GPHyperparams(
        np.full(2, np.exp(log_ls)), signal_var=1.0, noise_var=float(np.exp(log_noise)), mean=0.1
    )
    model = GPModel(X, y, hyper)
    _assert_finite_model(model, n_query=4)
    _assert_finite_model(model.condition_on(X[0], float(y[0])), n_query=4)


# ----------------------------------------------------------------------------- fit quality


@pytest.mark.parametrize("D", [1, 2])
def test_fit_interpolates_smooth_function(D: int) -> None:
    def f(X: np.ndarray) -> np.ndarray:
        return np.sin(6.0 * X[:, 0]) + (np.cos(4.0 * X[:, 1]) if D == 2 else 0.0)

    rng = np.random.default_rng(10 + D)
    X, Xt = rng.uniform(size=(30, D)), rng.uniform(size=(200, D))
    model = fit_gp(X, 100.0 + 10.0 * f(X), rng=rng)
    mean, var = model.predict(Xt)
    yt = 100.0 + 10.0 * f(Xt)
    rmse_gp = np.sqrt(np.mean((mean - yt) ** 2))
    rmse_const = np.sqrt(np.mean((np.mean(model.y) - yt) ** 2))
    assert rmse_gp < 0.1 * rmse_const
    # A deterministic objective is interpolated: the fitted noise sits near its floor.
    assert model.hyper.noise_var < 1e-4
    # Calibration sanity: most held-out errors within 3 posterior standard deviations.
    assert np.mean(np.abs(mean - yt) <= 3.0 * np.sqrt(var) + 1e-3) > 0.8


def test_fit_recovers_relevant_dimension() -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(30, 2))
    model = fit_gp(X, np.sin(6.0 * X[:, 0]), rng=rng)
    ls_relevant, ls_irrelevant = model.hyper.lengthscales
    assert ls_relevant < 1.0 < ls_irrelevant
    assert ls_relevant < 0.2 * ls_irrelevant


def test_fit_on_noisy_data_estimates_noise() -> None:
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(60, 1))
    y = np.sin(6.0 * X[:, 0]) + 0.3 * rng.normal(size=60)
    model = fit_gp(X, y, rng=rng)
    noise_orig = model.hyper.noise_var * model.y_std**2  # original units, true value 0.09
    assert 0.02 < noise_orig < 0.3


def test_fit_is_deterministic_given_seed() -> None:
    X, y = _toy_data(20, 3, seed=8)
    a = fit_gp(X, y, rng=np.random.default_rng(123))
    b = fit_gp(X, y, rng=np.random.default_rng(123))
    assert a.hyper == b.hyper
    np.testing.assert_array_equal(a.predict(X)[0], b.predict(X)[0])


def test_warm_start_reaches_a_fit_at_least_as_good() -> None:
    X, y = _toy_data(25, 2, seed=9)
    cold = fit_gp(X[:-1], y[:-1], rng=np.random.default_rng(0))
    warm = fit_gp(X, y, rng=np.random.default_rng(0), n_restarts=0, warm_start=cold.hyper)
    z = (y - warm.y_mean) / warm.y_std

    def objective(h: GPHyperparams) -> float:
        return neg_log_marginal_likelihood(_log_params(h), X, z, prior=True)[0]

    assert objective(warm.hyper) <= objective(cold.hyper) + 1e-9
    full = fit_gp(X, y, rng=np.random.default_rng(0))
    assert objective(warm.hyper) <= objective(full.hyper) + 1.0


@pytest.mark.parametrize(("n", "D"), [(15, 2), (40, 5), (100, 3), (60, 10)])
def test_a_warm_fit_on_one_more_observation_is_within_hundredths_of_a_nat_of_a_tight_fit(
    n: int, D: int
) -> None:
    # The warm run stops early (ftol 1e-4, see fit.py); against a tight fit from the same
    # start (scipy's tolerances tightened by 1e6) it is at most a few hundredths of a nat off.
    from optuna_costbo._numerics.gp import fit as fit_module

    X, y = _toy_data(n + 1, D, seed=n)
    before = fit_gp(X[:-1], y[:-1], rng=np.random.default_rng(0))
    warm = fit_gp(X, y, rng=np.random.default_rng(1), n_restarts=0, warm_start=before.hyper)
    tight_options = {"pgtol": 1e-9, "factr": 1e-15 / fit_module._EPS, "maxiter": 2000}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fit_module, "_LBFGS", tight_options)
        patch.setattr(fit_module, "_WARM_LBFGS", tight_options)
        tight = fit_gp(X, y, rng=np.random.default_rng(1), n_restarts=0, warm_start=before.hyper)
    z = (y - warm.y_mean) / warm.y_std

    def objective(h: GPHyperparams) -> float:
        return neg_log_marginal_likelihood(_log_params(h), X, z, prior=True)[0]

    assert objective(tight.hyper) <= objective(warm.hyper) + 1e-9
    assert objective(warm.hyper) <= objective(tight.hyper) + 0.05
    assert objective(warm.hyper) <= objective(before.hyper) + 1e-9  # never worse than its start


# ----------------------------------------------------------------------------- many observations


def test_fit_subset_keeps_the_best_quarter_and_draws_the_rest() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(size=1000)
    idx = fit_subset(y, 256, np.random.default_rng(1))
    assert idx.shape == (256,) and len(np.unique(idx)) == 256
    assert np.all(np.diff(idx) > 0)
    assert set(np.argsort(y)[:64].tolist()) <= set(idx.tolist())
    # The rest is spread over the other values, not the next best ones.
    rest = np.setdiff1d(idx, np.argsort(y)[:64])
    assert np.median(y[rest]) > np.quantile(y, 0.3)
    np.testing.assert_array_equal(idx, fit_subset(y, 256, np.random.default_rng(1)))
    np.testing.assert_array_equal(fit_subset(y[:100], 256, rng), np.arange(100))
    with pytest.raises(ValueError, match="max_points must be a positive integer"):
        fit_subset(y, 0, rng)


def test_fit_on_a_subset_finds_the_hyperparameters_of_the_full_fit() -> None:
    # 700 noisy observations of a smooth 2-D function: hyperparameters fitted on 256 of them
    # (restarts on 64) against the fit on all 700; the model is conditioned on all 700.
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(700, 2))
    y = np.sin(5.0 * X[:, 0]) + 0.5 * np.cos(3.0 * X[:, 1]) + 0.05 * rng.normal(size=700)
    full = fit_gp(X, y, rng=np.random.default_rng(0))
    sub = fit_gp(X, y, rng=np.random.default_rng(0), max_points=256)
    assert sub.n == 700
    ratio = sub.hyper.lengthscales / full.hyper.lengthscales
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio
    noise_full = full.hyper.noise_var * full.y_std**2
    noise_sub = sub.hyper.noise_var * sub.y_std**2
    assert 0.5 < noise_sub / noise_full < 2.0  # true noise variance 0.0025
    Xt = rng.uniform(size=(400, 2))
    yt = np.sin(5.0 * Xt[:, 0]) + 0.5 * np.cos(3.0 * Xt[:, 1])
    rmse_full = float(np.sqrt(np.mean((full.predict(Xt)[0] - yt) ** 2)))
    rmse_sub = float(np.sqrt(np.mean((sub.predict(Xt)[0] - yt) ** 2)))
    assert rmse_sub < 1.2 * rmse_full + 1e-3


def test_fit_without_optimizing_keeps_the_kernel_and_profiles_the_mean() -> None:
    X, y = _toy_data(40, 3, seed=11)
    first = fit_gp(X[:30], y[:30], rng=np.random.default_rng(0))
    kept = fit_gp(X, y + 5.0, rng=np.random.default_rng(0), warm_start=first.hyper, optimize=False)
    np.testing.assert_array_equal(kept.hyper.lengthscales, first.hyper.lengthscales)
    assert kept.hyper.signal_var == first.hyper.signal_var
    assert kept.hyper.noise_var == first.hyper.noise_var
    assert kept.n == 40
    # The mean is the profiled one of these data: the NLL is smallest there over the mean.
    z = (y + 5.0 - kept.y_mean) / kept.y_std
    theta = _log_params(kept.hyper)

    def nll(m: float) -> float:
        return neg_log_marginal_likelihood(theta, X, z, mean=m, prior=True)[0]

    assert nll(kept.hyper.mean) <= min(nll(kept.hyper.mean + d) for d in (-0.05, 0.05))
    with pytest.raises(ValueError, match="optimize=False needs a warm_start"):
        fit_gp(X, y, rng=np.random.default_rng(0), optimize=False)


def test_model_subset_keeps_the_best_and_the_newest_and_draws_the_rest() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(size=1000)
    idx = model_subset(y, 200, np.random.default_rng(1))
    assert idx.shape == (200,) and len(np.unique(idx)) == 200
    assert np.all(np.diff(idx) > 0)
    best = np.argsort(y)[:50]
    assert set(best.tolist()) <= set(idx.tolist())
    # The newest 50 rows that are not among the best are all kept.
    newest = np.setdiff1d(np.arange(1000), best)[-50:]
    assert set(newest.tolist()) <= set(idx.tolist())
    # The other 100 are spread over the older rows and all values, not the next best ones.
    rest = np.setdiff1d(idx, np.concatenate([best, newest]))
    assert len(rest) == 100
    assert np.median(y[rest]) > np.quantile(y, 0.3)
    assert rest.min() < 200 and rest.max() > 600
    np.testing.assert_array_equal(idx, model_subset(y, 200, np.random.default_rng(1)))
    # Up to the bound, every observation, in order, and no draw from the generator.
    gen = np.random.default_rng(5)
    np.testing.assert_array_equal(model_subset(y[:200], 200, gen), np.arange(200))
    assert gen.random() == np.random.default_rng(5).random()
    with pytest.raises(ValueError, match="max_points must be an integer >= 4"):
        model_subset(y, 3, rng)


def test_model_subset_spreads_the_rest_farthest_first() -> None:
    # With X, the rest is chosen greedily, each the farthest from everything kept before it:
    # checked against a plain loop over Euclidean distances.
    rng = np.random.default_rng(2)
    X = rng.random((120, 3))
    y = rng.normal(size=120)
    idx = model_subset(y, 40, np.random.default_rng(0), X)
    best = np.argsort(y)[:10]
    newest = np.setdiff1d(np.arange(120), best)[-10:]
    chosen = [int(i) for i in np.concatenate([best, newest])]
    pool = [i for i in range(120) if i not in chosen]
    for _ in range(20):
        dist = [min(float(np.linalg.norm(X[i] - X[c])) for c in chosen) for i in pool]
        pick = pool[int(np.argmax(dist))]
        chosen.append(pick)
        pool.remove(pick)
    np.testing.assert_array_equal(idx, np.sort(chosen))

    # Farther apart than a random rest: the largest distance from a dropped point to the
    # nearest kept one is smaller.
    def radius(keep: np.ndarray) -> float:
        dropped = np.setdiff1d(np.arange(120), keep)
        d = np.linalg.norm(X[dropped][:, None, :] - X[keep][None, :, :], axis=-1)
        return float(d.min(axis=1).max())

    assert radius(idx) < radius(model_subset(y, 40, np.random.default_rng(0)))


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("max_points", [None, 24])
def test_the_fitted_mean_is_looked_up_not_evaluated_again(
    monkeypatch: pytest.MonkeyPatch, warm: bool, max_points: int | None
) -> None:
    # fit_gp looks the profiled mean of its best parameters up among the evaluations L-BFGS-B
    # made instead of evaluating the likelihood there again: the same mean, bit for bit, as
    # an evaluation at those parameters, and no evaluation besides the optimizer's.
    from optuna_costbo._numerics.gp import fit as fit_module

    rng = np.random.default_rng(3)
    X = rng.random((40, 3))
    y = np.sin(4.0 * X).sum(axis=1) + 0.05 * rng.normal(size=40)
    start = fit_gp(X, y[::-1].copy(), rng=np.random.default_rng(0)).hyper if warm else None
    calls, by_optimizer = [0], [0]
    built: list[tuple[np.ndarray, float]] = []
    core, minimize = fit_module._nll_core, fit_module.fmin_l_bfgs_b
    from_log_params = GPHyperparams.from_log_params

    def counting_core(*args: Any) -> tuple[float, np.ndarray, float]:
        calls[0] += 1
        return core(*args)

    def counting_minimize(fun: Any, *args: Any, **kwargs: Any) -> Any:
        def counted(theta: np.ndarray, *more: Any) -> tuple[float, np.ndarray]:
            by_optimizer[0] += 1
            return fun(theta, *more)  # type: ignore[no-any-return]

        return minimize(counted, *args, **kwargs)

    def recording(theta: np.ndarray, mean: float) -> GPHyperparams:
        built.append((np.array(theta), mean))
        return from_log_params(theta, mean)

    monkeypatch.setattr(fit_module, "_nll_core", counting_core)
    monkeypatch.setattr(fit_module, "fmin_l_bfgs_b", counting_minimize)
    monkeypatch.setattr(fit_module.GPHyperparams, "from_log_params", recording)
    fit_gp(X, y, rng=np.random.default_rng(1), warm_start=start, max_points=max_points)
    assert calls[0] == by_optimizer[0] > 0
    ((theta, mean),) = built
    if max_points is None:
        y_mean, y_std = fit_module.standardization(y)
        z = (y - y_mean) / y_std
        assert mean == core(theta, fit_module._sq_diffs(X), z, None, log_prior)[2]


def test_leave_one_out_scores_match_refitting_without_each_point() -> None:
    X, y = _toy_data(12, 3, seed=5)
    hyper = _hyper(3, noise_var=1e-2)
    model = GPModel(X, y, hyper)
    scores = model.loo_scores()  # (n,)
    noise = hyper.noise_var * model.y_std**2  # a new observation's noise, original units
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        # The same hyperparameters and standardization, without observation i.
        rest = GPModel(X[keep], y[keep], hyper, y_mean=model.y_mean, y_std=model.y_std)
        mean, var = rest.predict(X[i : i + 1])
        assert scores[i] == pytest.approx((y[i] - mean[0]) / math.sqrt(var[0] + noise), rel=1e-6)
