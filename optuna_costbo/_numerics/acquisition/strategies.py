"""Acquisition strategies, one small object each, and the context they choose a point from; the
myopic ones (EI, EIpu, EI-cool) live here, the rollouts in :mod:`.rollout`."""

from __future__ import annotations

import abc
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
from optuna_costbo._numerics.optimize import Search
from optuna_costbo._numerics.optimize import default_n_candidates
from optuna_costbo._numerics.optimize import maximize
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.search_space import rows_among


# NOTE: cost exponents this close are maximized once: the values differ by a factor c^1e-9 at
# most, below L-BFGS-B's tolerance.
EXPONENT_TOL = 1e-9


@dataclass(frozen=True)
class AcquisitionOptions:
    """The user's acquisition settings: the rollout horizon h >= 1."""

    horizon: int = 2


@dataclass(frozen=True)
class Choice:
    """The point a strategy chose, its acquisition value and a message for the user's log."""

    z: np.ndarray  # (D,)
    value: float
    message: str | None = None


@dataclass(frozen=True)
class AcquisitionContext:
    """Everything a strategy may use: the objective model (conditioned on the running trials),
    the incumbent (None while nothing is feasible), the cost model, the budget, the best points
    as starts, the running and the evaluated points, and the feasibility weighting every value.
    """

    codec: BoxCodec
    model: GPModel
    best: float | None
    cost: CostModel | None
    rng: np.random.Generator
    remaining: float
    budget: float  # total; remaining is budget minus spent
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
        """Which rows of Z (m, D) must not be proposed, (m,) bool (legal points are exact fixed
        points of the codec, so an evaluated configuration encodes to exactly these bytes)."""
        return excluded_rows(Z, self.evaluated, self.budget_fit)

    def _exclusion(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """:meth:`excluded`, or None when nothing is excluded."""
        has_evaluated = self.evaluated is not None and len(self.evaluated) > 0
        return self.excluded if has_evaluated or self.budget_fit is not None else None

    def screen(self, n_points: int | None = None) -> Screen:
        """A :class:`.screening.Screen` of ``n_points`` scrambled Sobol points."""
        n = default_n_candidates(self.codec.dim) if n_points is None else n_points
        points = self.codec.sobol_points(n, seed=int(self.rng.integers(2**31)))  # (n, D)
        return screen(points, self.model, self.best, self.cost, self.feasibility)

    def _starts_and_cap(self, cost: CostModel | None) -> tuple[np.ndarray, int | None]:
        """The extra starts (k', D) and the evaluation cap of a maximization using ``cost``."""
        if cost is None or cost.origin is None:
            return self.starts, None if cost is None else cost.max_evals
        # NOTE: with a moving cost EI per unit cost may peak next to the current point, where
        # neither the screen nor the best points lead.
        return np.vstack([self.starts, cost.origin[None]]), cost.max_evals

    def search(self, cost_exponents: Sequence[float], screened: Screen | None = None) -> Search:
        """The maximization of ``log EI - e * log c`` for each exponent (K,), from ``screened``
        if given (a screen shared by several maximizations), else from a Latin hypercube."""
        uses_cost = self.cost is not None and any(e != 0.0 for e in cost_exponents)
        asked = np.array([e if uses_cost else 0.0 for e in cost_exponents])  # (K,)
        # Exponents within EXPONENT_TOL are one maximization (EI-cool's alpha is 1 without a
        # budget, where it is EIpu): (U,) distinct, and the index of each asked one.
        exps, row_of = _distinct(asked)
        cost = self.cost if uses_cost else None
        feasibility = self.feasibility
        every = LogEIPerCost(
            self.model, self.best, cost_model=cost, cost_exponent=exps, feasibility=feasibility
        )  # (U,) exponents, checked once

        def fun_and_grad(Z: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return every.for_rows(which).value_and_grad(Z)  # which (m,): each row's exponent

        def fun(Z: np.ndarray, which: np.ndarray) -> np.ndarray:
            return every.for_rows(which)(Z)

        extra, max_evals = self._starts_and_cap(cost)
        shared = None  # (M, D), (M, U)
        if screened is not None:
            shared = (screened.points, np.stack([screened.values(e) for e in exps], axis=1))
        return Search(
            fun_and_grad, fun, self.codec, screened=shared,
            extra_starts=extra, max_evals=max_evals, exclude=self._exclusion(), rows=row_of,
        )  # fmt: skip

    def record(
        self, cost_exponents: Sequence[float], Z: np.ndarray, values: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The maximizers Z (K, D) and values (K,) of :meth:`search`, kept for the rate."""
        for k, e in enumerate(cost_exponents):
            self.maximized[float(e)] = (Z[k], float(values[k]))
        return Z, values


def excluded_rows(
    Z: np.ndarray, evaluated: np.ndarray | None, fit: BudgetFit | None
) -> np.ndarray:
    """Rows of Z (m, D) among ``evaluated`` (k, D) or not fitting a hard budget: (m,) bool."""
    bad = np.zeros(len(Z), dtype=bool) if evaluated is None else rows_among(Z, evaluated)
    if fit is not None:
        bad = bad | ~fit.fits(Z)
    return bad


class AcquisitionStrategy(Protocol):
    """One acquisition: a name, whether it needs a cost model, and how it chooses a point."""

    name: ClassVar[str]
    needs_cost: ClassVar[bool]
    uses_options: ClassVar[tuple[str, ...]]  # the fields of AcquisitionOptions it reads

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> AcquisitionStrategy: ...

    def choose(self, ctx: AcquisitionContext) -> Choice: ...

    def exponent(self, remaining: float, budget: float) -> float: ...  # the quick route's e


class _Myopic(abc.ABC):
    """A one-step acquisition: ``log EI - e * log c`` maximized, ``e`` of its choosing."""

    name: ClassVar[str]
    needs_cost: ClassVar[bool] = True
    uses_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> _Myopic:
        return cls()

    @abc.abstractmethod
    def exponent(self, remaining: float, budget: float) -> float:
        """The cost exponent e of ``log EI - e log c`` (0: EI, 1: EIpu)."""

    def choose(self, ctx: AcquisitionContext) -> Choice:
        e = (self.exponent(ctx.remaining, ctx.budget),)
        Z, values = ctx.record(e, *maximize(ctx.search(e), ctx.rng))
        return Choice(Z[0], float(values[0]))


class EI(_Myopic):
    """Expected improvement, maximized as log EI; ignores cost."""

    name: ClassVar[str] = "ei"
    needs_cost: ClassVar[bool] = False

    def exponent(self, remaining: float, budget: float) -> float:
        return 0.0


class EIPerCost(_Myopic):
    """EI per unit predicted cost, maximized as log EI - log c."""

    name: ClassVar[str] = "eipu"

    def exponent(self, remaining: float, budget: float) -> float:
        return 1.0


class EICool(_Myopic):
    """EI / c^alpha, alpha = remaining / total budget (EI-cool, Lee et al. 2020)."""

    name: ClassVar[str] = "ei-cool"

    def exponent(self, remaining: float, budget: float) -> float:
        return cool_exponent(remaining, budget)


def _distinct(exponents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``exponents`` (U,) of (K,), first seen first, and each one's index (K,)."""
    kept: list[float] = []
    index = np.empty(len(exponents), dtype=int)  # (K,)
    for k, e in enumerate(exponents):
        near = [u for u, v in enumerate(kept) if abs(v - e) <= EXPONENT_TOL]
        if not near:
            kept.append(float(e))
        index[k] = near[0] if near else len(kept) - 1
    return np.array(kept), index
