"""MAP fit of the GP hyperparameters: marginal likelihood with the constant mean profiled out,
its analytic gradient, and L-BFGS-B over the packed log-parameters (:mod:`.hyperparams`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.linalg import lapack
from scipy.optimize import fmin_l_bfgs_b

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


_LOG_2PI = math.log(2.0 * math.pi)

LENGTHSCALE_BOUNDS: tuple[float, float] = (1e-2, 1e2)
SIGNAL_VAR_BOUNDS: tuple[float, float] = (1e-3, 1e3)
NOISE_VAR_MAX: float = 10.0
# NOTE(gp): hyperparameters matter to a few percent for the acquisition: gtol 1e-3 (Optuna
# uses 1e-2) instead of scipy's 1e-5; a warm start also stops once an iteration gains < 1e-4.
_EPS = float(np.finfo(float).eps)  # scipy's factr is ftol / eps
_LBFGS: dict[str, Any] = {"factr": 2.2204460492503131e-09 / _EPS, "pgtol": 1e-3, "maxiter": 200}
_WARM_LBFGS: dict[str, Any] = {**_LBFGS, "factr": 1e-4 / _EPS}


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
    """NLL of z (n,) at theta (D+2,) given ``_sq_diffs`` (D, n * n), plus the ``prior`` and the
    mean's if given: ``(value, grad (D+2,), mean)``; ``mean=None`` profiles the mean out."""
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
        # NOTE(gp): the GLS mean 1^T K^-1 z / (1^T K^-1 1 [+ 1 / v_m]); by the envelope theorem
        # the profiled gradient is the partial one at that mean.
        denom = float(Kinv_1.sum()) + (1.0 / MEAN_PRIOR_VAR if prior is not None else 0.0)
        m = float(Kinv_z.sum()) / denom
    else:
        m = float(mean)
    alpha = Kinv_z - m * Kinv_1  # (n,)
    resid = z - m  # (n,)

    value = 0.5 * float(resid @ alpha) + float(np.sum(np.log(np.diag(L)))) + 0.5 * n * _LOG_2PI

    # NOTE(gp): d NLL / d theta_j = 0.5 sum((K^-1 - alpha alpha^T) * dK/dtheta_j). potri fills
    # only the lower triangle of K^-1: P = 2 tril(K^-1), diagonal once, has the same sums.
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
    # NOTE(gp): default start: lengthscale 0.5 sqrt(D) (distances in the box grow like sqrt(D)),
    # signal variance 1 (the standardized data's), noise 1e-2.
    default[:D] = math.log(0.5) + half_log_d
    default[D] = 0.0
    default[D + 1] = math.log(1e-2)
    starts: list[np.ndarray] = []
    if warm_start is not None:
        noise = max(warm_start.noise_var, float(np.exp(bounds[D + 1, 0])))
        logs = [math.log(warm_start.signal_var), math.log(noise)]
        starts.append(np.concatenate([np.log(warm_start.lengthscales), logs]))
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


def _objective(
    theta: np.ndarray, sq: np.ndarray, z: np.ndarray, means: dict[bytes, float] | None
) -> tuple[float, np.ndarray]:
    """The NLL with the prior and its gradient (D+2,) for L-BFGS-B; ``means`` gets each
    evaluation's profiled mean."""
    value, grad, mean = _nll_core(theta, sq, z, None, log_prior)
    if not (math.isfinite(value) and np.all(np.isfinite(grad))):
        # NOTE(gp): a huge finite value makes L-BFGS-B backtrack instead of aborting.
        return 1e300, np.zeros_like(theta)
    if means is not None:
        means[theta.tobytes()] = mean
    return value, np.array(grad, dtype=float)  # a fresh array: scipy < 1.15 writes into it


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
    """The GP on X (n, D), y (n,) with MAP hyperparameters: the best L-BFGS-B run from
    ``warm_start`` (or a default) and ``n_restarts`` random points; ``max_points``: fitted on a
    subset; ``optimize=False`` keeps ``warm_start``'s kernel; ``condition_on``: those rows only."""
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
    best_theta = starts[0]
    if optimize:
        stages = [(sq, z, warm_start is not None)]  # (D, k * k), (k,), the first start warm
        if len(starts) > 1 and X_fit is not X:
            # NOTE(gp): the restarts only pick a basin: on a quarter of the subset, the best of
            # them refined on the whole.
            coarse = fit_subset(z, max(len(z) // 4, 2), rng)  # indices into the subset
            stages = [(_sq_diffs(X_fit[coarse]), z[coarse], False), (sq, z, False)]
        for stage, (sq_s, z_s, warm_first) in enumerate(stages):
            record = means if stage == len(stages) - 1 else None
            best_value = math.inf
            for i, x0 in enumerate(starts):
                options = _WARM_LBFGS if warm_first and i == 0 else _LBFGS
                x, value, _ = fmin_l_bfgs_b(
                    _objective, x0, args=(sq_s, z_s, record), bounds=bounds, **options
                )
                if math.isfinite(value) and value < best_value:
                    best_value, best_theta = value, np.clip(x, bounds[:, 0], bounds[:, 1])
            starts = [best_theta]
    # The best point is one L-BFGS-B evaluated: its profiled mean is looked up.
    mean = means.get(np.asarray(best_theta, dtype=float).tobytes())
    if mean is None:
        _, _, mean = _nll_core(best_theta, sq, z, None, log_prior)
    hyper = GPHyperparams.from_log_params(best_theta, mean)
    if condition_on is not None:
        X, y = X[condition_on], y[condition_on]
    return GPModel(X, y, hyper, y_mean=y_mean, y_std=y_std)
