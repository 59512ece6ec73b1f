"""One screening of candidate points per suggestion, shared by every search that starts from it.

The rollout maximizes ``log EI - e * log c`` for several cost exponents ``e`` (EI, EIpu and
EI-cool) and then shortlists first actions and inner candidates from a pool of points by EI
and by EI per unit cost. All of these rank the same points by values made of the same three
arrays: the objective model's posterior mean and variance and the predicted log cost. A
:class:`Screen` holds them, computed once (one prediction of each model on the pool), and
gives each search its values: ``log EI - e * log c`` for any ``e`` is then one subtraction.

NOTE: predicting at 1024 points is most of a maximization's time past about a hundred
observations (the variance's triangular solve grows like n^2 per point); the rollout screened
four times (three maximizers and its own pool), and each cost-aware search predicted the
cost model's variance, which nothing uses.

This module imports only numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optuna_costbo._numerics.acquisition.ei import Feasible
from optuna_costbo._numerics.acquisition.ei import LogCostModel
from optuna_costbo._numerics.acquisition.ei import PosteriorModel
from optuna_costbo._numerics.acquisition.ei import log_ei
from optuna_costbo._numerics.cost_model import shares_objective


__all__ = ["Screen", "screen"]


@dataclass(frozen=True)
class Screen:
    """Legal candidate points and the models' predictions at them.

    Attributes:
        points: Legal box points, (M, D).
        mean: The objective's posterior mean there, (M,).
        var: Its posterior variance, (M,).
        log_ei: log EI against the incumbent, (M,) (0 while no observation is feasible).
        log_cost: The predicted log cost, (M,), or ``None`` without a cost model.
        log_pf: With constraints, the log probability of feasibility, (M,), else ``None``.
    """

    points: np.ndarray  # (M, D)
    mean: np.ndarray  # (M,)
    var: np.ndarray  # (M,)
    log_ei: np.ndarray  # (M,)
    log_cost: np.ndarray | None  # (M,)
    log_pf: np.ndarray | None = None  # (M,)

    def values(self, cost_exponent: float) -> np.ndarray:
        """``log EI (+ log PF) - cost_exponent * log c`` at the points, (M,), as
        :class:`.ei.LogEIPerCost` computes it (log EI alone at exponent 0 or without costs)."""
        out: np.ndarray = self.log_ei if self.log_pf is None else self.log_ei + self.log_pf
        if self.log_cost is None or cost_exponent == 0.0:
            return out
        out = out - cost_exponent * self.log_cost
        return out

    def pf(self) -> np.ndarray | None:
        """The probability of feasibility at the points, (M,), or ``None`` without
        constraints."""
        return None if self.log_pf is None else np.exp(self.log_pf)

    def cost(self) -> np.ndarray:
        """The predicted cost ``exp(log c)`` at the points, (M,)."""
        if self.log_cost is None:
            raise ValueError("this screen was made without a cost model")
        out: np.ndarray = np.exp(self.log_cost)
        return out


def screen(
    points: np.ndarray,  # (M, D) legal points
    model: PosteriorModel,
    best: float | None,
    cost: LogCostModel | None,
    feasibility: Feasible | None = None,
) -> Screen:
    """The :class:`Screen` of ``points``: one prediction of ``model``, one of ``cost`` and
    one of the constraints' ``feasibility``. ``best`` is ``None`` only with ``feasibility``,
    while no observation is feasible (log EI is then 0: feasibility alone)."""
    if best is None and feasibility is None:
        raise ValueError("best=None (no feasible point yet) needs a feasibility model")
    mean, var = model.predict(points, False)[:2]  # (M,), (M,)
    log_cost: np.ndarray | None = None  # (M,)
    if cost is not None and shares_objective(cost, model):
        log_cost = cost.log_cost(points, (mean, var))  # the prediction just made
    elif cost is not None:
        log_cost = cost.log_cost(points)
    log_pf = feasibility.log_pf(points)[0] if feasibility is not None else None  # (M,)
    values = np.zeros(len(points)) if best is None else log_ei(mean, var, best)  # (M,)
    return Screen(points, mean, var, values, log_cost, log_pf)
