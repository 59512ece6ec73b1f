"""The numerical layer's data types: :class:`ProposalRequest` in, :class:`Proposal` out."""

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


@dataclass(frozen=True)
class FitSchedule:
    """How the models are fitted as the data grow: past ``refit_from`` observations, refit
    only once they have grown by ``refit_growth``."""

    max_fit_points: int = 256  # hyperparameters fitted on at most this many observations
    max_model_points: int = 2000  # the models conditioned on at most this many
    refit_from: int = 128
    refit_growth: float = 0.05


@dataclass(frozen=True)
class Route:
    """How a suggestion is made: the full route or the quick one (:mod:`.quick`)."""

    quick: bool = False
    refit: bool = False  # quick route: refit the objective's hyperparameters, no restarts
    overhead: float = 0.0  # quick route: what a trial costs besides its objective, added


@dataclass
class WarmStart:
    """Hyperparameters of the last fits, reused as the first start of the next ones."""

    objective: GPHyperparams | None = None
    cost: GPHyperparams | None = None
    n_fits: int = 0
    objective_n: int = 0  # observations when the objective's were last optimized
    cost_n: int = 0
    constraints: tuple[GPHyperparams, ...] = ()
    others: tuple[WarmStart, ...] = ()  # the further objectives' models, multi-objective


@dataclass(frozen=True)
class CostData:
    """Observed costs for a fitted cost model."""

    X: np.ndarray  # (k, D) finished trials with a known cost
    costs: np.ndarray  # (k,) > 0


@dataclass(frozen=True)
class ProposalRequest:
    """What one suggestion is made from: observations to minimize, the budget state, the
    warm start; the optional fields are ``None`` where a study has no such thing."""

    codec: BoxCodec
    X: np.ndarray  # (n, D), n >= 1
    y: np.ndarray  # (n,) the (first) objective, minimized
    remaining: float  # budget minus spent, in cost units
    budget: float
    cost_data: CostData | None = None
    known_cost: KnownCost | None = None  # used instead of a fitted cost model
    X_running: np.ndarray | None = None  # (r, D) pending points, their cost reserved
    warm: WarmStart | None = None
    min_noise_var: float = 1e-6  # the objective's noise floor, standardized units
    deterministic: bool = False  # noise held at min_noise_var
    evaluated: np.ndarray | None = None  # (k, D) never proposed again while others remain
    schedule: FitSchedule = FitSchedule()
    y_running: np.ndarray | None = None  # (r,) imputed finals of running trials, NaN: none
    pruning: PruningStats | None = None  # expected costs count on pruning
    rate_needed: bool = False  # also find the largest EI per unit cost (a stopping rule's)
    constraints: np.ndarray | None = None  # (n, k) feasible: all <= 0; NaN where unknown
    y_lower: np.ndarray | None = None  # (n,) bounds of censored values, NaN where exact
    stopped: np.ndarray | None = None  # (n,) bool, trials a pruner stopped
    overrun_risk: float | None = None  # a hard budget's risk; None: soft
    labels: np.ndarray | None = None  # (n,) int, carried to name Proposal.recommended
    Y: np.ndarray | None = None  # (n, m), m >= 2: every objective, minimized


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
