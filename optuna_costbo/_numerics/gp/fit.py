"""MAP fit of the GP hyperparameters: marginal likelihood, its gradient, and L-BFGS-B.

Hyperparameters are fitted by :func:`fit_gp` as a MAP estimate (maximum likelihood plus the
weak priors of :mod:`.prior`) with L-BFGS-B over the log-parameters and an analytic gradient.
The constant mean is not part of the optimized vector: it is profiled out in closed form (its
generalized-least-squares / MAP value given the other hyperparameters), see
:func:`neg_log_marginal_likelihood`.

Packing of the log-parameter vector ``theta`` (length ``D + 2``) used throughout::

    theta[:D]  = log(lengthscales)   # (D,)
    theta[D]   = log(signal_var)
    theta[D+1] = log(noise_var)

This module imports only numpy and scipy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.linalg import lapack

from optuna_costbo._numerics.checks import is_int
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.kernel import matern52_parts
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.gp.model import cholesky_jittered
from optuna_costbo._numerics.gp.model import standardization
from optuna_costbo._numerics.gp.model import validate_X
from optuna_costbo._numerics.gp.model import validate_y
from optuna_costbo._numerics.gp.prior import MEAN_PRIOR_VAR
from optuna_costbo._numerics.gp.prior import LogPrior
from optuna_costbo._numerics.gp.prior import log_prior
from optuna_costbo._numerics.gp.subsets import fit_subset
from optuna_costbo._numerics.lbfgsb import lbfgsb_minimize


__all__ = [
    "LENGTHSCALE_BOUNDS",
    "NOISE_VAR_MAX",
    "SIGNAL_VAR_BOUNDS",
    "fit_gp",
    "neg_log_marginal_likelihood",
]

_LOG_2PI = math.log(2.0 * math.pi)

#: Box constraints of the lengthscales (inputs live in the unit box).
LENGTHSCALE_BOUNDS: tuple[float, float] = (1e-2, 1e2)
#: Box constraints of the signal variance, standardized units.
SIGNAL_VAR_BOUNDS: tuple[float, float] = (1e-3, 1e3)
#: Upper bound of the noise variance, standardized units (the lower bound is ``min_noise_var``).
NOISE_VAR_MAX: float = 10.0
# NOTE(gp): L-BFGS-B stopping rule. The NLL is O(n) nats and hyperparameters matter only to a
# few percent for the acquisition, so a projected-gradient tolerance of 1e-3 (Optuna uses 1e-2)
# trades nothing visible for far fewer iterations than scipy's default 1e-5.
_LBFGS_OPTIONS: dict[str, Any] = {"gtol": 1e-3, "max_iter": 200}
# NOTE(gp): a run from the last fit's hyperparameters starts next to the optimum; it stops once
# an iteration gains < 1e-4 of the NLL. 36 data sets (D = 2-10, n = 15-100): 0.002 nats above
# a tight fit (median); warm fits at n = 50-100 took 3-9 evaluations instead of 8-29.
_WARM_LBFGS_OPTIONS: dict[str, Any] = {**_LBFGS_OPTIONS, "ftol": 1e-4}


def _sq_diffs(X: np.ndarray) -> np.ndarray:
    """Pairwise squared differences per dimension, (n, D) -> (D, n * n)."""
    n, D = X.shape
    diff = X.T[:, :, None] - X.T[:, None, :]  # (D, n, n)
    sq: np.ndarray = (diff * diff).reshape(D, n * n)  # (D, n * n)
    return sq


def _nll_core(
    theta: np.ndarray,
    sq_diffs: np.ndarray,
    z: np.ndarray,
    mean: float | None,
    prior: LogPrior | None,
) -> tuple[float, np.ndarray, float]:
    """NLL (+ optional prior), its gradient and the mean used.

    Args:
        theta: Packed log-parameters, shape ``(D + 2,)``.
        sq_diffs: Output of :func:`_sq_diffs`, shape ``(D, n * n)``.
        z: Standardized targets, shape ``(n,)``.
        mean: Fixed constant mean, or ``None`` to profile it out.
        prior: The negative log-prior of the log-parameters to add, with the mean prior
            (:func:`.prior.log_prior` for the MAP fit); ``None``: the likelihood alone.

    Returns:
        ``(value, grad (D+2,), mean)``.
    """
    D = sq_diffs.shape[0]
    n = z.shape[0]
    inv_ls2 = np.exp(-2.0 * theta[:D])  # (D,)
    s2 = math.exp(theta[D])
    noise = math.exp(theta[D + 1])

    r2 = (inv_ls2 @ sq_diffs).reshape(n, n)  # (n, n)
    Kc, a = matern52_parts(r2)  # (n, n) each: the unit-variance kernel, its derivative factor
    K = s2 * Kc  # (n, n)
    diag = np.diag_indices(n)
    K[diag] += noise
    L, _ = cholesky_jittered(K, s2 + noise)

    rhs = np.empty((n, 2))  # (n, 2)
    rhs[:, 0] = z
    rhs[:, 1] = 1.0
    sol, _ = lapack.dpotrs(L, rhs, lower=1)  # (n, 2) = K^-1 [z, 1]
    Kinv_z = sol[:, 0]  # (n,)
    Kinv_1 = sol[:, 1]  # (n,)
    if mean is None:
        # NOTE(gp): Profiling the constant mean: for fixed theta the objective is quadratic in m
        # and minimized by the GLS estimate m = 1^T K^-1 z / (1^T K^-1 1 [+ 1 / v_m]). By the
        # envelope theorem the gradient of the profiled objective w.r.t. theta equals the partial
        # gradient at that m, so no extra term is needed below.
        denom = float(Kinv_1.sum()) + (1.0 / MEAN_PRIOR_VAR if prior is not None else 0.0)
        m = float(Kinv_z.sum()) / denom
    else:
        m = float(mean)
    alpha = Kinv_z - m * Kinv_1  # (n,)
    resid = z - m  # (n,)

    value = 0.5 * float(resid @ alpha) + float(np.sum(np.log(np.diag(L)))) + 0.5 * n * _LOG_2PI

    # NOTE(gp): d NLL / d theta_j = 0.5 sum((K^-1 - alpha alpha^T) * dK/dtheta_j) for the
    # symmetric dK/dtheta_j. K^-1 comes from LAPACK potri (inverse from the Cholesky factor,
    # cheaper than cho_solve(L, I)), which fills only the lower triangle (the upper one keeps the
    # zeros of L). Instead of symmetrizing, P = 2 * tril(K^-1) with the diagonal counted once
    # satisfies sum(P * M) = sum(K^-1 * M) for every symmetric M.
    P, info = lapack.dpotri(L, lower=1)  # (n, n), lower triangle of K^-1, upper triangle 0
    if info != 0:  # pragma: no cover - potri only fails on a singular factor
        raise np.linalg.LinAlgError("potri failed on a valid Cholesky factor.")
    P *= 2.0
    P[diag] *= 0.5
    W = P - np.outer(alpha, alpha)  # (n, n), sum(W * M) = sum((K^-1 - alpha alpha^T) * M)

    grad = np.empty(D + 2)  # (D+2,)
    # dK/dlog(ls_d) = s2 * 5/3 (1 + sqrt5 r) exp(-sqrt5 r) * (x_d - x'_d)^2 / ls_d^2
    a *= W
    grad[:D] = ((5.0 / 6.0) * s2) * (sq_diffs @ a.ravel()) * inv_ls2
    grad[D] = 0.5 * s2 * float(np.sum(W * Kc))  # dK/dlog s2 = s2 * Kc
    grad[D + 1] = 0.5 * noise * float(np.trace(W))  # dK/dlog noise = noise * I

    if prior is not None:
        p_val, p_grad = prior(theta)
        value += p_val + 0.5 * m * m / MEAN_PRIOR_VAR
        grad += p_grad
    return value, grad, m


def neg_log_marginal_likelihood(
    log_params: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    *,
    mean: float | None = None,
    prior: bool = False,
    sq_diffs: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Negative log marginal likelihood and its gradient w.r.t. the packed log-parameters.

    Packing: ``log_params = [log ls_1, ..., log ls_D, log signal_var, log noise_var]``.
    The value is ``0.5 r^T K^-1 r + 0.5 log det K + 0.5 n log(2 pi)`` with ``r = y - mean``
    and ``K = signal_var * Matern52(X, X) + noise_var * I`` (including the ``2 pi`` constant, so
    it is the exact negated log-density of ``y``).

    Args:
        log_params: Packed log-parameters, shape ``(D + 2,)``.
        X: Training inputs, shape ``(n, D)``.
        y: Training targets, shape ``(n,)``, already standardized.
        mean: The constant mean. ``None`` (default) profiles it out: the minimizing value
            ``1^T K^-1 y / (1^T K^-1 1)`` is used (with ``prior=True`` the minimizer of the
            objective including the mean prior).
        prior: If true, add the negative log-priors of :func:`log_prior` and
            ``0.5 mean^2 / MEAN_PRIOR_VAR``, i.e. return the MAP objective minimized by
            :func:`fit_gp`.
        sq_diffs: Optional precomputed squared differences per dimension, shape
            ``(D, n * n)`` (see :func:`fit_gp`); computed from ``X`` when omitted.

    Returns:
        ``(value, grad)`` with ``grad`` of shape ``(D + 2,)``.
    """
    X = validate_X(X, "X")
    z = validate_y(y, X.shape[0])
    theta = np.asarray(log_params, dtype=float)
    if theta.shape != (X.shape[1] + 2,):
        raise ValueError(
            f"log_params must have shape ({X.shape[1] + 2},) for D={X.shape[1]}, "
            f"got {theta.shape}."
        )
    sq = _sq_diffs(X) if sq_diffs is None else sq_diffs
    value, grad, _ = _nll_core(theta, sq, z, mean, log_prior if prior else None)
    return value, grad


def _bounds(D: int, min_noise_var: float, fixed_noise: bool = False) -> np.ndarray:
    """L-BFGS-B bounds of the packed log-parameters, shape (D+2, 2)."""
    lo = np.empty(D + 2)
    hi = np.empty(D + 2)
    lo[:D], hi[:D] = math.log(LENGTHSCALE_BOUNDS[0]), math.log(LENGTHSCALE_BOUNDS[1])
    lo[D], hi[D] = math.log(SIGNAL_VAR_BOUNDS[0]), math.log(SIGNAL_VAR_BOUNDS[1])
    lo[D + 1] = math.log(min_noise_var)
    hi[D + 1] = lo[D + 1] if fixed_noise else math.log(max(NOISE_VAR_MAX, min_noise_var))
    return np.stack([lo, hi], axis=1)


def _initial_points(
    D: int,
    bounds: np.ndarray,
    rng: np.random.Generator,
    n_restarts: int,
    warm_start: GPHyperparams | None,
) -> list[np.ndarray]:
    """Starting points of the L-BFGS-B runs, each of shape (D+2,)."""
    half_log_d = 0.5 * math.log(D)
    default = np.empty(D + 2)
    # NOTE(gp): Default start: lengthscale 0.5 * sqrt(D) (a moderately smooth function over the
    # unit box; the distance between two random points of the box grows like sqrt(D)), signal
    # variance 1 (= variance of the standardized data) and noise 1e-2, from which the optimizer
    # moves quickly in either direction.
    default[:D] = math.log(0.5) + half_log_d
    default[D] = 0.0
    default[D + 1] = math.log(1e-2)
    starts: list[np.ndarray] = []
    if warm_start is not None:
        warm = np.concatenate(
            [
                np.log(warm_start.lengthscales),
                [
                    math.log(warm_start.signal_var),
                    math.log(max(warm_start.noise_var, float(np.exp(bounds[D + 1, 0])))),
                ],
            ]
        )
        starts.append(warm)
        if n_restarts > 0:
            starts.append(default)
            n_restarts -= 1
    else:
        starts.append(default)
    for _ in range(n_restarts):
        theta = np.empty(D + 2)
        theta[:D] = rng.uniform(math.log(0.05), math.log(2.0), size=D) + half_log_d
        theta[D] = rng.uniform(math.log(0.2), math.log(5.0))
        theta[D + 1] = rng.uniform(math.log(1e-6), math.log(1e-1))
        starts.append(theta)
    return [np.clip(s, bounds[:, 0], bounds[:, 1]) for s in starts]


def _lbfgsb_fit(
    starts: list[np.ndarray],  # each (D+2,)
    sq: np.ndarray,  # (D, k * k)
    z: np.ndarray,  # (k,)
    bounds: np.ndarray,  # (D+2, 2)
    prior: LogPrior,
    warm_first: bool = False,
    means: dict[bytes, float] | None = None,
) -> np.ndarray:
    """The best packed log-parameters (D+2,) of L-BFGS-B runs from ``starts`` (MAP, profiled
    mean); ``warm_first``: the first start is the last fit's, run to a looser tolerance.
    ``means``: filled with the profiled mean of every finite evaluation, keyed by the bytes of
    its log-parameters."""

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad, mean = _nll_core(theta, sq, z, None, prior)
        if not (math.isfinite(value) and np.all(np.isfinite(grad))):
            # NOTE(gp): Defensive only: a huge finite value makes L-BFGS-B backtrack instead of
            # aborting on NaN.
            return 1e300, np.zeros_like(theta)
        if means is not None:
            means[theta.tobytes()] = mean
        return value, grad

    best_theta = starts[0]
    best_value = math.inf
    for i, x0 in enumerate(starts):
        options = _WARM_LBFGS_OPTIONS if warm_first and i == 0 else _LBFGS_OPTIONS
        x, value = lbfgsb_minimize(objective, x0, bounds, **options)
        theta = np.clip(x, bounds[:, 0], bounds[:, 1])
        if math.isfinite(value) and value < best_value:
            best_value, best_theta = value, theta
    return best_theta


def fit_gp(
    X: np.ndarray,
    y: np.ndarray,
    *,
    rng: np.random.Generator,
    n_restarts: int = 3,
    min_noise_var: float = 1e-6,
    fixed_noise: bool = False,
    warm_start: GPHyperparams | None = None,
    max_points: int | None = None,
    optimize: bool = True,
    condition_on: np.ndarray | None = None,  # (m,) indices
) -> GPModel:
    """Fit hyperparameters by MAP (marginal likelihood + weak priors) and build the model.

    Minimizes ``neg_log_marginal_likelihood(theta, X, z, mean=None, prior=True)`` over the
    packed log-parameters ``theta = [log ls (D), log signal_var, log noise_var]`` with
    L-BFGS-B inside the bounds :data:`LENGTHSCALE_BOUNDS`, :data:`SIGNAL_VAR_BOUNDS` and
    ``[min_noise_var, NOISE_VAR_MAX]``; the constant mean is profiled out in closed form.
    The best of several runs is kept: the first starts from ``warm_start`` if given, otherwise
    from a default point; then ``n_restarts`` further runs (with a warm start, the first of them
    is the default point) from random points drawn with ``rng``.

    Args:
        X: Training inputs, shape ``(n, D)``, finite, nominally in ``[0, 1]^D``; ``n >= 1``.
        y: Training targets, shape ``(n,)``, finite, original units.
        rng: Random generator for the restart points (the only randomness).
        n_restarts: Number of runs in addition to the first one (``>= 0``, default 3).
        min_noise_var: Lower bound of the noise variance in standardized units (default 1e-6):
            deterministic objectives are interpolated almost exactly while the Cholesky
            factorization stays well conditioned.
        fixed_noise: Hold the noise variance at ``min_noise_var`` instead of fitting it (a
            deterministic objective, as Optuna's ``GPSampler(deterministic_objective=True)``).
        warm_start: Previous hyperparameters (e.g. from the last suggestion) to start from.
            Must have ``D`` lengthscales.
        max_points: Fit the hyperparameters on at most this many observations (see
            :func:`.subsets.fit_subset`); the model returned is conditioned on all of them.
            ``None`` (default): on all.
        optimize: ``False`` keeps the kernel parameters of ``warm_start`` (required then) and
            only profiles the constant mean again: a model for new data at the cost of one
            likelihood evaluation, for a refit schedule.
        condition_on: Indices of the observations the returned model is conditioned on (a
            working set, see :func:`.subsets.model_subset`); the hyperparameters and the
            standardization still come from all of them. ``None`` (default): all.

    Returns:
        The fitted :class:`GPModel`.

    Raises:
        ValueError: On non-finite or mis-shaped inputs, ``n == 0``, ``n_restarts < 0``,
            a non-positive ``min_noise_var`` or a warm start of the wrong dimension.
    """
    X = validate_X(X, "X")
    n, D = X.shape
    if n == 0:
        raise ValueError("fit_gp needs at least one observation (n >= 1), got n = 0.")
    y = validate_y(y, n)
    if not is_int(n_restarts):
        raise ValueError(f"n_restarts must be an integer, got {n_restarts!r}.")
    if n_restarts < 0:
        raise ValueError(f"n_restarts must be >= 0, got {n_restarts}.")
    if not (math.isfinite(min_noise_var) and min_noise_var > 0.0):
        raise ValueError(f"min_noise_var must be finite and positive, got {min_noise_var}.")
    if warm_start is not None and warm_start.dim != D:
        raise ValueError(f"warm_start has {warm_start.dim} lengthscales but X has {D} columns.")
    if not optimize and warm_start is None:
        raise ValueError("optimize=False needs a warm_start (the kernel parameters to keep).")

    y_mean, y_std = standardization(y)
    z = (y - y_mean) / y_std  # (n,)
    X_fit = X
    if max_points is not None and n > max_points:
        keep = fit_subset(y, max_points, rng)  # (max_points,)
        X_fit, z = X[keep], z[keep]
    sq = _sq_diffs(X_fit)  # (D, k * k), shared by every NLL evaluation
    bounds = _bounds(D, min_noise_var, fixed_noise)  # (D+2, 2)

    starts = _initial_points(D, bounds, rng, int(n_restarts), warm_start)
    means: dict[bytes, float] = {}  # profiled mean of each evaluation on (sq, z)
    if not optimize:
        best_theta = starts[0]
    else:
        warm_first = warm_start is not None
        if len(starts) > 1 and X_fit is not X:
            # NOTE(gp): many observations: the restarts only pick a basin, so they run on a
            # quarter of the subset (1/64 of the cost per evaluation) and the best of them is
            # refined on the whole subset. Cold fits at 1000 trials: see suggest_speed.py.
            coarse = fit_subset(z, max(len(z) // 4, 2), rng)  # indices into the subset
            starts = [_lbfgsb_fit(starts, _sq_diffs(X_fit[coarse]), z[coarse], bounds, log_prior)]
            warm_first = False
        best_theta = _lbfgsb_fit(starts, sq, z, bounds, log_prior, warm_first, means)
    # NOTE(gp): the best point of a run is one L-BFGS-B evaluated (the same call on the same
    # arrays, so the same mean bit for bit): its profiled mean is looked up, not computed again
    # (one likelihood evaluation of the 3-20 of a warm fit).
    mean = means.get(np.asarray(best_theta, dtype=float).tobytes())
    if mean is None:
        _, _, mean = _nll_core(best_theta, sq, z, None, log_prior)
    hyper = GPHyperparams.from_log_params(best_theta, mean)
    if condition_on is not None:
        X, y = X[condition_on], y[condition_on]
    return GPModel(X, y, hyper, y_mean=y_mean, y_std=y_std)
