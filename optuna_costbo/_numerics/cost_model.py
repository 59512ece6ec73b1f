"""Cost models: what the acquisitions know about the cost of a point. One protocol,
:class:`CostModel`; :class:`FittedLogCost` (a GP on log cost), :class:`KnownCost` (the user's)
and :class:`PrunedCost` (the expected cost under pruning); chosen in ``models._cost_model``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from typing import TypeGuard

import numpy as np
from scipy.special import ndtr

from optuna_costbo._numerics.curves import PruningStats
from optuna_costbo._numerics.gp.model import GPModel


#: The smallest cost any model sees or returns: log(cost) stays finite and EI / cost bounded.
COST_FLOOR: float = 1e-6

BoxCost = Callable[[np.ndarray], np.ndarray]
"""Known state-independent cost on box points: ``Z (m, D) -> (m,)``."""
BoxPairCost = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Known state-dependent cost: ``Z_from (k, D), Z_to (m, D) -> (k, m)``."""


class CostModel(Protocol):
    """What an acquisition needs to know about costs: ``pair_cost`` (a state-dependent cost's
    ``Z_from (k, D), Z_to (m, D) -> (k, m)``, else None), ``origin`` (its current state (D,)),
    ``max_evals`` (a cap on each L-BFGS-B phase's evaluations, for costly gradients)."""

    @property
    def pair_cost(self) -> BoxPairCost | None: ...

    @property
    def origin(self) -> np.ndarray | None: ...

    @property
    def max_evals(self) -> int | None: ...

    def log_cost(self, Z: np.ndarray) -> np.ndarray:
        """Predicted log(cost) (the posterior mean of a model of it), ``Z (m, D) -> (m,)``."""
        ...

    def log_cost_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`log_cost` (m,) and its gradient with respect to Z (m, D)."""
        ...

    def cost(self, Z: np.ndarray) -> np.ndarray:
        """Predicted cost of evaluating each point next, ``Z (m, D) -> (m,)``, >= COST_FLOOR."""
        ...


class FittedLogCost:
    """A GP on log(cost); the predicted cost is ``exp(mu)``, the posterior median."""

    pair_cost: BoxPairCost | None = None
    origin: np.ndarray | None = None
    max_evals: int | None = None

    def __init__(self, model: GPModel) -> None:
        self.model = model

    # NOTE: the posterior mean alone, without the variance's triangular solves.
    def log_cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        return self.model.predict_mean(Z)

    def log_cost_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.model.predict_mean(Z, True)  # (m,), (m, D)

    def cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        out: np.ndarray = np.exp(self.model.predict_mean(Z))
        return out


_FD_STEP = 1e-6
# NOTE: a known cost's gradient takes D calls of the user's function per point, and a snapped
# cost is piecewise constant (line searches stall at its steps): each phase is capped.
_KNOWN_COST_MAX_EVALS = 30
# NOTE: log cost per unit of the box above which a forward difference has caught a step of a
# piecewise-constant cost, not a slope: a factor e^50 across the whole box.
_JUMP_SLOPE = 50.0


@dataclass(frozen=True)
class KnownCost:
    """The user's cost function on box points (``fn``; ``pair_fn`` and ``origin`` for a
    state-dependent one), a model of log(cost) with forward-difference gradients."""

    fn: BoxCost
    pair_fn: BoxPairCost | None = None
    origin: np.ndarray | None = None
    max_evals: int | None = _KNOWN_COST_MAX_EVALS

    @property
    def pair_cost(self) -> BoxPairCost | None:
        return self.pair_fn

    def cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        """Cost of evaluating each point next."""
        out: np.ndarray = np.asarray(self.fn(Z), dtype=float)
        return out

    def log_cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        """log(cost), the cost floored at COST_FLOOR."""
        out: np.ndarray = np.log(np.maximum(self.cost(Z), COST_FLOOR))
        return out

    def log_cost_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """log(cost) (m,) and its forward-difference gradient (m, D)."""
        mean = self.log_cost(Z)  # (m,)
        m, D = Z.shape
        # NOTE: forward differences: D calls of the user's function per point, not 2D (the
        # value at the point is known). A difference steeper than _JUMP_SLOPE is a step of a
        # piecewise-constant cost (integer, stepped or snapped parameters) caught between the
        # two points; it counts as 0, the derivative almost everywhere.
        step = np.where(Z + _FD_STEP <= 1.0, _FD_STEP, -_FD_STEP)  # (m, D), inside the box
        shifted = np.repeat(Z[:, None, :], D, axis=1)  # (m, D, D)
        diag = np.arange(D)
        shifted[:, diag, diag] += step
        vals = self.log_cost(shifted.reshape(m * D, D)).reshape(m, D)
        dmean = (vals - mean[:, None]) / step  # (m, D)
        return mean, np.where(np.abs(dmean) > _JUMP_SLOPE, 0.0, dmean)


def reserved_cost(cost: CostModel | None, X_running: np.ndarray | None) -> float:
    """The predicted cost of the running trials X_running (r, D): committed, not yet spent."""
    if cost is None or X_running is None or len(X_running) == 0:
        return 0.0
    return float(np.sum(cost.cost(X_running)))


def shares_objective(cost: object, model: object) -> TypeGuard[PrunedCost]:
    """Whether ``cost`` is a :class:`PrunedCost` reading the very objective ``model``: an
    acquisition that just predicted ``model`` hands its prediction over (``log_cost(Z, told)``)."""
    return isinstance(cost, PrunedCost) and cost.objective is model


@dataclass(frozen=True)
class PrunedCost:
    """The expected cost under the study's pruning: a trial is stopped, after the fraction
    ``run_fraction`` of a full one, with the probability ``P(x) = Phi((mu(x) - q) / sigma(x))``
    that its value lands above ``q`` (``threshold``, the values' ``1 - pruned_share`` quantile),
    so ``c_eff(x) = c(x) (1 - P(x) (1 - run_fraction))``; read off the study's record."""

    base: CostModel
    objective: GPModel
    threshold: float
    pruned_share: float
    run_fraction: float

    @property
    def pair_cost(self) -> BoxPairCost | None:
        return self.base.pair_cost

    @property
    def origin(self) -> np.ndarray | None:
        return self.base.origin

    @property
    def max_evals(self) -> int | None:
        return self.base.max_evals

    def _log_factor(
        self, Z: np.ndarray, return_grad: bool, told: tuple[np.ndarray, ...] | None = None
    ) -> tuple[np.ndarray, ...]:
        """log(1 - P (1 - f)) at Z (m, D), and its gradient (m, D) if asked; ``told``: the
        objective's prediction at Z when the caller has just made it."""
        saved = 1.0 - self.run_fraction
        if not return_grad:
            mean, var = told[:2] if told is not None else self.objective.predict(Z)
            sd = np.sqrt(var)
            P = ndtr((mean - self.threshold) / sd)  # (m,)
            return (np.log1p(-saved * P),)
        mean, var, dmean, dvar = (
            told if told is not None else self.objective.predict(Z, return_grad=True)
        )
        sd = np.sqrt(var)
        u = (mean - self.threshold) / sd  # (m,)
        P = ndtr(u)
        du = dmean / sd[:, None] - (u / (2.0 * var))[:, None] * dvar  # (m, D)
        dP = (np.exp(-0.5 * u * u) / np.sqrt(2.0 * np.pi))[:, None] * du  # (m, D)
        factor = 1.0 - saved * P  # (m,)
        return np.log(factor), -saved * dP / factor[:, None]

    def log_cost(
        self, Z: np.ndarray, told: tuple[np.ndarray, ...] | None = None
    ) -> np.ndarray:  # (m, D) -> (m,)
        """The base model's log cost shifted by ``log(1 - P (1 - f))``."""
        out: np.ndarray = self.base.log_cost(Z) + self._log_factor(Z, False, told)[0]
        return out

    def log_cost_and_grad(
        self, Z: np.ndarray, told: tuple[np.ndarray, ...] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`log_cost` and its gradient (m, D); ``told``: ``(mean, var, dmean, dvar)``."""
        log_c, dlog_c = self.base.log_cost_and_grad(Z)  # (m,), (m, D)
        shift, dshift = self._log_factor(Z, True, told)
        return log_c + shift, dlog_c + dshift

    def cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        out: np.ndarray = np.maximum(
            self.base.cost(Z) * np.exp(self._log_factor(Z, False)[0]), COST_FLOOR
        )
        return out


def with_pruning(
    cost: CostModel | None, objective: GPModel, y: np.ndarray, stats: PruningStats | None
) -> CostModel | None:
    """The cost model of full trials, or its expected cost under the study's pruning (y (n,):
    the values whose quantile the pruner stops above)."""
    if cost is None or stats is None or stats.pruned_share <= 0.0:
        return cost
    threshold = float(np.quantile(y, 1.0 - stats.pruned_share))
    return PrunedCost(cost, objective, threshold, stats.pruned_share, stats.run_fraction)
