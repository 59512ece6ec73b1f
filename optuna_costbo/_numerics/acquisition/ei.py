"""Expected improvement in log space, EI per unit cost and EI-cool (minimization convention).

For a Gaussian posterior ``Y ~ N(mean, var)`` and an incumbent ``best`` (the smallest observed
value), the expected improvement is

    EI = E[max(best - Y, 0)] = sigma * h(z),   z = (best - mean) / sigma,
    h(z) = phi(z) + z * Phi(z),

with ``phi`` and ``Phi`` the standard normal density and distribution function. EI underflows
to 0 far from the incumbent (``z`` below about -38), where its gradient is useless to an
optimizer; :func:`log_ei` computes ``log EI`` stably for every ``z``, following Ament et al.,
"Unexpected Improvements to Expected Improvement for Bayesian Optimization" (NeurIPS 2023).

Cost-aware acquisitions are formed in log space by :class:`LogEIPerCost`:
``log EI(x) - cost_exponent * log c(x)``, with ``log c(x)`` the mean of a GP on log-cost.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
from scipy.special import erfcx
from scipy.special import ndtr

from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.cost_model import shares_objective


__all__ = [
    "LogCostModel",
    "LogEIPerCost",
    "PosteriorModel",
    "cool_exponent",
    "ei",
    "log1mexp",
    "log_ei",
    "log_ei_and_grad",
    "log_h",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)  # c1 in Ament et al.
_LOG_SQRT_HALF_PI = 0.5 * math.log(0.5 * math.pi)  # c2 in Ament et al.
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# NOTE(acq): variance floor of the plain EI: sqrt stays positive, z finite.
_TINY_VAR = 1e-300

# NOTE(acq): branch points of log h(z). Above -1, h = phi + z Phi loses at most a factor 3 to
# cancellation. In (-30, -1], h = phi(z) * (1 - |z| sqrt(pi/2) erfcx(|z| / sqrt 2)) (Ament et al.,
# eq. 9); the bracket suffers cancellation growing like eps * z^2 (<= 2e-13 at z = -30). Below -30
# the asymptotic series h = phi(z) / z^2 * sum_k (-1)^k (2k+1)!! / z^(2k) (from the Mills ratio)
# is used; its 8 terms leave a truncation error below 1e-16 there. The branches meet to 2e-13
# absolute at z = -30 (5e-16 relative) and exactly at z = -1.
_Z_UPPER = -1.0
_Z_TAIL = -30.0
# (2k+1)!! for k = 0..7: h(z) z^2 / phi(z) ~ 1 - 3 w + 15 w^2 - ..., w = 1 / z^2.
_H_SERIES = np.array([1.0, -3.0, 15.0, -105.0, 945.0, -10395.0, 135135.0, -2027025.0])
# (2k-1)!! for k = 0..7: Phi(z) |z| / phi(z) ~ 1 - w + 3 w^2 - 15 w^3 + ...
_PHI_SERIES = np.array([1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0])

# NOTE(acq): z is clipped at -1e150 so that z^2 stays finite: log EI there is about -5e299, far
# below any value an optimizer compares with, but still finite and with a finite gradient.
_Z_MIN = -1e150
# NOTE(acq): variance floor (original units) against division by zero; GPModel already clips the
# latent variance at 1e-12 of the signal variance, so this binds only for degenerate models.
_MIN_VAR = 1e-100


def cool_exponent(remaining: float, budget: float) -> float:
    """EI-cool's cost exponent alpha = remaining / total budget, clipped to [0, 1].

    NOTE: EI-cool (Lee et al., "Cost-aware Bayesian optimization", 2020): EI / c^alpha is EI
    per unit cost at the start of the budget and EI at its end. The rollout cools its rates
    with the same exponent, and the quick route uses it too. Without a budget (an infinite
    one: a stopping rule ends the study) it stays 1, EI per unit cost.
    """
    if not math.isfinite(budget):
        return 1.0
    return float(np.clip(remaining / budget, 0.0, 1.0))


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
    """log h(z), Phi(z) / h(z) and phi(z) / h(z), all (m,), stable for every z.

    ``d log h / dz = Phi / h`` since h'(z) = Phi(z).
    """
    # NOTE(acq): each branch is evaluated on the whole array with z clamped into its own range
    # (so no branch warns) and the results are merged with np.where; absent branches are
    # skipped. For the few points an L-BFGS-B iteration evaluates this is 3-4x faster than
    # boolean-mask indexing.
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
    """log h(z), h(z) = phi(z) + z Phi(z) = E[max(Z + z, 0)] for Z ~ N(0, 1): (m,) -> (m,).

    Finite for every finite z (z is clipped at -1e150), accurate to ~1e-13 relative.
    """
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
    """log E[max(best - Y, 0)] for Y ~ N(mean, var), stable for any z = (best - mean) / sigma.

    Args:
        mean: Posterior means, shape (m,).
        var: Posterior variances, shape (m,), floored at 1e-100.
        best: Incumbent (smallest observed value), a float or an array broadcastable to (m,).

    Returns:
        log EI, shape (m,); finite wherever the inputs are finite.
    """
    z, sigma, _ = _standardize(mean, var, best)
    out: np.ndarray = _log_h_parts(z)[0] + np.log(sigma)
    return out


def ei(mean: np.ndarray, var: np.ndarray, best: np.ndarray | float) -> np.ndarray:
    """EI = sigma (phi(z) + z Phi(z)), z = (best - mean) / sigma; any broadcastable shapes.

    The plain closed form, clipped at 0: it underflows far below the incumbent, which is
    harmless for an argmax over many points and for averages of rewards (the rollout's use);
    an optimizer needs :func:`log_ei` instead.
    """
    sigma = np.sqrt(np.maximum(var, _TINY_VAR))
    z = (best - mean) / sigma
    h = np.exp(-0.5 * z * z) * _INV_SQRT_2PI + z * ndtr(z)
    out: np.ndarray = sigma * np.maximum(h, 0.0)
    return out


def log_ei_and_grad(
    mean: np.ndarray, var: np.ndarray, best: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log EI and its analytic derivatives with respect to ``mean`` and ``var``.

    With z = (best - mean) / sigma:
    ``d log EI / d mean = -(Phi(z) / h(z)) / sigma`` and
    ``d log EI / d var = (phi(z) / h(z)) / (2 var)``, both formed without overflow.

    Args:
        mean: Posterior means, shape (m,).
        var: Posterior variances, shape (m,).
        best: Incumbent, float or broadcastable to (m,).

    Returns:
        ``(log_ei (m,), dlog_ei/dmean (m,), dlog_ei/dvar (m,))``.
    """
    z, sigma, var_ = _standardize(mean, var, best)
    lh, Phi_over_h, phi_over_h = _log_h_parts(z)
    return lh + np.log(sigma), -Phi_over_h / sigma, phi_over_h / (2.0 * var_)


class PosteriorModel(Protocol):
    """What an acquisition needs from a model (:class:`.gp.GPModel` fits)."""

    def predict(self, Xq: np.ndarray, return_grad: bool) -> tuple[np.ndarray, ...]:
        """``(mean (m,), var (m,))``, plus ``(dmean (m, D), dvar (m, D))`` if ``return_grad``."""
        ...


class Feasible(Protocol):
    """What an acquisition needs of the constraints (:class:`..feasibility.Feasibility`)."""

    def log_pf(self, Z: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        """``log PF (m,)``, plus its gradient ``(m, D)`` if ``return_grad``."""
        ...


class LogCostModel(Protocol):
    """What an acquisition needs from a cost model (:class:`.cost_model.CostModel` fits)."""

    def log_cost(self, Z: np.ndarray) -> np.ndarray:
        """Predicted log cost at box points Z (m, D): (m,)."""
        ...

    def log_cost_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted log cost (m,) and its gradient (m, D)."""
        ...


class LogEIPerCost:
    """log EI(x) - cost_exponent * mu_logc(x), to be maximized over the box.

    ``mu_logc`` is the posterior mean of a GP fitted to log-cost, so the predicted cost is
    ``c(x) = exp(mu_logc(x))`` and the acquisition is ``log(EI(x) / c(x) ** cost_exponent)``:

    * ``cost_exponent = 0``: log EI (the cost model, if any, is ignored);
    * ``cost_exponent = 1``: log EIpu, "EI per unit cost" computed in log space as
      ``log EI - log c``, which keeps its maximizer where EI underflows;
    * ``cost_exponent = alpha`` in (0, 1): EI-cool (CArBO, Lee et al. 2020), with ``alpha`` the
      remaining budget over the total budget, which cools from EIpu to EI as budget is spent.

    With constraints (``feasibility``), ``log PF(x)`` is added: log of EI times the
    probability of feasibility; with ``best=None`` (no feasible point known yet) the value is
    ``log PF - cost_exponent * mu_logc``, feasibility alone.

    Args:
        model: Objective model; ``predict`` gives the latent posterior in original units.
        best: Incumbent, the smallest observed objective value (original units), finite;
            ``None`` only with ``feasibility``, while no observation is feasible.
        cost_model: Model of log-cost (its mean is used); required when
            ``cost_exponent != 0``.
        cost_exponent: Exponent of the cost, finite and >= 0. Default 0 (plain log EI). An
            array (m,) gives each row of the points the acquisition is called on its own
            exponent (several acquisitions in one batch, see :func:`.optimize.maximize_each`).
        feasibility: The constraints' probability of feasibility (:mod:`..feasibility`).

    Raises:
        ValueError: If ``best`` or ``cost_exponent`` is invalid, or a cost exponent is given
            without a cost model.

    Example:
        >>> import numpy as np
        >>> class Model:
        ...     def predict(self, Xq, return_grad=False):
        ...         mean, var = Xq.sum(axis=1), np.ones(len(Xq))
        ...         if not return_grad:
        ...             return mean, var
        ...         return mean, var, np.ones_like(Xq), np.zeros_like(Xq)
        >>> class LogCost:
        ...     def log_cost(self, Z):
        ...         return Z[:, 0]
        ...     def log_cost_and_grad(self, Z):
        ...         return Z[:, 0], np.eye(Z.shape[1])[[0] * len(Z)]
        >>> acq = LogEIPerCost(Model(), best=0.0, cost_model=LogCost(), cost_exponent=1.0)
        >>> values, grads = acq.value_and_grad(np.array([[0.1, 0.2], [0.5, 0.5]]))
        >>> values.shape, grads.shape
        ((2,), (2, 2))
    """

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
        """This acquisition with the cost exponents ``cost_exponent[which]`` (m,) (one per
        row of the points it is then called on), as constructing it with them, without
        checking them again (they were checked with the rest).

        NOTE: a batch of L-BFGS-B runs under several exponents evaluates a new subset of
        rows in every round; a new acquisition per round spent most of its time on the checks.
        """
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
