"""GP posterior with fixed hyperparameters on ``[0, 1]^D``: Matern-5/2 ARD kernel, constant mean,
Gaussian noise, outputs standardized; predictions are of the latent ``f`` in original units."""

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


# NOTE(gp): latent variances are clipped at this fraction of the signal variance: s2 - k^T K^-1 k
# cancels near training points and may go slightly negative.
_VAR_FLOOR_REL = 1e-12
# NOTE(gp): jitter for factorizations that fail: 1e-10 * (s2 + noise), times 10 per retry; the
# last equals the diagonal, which makes any symmetric PSD matrix positive definite.
_JITTER_START_REL = 1e-10
_JITTER_STEPS = 11
# NOTE(gp): a standard deviation of y below this relative size is rounding noise of a constant.
_CONSTANT_Y_RTOL = 64.0 * float(np.finfo(np.float64).eps)
_TINY = float(np.finfo(np.float64).tiny)


def cholesky_jittered(K: np.ndarray, scale: float) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor (n, n) of K (n, n) + jitter * I with the smallest jitter that works
    (sized by ``scale``, the typical diagonal), and that jitter (0.0 if K itself factorized)."""
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
    # NOTE(gp): scaled before squaring, so |y| up to ~1e300 cannot overflow the variance.
    scale = float(np.max(np.abs(dev)))
    if not math.isfinite(scale) or scale == 0.0:
        return y_mean, 1.0
    y_std = scale * float(np.sqrt(np.mean((dev / scale) ** 2)))
    magnitude = max(float(np.max(np.abs(y))), abs(y_mean))
    if not math.isfinite(y_std) or y_std <= _CONSTANT_Y_RTOL * magnitude:
        return y_mean, 1.0
    return y_mean, y_std


class GPModel:
    """Exact GP posterior on X (n, D), y (n,) with a cached Cholesky factor; ``y_mean`` and
    ``y_std`` default to y's own standardization (pass a parent model's to share it)."""

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
        return int(self.X.shape[0])

    @property
    def dim(self) -> int:
        return int(self.X.shape[1])

    def bounds(self) -> tuple[float, float]:
        """Upper bounds on the posterior mean and variance anywhere, in y units: the mean is
        within sqrt(signal_var) ||L^-1 resid|| of the prior's (Cauchy-Schwarz in the kernel's
        RKHS), the variance within the prior's signal variance."""
        s2 = self.hyper.signal_var
        spread = math.sqrt(s2) * float(np.linalg.norm(self._w))
        return self.y_mean + self.y_std * (self.hyper.mean + spread), s2 * self.y_std**2

    def _solve(self, B: np.ndarray, trans: int = 0) -> np.ndarray:
        """L^-1 B (``trans=0``) or L^-T B (``trans=1``) for B (n, m), by LAPACK's trtrs."""
        out, info = lapack.dtrtrs(self._L, B, lower=1, trans=trans)  # (n, m)
        if info != 0:  # pragma: no cover - a Cholesky factor has a positive diagonal
            raise np.linalg.LinAlgError(f"triangular solve failed (info={info}).")
        result: np.ndarray = out
        return result

    def _kernel_to(self, Xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """K(Xq, X) (m, n) in standardized units and the factor ``a`` (m, n) of matern52_parts."""
        r2 = scaled_sq_dist(Xq, self.X, self.hyper.lengthscales)  # (m, n)
        k, a = matern52_parts(r2)  # (m, n) each
        k *= self.hyper.signal_var
        return k, a

    def _cross(self, Xq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """K(Xq, X) (m, n), V = L^-1 K(X, Xq) (n, m) and the factor ``a`` (m, n)."""
        Kq, a = self._kernel_to(Xq)  # (m, n) each
        return Kq, self._solve(Kq.T), a

    def _mean_grad(self, Xq: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Gradient (m, D) of the standardized posterior mean at Xq (m, D)."""
        # NOTE(gp): d k(x, x_i) / d x_d = s2 G(r) (x_d - x_id) / ls_d^2, G = -5/3 a, finite at
        # r = 0; sum_i W_qi (x_qd - x_id) = x_qd sum_i W_qi - (W @ X)_qd, no (m, n, D) tensor.
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
        """Latent posterior mean (m,) and variance (m,) at Xq (m, D) in original units, and with
        ``return_grad`` their gradients (m, D); ``dvar`` is 0 where the variance is clipped."""
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
        """:meth:`predict`'s mean alone (m,), and its gradient (m, D): no triangular solve, so
        O(m n D) instead of the variance's O(m n^2)."""
        Xq = validate_X(Xq, "Xq", self.dim)
        Kq, a = self._kernel_to(Xq)  # (m, n) each
        mean: np.ndarray = self.y_mean + self.y_std * (self.hyper.mean + Kq @ self._alpha)  # (m,)
        if not return_grad:
            return mean
        return mean, self.y_std * self._mean_grad(Xq, a)

    def loo_scores(self) -> np.ndarray:
        """Leave-one-out standardized errors (n,), ``alpha_i / sqrt([K^-1]_ii)`` (Rasmussen and
        Williams 2006, eq. 5.12); O(n^3), computed once per model."""
        if self._loo is None:
            L_inv = self._solve(np.eye(self.n))  # (n, n) L^-1
            diag = np.einsum("ij,ij->j", L_inv, L_inv)  # (n,) the diagonal of K^-1
            self._loo = self._alpha / np.sqrt(diag)
        return self._loo

    def posterior_cov(self, Xq: np.ndarray) -> np.ndarray:
        """Joint latent posterior covariance (m, m) at Xq (m, D); its diagonal is predict's var."""
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
        """A new model with one more observation (x (D,), y), same hyperparameters and
        standardization, by a bordered Cholesky update in O(n^2)."""
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
        # NOTE(gp): the Schur complement is noise + jitter + the latent variance at x; rounding
        # can push it below (x on a training point), hence the floors.
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
        X, ys = np.vstack([self.X, x[None, :]]), np.append(self.y, y)  # (n+1, D), (n+1,)
        model._set_state(X, ys, self.y_mean, self.y_std, hyper, L, w, self._jitter)
        return model


def with_pending(
    model: GPModel, X_running: np.ndarray | None, y_running: np.ndarray | None = None
) -> GPModel:
    """``model`` conditioned on the running trials' points (r, D) at their reported finals
    (``y_running``, (r,)) where finite, else at its own mean: a kriging believer, so parallel
    workers do not propose the same point."""
    if X_running is not None:
        for i, x_r in enumerate(X_running):
            told = np.nan if y_running is None else float(y_running[i])
            value = told if np.isfinite(told) else float(model.predict(x_r[None, :])[0][0])
            model = model.condition_on(x_r, value)
    return model
