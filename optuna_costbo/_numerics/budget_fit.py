"""A hard budget (Lee et al., UAI 2021, Section 3): the probability that a trial's cost fits
the budget left ``tau``, ``Phi((log tau - mu(x)) / s(x))`` under a GP on log cost (``s`` widened
by its leave-one-out errors), exact for a known cost or a fixed price. :class:`BudgetFit` weighs
acquisitions as :class:`.feasibility.Feasibility` does; :meth:`BudgetFit.fits` is the rule."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr
from scipy.special import ndtri

from optuna_costbo._numerics.cost_model import COST_FLOOR
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.cost_model import reserved_cost
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.request import ProposalRequest


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# Fewer observed costs say nothing of how far a new one strays (no widening, no fixed price).
_MIN_SPREAD_N = 3
# Observed log costs within this of each other are one fixed price (relative cost 1e-9).
_SAME_LOG_COST = 1e-9
# A cost above the budget left by at most this fraction of it fits: the ledger's rounding.
_ROUNDING = 1e-9


def full_trial_cost(cost: CostModel) -> CostModel:
    """The cost model of a full trial: the base of an expected cost under pruning."""
    while isinstance(cost, PrunedCost):
        cost = cost.base
    return cost


class BudgetFit:
    """Whether configurations fit ``tau``, the budget left, with probability at least
    ``1 - risk`` under ``cost`` (its full trial's cost under pruning)."""

    def __init__(self, cost: CostModel, tau: float, risk: float) -> None:
        if not 0.0 < risk < 1.0:
            raise ValueError(f"risk must be in (0, 1), got {risk!r}")
        self.cost = full_trial_cost(cost)
        self.tau = float(tau)
        self.risk = float(risk)
        self._log_tau = math.log(self.tau) + _ROUNDING if self.tau > 0.0 else -math.inf
        self._z = float(ndtri(1.0 - self.risk))  # the quantile's standard score
        gp = self.cost.model if isinstance(self.cost, FittedLogCost) else None
        # NOTE(budget_fit): costs observed equal are a fixed price, known exactly (a GP of
        # all-equal log costs keeps a ~1 % spread: a trial never fit exactly that price left).
        self._price: float | None = None
        if gp is not None and gp.n >= _MIN_SPREAD_N and np.ptp(gp.y) <= _SAME_LOG_COST:
            self._price, gp = float(np.mean(gp.y)), None
        self._gp: GPModel | None = gp
        # The noise of a new observation, in log-cost units (the GP's is standardized).
        self._noise = 0.0 if gp is None else float(gp.hyper.noise_var) * gp.y_std**2
        # NOTE(budget_fit): the deviation is widened to the conformal 1 - risk quantile of the
        # GP's leave-one-out errors (jackknife+, Barber et al. 2021): the GP is overconfident
        # where the cost changes faster than its lengthscales (docs/design-decisions.md).
        self._scale = 1.0
        if gp is not None and gp.n >= _MIN_SPREAD_N:
            self._scale = loo_widening(gp.loo_scores(), self.risk) ** 2

    @property
    def binds(self) -> bool:
        """Whether some configuration may not fit: False when a bound on the log cost's quantile
        over the whole space (:meth:`.GPModel.bounds`, z at least 7: a chance under 1.3e-12 of
        not fitting) is within ``log tau``, so the fit weighs nothing and is left out."""
        if self._gp is None:
            return True
        mean, var = self._gp.bounds()
        quantile = mean + max(self._z, 7.0) * math.sqrt((var + self._noise) * self._scale)
        return quantile > self._log_tau

    def _log_cost_dist(self, Z: np.ndarray, return_grad: bool) -> tuple[np.ndarray, ...]:
        """A new trial's log cost at Z (m, D): mean (m,), variance (m,) and, if asked, their
        gradients (m, D) each; variance 0 for a cost known exactly."""
        if self._gp is None:
            if self._price is not None:
                log_c, dlog_c = np.full(len(Z), self._price), np.zeros(Z.shape)
            else:
                log_c, dlog_c = self.cost.log_cost_and_grad(Z)  # (m,), (m, D)
            log_c = np.maximum(log_c, math.log(COST_FLOOR))
            zero = np.zeros(len(Z))
            return (log_c, zero, dlog_c, np.zeros_like(dlog_c)) if return_grad else (log_c, zero)
        if not return_grad:
            mean, var = self._gp.predict(Z)
            return mean, (var + self._noise) * self._scale
        mean, var, dmean, dvar = self._gp.predict(Z, return_grad=True)
        return mean, (var + self._noise) * self._scale, dmean, dvar * self._scale

    def log_pf(self, Z: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        """``log P(c(x) <= tau)`` at Z (m, D), (m,), and its gradient (m, D) if asked (0 for a
        cost known exactly, where the probability is 0 or 1)."""
        if not return_grad:
            mean, var = self._log_cost_dist(Z, False)
        else:
            mean, var, dmean, dvar = self._log_cost_dist(Z, True)
        if self._gp is None:
            out = np.where(mean <= self._log_tau, 0.0, -np.inf)  # (m,)
            return (out,) if not return_grad else (out, np.zeros((len(Z), Z.shape[1])))
        sd = np.sqrt(var)
        u = (self._log_tau - mean) / sd  # (m,)
        log_p = log_ndtr(u)
        if not return_grad:
            return (log_p,)
        ratio = np.exp(-0.5 * u * u - _LOG_SQRT_2PI - log_p)  # phi(u) / Phi(u), in log space
        du = -dmean / sd[:, None] - (u / (2.0 * var))[:, None] * dvar  # (m, D)
        return log_p, np.where(np.isfinite(log_p)[:, None], ratio[:, None] * du, 0.0)

    def pf(self, Z: np.ndarray) -> np.ndarray:
        """``P(c(x) <= tau)`` at Z (m, D): (m,)."""
        out: np.ndarray = np.exp(self.log_pf(Z)[0])
        return out

    def margin(self, Z: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        """``log tau`` less the log cost's ``1 - risk`` quantile at Z (m, D), (m,) (>= 0: the
        point fits), and its gradient (m, D) if asked: what the cheapest fitting point
        maximizes."""
        if not return_grad:
            mean, var = self._log_cost_dist(Z, False)
            return (self._log_tau - (mean + self._z * np.sqrt(var)),)
        mean, var, dmean, dvar = self._log_cost_dist(Z, True)
        sd = np.sqrt(np.maximum(var, 1e-300))
        grad = -(dmean + (self._z / (2.0 * sd))[:, None] * dvar)
        return self._log_tau - (mean + self._z * np.sqrt(var)), grad

    @property
    def exact(self) -> bool:
        """Whether the cost is known exactly (``cost_fn``, a fixed price): fitting is certain."""
        return self._gp is None

    def fits(self, Z: np.ndarray) -> np.ndarray:
        """Which points of Z (m, D) fit: cost within ``tau`` with probability >= 1 - risk."""
        if self.tau <= 0.0:
            return np.zeros(len(Z), dtype=bool)
        out: np.ndarray = self.margin(Z)[0] >= 0.0
        return out


def loo_widening(scores: np.ndarray, risk: float) -> float:
    """The factor (>= 1) on a predictive deviation that puts its ``1 - risk`` quantile at the
    conformal quantile of the leave-one-out scores (n,); 1 for a risk of a half or more."""
    z = float(ndtri(1.0 - risk))
    if z <= 0.0:
        return 1.0
    n = len(scores)
    rank = min(math.ceil((1.0 - risk) * (n + 1)), n)  # 1-based
    quantile = float(np.sort(scores)[rank - 1])
    return max(1.0, quantile / z)


def budget_fit(request: ProposalRequest, cost: CostModel | None) -> BudgetFit | None:
    """Under a hard budget, the fit of the remaining budget less the running trials' predicted
    costs; None under a soft budget, before anything predicts a cost, or while every
    configuration fits (:attr:`BudgetFit.binds`)."""
    if request.overrun_risk is None or cost is None:
        return None
    reserved = reserved_cost(cost, request.X_running)
    fit = BudgetFit(cost, request.remaining - reserved, request.overrun_risk)
    return fit if fit.binds else None
