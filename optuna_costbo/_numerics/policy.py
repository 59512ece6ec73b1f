"""One suggestion of the cost-aware BO policy, from encoded data to a point of the box.

This is the numerical half of the sampler: it fits the objective model, chooses and fits the
cost model (once, here), and lets the acquisition strategy choose a point. It knows nothing
of Optuna.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import functools

import numpy as np
from threadpoolctl import ThreadpoolController

from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.fit import fit_gp
from optuna_costbo._numerics.fit import model_subset
from optuna_costbo._numerics.gp import GPModel
from optuna_costbo._numerics.hyperparams import GPHyperparams
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.strategies import EI
from optuna_costbo._numerics.strategies import AcquisitionContext
from optuna_costbo._numerics.strategies import AcquisitionStrategy


__all__ = [
    "CostData",
    "Proposal",
    "ProposalRequest",
    "WarmStart",
    "finite_values",
    "propose",
    "working_set",
]

# NOTE: noise floor of the log-cost model (standardized units): measured costs are noisy.
_COST_MIN_NOISE_VAR = 1e-4

#: Hyperparameters are fitted on at most this many observations (see :func:`.fit.fit_subset`).
MAX_FIT_POINTS = 256
#: The models are conditioned on at most this many observations (see :func:`working_set`).
MAX_MODEL_POINTS = 2000
#: How the working set's rest is chosen: "spread" (farthest first) or "random".
WORKING_SET_REST = "spread"
#: Past REFIT_FROM observations, hyperparameters are optimized again once the data have grown
#: by REFIT_GROWTH since the last optimization, and kept in between.
REFIT_FROM = 128
REFIT_GROWTH = 0.05


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
        y: Their objective values, as a minimization problem, shape (n,).
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


@functools.cache
def _threadpools() -> ThreadpoolController:
    return ThreadpoolController()


def _fit(
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    warm: GPHyperparams | None,
    n_fits: int,
    rng: np.random.Generator,
    min_noise_var: float,
    fixed_noise: bool = False,
    last_n: int = 0,
) -> tuple[GPModel, bool]:
    """The fitted model, and whether its hyperparameters were optimized (not kept)."""
    # NOTE: a warm start from the previous suggestion's hyperparameters makes most fits a few
    # L-BFGS-B iterations; every 5th fit (and whenever there is no warm start) adds random
    # restarts so the fit can leave a poor basin as data accumulate.
    n_restarts = 3 if warm is None or n_fits % 5 == 0 else 0
    if warm is not None and warm.lengthscales.shape != (X.shape[1],):
        warm = None
        n_restarts = 3
    # NOTE: refit schedule. Past REFIT_FROM observations one more point hardly moves the
    # hyperparameters, and optimizing them is most of a suggestion's time: they are kept
    # until the data have grown by REFIT_GROWTH (then optimized from the kept ones, with the
    # restarts of every 5th fit). benchmarks/suggest_speed.py measures the effect, and
    # benchmarks/scale_quality.py what it costs (fits on 128 observations, measured first,
    # cost quality on a 5-D problem at 130-300 trials; on 256, see docs/benchmarks.md).
    n = X.shape[0]
    optimize = warm is None or n <= REFIT_FROM or n >= last_n * (1.0 + REFIT_GROWTH)
    model = fit_gp(
        X,
        y,
        rng=rng,
        n_restarts=n_restarts,
        min_noise_var=min_noise_var,
        fixed_noise=fixed_noise,
        warm_start=warm,
        max_points=MAX_FIT_POINTS,
        optimize=optimize,
        condition_on=working_set(X, y, rng),
    )
    return model, optimize


def working_set(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """Indices of the observations a model is conditioned on, (m,): None (all of them) up to
    MAX_MODEL_POINTS, then the working set of :func:`.fit.model_subset` (the best, the
    newest, the rest spread out). Hyperparameters are still fitted on all of them (on
    :func:`.fit.fit_subset`).

    NOTE(scale): past a few thousand observations the Cholesky factorization (O(n^3)) and
    every prediction (O(n) per point) dominate a suggestion: 35 s at 10,000 trials (D = 5)
    before this bound. benchmarks/suggest_speed.py measures the time with it and
    benchmarks/scale_quality.py (--model-points) what a bound costs in quality.
    """
    if len(y) <= MAX_MODEL_POINTS:
        return None
    spread = X if WORKING_SET_REST == "spread" else None
    keep: np.ndarray = model_subset(y, MAX_MODEL_POINTS, rng, spread)  # (m,)
    return keep


def finite_values(y: np.ndarray) -> np.ndarray:
    """Replace +-inf objective values by the largest / smallest finite ones."""
    finite = np.isfinite(y)
    if finite.all():
        return y
    if not finite.any():
        return np.zeros_like(y)
    out: np.ndarray = np.clip(y, y[finite].min(), y[finite].max())
    return out


def _cost_model(
    request: ProposalRequest, warm: WarmStart, rng: np.random.Generator
) -> tuple[CostModel | None, int]:
    """The one place that decides between a known cost and a fitted one (None: no costs),
    and the observations when the fitted one's hyperparameters were last optimized."""
    if request.known_cost is not None:
        return request.known_cost, warm.cost_n
    data = request.cost_data
    if data is None or len(data.costs) == 0:
        return None, warm.cost_n
    model, optimized = _fit(
        data.X,
        np.log(data.costs),
        warm.cost,
        warm.n_fits,
        rng,
        _COST_MIN_NOISE_VAR,
        last_n=warm.cost_n,
    )
    return FittedLogCost(model), len(data.costs) if optimized else warm.cost_n


def propose(
    request: ProposalRequest,
    acquisition: AcquisitionStrategy,
    rng: np.random.Generator,
    *,
    reuse: Proposal | None = None,
) -> Proposal:
    """Fit the models and let ``acquisition`` choose a point.

    Args:
        request: The encoded data and the budget state.
        acquisition: The acquisition strategy (see :mod:`.registry`).
        rng: Source of randomness for model fits and the optimizer.
        reuse: An earlier proposal of the same suggestion (before a parallel clash): its
            fitted models are reused when ``request`` has the same observations.

    Returns:
        The proposal, with the fitted models and the warm start for next time.
    """
    # NOTE: the matrices here are small (n <= a few hundred): multi-threaded BLAS only adds
    # thread start-up and, on a busy machine, spinning threads that made a 0.1 ms Cholesky
    # take 100 ms (measured on 2 cores). One thread is both faster and predictable.
    with _threadpools().limit(limits=1, user_api="blas"):
        return _propose(request, acquisition, rng, reuse)


def _same_data(proposal: Proposal, X: np.ndarray, y: np.ndarray, costs: CostData | None) -> bool:
    """Whether ``proposal``'s models were fitted to exactly these observations."""
    observed, before = proposal.observed, proposal.cost_data
    if observed is None or not (np.array_equal(observed[0], X) and np.array_equal(observed[1], y)):
        return False
    if before is None or costs is None:
        return before is costs
    return np.array_equal(before.X, costs.X) and np.array_equal(before.costs, costs.costs)


def _propose(
    request: ProposalRequest,
    acquisition: AcquisitionStrategy,
    rng: np.random.Generator,
    reuse: Proposal | None,
) -> Proposal:
    X = request.X  # (n, D)
    y = finite_values(np.asarray(request.y, dtype=float))  # (n,)
    warm = request.warm or WarmStart()
    if (
        reuse is not None
        and reuse.fitted is not None
        and _same_data(reuse, X, y, request.cost_data)
    ):
        # NOTE: a proposal repeated after a parallel clash: the data are the same, so are the
        # fits; only the pending points (the other trial's point) changed.
        fitted, cost, new_warm = reuse.fitted, reuse.cost_model, reuse.warm
    else:
        fitted, optimized = _fit(
            X,
            y,
            warm.objective,
            warm.n_fits,
            rng,
            request.min_noise_var,
            request.deterministic,
            last_n=warm.objective_n,
        )
        cost, cost_n = (
            _cost_model(request, warm, rng) if acquisition.needs_cost else (None, warm.cost_n)
        )
        fitted_cost = cost.model if isinstance(cost, FittedLogCost) else None
        new_warm = WarmStart(
            objective=fitted.hyper,
            cost=fitted_cost.hyper if fitted_cost is not None else warm.cost,
            n_fits=warm.n_fits + 1,
            objective_n=len(y) if optimized else warm.objective_n,
            cost_n=cost_n,
        )
    # NOTE: trials still running are pending points: a kriging believer conditions the model
    # on its own mean there (hyperparameters fixed), which takes their EI to about zero, so
    # parallel workers do not propose the same point.
    model = fitted
    if request.X_running is not None:
        for x_r in request.X_running:
            model = model.condition_on(x_r, float(model.predict(x_r[None, :])[0][0]))
    if request.known_cost is not None and acquisition.needs_cost:
        cost = request.known_cost  # the current state (moving costs) may have changed
    ctx = AcquisitionContext(
        codec=request.codec,
        model=model,
        best=float(np.min(y)),
        cost=cost,
        rng=rng,
        remaining=request.remaining,
        budget=request.budget,
        starts=X[np.argsort(y)[: min(3, len(y))]],  # (<=3, D)
        X_running=request.X_running,
        evaluated=request.evaluated,
    )
    # Without costs yet (no finished trial priced, no known cost) every strategy is EI.
    strategy = acquisition if cost is not None or not acquisition.needs_cost else EI()
    choice = strategy.choose(ctx)
    return Proposal(
        choice.z,
        choice.value,
        model,
        cost,
        new_warm,
        choice.message,
        fitted,
        request.cost_data,
        (X, y),
    )
