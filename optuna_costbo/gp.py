"""Gaussian-process regression for minimization-based Bayesian optimization on ``[0, 1]^D``.

The model puts a GP prior on a latent function ``f`` and observes ``y = f + noise``, with

* a Matern-5/2 ARD kernel with signal variance
  ``k(x, x') = s2 * (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)``, ``r = ||(x - x') / lengthscales||``;
* a constant mean ``mean``;
* i.i.d. Gaussian observation noise with variance ``noise_var``;
* outputs standardized as ``z = (y - y_mean) / y_std`` before fitting. ``signal_var``,
  ``noise_var`` and ``mean`` live in these standardized units; :meth:`GPModel.predict` and
  :meth:`GPModel.posterior_cov` report the latent ``f`` (without noise) in original units.

Hyperparameters are fitted by :func:`fit_gp` as a MAP estimate (maximum likelihood plus weak
priors, see :data:`LENGTHSCALE_PRIOR_WEIGHT` and :func:`log_prior`) with L-BFGS-B over the
log-parameters and an analytic gradient. The constant mean is not part of the optimized vector:
it is profiled out in closed form (its generalized-least-squares / MAP value given the other
hyperparameters), see :func:`neg_log_marginal_likelihood`.

Packing of the log-parameter vector ``theta`` (length ``D + 2``) used throughout::

    theta[:D]  = log(lengthscales)   # (D,)
    theta[D]   = log(signal_var)
    theta[D+1] = log(noise_var)

Notation: ``n`` training points, ``D`` input dimensions, ``m`` query points, ``K`` the noisy
training covariance ``s2 * Kc + noise_var * I`` where ``Kc`` is the unit-variance kernel matrix,
``alpha = K^-1 (z - mean)``.

This module imports only numpy and scipy.

NOTE(gp): Threading. Everything here is small dense linear algebra (n ~ 10..500). With a
multi-threaded OpenBLAS on a loaded 2-core machine, BLAS-3 calls on such matrices (potri, trsm
with many right-hand sides) were measured 100-1000x slower than single-threaded because the
worker threads spin-wait for cores. This module cannot control the BLAS thread pool with numpy
and scipy alone, so callers should run it under ``threadpoolctl.threadpool_limits(1, "blas")``
or with ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Literal
from typing import overload

import numpy as np
from scipy.linalg import lapack
from scipy.linalg import solve_triangular
import scipy.optimize


__all__ = [
    "LENGTHSCALE_BOUNDS",
    "LENGTHSCALE_PRIOR_WEIGHT",
    "MEAN_PRIOR_VAR",
    "NOISE_VAR_MAX",
    "SIGNAL_VAR_BOUNDS",
    "GPHyperparams",
    "GPModel",
    "fit_gp",
    "log_prior",
    "matern52",
    "neg_log_marginal_likelihood",
]

_LOG_2PI = math.log(2.0 * math.pi)

#: Box constraints of the lengthscales (inputs live in the unit box).
LENGTHSCALE_BOUNDS: tuple[float, float] = (1e-2, 1e2)
#: Box constraints of the signal variance, standardized units.
SIGNAL_VAR_BOUNDS: tuple[float, float] = (1e-3, 1e3)
#: Upper bound of the noise variance, standardized units (the lower bound is ``min_noise_var``).
NOISE_VAR_MAX: float = 10.0

# NOTE(gp): Lengthscale prior: a penalty of LENGTHSCALE_PRIOR_WEIGHT * (ls^2 + ls^-2) nats per
# dimension, i.e. 0.1 / q + 0.1 q on the inverse squared lengthscale q = ls^-2, the form of
# Optuna's GPSampler (optuna/_gp/prior.py). It is smallest at ls = 1 (the width of the box)
# and costs 10 nats at ls = 0.1 or 10, so neither very wiggly nor almost linear fits are cheap.
# It replaced the dimension-scaled log-normal prior log(ls) ~ N(sqrt(2) + log(D) / 2, 3)
# (Hvarfner et al., ICML 2024), which put the median lengthscale at 18 for D = 20: on data
# with little structure that prior, with the noise prior below, made the fit explain the data
# with one or two lengthscales at ~0.1 and the rest at ~18, an over-confident model whose EI
# sent the search to far corners. Held-out predictions (benchmarks/gp_prior.py: uniform
# designs, n = 10/30/60, 7 functions of D = 2..20, 6 seeds) were better with this prior in
# every cell by log predictive density and error, and equal on the paper's 2-D problem.
#: Weight of the lengthscale penalty ``w * (ls^2 + ls^-2)`` per dimension, in nats.
LENGTHSCALE_PRIOR_WEIGHT: float = 0.1
# NOTE(gp): Signal-variance and noise priors follow Optuna's GPSampler
# (optuna/_gp/prior.py): Gamma(2, 1) on the signal variance (mode 1, the variance of
# standardized data) and Gamma(1.1, 30) on the noise variance. Both are written as penalties on
# the variance itself (no log-Jacobian), so the noise penalty is -0.1 log(noise) + 30 noise: it
# strongly discourages explaining the data as noise (noise ~ 1 costs ~30 nats), but moving the
# noise from 3e-3 down to the 1e-6 floor costs < 1 nat, so deterministic objectives are still
# interpolated. Without these, ML-II for small n often picks the degenerate "all noise" or
# "tiny signal, lengthscale at a bound" optima.
_SIGNAL_GAMMA = (2.0, 1.0)  # (concentration, rate)
_NOISE_GAMMA = (1.1, 30.0)  # (concentration, rate)
# NOTE(gp): The constant mean gets a N(0, 1) prior in standardized units. It keeps the profiled
# (closed-form) mean finite and near the sample mean when 1^T K^-1 1 is tiny (e.g. very short
# lengthscales), where the pure GLS estimate is ill-determined.
#: Variance of the Gaussian prior on the constant mean (standardized units).
MEAN_PRIOR_VAR: float = 1.0

# NOTE(gp): Posterior latent variances are clipped at this fraction of the signal variance:
# the subtraction s2 - k^T K^-1 k cancels catastrophically near training points and may go
# slightly negative; 1e-12 * s2 is far below any variance that matters for acquisitions but keeps
# sqrt(var) and log(var) finite.
_VAR_FLOOR_REL = 1e-12
# NOTE(gp): Jitter schedule for factorizations that fail (duplicate rows with a zero noise
# variance, or kernel matrices that are singular to working precision). The first retry adds
# 1e-10 * (s2 + noise) to the diagonal and each further retry multiplies by 10; at the last step
# the jitter equals the diagonal itself, which makes any symmetric PSD matrix comfortably
# positive definite, so the loop cannot run out for valid inputs.
_JITTER_START_REL = 1e-10
_JITTER_STEPS = 11
# NOTE(gp): Relative size below which the standard deviation of y is treated as rounding noise
# of a constant objective (e.g. np.std([0.1] * 10) ~ 1e-17 != 0); standardizing by it would blow
# rounding errors up to O(1) values.
_CONSTANT_Y_RTOL = 64.0 * float(np.finfo(np.float64).eps)
# NOTE(gp): L-BFGS-B stopping rule. The NLL is O(n) nats and hyperparameters matter only to a
# few percent for the acquisition, so a projected-gradient tolerance of 1e-3 (Optuna uses 1e-2)
# trades nothing visible for far fewer iterations than scipy's default 1e-5.
_LBFGS_OPTIONS = {"gtol": 1e-3, "maxiter": 200}


def matern52(X1: np.ndarray, X2: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """Unit-variance Matern-5/2 ARD kernel matrix.

    Args:
        X1: First set of points, shape ``(n1, D)``.
        X2: Second set of points, shape ``(n2, D)``.
        lengthscales: Positive lengthscales, shape ``(D,)``.

    Returns:
        ``(1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)`` with ``r = ||(x1 - x2) / lengthscales||``,
        shape ``(n1, n2)``.
    """
    r2 = _scaled_sq_dist(np.asarray(X1, dtype=float), np.asarray(X2, dtype=float), lengthscales)
    return _matern52_from_r2(r2)


def _scaled_sq_dist(X1: np.ndarray, X2: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """Squared ARD distance ``sum_d ((x1_d - x2_d) / ls_d)^2``, (n1, D), (n2, D) -> (n1, n2)."""
    # NOTE(gp): Differences are formed per dimension instead of via |a|^2 + |b|^2 - 2 a.b, whose
    # cancellation loses all accuracy of r near zero (exactly where posterior variances and
    # their gradients are most sensitive). Looping over D keeps memory at (n1, n2).
    inv_ls = 1.0 / np.asarray(lengthscales, dtype=float)  # (D,)
    A = X1 * inv_ls  # (n1, D)
    B = X2 * inv_ls  # (n2, D)
    r2 = np.zeros((A.shape[0], B.shape[0]))  # (n1, n2)
    for d in range(A.shape[1]):
        diff = A[:, d, None] - B[None, :, d]  # (n1, n2)
        r2 += diff * diff
    return r2


def _matern52_from_r2(r2: np.ndarray) -> np.ndarray:
    """Unit-variance Matern-5/2 as a function of the squared scaled distance (any shape)."""
    s5r = np.sqrt(5.0 * r2)
    return (1.0 + s5r + (5.0 / 3.0) * r2) * np.exp(-s5r)


@dataclass(frozen=True)
class GPHyperparams:
    """Hyperparameters of :class:`GPModel`.

    ``signal_var``, ``noise_var`` and ``mean`` are in standardized output units
    (``z = (y - y_mean) / y_std``).

    Example:
        >>> import numpy as np
        >>> h = GPHyperparams(np.array([0.3, 2.0]), signal_var=1.0, noise_var=1e-6, mean=0.0)
        >>> h.log_params().shape
        (4,)

    Attributes:
        lengthscales: Positive ARD lengthscales, shape ``(D,)`` (stored as a read-only copy).
        signal_var: Positive kernel signal variance.
        noise_var: Non-negative observation-noise variance.
        mean: Constant prior mean.
    """

    lengthscales: np.ndarray  # (D,)
    signal_var: float
    noise_var: float
    mean: float

    def __post_init__(self) -> None:
        ls = np.array(self.lengthscales, dtype=float)  # (D,)
        if ls.ndim != 1 or ls.size == 0:
            raise ValueError(f"lengthscales must be a non-empty 1-D array, got shape {ls.shape}.")
        if not np.all(np.isfinite(ls)) or np.any(ls <= 0.0):
            raise ValueError(f"lengthscales must be finite and positive, got {ls}.")
        if not (math.isfinite(self.signal_var) and self.signal_var > 0.0):
            raise ValueError(f"signal_var must be finite and positive, got {self.signal_var}.")
        if not (math.isfinite(self.noise_var) and self.noise_var >= 0.0):
            raise ValueError(f"noise_var must be finite and >= 0, got {self.noise_var}.")
        if not math.isfinite(self.mean):
            raise ValueError(f"mean must be finite, got {self.mean}.")
        ls.flags.writeable = False
        object.__setattr__(self, "lengthscales", ls)
        object.__setattr__(self, "signal_var", float(self.signal_var))
        object.__setattr__(self, "noise_var", float(self.noise_var))
        object.__setattr__(self, "mean", float(self.mean))

    # NOTE(gp): The generated dataclass __eq__/__hash__ would compare/hash the ndarray field,
    # which raises for D > 1; compare values explicitly instead.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GPHyperparams):
            return NotImplemented
        return (
            np.array_equal(self.lengthscales, other.lengthscales)
            and self.signal_var == other.signal_var
            and self.noise_var == other.noise_var
            and self.mean == other.mean
        )

    def __hash__(self) -> int:
        return hash((self.lengthscales.tobytes(), self.signal_var, self.noise_var, self.mean))

    @property
    def dim(self) -> int:
        """Input dimension ``D``."""
        return int(self.lengthscales.shape[0])

    def log_params(self) -> np.ndarray:
        """Packed log-parameters ``[log ls (D), log signal_var, log noise_var]``, shape (D+2,).

        Raises:
            ValueError: If ``noise_var`` is zero (its logarithm is undefined).
        """
        if self.noise_var <= 0.0:
            raise ValueError("noise_var must be positive to be packed into log-parameters.")
        return np.concatenate(
            [np.log(self.lengthscales), [math.log(self.signal_var), math.log(self.noise_var)]]
        )

    @classmethod
    def from_log_params(cls, log_params: np.ndarray, mean: float) -> GPHyperparams:
        """Inverse of :meth:`log_params`.

        Args:
            log_params: Packed log-parameters, shape ``(D + 2,)``.
            mean: Constant mean in standardized units.

        Returns:
            The corresponding hyperparameters.
        """
        theta = np.asarray(log_params, dtype=float)  # (D+2,)
        D = theta.shape[0] - 2
        return cls(
            lengthscales=np.exp(theta[:D]),
            signal_var=math.exp(theta[D]),
            noise_var=math.exp(theta[D + 1]),
            mean=mean,
        )


def _cholesky_jittered(K: np.ndarray, scale: float) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of ``K + jitter * I`` with the smallest jitter that works.

    Args:
        K: Symmetric matrix, shape ``(n, n)``. Not modified.
        scale: Typical diagonal magnitude used to size the jitter.

    Returns:
        ``(L, jitter)`` where ``L`` has shape ``(n, n)`` (upper triangle zeroed) and ``jitter`` is
        ``0.0`` when ``K`` itself factorized.

    Raises:
        np.linalg.LinAlgError: Only if ``K`` is far from positive semi-definite (cannot happen
            for kernel matrices built by this module).
    """
    L, info = lapack.dpotrf(K, lower=1, clean=1, overwrite_a=0)
    if info == 0:
        return L, 0.0
    n = K.shape[0]
    jitter = _JITTER_START_REL * scale
    for _ in range(_JITTER_STEPS):
        Kj = K.copy()  # (n, n)
        Kj[np.diag_indices(n)] += jitter
        L, info = lapack.dpotrf(Kj, lower=1, clean=1, overwrite_a=1)
        if info == 0:
            return L, jitter
        jitter *= 10.0
    raise np.linalg.LinAlgError(
        "Cholesky factorization failed even with a jitter equal to the kernel diagonal; the "
        "covariance matrix is not positive semi-definite."
    )


def _validate_X(X: np.ndarray, name: str, dim: int | None = None) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"{name} must be a 2-D array of shape (n, D) with D >= 1, got {X.shape}.")
    if dim is not None and X.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns, got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(
            f"{name} contains NaN or infinite values; filter non-finite points before calling."
        )
    return X


def _validate_y(y: np.ndarray, n: int) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if y.shape != (n,):
        raise ValueError(
            f"y must be a 1-D array of length {n} (one value per row of X), got {y.shape}."
        )
    if not np.all(np.isfinite(y)):
        raise ValueError(
            "y contains NaN or infinite values; filter non-finite observations before calling."
        )
    return y


def _standardization(y: np.ndarray) -> tuple[float, float]:
    """``(y_mean, y_std)`` with ``y_std = 1`` for n < 2 or a (numerically) constant ``y``."""
    y_mean = float(np.mean(y))
    if y.shape[0] < 2:
        return y_mean, 1.0
    dev = y - y_mean  # (n,)
    # NOTE(gp): Scale before squaring so |y| up to ~1e300 cannot overflow the variance.
    scale = float(np.max(np.abs(dev)))
    if not math.isfinite(scale) or scale == 0.0:
        return y_mean, 1.0
    y_std = scale * float(np.sqrt(np.mean((dev / scale) ** 2)))
    magnitude = max(float(np.max(np.abs(y))), abs(y_mean))
    if not math.isfinite(y_std) or y_std <= _CONSTANT_Y_RTOL * magnitude:
        return y_mean, 1.0
    return y_mean, y_std


def _sq_diffs(X: np.ndarray) -> np.ndarray:
    """Pairwise squared differences per dimension, (n, D) -> (D, n * n)."""
    n, D = X.shape
    diff = X.T[:, :, None] - X.T[:, None, :]  # (D, n, n)
    sq: np.ndarray = (diff * diff).reshape(D, n * n)  # (D, n * n)
    return sq


def log_prior(log_params: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative log-prior (up to a constant) of the packed log-parameters and its gradient.

    The terms are: ``w * (ls_d^2 + ls_d^-2)`` per lengthscale (``w`` =
    :data:`LENGTHSCALE_PRIOR_WEIGHT`, smallest at ``ls_d = 1``), a Gamma(2, 1) penalty on
    ``signal_var`` and a Gamma(1.1, 30) penalty on ``noise_var`` (written on the variances
    themselves, as in Optuna). The N(0, :data:`MEAN_PRIOR_VAR`) prior on the constant
    mean is handled by :func:`neg_log_marginal_likelihood` because the mean is not packed.

    Args:
        log_params: ``[log ls (D), log signal_var, log noise_var]``, shape ``(D + 2,)``.

    Returns:
        ``(value, grad)`` with ``grad`` of shape ``(D + 2,)``.
    """
    theta = np.asarray(log_params, dtype=float)  # (D+2,)
    D = theta.shape[0] - 2
    up = np.exp(np.clip(2.0 * theta[:D], -700.0, 700.0))  # (D,) ls^2
    down = np.exp(np.clip(-2.0 * theta[:D], -700.0, 700.0))  # (D,) ls^-2
    s2 = math.exp(theta[D])
    noise = math.exp(theta[D + 1])
    a_s, b_s = _SIGNAL_GAMMA
    a_n, b_n = _NOISE_GAMMA
    value = (
        LENGTHSCALE_PRIOR_WEIGHT * float(np.sum(up + down))
        - (a_s - 1.0) * theta[D]
        + b_s * s2
        - (a_n - 1.0) * theta[D + 1]
        + b_n * noise
    )
    grad = np.empty(D + 2)  # (D+2,)
    grad[:D] = 2.0 * LENGTHSCALE_PRIOR_WEIGHT * (up - down)
    grad[D] = -(a_s - 1.0) + b_s * s2
    grad[D + 1] = -(a_n - 1.0) + b_n * noise
    return float(value), grad


def _nll_core(
    theta: np.ndarray,
    sq_diffs: np.ndarray,
    z: np.ndarray,
    mean: float | None,
    prior: bool,
) -> tuple[float, np.ndarray, float]:
    """NLL (+ optional prior), its gradient and the mean used.

    Args:
        theta: Packed log-parameters, shape ``(D + 2,)``.
        sq_diffs: Output of :func:`_sq_diffs`, shape ``(D, n * n)``.
        z: Standardized targets, shape ``(n,)``.
        mean: Fixed constant mean, or ``None`` to profile it out.
        prior: Whether to add :func:`log_prior` and the mean prior.

    Returns:
        ``(value, grad (D+2,), mean)``.
    """
    D = sq_diffs.shape[0]
    n = z.shape[0]
    inv_ls2 = np.exp(-2.0 * theta[:D])  # (D,)
    s2 = math.exp(theta[D])
    noise = math.exp(theta[D + 1])

    r2 = (inv_ls2 @ sq_diffs).reshape(n, n)  # (n, n)
    s5r = np.sqrt(5.0 * r2)  # (n, n)
    e = np.exp(-s5r)  # (n, n)
    a = (1.0 + s5r) * e  # (n, n)
    Kc = a + (5.0 / 3.0) * r2 * e  # (n, n), unit-variance Matern-5/2
    K = s2 * Kc  # (n, n)
    diag = np.diag_indices(n)
    K[diag] += noise
    L, _ = _cholesky_jittered(K, s2 + noise)

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
        denom = float(Kinv_1.sum()) + (1.0 / MEAN_PRIOR_VAR if prior else 0.0)
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

    if prior:
        p_val, p_grad = log_prior(theta)
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
    X = _validate_X(X, "X")
    z = _validate_y(y, X.shape[0])
    theta = np.asarray(log_params, dtype=float)
    if theta.shape != (X.shape[1] + 2,):
        raise ValueError(
            f"log_params must have shape ({X.shape[1] + 2},) for D={X.shape[1]}, "
            f"got {theta.shape}."
        )
    sq = _sq_diffs(X) if sq_diffs is None else sq_diffs
    value, grad, _ = _nll_core(theta, sq, z, mean, prior)
    return value, grad


class GPModel:
    """Exact GP posterior with fixed hyperparameters and a cached Cholesky factor.

    Example:
        >>> import numpy as np
        >>> X = np.array([[0.1], [0.5], [0.9]])
        >>> y = np.array([1.0, -1.0, 0.5])
        >>> hyper = GPHyperparams(np.array([0.3]), signal_var=1.0, noise_var=1e-6, mean=0.0)
        >>> model = GPModel(X, y, hyper)
        >>> mean, var = model.predict(np.array([[0.5]]))
        >>> bool(abs(mean[0] + 1.0) < 1e-3 and var[0] < 1e-3)
        True

    Args:
        X: Training inputs, shape ``(n, D)``, finite.
        y: Training targets in original units, shape ``(n,)``, finite.
        hyper: Hyperparameters (``signal_var``, ``noise_var``, ``mean`` in standardized units).
        y_mean: Standardization offset. If ``None`` (default), ``mean(y)``.
        y_std: Standardization scale. If ``None`` (default), ``std(y)``, or 1 when ``n < 2`` or
            ``y`` is constant. Pass both to reuse a parent model's standardization.

    Attributes:
        X: Training inputs, shape ``(n, D)``.
        y: Training targets in original units, shape ``(n,)``.
        y_mean: Standardization offset.
        y_std: Standardization scale (> 0).
        hyper: The hyperparameters.
    """

    X: np.ndarray  # (n, D)
    y: np.ndarray  # (n,)
    y_mean: float
    y_std: float
    hyper: GPHyperparams
    _L: np.ndarray  # (n, n) lower Cholesky factor of K + jitter * I
    _w: np.ndarray  # (n,) L^-1 (z - mean)
    _alpha: np.ndarray  # (n,) K^-1 (z - mean)
    _jitter: float

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        hyper: GPHyperparams,
        *,
        y_mean: float | None = None,
        y_std: float | None = None,
    ) -> None:
        X = _validate_X(X, "X")
        if X.shape[0] == 0:
            raise ValueError("GPModel needs at least one observation (n >= 1), got n = 0.")
        y = _validate_y(y, X.shape[0])
        if hyper.dim != X.shape[1]:
            raise ValueError(f"hyper has {hyper.dim} lengthscales but X has {X.shape[1]} columns.")
        mu, sd = _standardization(y)
        if y_mean is not None:
            mu = float(y_mean)
        if y_std is not None:
            sd = float(y_std)
        if not math.isfinite(mu):
            raise ValueError(f"y_mean must be finite, got {y_mean}.")
        if not (math.isfinite(sd) and sd > 0.0):
            raise ValueError(f"y_std must be finite and positive, got {y_std}.")

        s2 = hyper.signal_var
        K = s2 * matern52(X, X, hyper.lengthscales)  # (n, n)
        K[np.diag_indices(X.shape[0])] += hyper.noise_var
        L, jitter = _cholesky_jittered(K, s2 + hyper.noise_var)
        resid = (y - mu) / sd - hyper.mean  # (n,)
        w = solve_triangular(L, resid, lower=True, check_finite=False)  # (n,)
        self._set_state(X, y, mu, sd, hyper, L, w, jitter)

    def _set_state(
        self,
        X: np.ndarray,
        y: np.ndarray,
        y_mean: float,
        y_std: float,
        hyper: GPHyperparams,
        L: np.ndarray,
        w: np.ndarray,
        jitter: float,
    ) -> None:
        self.X = X
        self.y = y
        self.y_mean = y_mean
        self.y_std = y_std
        self.hyper = hyper
        self._L = L
        self._w = w
        self._alpha = solve_triangular(L, w, lower=True, trans="T", check_finite=False)
        self._jitter = jitter

    @property
    def n(self) -> int:
        """Number of training points."""
        return int(self.X.shape[0])

    @property
    def dim(self) -> int:
        """Input dimension ``D``."""
        return int(self.X.shape[1])

    def _cross(self, Xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cross-covariance (m, n) and V = L^-1 K(X, Xq) (n, m), standardized units."""
        Kq = self.hyper.signal_var * matern52(Xq, self.X, self.hyper.lengthscales)  # (m, n)
        V = solve_triangular(self._L, Kq.T, lower=True, check_finite=False)  # (n, m)
        return Kq, V

    def _latent_var(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clipped latent variance (m,) in standardized units and the clipped mask (m,)."""
        s2 = self.hyper.signal_var
        var = s2 - np.einsum("nm,nm->m", V, V)  # (m,)
        floor = _VAR_FLOOR_REL * s2
        clipped = var < floor  # (m,)
        return np.where(clipped, floor, var), clipped

    @overload
    def predict(
        self, Xq: np.ndarray, return_grad: Literal[False] = ...
    ) -> tuple[np.ndarray, np.ndarray]: ...

    @overload
    def predict(
        self, Xq: np.ndarray, return_grad: Literal[True]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...

    @overload
    def predict(self, Xq: np.ndarray, return_grad: bool) -> tuple[np.ndarray, ...]: ...

    def predict(self, Xq: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        """Posterior of the latent ``f`` (no observation noise) in original ``y`` units.

        Args:
            Xq: Query points, shape ``(m, D)``, finite.
            return_grad: If true, also return analytic gradients w.r.t. ``Xq``.

        Returns:
            ``(mean (m,), var (m,))`` or, with ``return_grad``,
            ``(mean (m,), var (m,), dmean (m, D), dvar (m, D))``. ``var`` is clipped at
            ``1e-12 * signal_var * y_std^2`` (never negative or NaN); where it is clipped,
            ``dvar`` is zero.
        """
        Xq = _validate_X(Xq, "Xq", self.dim)
        Kq, V = self._cross(Xq)  # (m, n), (n, m)
        mean_z = self.hyper.mean + Kq @ self._alpha  # (m,)
        var_z, clipped = self._latent_var(V)  # (m,)
        mean = self.y_mean + self.y_std * mean_z  # (m,)
        var = np.maximum(self.y_std**2 * var_z, np.finfo(np.float64).tiny)  # (m,)
        if not return_grad:
            return mean, var

        # NOTE(gp): d k(x, x_i) / d x_d = s2 * G(r) * (x_d - x_id) / ls_d^2 with
        # G(r) = -5/3 (1 + sqrt5 r) exp(-sqrt5 r), finite (and the derivative zero) at r = 0, so
        # gradients at training points are well defined. sum_i W_qi (x_qd - x_id) is formed as
        # x_qd * sum_i W_qi - (W @ X)_qd to avoid an (m, n, D) tensor.
        ls = self.hyper.lengthscales
        r2 = _scaled_sq_dist(Xq, self.X, ls)  # (m, n)
        s5r = np.sqrt(5.0 * r2)
        G = (-5.0 / 3.0) * self.hyper.signal_var * (1.0 + s5r) * np.exp(-s5r)  # (m, n)
        B = solve_triangular(self._L, V, lower=True, trans="T", check_finite=False)  # (n, m)
        Wm = G * self._alpha[None, :]  # (m, n)
        Wv = -2.0 * G * B.T  # (m, n)
        inv_ls2 = 1.0 / (ls * ls)  # (D,)
        dmean_z = (Xq * Wm.sum(axis=1)[:, None] - Wm @ self.X) * inv_ls2  # (m, D)
        dvar_z = (Xq * Wv.sum(axis=1)[:, None] - Wv @ self.X) * inv_ls2  # (m, D)
        dvar_z[clipped] = 0.0
        return mean, var, self.y_std * dmean_z, self.y_std**2 * dvar_z

    def posterior_cov(self, Xq: np.ndarray) -> np.ndarray:
        """Joint latent posterior covariance in original units.

        Args:
            Xq: Query points, shape ``(m, D)``, finite.

        Returns:
            Symmetric covariance matrix, shape ``(m, m)``; its diagonal equals the ``var``
            returned by :meth:`predict`.
        """
        Xq = _validate_X(Xq, "Xq", self.dim)
        _, V = self._cross(Xq)  # (n, m)
        prior_cov = self.hyper.signal_var * matern52(Xq, Xq, self.hyper.lengthscales)  # (m, m)
        prior_cov -= V.T @ V
        cov: np.ndarray = 0.5 * (prior_cov + prior_cov.T)  # (m, m)
        var_z, _ = self._latent_var(V)  # (m,)
        cov[np.diag_indices(Xq.shape[0])] = var_z
        cov *= self.y_std**2
        cov[np.diag_indices(Xq.shape[0])] = np.maximum(np.diag(cov), np.finfo(np.float64).tiny)
        return cov

    def condition_on(self, x: np.ndarray, y: float) -> GPModel:
        """Fantasy model with one more observation.

        The new model keeps the same hyperparameters and standardization constants
        (``y_mean``, ``y_std``) and extends the Cholesky factor by a bordered update in
        ``O(n^2)`` instead of refactorizing.

        Args:
            x: New input, shape ``(D,)``, finite.
            y: New observation in original units, finite.

        Returns:
            A new :class:`GPModel` on ``n + 1`` points; ``self`` is not modified.
        """
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"x must have shape ({self.dim},), got {x.shape}.")
        if not np.all(np.isfinite(x)):
            raise ValueError("x contains NaN or infinite values.")
        y = float(y)
        if not math.isfinite(y):
            raise ValueError(f"y must be finite, got {y}.")
        hyper = self.hyper
        n = self.n
        k = hyper.signal_var * matern52(x[None, :], self.X, hyper.lengthscales)[0]  # (n,)
        l12 = solve_triangular(self._L, k, lower=True, check_finite=False)  # (n,)
        diag = hyper.signal_var + hyper.noise_var + self._jitter
        # NOTE(gp): The Schur complement equals (noise + jitter) + latent posterior variance at x,
        # so in exact arithmetic it is >= noise + jitter; rounding can push it below (even
        # negative) for x on top of training points, hence the floor. A zero floor (noise = 0 and
        # no jitter) falls back to the relative variance floor.
        schur = diag - float(l12 @ l12)
        schur = max(schur, hyper.noise_var + self._jitter, _VAR_FLOOR_REL * hyper.signal_var)
        l22 = math.sqrt(schur)
        L = np.zeros((n + 1, n + 1))  # (n+1, n+1)
        L[:n, :n] = self._L
        L[n, :n] = l12
        L[n, n] = l22
        r_new = (y - self.y_mean) / self.y_std - hyper.mean
        w = np.empty(n + 1)  # (n+1,)
        w[:n] = self._w
        w[n] = (r_new - float(l12 @ self._w)) / l22
        model = GPModel.__new__(GPModel)
        model._set_state(
            np.vstack([self.X, x[None, :]]),
            np.append(self.y, y),
            self.y_mean,
            self.y_std,
            hyper,
            L,
            w,
            self._jitter,
        )
        return model


def _bounds(D: int, min_noise_var: float) -> np.ndarray:
    """L-BFGS-B bounds of the packed log-parameters, shape (D+2, 2)."""
    lo = np.empty(D + 2)
    hi = np.empty(D + 2)
    lo[:D], hi[:D] = math.log(LENGTHSCALE_BOUNDS[0]), math.log(LENGTHSCALE_BOUNDS[1])
    lo[D], hi[D] = math.log(SIGNAL_VAR_BOUNDS[0]), math.log(SIGNAL_VAR_BOUNDS[1])
    lo[D + 1], hi[D + 1] = math.log(min_noise_var), math.log(max(NOISE_VAR_MAX, min_noise_var))
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


def fit_gp(
    X: np.ndarray,
    y: np.ndarray,
    *,
    rng: np.random.Generator,
    n_restarts: int = 3,
    min_noise_var: float = 1e-6,
    warm_start: GPHyperparams | None = None,
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
        warm_start: Previous hyperparameters (e.g. from the last suggestion) to start from.
            Must have ``D`` lengthscales.

    Returns:
        The fitted :class:`GPModel`.

    Raises:
        ValueError: On non-finite or mis-shaped inputs, ``n == 0``, ``n_restarts < 0``,
            a non-positive ``min_noise_var`` or a warm start of the wrong dimension.
    """
    X = _validate_X(X, "X")
    n, D = X.shape
    if n == 0:
        raise ValueError("fit_gp needs at least one observation (n >= 1), got n = 0.")
    y = _validate_y(y, n)
    if isinstance(n_restarts, bool) or not isinstance(n_restarts, (int, np.integer)):
        raise ValueError(f"n_restarts must be an integer, got {n_restarts!r}.")
    if n_restarts < 0:
        raise ValueError(f"n_restarts must be >= 0, got {n_restarts}.")
    if not (math.isfinite(min_noise_var) and min_noise_var > 0.0):
        raise ValueError(f"min_noise_var must be finite and positive, got {min_noise_var}.")
    if warm_start is not None and warm_start.dim != D:
        raise ValueError(f"warm_start has {warm_start.dim} lengthscales but X has {D} columns.")

    y_mean, y_std = _standardization(y)
    z = (y - y_mean) / y_std  # (n,)
    sq = _sq_diffs(X)  # (D, n * n), shared by every NLL evaluation
    bounds = _bounds(D, min_noise_var)  # (D+2, 2)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad, _ = _nll_core(theta, sq, z, None, True)
        if not (math.isfinite(value) and np.all(np.isfinite(grad))):
            # NOTE(gp): Defensive only: a huge finite value makes L-BFGS-B backtrack instead of
            # aborting on NaN.
            return 1e300, np.zeros_like(theta)
        return value, grad

    best_theta: np.ndarray | None = None
    best_value = math.inf
    for x0 in _initial_points(D, bounds, rng, int(n_restarts), warm_start):
        res = scipy.optimize.minimize(
            objective, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=_LBFGS_OPTIONS
        )
        theta = np.clip(np.asarray(res.x, dtype=float), bounds[:, 0], bounds[:, 1])
        value = float(res.fun)
        if math.isfinite(value) and value < best_value:
            best_value, best_theta = value, theta
    if best_theta is None:  # pragma: no cover - objective is finite at every start
        best_theta = _initial_points(D, bounds, rng, 0, None)[0]

    _, _, mean = _nll_core(best_theta, sq, z, None, True)
    hyper = GPHyperparams.from_log_params(best_theta, mean)
    return GPModel(X, y, hyper, y_mean=y_mean, y_std=y_std)
