"""EI (minimization), log EI stable for every z (Ament et al., NeurIPS 2023), and EI per unit
cost in log space, ``log EI - e * log c``."""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
from scipy.special import erfcx
from scipy.special import ndtr

from optuna_costbo._numerics.cost_model import COST_FLOOR
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.cost_model import shares_objective
from optuna_costbo._numerics.search_space import BoxCodec


__all__ = [
    "LogEIPerCost", "cool_exponent", "cool_power", "default_cool_exponent", "ei", "log1mexp",
    "log_ei", "log_ei_and_grad", "log_h",
]  # fmt: skip

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)  # c1 in Ament et al.
_LOG_SQRT_HALF_PI = 0.5 * math.log(0.5 * math.pi)  # c2 in Ament et al.
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TINY_VAR = 1e-300

# NOTE(acq): branches of log h(z): the closed form above -1; phi(z) (1 - |z| sqrt(pi/2)
# erfcx(|z| / sqrt 2)) in (-30, -1] (Ament et al., eq. 9); below -30 the asymptotic series
# (8 terms, truncation below 1e-16). They meet to 5e-16 relative at -30, exactly at -1.
_Z_UPPER = -1.0
_Z_TAIL = -30.0
# (2k+1)!! for k = 0..7: h(z) z^2 / phi(z) ~ 1 - 3 w + 15 w^2 - ..., w = 1 / z^2.
_H_SERIES = np.array([1.0, -3.0, 15.0, -105.0, 945.0, -10395.0, 135135.0, -2027025.0])
# (2k-1)!! for k = 0..7: Phi(z) |z| / phi(z) ~ 1 - w + 3 w^2 - 15 w^3 + ...
_PHI_SERIES = np.array([1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0])

# NOTE(acq): z is clipped so that z^2 stays finite (log EI ~ -5e299, with a finite gradient).
_Z_MIN = -1e150
_MIN_VAR = 1e-100


def cool_exponent(remaining: float, budget: float) -> float:
    """EI-cool's cost exponent remaining / budget in [0, 1] (Lee et al. 2020): EI per unit cost
    at the start, EI at the end; 1 without a budget.

    >>> cool_exponent(25.0, 100.0), cool_exponent(5.0, float("inf"))
    (0.25, 1.0)
    """
    if not math.isfinite(budget):
        return 1.0
    return float(np.clip(remaining / budget, 0.0, 1.0))


# NOTE(cool2): the slower cooling registered as issue 59's variant 2
# (benchmarks/results/extreme-costs/PREREG.md, addendum): today's cooling while costs span <= 100x.
_SPREAD_POINTS = 1024
_SPREAD_FREE = math.log(100.0)


def cool_power(spread: float) -> float:
    """The cooling's power log(100) / max(S, log(100)) for a cost spread S = log(c95 / c5)."""
    return _SPREAD_FREE / max(spread, _SPREAD_FREE)


def default_cool_exponent(
    remaining: float, budget: float, cost: CostModel, codec: BoxCodec
) -> float:
    """The default's exponent r ** (log(100) / max(S, log(100))), S = log(c95 / c5) of ``cost``
    over 1,024 scrambled Sobol points (seed 0): cost cools more slowly where it spans over 100x."""
    alpha = cool_exponent(remaining, budget)
    if alpha >= 1.0 or alpha <= 0.0:
        return alpha
    c = np.maximum(cost.cost(codec.sobol_points(_SPREAD_POINTS, seed=0)), COST_FLOOR)  # (1024,)
    c5, c95 = np.percentile(c, [5.0, 95.0])
    return float(alpha ** cool_power(float(np.log(c95 / c5))))


def _poly_w(coeffs: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Horner evaluation of sum_k coeffs[k] w^k."""
    out = np.full_like(w, coeffs[-1])
    for c in coeffs[-2::-1]:
        out = out * w + c
    return out


def log1mexp(x: np.ndarray) -> np.ndarray:
    """log(1 - exp(x)) for x < 0, accurate near 0 and for very negative x (Maechler 2012)."""
    near = x > -math.log(2.0)
    out: np.ndarray = np.where(
        near, np.log(-np.expm1(np.minimum(x, -1e-300))), np.log1p(-np.exp(np.minimum(x, 0.0)))
    )
    return out


def _log_h_parts(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log h(z), Phi(z) / h(z) (= d log h / dz) and phi(z) / h(z), all (m,), for every z."""
    # NOTE(acq): each branch on the whole array, z clamped into its range, merged by np.where:
    # faster than mask indexing for the few points of an L-BFGS-B iteration.
    z = np.maximum(z, _Z_MIN)
    zu = np.maximum(z, _Z_UPPER)
    phi_u = np.exp(-0.5 * zu * zu - _LOG_SQRT_2PI)
    Phi_u = ndtr(zu)
    h_u = phi_u + zu * Phi_u
    log_h, Phi_over_h, phi_over_h = np.log(h_u), Phi_u / h_u, phi_u / h_u
    if z.size == 0 or z.min() > _Z_UPPER:
        return log_h, Phi_over_h, phi_over_h

    up = z > _Z_UPPER
    mid = ~up & (z > _Z_TAIL)
    if mid.any():
        zm = np.minimum(np.maximum(z, _Z_TAIL), _Z_UPPER)  # np.clip's values (no zero here)
        ex = erfcx(-zm * _INV_SQRT2)  # Phi(z) = phi(z) * sqrt(pi/2) * erfcx(-z / sqrt 2)
        # h / phi = 1 - |z| sqrt(pi/2) erfcx(|z| / sqrt 2), in (0, 1).
        log_bracket = log1mexp(np.log(-zm * ex) + _LOG_SQRT_HALF_PI)
        inv_bracket = np.exp(-log_bracket)
        log_h = np.where(mid, -0.5 * zm * zm - _LOG_SQRT_2PI + log_bracket, log_h)
        Phi_over_h = np.where(mid, _SQRT_HALF_PI * ex * inv_bracket, Phi_over_h)
        phi_over_h = np.where(mid, inv_bracket, phi_over_h)

    tail = z <= _Z_TAIL
    if tail.any():
        zt = np.minimum(z, _Z_TAIL)
        w = 1.0 / (zt * zt)
        s_h = _poly_w(_H_SERIES, w)  # h z^2 / phi
        s_Phi = _poly_w(_PHI_SERIES, w)  # Phi |z| / phi
        log_h = np.where(
            tail, -0.5 * zt * zt - _LOG_SQRT_2PI - 2.0 * np.log(-zt) + np.log(s_h), log_h
        )
        Phi_over_h = np.where(tail, -zt * s_Phi / s_h, Phi_over_h)
        phi_over_h = np.where(tail, zt * zt / s_h, phi_over_h)
    return log_h, Phi_over_h, phi_over_h


def log_h(z: np.ndarray) -> np.ndarray:
    """log h(z), h(z) = phi(z) + z Phi(z) = E[max(Z + z, 0)]: (m,) -> (m,), ~1e-13 relative."""
    return _log_h_parts(np.asarray(z, dtype=float))[0]


def _standardize(
    mean: np.ndarray, var: np.ndarray, best: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """z (m,), sigma (m,) and the floored variance (m,); inputs broadcast together."""
    var = np.maximum(np.asarray(var, dtype=float), _MIN_VAR)
    sigma = np.sqrt(var)
    z = (np.asarray(best, dtype=float) - np.asarray(mean, dtype=float)) / sigma
    if sigma.shape != z.shape:
        sigma, var = np.broadcast_to(sigma, z.shape), np.broadcast_to(var, z.shape)
    return z, sigma, var


def log_ei(mean: np.ndarray, var: np.ndarray, best: float | np.ndarray) -> np.ndarray:
    """log EI (m,) of N(mean (m,), var (m,)) below ``best`` (float or (m,)), finite everywhere."""
    z, sigma, _ = _standardize(mean, var, best)
    out: np.ndarray = _log_h_parts(z)[0] + np.log(sigma)
    return out


def ei(mean: np.ndarray, var: np.ndarray, best: np.ndarray | float) -> np.ndarray:
    """EI = sigma (phi(z) + z Phi(z)), any broadcastable shapes: underflows far below the
    incumbent (fine for argmaxes and averages; an optimizer needs :func:`log_ei`)."""
    sigma = np.sqrt(np.maximum(var, _TINY_VAR))
    z = (best - mean) / sigma
    h = np.exp(-0.5 * z * z) * _INV_SQRT_2PI + z * ndtr(z)
    out: np.ndarray = sigma * np.maximum(h, 0.0)
    return out


def log_ei_and_grad(
    mean: np.ndarray, var: np.ndarray, best: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log EI (m,) and its derivatives (m,) with respect to ``mean`` and ``var``."""
    z, sigma, var_ = _standardize(mean, var, best)
    lh, Phi_over_h, phi_over_h = _log_h_parts(z)
    return lh + np.log(sigma), -Phi_over_h / sigma, phi_over_h / (2.0 * var_)


class PosteriorModel(Protocol):
    def predict(self, Xq: np.ndarray, return_grad: bool) -> tuple[np.ndarray, ...]:
        """``(mean (m,), var (m,))``, plus ``(dmean (m, D), dvar (m, D))`` if ``return_grad``."""
        ...


class Feasible(Protocol):
    def log_pf(self, Z: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        """``log PF (m,)``, plus its gradient ``(m, D)`` if ``return_grad``."""
        ...


class LogCostModel(Protocol):
    def log_cost(self, Z: np.ndarray) -> np.ndarray: ...  # (m, D) -> (m,)

    def log_cost_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


class LogEIPerCost:
    """``log EI(x) [+ log PF(x)] - cost_exponent * log c(x)`` at box points: log EI (exponent
    0), EI per unit cost (1) or EI-cool (remaining / budget); ``best=None``: PF alone. An array of
    exponents (m,) gives each row of the points its own (:meth:`for_rows`)."""

    def __init__(
        self,
        model: PosteriorModel,
        best: float | None,
        *,
        cost_model: LogCostModel | None = None,
        cost_exponent: float | np.ndarray = 0.0,
        feasibility: Feasible | None = None,
    ) -> None:
        exponent = np.asarray(cost_exponent, dtype=float)  # () or (m,)
        if best is None:
            if feasibility is None:
                raise ValueError("best=None (no feasible point yet) needs a feasibility model")
        elif not math.isfinite(float(best)):
            raise ValueError(f"best must be a finite number, got {best}")
        if not (np.all(np.isfinite(exponent)) and np.all(exponent >= 0.0)):
            raise ValueError(f"cost_exponent must be finite and >= 0, got {cost_exponent}")
        if np.any(exponent != 0.0) and cost_model is None:
            raise ValueError(f"cost_exponent={cost_exponent} needs a cost_model, got None")
        self.model = model
        self.best = None if best is None else float(best)
        self.cost_model = cost_model
        self.feasibility = feasibility
        self._set_exponent(exponent)

    def _set_exponent(self, exponent: np.ndarray) -> None:
        """The cost exponent, () or (m,), already checked, and what depends on it."""
        self.cost_exponent: float | np.ndarray = (
            float(exponent) if exponent.ndim == 0 else exponent
        )
        self._uses_cost = self.cost_model is not None and bool(np.any(exponent != 0.0))
        # The cost model's own prediction of ``model`` is the one made here: handed over.
        self._told: PrunedCost | None = (
            self.cost_model
            if self._uses_cost
            and self.best is not None
            and shares_objective(self.cost_model, self.model)
            else None
        )

    def for_rows(self, which: np.ndarray) -> LogEIPerCost:
        """This acquisition with the exponents ``cost_exponent[which]`` (m,), unchecked: a batch
        of L-BFGS-B runs asks for new rows every round, where the checks dominated."""
        exponents = self.cost_exponent
        if not isinstance(exponents, np.ndarray):
            raise ValueError("for_rows needs an array of cost exponents")
        out = LogEIPerCost.__new__(LogEIPerCost)
        out.model, out.best, out.cost_model = self.model, self.best, self.cost_model
        out.feasibility = self.feasibility
        out._set_exponent(exponents[which])
        return out

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        """Acquisition values at box points Z (m, D): (m,)."""
        if self.best is None:
            value = np.zeros(len(Z))  # (m,): feasibility alone
        else:
            mean, var = self.model.predict(Z, False)[:2]
            value = log_ei(mean, var, self.best)  # (m,)
        if self.feasibility is not None:
            value = value + self.feasibility.log_pf(Z)[0]
        if self._uses_cost:
            assert self.cost_model is not None
            log_c = (
                self._told.log_cost(Z, (mean, var))
                if self._told is not None
                else self.cost_model.log_cost(Z)
            )
            value = value - self.cost_exponent * log_c
        return value

    def value_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values (m,) and gradients with respect to Z (m, D) at box points Z (m, D)."""
        if self.best is None:
            value, grad = np.zeros(len(Z)), np.zeros(Z.shape)  # feasibility alone
        else:
            told = self.model.predict(Z, True)
            mean, var, dmean, dvar = told
            value, g_mean, g_var = log_ei_and_grad(mean, var, self.best)  # (m,) each
            grad = g_mean[:, None] * dmean + g_var[:, None] * dvar  # (m, D)
        if self.feasibility is not None:
            pf_value, pf_grad = self.feasibility.log_pf(Z, True)
            value, grad = value + pf_value, grad + pf_grad
        if self._uses_cost:
            assert self.cost_model is not None
            c_mean, c_dmean = (
                self._told.log_cost_and_grad(Z, told)
                if self._told is not None
                else self.cost_model.log_cost_and_grad(Z)
            )
            e = self.cost_exponent
            value = value - e * c_mean
            grad = grad - (e[:, None] if isinstance(e, np.ndarray) else e) * c_dmean
        return value, grad
