"""One prediction of the models at a pool of points per suggestion, shared by every search that
starts from it: ``log EI - e * log c`` for any ``e`` is then one subtraction."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optuna_costbo._numerics.acquisition.ei import Feasible
from optuna_costbo._numerics.acquisition.ei import LogCostModel
from optuna_costbo._numerics.acquisition.ei import PosteriorModel
from optuna_costbo._numerics.acquisition.ei import log_ei
from optuna_costbo._numerics.cost_model import shares_objective


@dataclass(frozen=True)
class Screen:
    """Legal points and the predictions at them; ``log_ei`` is 0 while nothing is feasible,
    ``log_cost`` None without a cost model, ``log_pf`` None without constraints."""

    points: np.ndarray  # (M, D)
    mean: np.ndarray  # (M,)
    var: np.ndarray  # (M,)
    log_ei: np.ndarray  # (M,)
    log_cost: np.ndarray | None  # (M,)
    log_pf: np.ndarray | None = None  # (M,)

    def values(self, cost_exponent: float) -> np.ndarray:
        """``log EI [+ log PF] - cost_exponent * log c`` (M,), as :class:`.ei.LogEIPerCost`."""
        out: np.ndarray = self.log_ei if self.log_pf is None else self.log_ei + self.log_pf
        if self.log_cost is None or cost_exponent == 0.0:
            return out
        out = out - cost_exponent * self.log_cost
        return out

    def pf(self) -> np.ndarray | None:  # (M,)
        return None if self.log_pf is None else np.exp(self.log_pf)

    def cost(self) -> np.ndarray:  # (M,)
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
    """The :class:`Screen` of ``points``: one prediction of each model."""
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
