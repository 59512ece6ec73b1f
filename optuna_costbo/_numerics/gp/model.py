"""Gaussian-process posterior for minimization-based Bayesian optimization on ``[0, 1]^D``.

The model puts a GP prior on a latent function ``f`` and observes ``y = f + noise``, with

* a Matern-5/2 ARD kernel with signal variance (:mod:`.kernel`)
  ``k(x, x') = s2 * (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)``, ``r = ||(x - x') / lengthscales||``;
* a constant mean ``mean``;
* i.i.d. Gaussian observation noise with variance ``noise_var``;
* outputs standardized as ``z = (y - y_mean) / y_std`` before fitting. ``signal_var``,
  ``noise_var`` and ``mean`` live in these standardized units; :meth:`GPModel.predict` and
  :meth:`GPModel.posterior_cov` report the latent ``f`` (without noise) in original units.

This module holds the hyperparameters and the posterior with fixed hyperparameters; they are
fitted in :mod:`.fit` under the priors of :mod:`.prior`.

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

import math
from typing import Literal
from typing import overload

import numpy as np
from scipy.linalg import lapack
from scipy.linalg import solve_triangular

from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.kernel import matern52
from optuna_costbo._numerics.gp.kernel import matern52_parts
from optuna_costbo._numerics.gp.kernel import scaled_sq_dist


__all__ = ["GPModel", "cholesky_jittered", "standardization", "validate_X", "validate_y"]

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
_TINY = float(np.finfo(np.float64).tiny)


def cholesky_jittered(K: np.ndarray, scale: float) -> tuple[np.ndarray, float]:
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


def validate_X(X: np.ndarray, name: str, dim: int | None = None) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"{name} must be a 2-D array of shape (n, D) with D >= 1, got {X.shape}.")
    if dim is not None and X.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns, got shape {X.shape}.")
    if not np.isfinite(X).all():
        raise ValueError(
            f"{name} contains NaN or infinite values; filter non-finite points before calling."
        )
    return X


def validate_y(y: np.ndarray, n: int) -> np.ndarray:
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


def standardization(y: np.ndarray) -> tuple[float, float]:
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
        extra_noise: Each observation's noise variance beyond ``noise_var``, in original units
            squared, shape ``(n,)``, >= 0 (heteroscedastic observations, such as a stopped
            trial's measured final value). ``None`` (default): none.

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
    _loo: np.ndarray | None  # (n,) loo_scores, once asked

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        hyper: GPHyperparams,
        *,
        y_mean: float | None = None,
        y_std: float | None = None,
        extra_noise: np.ndarray | None = None,
    ) -> None:
        X = validate_X(X, "X")
        if X.shape[0] == 0:
            raise ValueError("GPModel needs at least one observation (n >= 1), got n = 0.")
        y = validate_y(y, X.shape[0])
        if hyper.dim != X.shape[1]:
            raise ValueError(f"hyper has {hyper.dim} lengthscales but X has {X.shape[1]} columns.")
        mu, sd = standardization(y)
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
        if extra_noise is not None:
            extra = np.asarray(extra_noise, dtype=float)  # (n,)
            if extra.shape != y.shape or not np.all(np.isfinite(extra) & (extra >= 0.0)):
                raise ValueError(
                    f"extra_noise must be {y.shape[0]} finite variances >= 0, got {extra_noise!r}"
                )
            K[np.diag_indices(X.shape[0])] += extra / sd**2
        L, jitter = cholesky_jittered(K, s2 + hyper.noise_var)
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
        self._loo = None

    @property
    def n(self) -> int:
        """Number of training points."""
        return int(self.X.shape[0])

    @property
    def dim(self) -> int:
        """Input dimension ``D``."""
        return int(self.X.shape[1])

    def _solve(self, B: np.ndarray, trans: int = 0) -> np.ndarray:
        """L^-1 B (``trans=0``) or L^-T B (``trans=1``) for B (n, m), by LAPACK's trtrs (what
        ``scipy.linalg.solve_triangular`` calls, without its per-call checks)."""
        out, info = lapack.dtrtrs(self._L, B, lower=1, trans=trans)  # (n, m)
        if info != 0:  # pragma: no cover - a Cholesky factor has a positive diagonal
            raise np.linalg.LinAlgError(f"triangular solve failed (info={info}).")
        result: np.ndarray = out
        return result

    def _kernel_to(self, Xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cross-covariance K(Xq, X) (m, n) in standardized units and the kernel's derivative
        factor ``a`` (m, n) of :func:`.kernel.matern52_parts`."""
        r2 = scaled_sq_dist(Xq, self.X, self.hyper.lengthscales)  # (m, n)
        k, a = matern52_parts(r2)  # (m, n) each
        k *= self.hyper.signal_var
        return k, a

    def _cross(self, Xq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cross-covariance (m, n), V = L^-1 K(X, Xq) (n, m) in standardized units, and the
        kernel's derivative factor ``a`` (m, n) of :func:`.kernel.matern52_parts`."""
        Kq, a = self._kernel_to(Xq)  # (m, n) each
        return Kq, self._solve(Kq.T), a

    def _mean_grad(self, Xq: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Gradient of the standardized posterior mean at Xq (m, D), from the factor ``a``."""
        # NOTE(gp): d k(x, x_i) / d x_d = s2 * G(r) * (x_d - x_id) / ls_d^2 with
        # G(r) = -5/3 (1 + sqrt5 r) exp(-sqrt5 r), finite (and the derivative zero) at r = 0,
        # so gradients at training points are well defined. sum_i W_qi (x_qd - x_id) is formed
        # as x_qd * sum_i W_qi - (W @ X)_qd to avoid an (m, n, D) tensor.
        inv_ls2 = 1.0 / (self.hyper.lengthscales * self.hyper.lengthscales)  # (D,)
        Wm = ((-5.0 / 3.0) * self.hyper.signal_var) * a * self._alpha[None, :]  # (m, n)
        out: np.ndarray = (Xq * Wm.sum(axis=1)[:, None] - Wm @ self.X) * inv_ls2  # (m, D)
        return out

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
        Xq = validate_X(Xq, "Xq", self.dim)
        Kq, V, a = self._cross(Xq)  # (m, n), (n, m), (m, n)
        mean_z = self.hyper.mean + Kq @ self._alpha  # (m,)
        var_z, clipped = self._latent_var(V)  # (m,)
        mean = self.y_mean + self.y_std * mean_z  # (m,)
        var = np.maximum(self.y_std**2 * var_z, _TINY)  # (m,)
        if not return_grad:
            return mean, var
        # The mean's and the variance's gradients in one pass (see _mean_grad): with
        # W = G alpha^T for the mean and W = -2 G (K^-1 k)^T for the variance.
        G = (-5.0 / 3.0) * self.hyper.signal_var * a  # (m, n)
        W = np.empty((2, *G.shape))  # (2, m, n)
        np.multiply(G, self._alpha[None, :], out=W[0])
        np.multiply(-2.0 * G, self._solve(V, trans=1).T, out=W[1])
        inv_ls2 = 1.0 / (self.hyper.lengthscales * self.hyper.lengthscales)  # (D,)
        d = (Xq[None] * W.sum(axis=2)[..., None] - W @ self.X) * inv_ls2  # (2, m, D)
        d[1][clipped] = 0.0
        return mean, var, self.y_std * d[0], self.y_std**2 * d[1]

    @overload
    def predict_mean(self, Xq: np.ndarray, return_grad: Literal[False] = ...) -> np.ndarray: ...

    @overload
    def predict_mean(
        self, Xq: np.ndarray, return_grad: Literal[True]
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def predict_mean(
        self, Xq: np.ndarray, return_grad: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The posterior mean of :meth:`predict` alone, in original units: (m,), and with
        ``return_grad`` its gradient (m, D).

        NOTE(gp): no triangular solve (the mean is K(Xq, X) alpha): O(m n D) instead of the
        variance's O(m n^2), which is most of a prediction past a hundred observations.
        """
        Xq = validate_X(Xq, "Xq", self.dim)
        Kq, a = self._kernel_to(Xq)  # (m, n) each
        mean: np.ndarray = self.y_mean + self.y_std * (self.hyper.mean + Kq @ self._alpha)  # (m,)
        if not return_grad:
            return mean
        return mean, self.y_std * self._mean_grad(Xq, a)

    def loo_scores(self) -> np.ndarray:
        """Leave-one-out standardized errors of the training values, (n,):
        ``(y_i - m_i) / s_i`` with ``m_i``, ``s_i^2`` the predictive mean and variance (noise
        included) of ``y_i`` given the others, at these hyperparameters, in closed form:
        ``alpha_i / sqrt([K^-1]_ii)`` (Rasmussen and Williams, 2006, eq. 5.12). For a
        calibrated model they are about standard normal. O(n^3) once per model: kept, since
        one suggestion's hard budget asks twice (the models, then the proposal's check)."""
        if self._loo is None:
            L_inv = self._solve(np.eye(self.n))  # (n, n) L^-1
            diag = np.einsum("ij,ij->j", L_inv, L_inv)  # (n,) the diagonal of K^-1
            self._loo = self._alpha / np.sqrt(diag)
        return self._loo

    def posterior_cov(self, Xq: np.ndarray) -> np.ndarray:
        """Joint latent posterior covariance in original units.

        Args:
            Xq: Query points, shape ``(m, D)``, finite.

        Returns:
            Symmetric covariance matrix, shape ``(m, m)``; its diagonal equals the ``var``
            returned by :meth:`predict`.
        """
        Xq = validate_X(Xq, "Xq", self.dim)
        _, V, _ = self._cross(Xq)  # (n, m)
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
        l12 = self._solve(k)  # (n,)
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
