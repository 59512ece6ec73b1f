"""One suggestion, from encoded data to a point of the box, as the sampler's :class:`Plan` says.

The numerical half of the sampler; it knows nothing of Optuna and decides nothing: the plan
names the acquisition as it runs, the route and whether a cost model is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass
import functools

import numpy as np
from threadpoolctl import ThreadpoolController

from optuna_costbo._numerics.acquisition.ei import log_ei
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.budget_fit import BudgetFit
from optuna_costbo._numerics.budget_fit import budget_fit
from optuna_costbo._numerics.models import Models
from optuna_costbo._numerics.models import build_models
from optuna_costbo._numerics.models import cost_model_of
from optuna_costbo._numerics.multi_objective import objective_requests
from optuna_costbo._numerics.multi_objective import propose_front
from optuna_costbo._numerics.optimize import Search
from optuna_costbo._numerics.optimize import maximize
from optuna_costbo._numerics.quick import quick_propose
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import Route
from optuna_costbo._numerics.search_space import rows_among


@functools.cache
def _threadpools() -> ThreadpoolController:
    return ThreadpoolController()


FULL = Route()
"""The full route."""


@dataclass(frozen=True)
class Plan:
    """How one suggestion is made, decided once by the sampler (``Suggester.plan``)."""

    acquisition: AcquisitionStrategy  # as it runs: EI before any cost is known
    route: Route = FULL
    needs_cost: bool = True  # fit (or take the known) cost model
    front_exponent: float = 0.0  # several objectives: c's exponent in EHVI / c^e


def needs_cost_model(
    acquisition: AcquisitionStrategy, request: ProposalRequest, route: Route
) -> bool:
    """Whether a cost model is needed: the acquisition uses one, a hard budget checks what fits,
    or, on the full route, a stopping rule reads the largest EI per unit cost."""
    return (
        acquisition.needs_cost
        or request.overrun_risk is not None
        or (request.rate_needed and not route.quick)
    )


def propose(
    request: ProposalRequest,
    plan: Plan,
    rng: np.random.Generator,
    *,
    reuse: Proposal | None = None,
) -> Proposal:
    """The point to evaluate next: the models fitted once, the plan's acquisition maximized,
    the hard budget's check. ``reuse``: this suggestion's proposal before a parallel clash,
    whose fits are kept when the data are the same."""
    # NOTE: the matrices are small; multi-threaded BLAS only adds thread start-up and spinning.
    with _threadpools().limit(limits=1, user_api="blas"):
        route = plan.route
        if request.Y is not None:  # several objectives: a model of each, the first's costs
            front: list[Models] = []
            for one in objective_requests(request):
                needs_cost = plan.needs_cost and not front
                front.append(build_models(one, rng, needs_cost=needs_cost, route=route))
            models = front[0]
            proposal = propose_front(request, front, rng, exponent=plan.front_exponent)
            return _within_budget(proposal, request, models.budget_fit, rng)
        models = build_models(
            request,
            rng,
            needs_cost=plan.needs_cost,
            route=route,
            reuse=None if route.quick else reuse,
        )
        if route.quick:
            e = plan.acquisition.exponent(request.remaining, request.budget)  # its one-step e
            proposal = quick_propose(
                request, rng, needs_cost=plan.needs_cost, exponent=e, route=route, models=models
            )
            return _within_budget(proposal, request, models.budget_fit, rng)
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
        choice = plan.acquisition.choose(ctx)
        rate = chosen = None
        if request.rate_needed and models.cost is not None:
            # The largest log(EI / c), from the choice's own maximization where it made one.
            done = ctx.maximized.get(1.0)
            rate = done[1] if done else float(maximize(ctx.search((1.0,)), rng)[1][0])
        if request.rate_needed and models.best is not None:
            # What the model expects of the chosen point, for the stopping rule's record.
            mean, var = models.model.predict(choice.z[None])  # (1,), (1,)
            chosen = float(log_ei(mean, var, models.best)[0])
        proposal = models.proposal(choice, request, rate, chosen)
        return _within_budget(proposal, request, models.budget_fit, rng)


def cost_known(request: ProposalRequest) -> bool:
    """Whether anything predicts a cost yet: a known cost, or a priced observation."""
    data = request.cost_data
    return request.known_cost is not None or (data is not None and len(data.costs) > 0)


def _within_budget(
    proposal: Proposal, request: ProposalRequest, fit: BudgetFit | None, rng: np.random.Generator
) -> Proposal:
    """Under a hard budget (``fit``), ``proposal`` if its point fits the budget left; else the
    point that fits best (the cheapest by the cost's quantile) if it fits; else ``proposal``
    marked ``over_budget``: no configuration fits, and the study is to stop."""
    if fit is None:
        return proposal
    if fit.fits(proposal.z[None])[0]:
        proposal.overrun_chance = 1.0 - float(fit.pf(proposal.z[None])[0])
        return proposal
    evaluated = request.evaluated
    search = Search(
        lambda Z, _: fit.margin(Z, return_grad=True),  # type: ignore[arg-type, return-value]
        lambda Z, _: fit.margin(Z)[0],
        request.codec,
        exclude=None
        if evaluated is None or len(evaluated) == 0
        else lambda Z: rows_among(Z, evaluated),
    )
    Z, margins = maximize(search, rng)
    z, margin = Z[0], margins[0]
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
    if not cost_known(request):
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
