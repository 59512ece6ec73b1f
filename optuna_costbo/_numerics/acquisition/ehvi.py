"""Exact EHVI of independent Gaussian objectives (minimized) over the non-dominated boxes,
``sum_b prod_j s_j [h(zu_bj) - h(zl_bj)]`` with EI's h, in log space (Yang et al., JOGO 2019)."""

from __future__ import annotations

from collections.abc import Sequence
import math

import numpy as np
from scipy.special import erf
from scipy.special import log_ndtr
from scipy.special import logsumexp

from optuna_costbo._numerics.acquisition.ei import Feasible
from optuna_costbo._numerics.acquisition.ei import LogCostModel
from optuna_costbo._numerics.acquisition.ei import PosteriorModel
from optuna_costbo._numerics.acquisition.ei import log1mexp
from optuna_costbo._numerics.acquisition.ei import log_h
from optuna_costbo._numerics.pareto import non_dominated_boxes
from optuna_costbo._numerics.pareto import reference_point


# NOTE(ehvi): the std floor is the square root of ei.py's variance floor; z is clipped so
# that z^2 stays finite; the (points, boxes, objectives) arrays are formed in chunks.
_MIN_STD = 1e-50
_Z_MAX = 1e150
_CHUNK_ENTRIES = 1 << 22
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _check(
    mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Float arrays mean (n, m), std (n, m) floored, lower (B, m), upper (B, m), checked."""
    mean = np.asarray(mean, dtype=float)
    std = np.asarray(std, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    if mean.ndim != 2 or std.shape != mean.shape:
        raise ValueError(
            f"mean and std must be 2-D arrays (n, m) of one shape, got {mean.shape}, {std.shape}"
        )
    m = mean.shape[1]
    if lower.ndim != 2 or lower.shape[1] != m or upper.shape != lower.shape:
        raise ValueError(
            f"lower and upper must be (B, {m}) arrays of one shape, got {lower.shape}, "
            f"{upper.shape}"
        )
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std >= 0.0)):
        raise ValueError("mean must be finite and std finite and >= 0")
    if not (np.all(np.isfinite(upper)) and np.all(lower < upper)):
        raise ValueError("upper must be finite and every box must have lower < upper")
    return mean, np.maximum(std, _MIN_STD), lower, upper


def _chunks(n: int, per_point: int) -> range:
    """Starts of chunks of points with at most about ``_CHUNK_ENTRIES`` entries each."""
    return range(0, n, max(1, _CHUNK_ENTRIES // max(1, per_point)))


def _log_terms(
    mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log T``, ``zl`` and ``zu``, each (n, B, m), ``T = s (h(zu) - h(zl))`` by log1mexp."""
    s = std[:, None, :]  # (n, 1, m)
    zu = np.clip((upper[None] - mean[:, None, :]) / s, -_Z_MAX, _Z_MAX)  # (n, B, m)
    zl = np.clip((lower[None] - mean[:, None, :]) / s, -np.inf, _Z_MAX)  # (n, B, m)
    log_hu = log_h(zu.ravel()).reshape(zu.shape)
    log_hl = log_h(zl.ravel()).reshape(zl.shape)
    log_t = np.log(s) + log_hu + log1mexp(np.minimum(log_hl - log_hu, 0.0))  # (n, B, m)
    return log_t, zl, zu


def log_ehvi(
    mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """log EHVI (n,) of means and stds (n, m) over boxes ``[lower, upper]`` (B, m) (lower may
    be -inf), finite everywhere; accurate to ~1e-12 unless a box is far narrower than the std."""
    mean, std, lower, upper = _check(mean, std, lower, upper)
    n, m = mean.shape
    out = np.empty(n)  # (n,)
    step = _chunks(n, len(lower) * m).step
    for start in range(0, n, step):
        sl = slice(start, start + step)
        log_t = _log_terms(mean[sl], std[sl], lower, upper)[0]  # (c, B, m)
        out[sl] = logsumexp(log_t.sum(axis=2), axis=1)
    return out


def _log_dPhi(zl: np.ndarray, zu: np.ndarray) -> np.ndarray:
    """``log(Phi(zu) - Phi(zl))`` for zl < zu, without cancellation: (same shape)."""
    # Both below 0: the lower tail; both above: the upper tail, mirrored; across 0: erf's
    # difference of opposite signs.
    above = zl >= 0.0
    tails = (zu <= 0.0) | above
    a = np.where(above, -zu, zl)  # the side farther from the mass, mirrored when above
    b = np.where(above, -zl, zu)
    log_b = log_ndtr(np.where(tails, b, 0.0))
    tail = log_b + log1mexp(np.minimum(log_ndtr(np.where(tails, a, -1.0)) - log_b, 0.0))
    # Across 0 the two erf values have opposite signs (their difference is at least |erf|).
    across = np.log(
        0.5
        * (
            erf(np.where(tails, 1.0, zu) * _INV_SQRT2)
            - erf(np.where(tails, -1.0, zl) * _INV_SQRT2)
        )
    )
    out: np.ndarray = np.where(tails, tail, across)
    return out


def log_ehvi_and_grad(
    mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log EHVI (n,) and its derivatives (n, m) with respect to ``mean`` and ``std``: a softmax
    over boxes of ``dT / T``, every ratio formed in log space."""
    mean, std, lower, upper = _check(mean, std, lower, upper)
    n, m = mean.shape
    value, g_mean, g_std = np.empty(n), np.empty((n, m)), np.empty((n, m))
    step = _chunks(n, 3 * len(lower) * m).step
    for start in range(0, n, step):
        sl = slice(start, start + step)
        log_t, zl, zu = _log_terms(mean[sl], std[sl], lower, upper)  # (c, B, m) each
        log_box = log_t.sum(axis=2)  # (c, B)
        value[sl] = logsumexp(log_box, axis=1)
        log_w = (log_box - value[sl][:, None])[:, :, None] - log_t  # (c, B, m): log w_b / T
        g_mean[sl] = -np.exp(log_w + _log_dPhi(zl, zu)).sum(axis=1)
        log_phi_u = -0.5 * zu * zu - _LOG_SQRT_2PI
        log_phi_l = np.where(np.isfinite(zl), -0.5 * zl * zl, -np.inf) - _LOG_SQRT_2PI
        g_std[sl] = (np.exp(log_w + log_phi_u) - np.exp(log_w + log_phi_l)).sum(axis=1)
    return value, g_mean, g_std


class LogEHVIPerCost:
    """``log EHVI(x) [+ log PF(x)] - cost_exponent * log c(x)`` with one model per objective,
    over the boxes of ``observed`` (n, m) below ``ref`` (default
    :func:`..pareto.reference_point`); no observation (with ``feasibility``): PF alone.
    """

    def __init__(
        self,
        models: Sequence[PosteriorModel],
        observed: np.ndarray,
        *,
        ref: np.ndarray | None = None,
        cost_model: LogCostModel | None = None,
        cost_exponent: float = 0.0,
        feasibility: Feasible | None = None,
    ) -> None:
        observed = np.asarray(observed, dtype=float)
        least = 0 if feasibility is not None else 1
        if observed.ndim != 2 or len(observed) < least or observed.shape[1] != len(models):
            raise ValueError(
                f"observed must be an (n, {len(models)}) array with n >= {least} (one column "
                f"per model), got shape {observed.shape}"
            )
        if not (math.isfinite(cost_exponent) and cost_exponent >= 0.0):
            raise ValueError(f"cost_exponent must be finite and >= 0, got {cost_exponent}")
        if cost_exponent != 0.0 and cost_model is None:
            raise ValueError(f"cost_exponent={cost_exponent} needs a cost_model, got None")
        self.models = list(models)
        self.feasibility = feasibility
        self.cost_model = cost_model
        self.cost_exponent = float(cost_exponent)
        self.empty = len(observed) == 0  # no feasible observation: feasibility alone
        if self.empty:
            return
        self.ref = reference_point(observed) if ref is None else np.asarray(ref, dtype=float)
        self.lower, self.upper = non_dominated_boxes(observed, self.ref)  # (B, m) each

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        """Acquisition values at box points Z (k, D): (k,)."""
        if self.empty:
            value = np.zeros(len(Z))  # (k,)
        else:
            told = [model.predict(Z, False) for model in self.models]
            mean = np.column_stack([t[0] for t in told])  # (k, m)
            std = np.sqrt(np.maximum(np.column_stack([t[1] for t in told]), _MIN_STD**2))
            value = log_ehvi(mean, std, self.lower, self.upper)  # (k,)
        if self.feasibility is not None:
            value = value + self.feasibility.log_pf(Z)[0]
        if self.cost_exponent != 0.0:
            assert self.cost_model is not None
            value = value - self.cost_exponent * self.cost_model.log_cost(Z)
        return value

    def value_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values (k,) and gradients (k, D) at box points Z (k, D)."""
        if self.empty:
            value, grad = np.zeros(len(Z)), np.zeros(Z.shape)  # (k,), (k, D)
        else:
            told = [model.predict(Z, True) for model in self.models]
            mean = np.column_stack([t[0] for t in told])  # (k, m)
            std = np.sqrt(np.maximum(np.column_stack([t[1] for t in told]), _MIN_STD**2))
            value, g_mean, g_std = log_ehvi_and_grad(mean, std, self.lower, self.upper)
            dmean = np.stack([t[2] for t in told], axis=1)  # (k, m, D)
            dvar = np.stack([t[3] for t in told], axis=1)  # (k, m, D)
            grad = np.einsum("km,kmd->kd", g_mean, dmean) + np.einsum(
                "km,kmd->kd", g_std / (2.0 * std), dvar
            )  # (k, D)
        if self.feasibility is not None:
            pf_value, pf_grad = self.feasibility.log_pf(Z, True)
            value, grad = value + pf_value, grad + pf_grad
        if self.cost_exponent != 0.0:
            assert self.cost_model is not None
            log_c, d_log_c = self.cost_model.log_cost_and_grad(Z)
            value, grad = value - self.cost_exponent * log_c, grad - self.cost_exponent * d_log_c
        return value, grad
