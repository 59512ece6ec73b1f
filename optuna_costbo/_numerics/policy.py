"""One suggestion of the cost-aware BO policy, from encoded data to a point of the box.

This is the numerical half of the sampler; it knows nothing of Optuna. :func:`propose` is its
one entry: on the full route :func:`.models.build_models` fits the models and the acquisition
strategy chooses a point; the quick route is :func:`.quick.quick_propose`, with models from
the same function. Whether a cost model is needed is decided here, once, for both routes. The
data types are in :mod:`.request`.
"""

from __future__ import annotations

import functools

import numpy as np
from threadpoolctl import ThreadpoolController

from optuna_costbo._numerics.acquisition.ei import log_ei
from optuna_costbo._numerics.acquisition.strategies import EI
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.budget_fit import budget_fit
from optuna_costbo._numerics.models import build_models
from optuna_costbo._numerics.models import cost_model_of
from optuna_costbo._numerics.multi_objective import propose_front
from optuna_costbo._numerics.optimize import maximize_acquisition
from optuna_costbo._numerics.quick import quick_propose
from optuna_costbo._numerics.request import CostData
from optuna_costbo._numerics.request import FitSchedule
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import Route
from optuna_costbo._numerics.request import WarmStart
from optuna_costbo._numerics.search_space import rows_among


__all__ = [
    "CostData",
    "FitSchedule",
    "Proposal",
    "ProposalRequest",
    "Route",
    "WarmStart",
    "fits_budget",
    "needs_cost_model",
    "propose",
    "recommend",
]


@functools.cache
def _threadpools() -> ThreadpoolController:
    return ThreadpoolController()


FULL = Route()
"""The full route."""


def needs_cost_model(
    acquisition: AcquisitionStrategy, request: ProposalRequest, route: Route
) -> bool:
    """Whether the suggestion needs a cost model: the acquisition uses one, a hard budget
    checks what fits, or, on the full route, a stopping rule reads the largest EI per unit
    cost."""
    return (
        acquisition.needs_cost
        or request.overrun_risk is not None
        or (request.rate_needed and not route.quick)
    )


def propose(
    request: ProposalRequest,
    acquisition: AcquisitionStrategy,
    rng: np.random.Generator,
    *,
    route: Route = FULL,
    reuse: Proposal | None = None,
) -> Proposal:
    """The point to evaluate next, by ``route`` (the full one: fit the models and let
    ``acquisition`` choose).

    Args:
        request: The encoded data and the budget state.
        acquisition: The acquisition strategy (see :mod:`.acquisition.registry`).
        rng: Source of randomness for model fits and the optimizer.
        route: The full route (default) or the quick one.
        reuse: An earlier proposal of the same suggestion (before a parallel clash): its
            fitted models are reused when ``request`` has the same observations.

    Returns:
        The proposal, with the fitted models and the warm start for next time.
    """
    # NOTE: the matrices here are small (n <= a few hundred): multi-threaded BLAS only adds
    # thread start-up and, on a busy machine, spinning threads that made a 0.1 ms Cholesky
    # take 100 ms (measured on 2 cores). One thread is both faster and predictable.
    needs_cost = needs_cost_model(acquisition, request, route)
    with _threadpools().limit(limits=1, user_api="blas"):
        if request.Y is not None:
            proposal = propose_front(request, acquisition, rng, needs_cost=needs_cost, route=route)
        elif route.quick:
            proposal = quick_propose(request, rng, needs_cost=needs_cost, route=route)
        else:
            proposal = _full(request, acquisition, rng, needs_cost, reuse)
        return _within_budget(proposal, request, rng)


def _full(
    request: ProposalRequest,
    acquisition: AcquisitionStrategy,
    rng: np.random.Generator,
    needs_cost: bool,
    reuse: Proposal | None,
) -> Proposal:
    """The full route: fit the models, let the strategy choose."""
    models = build_models(request, rng, needs_cost=needs_cost, reuse=reuse)
    ctx = AcquisitionContext(
        codec=request.codec,
        model=models.model,
        best=models.best,
        cost=models.cost,
        rng=rng,
        remaining=request.remaining,
        budget=request.budget,
        starts=models.X[np.argsort(models.y)[: min(3, len(models.y))]],  # (<=3, D)
        X_running=request.X_running,
        evaluated=request.evaluated,
        feasibility=models.feasibility,
    )
    # Without costs yet (no finished trial priced, no known cost) every strategy is EI.
    strategy = acquisition if models.cost is not None or not acquisition.needs_cost else EI()
    choice = strategy.choose(ctx)
    rate = ctx.best_log_rate() if request.rate_needed else None
    chosen = None
    if request.rate_needed and models.best is not None:
        # What the model expects of the chosen point, for the stopping rule's record.
        mean, var = models.model.predict(choice.z[None])  # (1,), (1,)
        chosen = float(log_ei(mean, var, models.best)[0])
    return models.proposal(choice, request, rate, chosen)


def _within_budget(
    proposal: Proposal, request: ProposalRequest, rng: np.random.Generator
) -> Proposal:
    """Under a hard budget, ``proposal`` if its point fits the budget left; else the point
    that fits best (the cheapest by the cost's quantile) if it fits; else ``proposal`` marked
    ``over_budget``: no configuration fits, and the study is to stop."""
    cost = proposal.cost_model
    fit = None if cost is None else budget_fit(request, cost)
    if fit is None:
        return proposal
    if fit.fits(proposal.z[None])[0]:
        proposal.overrun_chance = 1.0 - float(fit.pf(proposal.z[None])[0])
        return proposal
    evaluated = request.evaluated
    z, margin = maximize_acquisition(
        lambda Z: fit.margin(Z, return_grad=True),  # type: ignore[arg-type, return-value]
        request.codec,
        rng,
        fun=lambda Z: fit.margin(Z)[0],
        exclude=None
        if evaluated is None or len(evaluated) == 0
        else (lambda Z: rows_among(Z, evaluated)),
    )
    if margin >= 0.0:
        proposal.z = z
        proposal.overrun_chance = 1.0 - float(fit.pf(z[None])[0])
        proposal.message = (
            f"the proposal's predicted cost does not fit the budget left ({fit.tau:.6g}); "
            "proposing the configuration that fits it best"
        )
        return proposal
    how = "exactly" if fit.exact else f"with probability {1.0 - fit.risk:.3g}"
    proposal.over_budget = (
        f"no configuration's cost fits the budget left ({max(fit.tau, 0.0):.6g}, less what the "
        f"running trials are predicted to spend) {how}"
    )
    return proposal


def fits_budget(request: ProposalRequest, Z: np.ndarray) -> np.ndarray | None:
    """Under a hard budget, which points of Z (m, D) fit the budget left, (m,) bool; None when
    nothing can tell (a soft budget, or no cost known yet). For the start-up design, whose
    points are chosen without a model: the cost model is fitted here, from a generator of its
    own, so the sampler's random stream is not touched."""
    if request.overrun_risk is None:
        return None
    if request.known_cost is None and (
        request.cost_data is None or len(request.cost_data.costs) == 0
    ):
        return None
    data = request.cost_data
    rng = np.random.default_rng(0 if data is None else len(data.costs))
    cost = cost_model_of(request, rng)
    fit = None if cost is None else budget_fit(request, cost)
    return None if fit is None else fit.fits(Z)


def recommend(request: ProposalRequest) -> int | None:
    """The row of ``request``'s observations with the best posterior mean of the objective
    (:meth:`.models.Models.recommended`), from a model fitted here with a generator of its own."""
    with _threadpools().limit(limits=1, user_api="blas"):
        models = build_models(request, np.random.default_rng(0), needs_cost=False)
        return models.recommended(request)
