"""Constraints (feasible: every value <= 0, Optuna's convention): the probability of
feasibility ``PF(x) = prod_i Phi(-(mu_i(x) + m_i) / sigma_i(x))`` under a GP per constraint,
weighting every acquisition (log EI + log PF, Gardner et al., ICML 2014, as GPSampler)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import log_ndtr

from optuna_costbo._numerics.budget_fit import BudgetFit
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel


_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
#: Noise variance floor of the constraint models (standardized units): their resolution.
CONSTRAINT_MIN_NOISE_VAR = 1e-6


def margin(model: GPModel) -> float:
    """How far below 0 a constraint's model must put a point to count it feasible: its noise
    floor's deviation, the finest difference it resolves (with 0, proposals converged on a
    boundary optimum from outside)."""
    return float(np.sqrt(CONSTRAINT_MIN_NOISE_VAR) * model.y_std)


def feasible_rows(C: np.ndarray) -> np.ndarray:
    """Which observations are feasible, every constraint value <= 0 (NaN: not), (n,) bool."""
    out: np.ndarray = np.all(np.nan_to_num(C, nan=np.inf) <= 0.0, axis=1)
    return out


def with_completion(C: np.ndarray | None, stopped: np.ndarray | None) -> np.ndarray | None:
    """The constraint values with completion as one more constraint (n, k+1): +1 where a
    pruner stopped the trial (or ``stopped`` marks another failure), -1 elsewhere; ``C`` as it is
    when none was.

    NOTE(pruning): only a COMPLETE trial can be the best, so acquisitions are weighted by the
    probability of completing (least-squares classification, Rasmussen and Williams 2006, 6.5);
    without it, regions the pruner stops early stayed promising and cheap."""
    if stopped is None or not np.any(stopped):
        return C
    label = np.where(stopped, 1.0, -1.0)[:, None]  # (n, 1)
    return label if C is None else np.hstack([C, label])


class Feasibility:
    """The probability of feasibility under independent GPs of the constraints, times the hard
    budget's probability of fitting (``budget``, a :class:`.budget_fit.BudgetFit`) if given."""

    def __init__(self, models: Sequence[GPModel], budget: BudgetFit | None = None) -> None:
        self.models = list(models)
        self.budget = budget

    def with_budget(self, budget: BudgetFit) -> Feasibility:
        """These constraints and ``budget``'s probability of fitting."""
        return Feasibility(self.models, budget)

    @property
    def hypers(self) -> tuple[GPHyperparams, ...]:
        return tuple(m.hyper for m in self.models)

    def log_pf(self, Z: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        """``log PF`` at Z (m, D), (m,), and its gradient (m, D) if asked."""
        total = np.zeros(len(Z))  # (m,)
        grad = np.zeros(Z.shape) if return_grad else None  # (m, D)
        for model in self.models:
            if not return_grad:
                mean, var = model.predict(Z)
            else:
                mean, var, dmean, dvar = model.predict(Z, return_grad=True)
            sd = np.sqrt(var)
            u = -(mean + margin(model)) / sd  # (m,)
            log_phi_cdf = log_ndtr(u)
            total += log_phi_cdf
            if grad is not None:
                # d log Phi(u) / du = phi(u) / Phi(u), formed in log space (no underflow).
                ratio = np.exp(-0.5 * u * u - _LOG_SQRT_2PI - log_phi_cdf)  # (m,)
                du = -dmean / sd[:, None] - (u / (2.0 * var))[:, None] * dvar  # (m, D)
                grad += ratio[:, None] * du
        if self.budget is not None:
            fit = self.budget.log_pf(Z, return_grad)
            total = total + fit[0]
            if grad is not None:
                grad = grad + fit[1]
        return (total,) if grad is None else (total, grad)

    def pf(self, Z: np.ndarray) -> np.ndarray:
        """The probability of feasibility at Z (m, D): (m,)."""
        out: np.ndarray = np.exp(self.log_pf(Z)[0])
        return out
