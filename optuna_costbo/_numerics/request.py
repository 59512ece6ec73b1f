"""What one suggestion is made from and what it returns: the numerical layer's data types.

:class:`ProposalRequest` (encoded observations, costs, the budget state, the warm start and
the fit schedule) goes in; :class:`Proposal` (the chosen box point with the models behind it)
comes out, on both routes (:func:`.policy.propose`, :func:`.quick.quick_propose`).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np

from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.curves import PruningStats
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.search_space import BoxCodec


__all__ = ["CostData", "FitSchedule", "Proposal", "ProposalRequest", "Route", "WarmStart"]


@dataclass(frozen=True)
class FitSchedule:
    """How the models are fitted as the data grow.

    Attributes:
        max_fit_points: Hyperparameters are fitted on at most this many observations (see
            :func:`.gp.subsets.fit_subset`).
        max_model_points: The models are conditioned on at most this many observations (see
            :func:`working_set`).
        refit_from: Past this many observations, hyperparameters are optimized again only
            once the data have grown by ``refit_growth`` since the last optimization, and
            kept in between.
        refit_growth: See ``refit_from``.
    """

    max_fit_points: int = 256
    max_model_points: int = 2000
    refit_from: int = 128
    refit_growth: float = 0.05


@dataclass(frozen=True)
class Route:
    """How a suggestion is made: the full route (fit the models, the chosen acquisition) or
    the quick one (the last fitted hyperparameters, EI-cool on a candidate set).

    Attributes:
        quick: The quick route instead of the full one.
        refit: On the quick route, refit the objective model's hyperparameters from the last
            ones without restarts (a few L-BFGS-B iterations) instead of reusing them.
        overhead: What a trial costs the budget besides its objective (recent sampler seconds
            per trial), added to the quick route's predicted costs.
    """

    quick: bool = False
    refit: bool = False
    overhead: float = 0.0


@dataclass
class WarmStart:
    """Hyperparameters of the last fits, reused as the first start of the next ones.

    ``objective_n`` / ``cost_n``: observations when those hyperparameters were last optimized
    (see :func:`_fit`'s refit schedule).
    """

    objective: GPHyperparams | None = None
    cost: GPHyperparams | None = None
    n_fits: int = 0
    objective_n: int = 0
    cost_n: int = 0
    constraints: tuple[GPHyperparams, ...] = ()
    others: tuple[WarmStart, ...] = ()  # the further objectives' models, multi-objective


@dataclass(frozen=True)
class CostData:
    """Observed costs for a fitted cost model.

    Attributes:
        X: Encoded points of finished trials with a known cost, shape (k, D).
        costs: Their costs, strictly positive, shape (k,).
    """

    X: np.ndarray  # (k, D)
    costs: np.ndarray  # (k,)


@dataclass(frozen=True)
class ProposalRequest:
    """What one suggestion is made from.

    Attributes:
        codec: The search space codec.
        X: Encoded points of trials with objective values, shape (n, D), n >= 1.
        y: Their objective values, as a minimization problem, shape (n,); the first
            objective's in a multi-objective study.
        Y: Every objective's values, as minimization problems, shape (n, m), m >= 2, in a
            multi-objective study (:mod:`.multi_objective`); ``None`` with one objective.
        remaining: Remaining budget (budget minus spent), in cost units.
        budget: Total budget, in cost units.
        cost_data: Observed costs, for a fitted cost model.
        known_cost: A known cost function, used instead of a fitted cost model.
        X_running: Encoded points of trials still running, shape (r, D): they are pending
            points, and their predicted cost is reserved from the remaining budget.
        warm: Hyperparameters of the previous fits.
        min_noise_var: Noise variance floor of the objective model (standardized units).
        deterministic: Hold the objective model's noise at ``min_noise_var``.
        evaluated: Encoded points of the finished and running trials, shape (k, D): never
            proposed again while another legal point has a finite acquisition value.
        schedule: How the models are fitted as the data grow.
        y_running: What the running trials' reports say of their final values, shape (r,):
            an imputed final value (:func:`.curves.impute_finals`) where a running trial has
            reported, NaN where not (the model's own mean stands in, a kriging believer).
        pruning: How the study's pruner has treated its trials; ``None`` without pruning.
            The expected cost of a proposal then counts on it (:class:`.cost_model.PrunedCost`).
        rate_needed: Also find the largest EI per unit cost (a stopping rule reads it).
        constraints: The observations' constraint values (feasible: all <= 0), shape (n, k),
            NaN where not known; ``None`` without constraints. The acquisitions are then
            weighted by the probability of feasibility (:mod:`.feasibility`).
        y_lower: Lower bounds of censored observations (trials stopped early, see
            :mod:`.censored`), NaN where ``y`` is exact, shape (n,); ``None``: every value is
            taken as exact (a stopped trial at its imputed value).
        labels: The caller's name of each observation (the sampler's: trial numbers), shape (n,):
            carried, not read here, so that a proposal's ``recommended`` row can be named.
        overrun_risk: A hard budget: only configurations whose cost fits the budget left (less
            the running trials' predicted costs) with probability at least ``1 - risk`` are
            proposed (:mod:`.budget_fit`); ``None``: a soft budget.
        stopped: Which observations are trials a pruner stopped, shape (n,); the acquisitions
            are then weighted by the probability that a trial completes
            (:func:`.feasibility.with_completion`). ``None``: no trial was stopped.
    """

    codec: BoxCodec
    X: np.ndarray  # (n, D)
    y: np.ndarray  # (n,)
    remaining: float
    budget: float
    cost_data: CostData | None = None
    known_cost: KnownCost | None = None
    X_running: np.ndarray | None = None  # (r, D)
    warm: WarmStart | None = None
    min_noise_var: float = 1e-6
    deterministic: bool = False
    evaluated: np.ndarray | None = None  # (k, D)
    schedule: FitSchedule = FitSchedule()
    y_running: np.ndarray | None = None  # (r,)
    pruning: PruningStats | None = None
    rate_needed: bool = False
    constraints: np.ndarray | None = None  # (n, k)
    y_lower: np.ndarray | None = None  # (n,)
    stopped: np.ndarray | None = None  # (n,) bool
    overrun_risk: float | None = None
    labels: np.ndarray | None = None  # (n,) int
    Y: np.ndarray | None = None  # (n, m)


@dataclass
class Proposal:
    """The chosen box point and what led to it."""

    z: np.ndarray  # (D,)
    value: float
    objective_model: GPModel  # conditioned on the running trials
    cost_model: CostModel | None
    warm: WarmStart = field(default_factory=WarmStart)
    message: str | None = None  # something the caller should log
    fitted: GPModel | None = None  # the objective model before conditioning
    cost_data: CostData | None = None  # what the cost model was fitted to
    observed: tuple[np.ndarray, np.ndarray] | None = None  # the request's X (n, D), y (n,)
    best_log_rate: float | None = None  # max log(EI / c), when the request asked for it
    chosen_log_ei: float | None = None  # log EI at z, when the request asked for the rate
    over_budget: str | None = None  # under a hard budget: why no configuration fits
    overrun_chance: float | None = None  # under a hard budget: 1 - P(the cost at z fits)
    recommended: int | None = None  # row of X with the best posterior mean, Models.recommended
    queue: tuple[tuple[np.ndarray, float], ...] = ()  # quick route: next points (D,), values
