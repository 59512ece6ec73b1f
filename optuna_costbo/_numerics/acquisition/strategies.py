"""Acquisition strategies: how one suggestion chooses a point, one small object each.

A strategy has a ``name`` (what users pass as ``acquisition=``), says whether it needs a cost
model (``needs_cost``), is built from the user's options (``from_options``) and chooses a
point of the box from an :class:`AcquisitionContext` (``choose``). The context carries the
fitted objective model (conditioned on the running trials), the cost model if the strategy
needs one, the budget state, and a maximizer of ``log EI - cost_exponent * log c``.

The myopic strategies live here; the rollout lives in :mod:`.rollout_acquisition`; the
registry of names is :mod:`.registry`. Adding an acquisition is one new class satisfying
:class:`AcquisitionStrategy`, one line in the registry and its tests.

This module imports only numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import ClassVar
from typing import Protocol

import numpy as np

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.ei import cool_exponent
from optuna_costbo._numerics.acquisition.screening import Screen
from optuna_costbo._numerics.acquisition.screening import screen
from optuna_costbo._numerics.budget_fit import BudgetFit
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.optimize import default_n_candidates
from optuna_costbo._numerics.optimize import maximize_acquisition
from optuna_costbo._numerics.optimize import maximize_each
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.search_space import rows_among


__all__ = [
    "EI",
    "AcquisitionContext",
    "AcquisitionOptions",
    "AcquisitionStrategy",
    "Choice",
    "EICool",
    "EIPerCost",
    "excluded_rows",
]


EXPONENT_TOL = 1e-9
"""Cost exponents closer than this are maximized once (:meth:`AcquisitionContext.maximize_each`):
the values differ by a factor c^1e-9 at most, below L-BFGS-B's own tolerance."""


@dataclass(frozen=True)
class AcquisitionOptions:
    """The user's acquisition settings, handed to every strategy's ``from_options``.

    Attributes:
        horizon: Rollout steps h >= 1.
        n_samples: Quasi-Monte Carlo trajectories per rollout value.
    """

    horizon: int = 2
    n_samples: int = 64


@dataclass(frozen=True)
class Choice:
    """The point a strategy chose, its acquisition value and a message for the user's log."""

    z: np.ndarray  # (D,)
    value: float
    message: str | None = None


@dataclass(frozen=True)
class AcquisitionContext:
    """Everything a strategy may use to choose one point.

    Attributes:
        codec: The search space codec.
        model: The objective model (minimization), conditioned on the running trials.
        best: The incumbent, the smallest observed objective value (of a feasible one, with
            constraints; ``None`` while none is feasible).
        cost: The cost model, or ``None`` (strategies that do not need one, or no costs yet).
        rng: Source of randomness.
        remaining: Remaining budget (budget minus spent).
        budget: Total budget.
        starts: Points that always start a maximizer run (the best observed ones), (k, D).
        X_running: Encoded points of the other running trials, (r, D), or ``None``.
        evaluated: Encoded points that must not be proposed again, (k, D), or ``None``.
        feasibility: The constraints' probability of feasibility, or ``None``: every
            acquisition is weighted by it.
    """

    codec: BoxCodec
    model: GPModel
    best: float | None
    cost: CostModel | None
    rng: np.random.Generator
    remaining: float
    budget: float
    starts: np.ndarray  # (k, D)
    X_running: np.ndarray | None = None  # (r, D)
    evaluated: np.ndarray | None = None  # (k, D)
    feasibility: Feasibility | None = None
    maximized: dict[float, tuple[np.ndarray, float]] = field(
        default_factory=dict, compare=False, repr=False
    )  # cost exponent -> the last maximize() result, for best_rate

    @property
    def budget_fit(self) -> BudgetFit | None:
        """Under a hard budget, whether a trial's cost fits the budget left (else None)."""
        return None if self.feasibility is None else self.feasibility.budget

    def excluded(self, Z: np.ndarray) -> np.ndarray:
        """Which rows of Z (m, D) must not be proposed: evaluated points, and under a hard
        budget the points that do not fit it, (m,) bool.

        Legal points are exact fixed points of the codec, so a configuration that a trial
        already has encodes to exactly these bytes.
        """
        return excluded_rows(Z, self.evaluated, self.budget_fit)

    def _exclusion(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """:meth:`excluded`, or None when nothing is excluded (no evaluated point, soft)."""
        has_evaluated = self.evaluated is not None and len(self.evaluated) > 0
        return self.excluded if has_evaluated or self.budget_fit is not None else None

    def reserved(self) -> float:
        """Predicted cost of the running trials, not yet spent but committed."""
        if self.cost is None or self.X_running is None or len(self.X_running) == 0:
            return 0.0
        return float(np.sum(self.cost.cost(self.X_running)))

    def screen(self, n_points: int | None = None) -> Screen:
        """A :class:`.screening.Screen` of ``n_points`` scrambled Sobol points (default
        :func:`.optimize.default_n_candidates`), to share between several maximizations."""
        n = default_n_candidates(self.codec.dim) if n_points is None else n_points
        points = self.codec.sobol_points(n, seed=int(self.rng.integers(2**31)))  # (n, D)
        return screen(points, self.model, self.best, self.cost, self.feasibility)

    def maximize(
        self, cost_exponent: float, screened: Screen | None = None
    ) -> tuple[np.ndarray, float]:
        """Maximize ``log EI - cost_exponent * log c`` over the legal points: ``(z (D,), value)``.

        A cost exponent of 0 (or no cost model) is log EI. ``screened``: start from a screen
        made by :meth:`screen` (shared by several maximizations) instead of one of its own.
        """
        uses_cost = cost_exponent != 0.0 and self.cost is not None
        acq = LogEIPerCost(
            self.model,
            self.best,
            cost_model=self.cost if uses_cost else None,
            cost_exponent=cost_exponent if uses_cost else 0.0,
            feasibility=self.feasibility,
        )
        extra = self.starts
        max_evals = None
        if uses_cost:
            assert self.cost is not None
            # NOTE: with a moving cost the cheap moves are next to the current point, where EI
            # per unit cost may peak although neither the screening nor the best points lead
            # there.
            if self.cost.origin is not None:
                extra = np.vstack([self.starts, self.cost.origin[None]])
            max_evals = self.cost.max_evals
        self.maximized[cost_exponent] = out = maximize_acquisition(
            acq.value_and_grad,
            self.codec,
            self.rng,
            extra_starts=extra,
            fun=acq,
            max_evals=max_evals,
            exclude=self._exclusion(),
            screened=None
            if screened is None
            else (screened.points, screened.values(cost_exponent if uses_cost else 0.0)),
        )
        return out

    def maximize_each(
        self, cost_exponents: Sequence[float], screened: Screen
    ) -> tuple[np.ndarray, np.ndarray]:
        """Maximize ``log EI - e * log c`` for each ``e`` of ``cost_exponents``, all from one
        screen and in one batch of L-BFGS-B runs (:func:`.optimize.maximize_each`): the maximizers
        (K, D) and their values (K,). As :meth:`maximize` with ``screened`` for each exponent
        (tests/numerics/acquisition/test_screening.py), except that every run starts from the
        cost's origin, if any, and obeys the cost's evaluation cap.
        """
        uses_cost = self.cost is not None and any(e != 0.0 for e in cost_exponents)
        asked = np.array([e if uses_cost else 0.0 for e in cost_exponents])  # (K,)
        # NOTE: exponents within EXPONENT_TOL of one another are one maximization (EI-cool's
        # alpha is exactly 1 without a budget, where it is EIpu): (U,) distinct, and for each
        # asked exponent the index of its distinct one.
        exps, row_of = _distinct(asked)
        cost = self.cost if uses_cost else None
        every = LogEIPerCost(
            self.model,
            self.best,
            cost_model=cost,
            cost_exponent=exps,  # (U,), checked once
            feasibility=self.feasibility,
        )

        def acquisition(which: np.ndarray) -> LogEIPerCost:  # (m,) the exponent of each row
            return every.for_rows(which)

        def fun_and_grad(Z: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return acquisition(which).value_and_grad(Z)

        def fun(Z: np.ndarray, which: np.ndarray) -> np.ndarray:
            return acquisition(which)(Z)

        extra, max_evals = self.starts, None
        if cost is not None:
            if cost.origin is not None:
                extra = np.vstack([self.starts, cost.origin[None]])
            max_evals = cost.max_evals
        values = np.stack([screened.values(e) for e in exps], axis=1)  # (M, U)
        Z, best_values = maximize_each(
            fun_and_grad,
            fun,
            self.codec,
            (screened.points, values),
            extra_starts=extra,
            max_evals=max_evals,
            exclude=self._exclusion(),
        )  # (U, D), (U,)
        Z, best_values = Z[row_of], best_values[row_of]  # (K, D), (K,)
        for k, e in enumerate(asked):
            self.maximized[float(e)] = (Z[k], float(best_values[k]))
        return Z, best_values

    def best_log_rate(self) -> float | None:
        """The largest log(EI / c) over the legal points: what the next trial's improvement
        is worth per unit of its predicted cost; None without a cost model. A maximization
        the strategy already made (EIpu's, the rollout's seeds) is reused."""
        if self.cost is None:
            return None
        done = self.maximized.get(1.0)
        return float(done[1]) if done is not None else float(self.maximize(1.0)[1])


def excluded_rows(
    Z: np.ndarray, evaluated: np.ndarray | None, fit: BudgetFit | None
) -> np.ndarray:
    """Which rows of Z (m, D) must not be proposed: rows of ``evaluated`` (k, D), and under a
    hard budget (``fit``) the points that do not fit it, (m,) bool."""
    bad = np.zeros(len(Z), dtype=bool) if evaluated is None else rows_among(Z, evaluated)
    if fit is not None:
        bad = bad | ~fit.fits(Z)
    return bad


class AcquisitionStrategy(Protocol):
    """One acquisition: a name, whether it needs a cost model, and how it chooses a point."""

    name: ClassVar[str]
    needs_cost: ClassVar[bool]
    uses_options: ClassVar[tuple[str, ...]]
    """The user options (fields of :class:`AcquisitionOptions`) the strategy reads."""

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> AcquisitionStrategy:
        """The strategy for the user's settings."""
        ...

    def choose(self, ctx: AcquisitionContext) -> Choice:
        """The point to evaluate next."""
        ...


class EI:
    """Expected improvement, maximized as log EI; ignores cost."""

    name: ClassVar[str] = "ei"
    needs_cost: ClassVar[bool] = False
    uses_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> EI:
        return cls()

    def choose(self, ctx: AcquisitionContext) -> Choice:
        return Choice(*ctx.maximize(0.0))


class EIPerCost:
    """EI per unit predicted cost, maximized as log EI - log c."""

    name: ClassVar[str] = "eipu"
    needs_cost: ClassVar[bool] = True
    uses_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> EIPerCost:
        return cls()

    def choose(self, ctx: AcquisitionContext) -> Choice:
        return Choice(*ctx.maximize(1.0))


class EICool:
    """EI / c^alpha with alpha = remaining / total budget: EIpu at the start, EI at the end.

    NOTE: EI-cool (Lee et al., "Cost-aware Bayesian optimization", 2020): the cost exponent
    cools from 1 to 0 as the budget is used up.
    """

    name: ClassVar[str] = "ei-cool"
    needs_cost: ClassVar[bool] = True
    uses_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> EICool:
        return cls()

    def choose(self, ctx: AcquisitionContext) -> Choice:
        return Choice(*ctx.maximize(cool_exponent(ctx.remaining, ctx.budget)))


def _distinct(exponents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct exponents of ``exponents`` (K,) in first-seen order (U,), each the first
    of those within :data:`EXPONENT_TOL` of it, and the index into them of each one (K,)."""
    kept: list[float] = []
    index = np.empty(len(exponents), dtype=int)  # (K,)
    for k, e in enumerate(exponents):
        near = [u for u, v in enumerate(kept) if abs(v - e) <= EXPONENT_TOL]
        if near:
            index[k] = near[0]
        else:
            index[k] = len(kept)
            kept.append(float(e))
    return np.array(kept), index
