"""The proposal of a multi-objective study: a GP per objective, the point of largest
``log EHVI + log PF - e log c``; the first objective's models carry cost and constraints."""

from __future__ import annotations

from collections.abc import Callable
import dataclasses

import numpy as np

from optuna_costbo._numerics.acquisition.ehvi import LogEHVIPerCost
from optuna_costbo._numerics.acquisition.ei import cool_exponent
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.acquisition.strategies import excluded_rows
from optuna_costbo._numerics.models import Models
from optuna_costbo._numerics.optimize import Search
from optuna_costbo._numerics.optimize import maximize
from optuna_costbo._numerics.pareto import non_dominated_mask
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import WarmStart


def front_exponent(acquisition: AcquisitionStrategy, remaining: float, budget: float) -> float:
    """The cost exponent of ``acquisition``'s hypervolume form: 0 for ``ei``, 1 for ``eipu``,
    the cooled ``remaining / budget`` for the others (a rollout's myopic limit, EHVI-cool)."""
    if not acquisition.needs_cost:
        return 0.0
    if acquisition.name == "eipu":
        return 1.0
    return cool_exponent(remaining, budget)


def objective_requests(request: ProposalRequest) -> list[ProposalRequest]:
    """The request of each objective of ``request.Y`` (n, m): the first carries the cost and the
    constraints, the others their values and warm starts alone."""
    assert request.Y is not None
    Y, warm = request.Y, request.warm or WarmStart()
    return [dataclasses.replace(request, y=Y[:, 0], Y=None)] + [
        dataclasses.replace(
            request,
            y=Y[:, j],
            Y=None,
            warm=warm.others[j - 1] if len(warm.others) >= j else WarmStart(),
            constraints=None,
        )
        for j in range(1, Y.shape[1])
    ]


def propose_front(
    request: ProposalRequest, models: list[Models], rng: np.random.Generator, *, exponent: float
) -> Proposal:
    """The proposal for a request with ``Y`` (n, m), from each objective's models, carrying the
    first objective's."""
    first, others = models[0], models[1:]
    Y_fit = np.stack([m.y for m in models], axis=1)  # (n, m), infinities replaced
    feasible = np.ones(len(Y_fit), dtype=bool) if first.feasible is None else first.feasible
    observed = Y_fit[feasible]  # (k, m)
    starts = request.X[:0]  # (0, D)
    if len(observed):
        front = non_dominated_mask(observed)  # (k,)
        # The front's extremes (the best point of each objective) start the maximizer runs.
        best_each = np.unique(np.argmin(observed[front], axis=0))  # (<= m,)
        starts = request.X[feasible][front][best_each]  # (<= m, D)
    cost = first.cost if exponent != 0.0 else None
    acq = LogEHVIPerCost(
        [m.model for m in models],
        observed,
        cost_model=cost,
        cost_exponent=exponent if cost is not None else 0.0,
        feasibility=first.feasibility,
    )
    max_evals = None
    if cost is not None:
        if cost.origin is not None:  # a moving cost: the cheap moves are next to the origin
            starts = np.vstack([starts, cost.origin[None]])
        max_evals = cost.max_evals
    search = Search(
        lambda Z, _: acq.value_and_grad(Z),
        lambda Z, _: acq(Z),
        request.codec,
        extra_starts=starts,
        max_evals=max_evals,
        exclude=_exclusion(request, first),
    )
    Z, values = maximize(search, rng)
    z, value = Z[0], float(values[0])
    new_warm = dataclasses.replace(first.warm, others=tuple(m.warm for m in others))
    return Proposal(
        z=z,
        value=value,
        objective_model=first.model,
        cost_model=first.cost,
        warm=new_warm,
        fitted=first.fitted,
        cost_data=request.cost_data,
        observed=(first.X, first.y),
    )


def _exclusion(request: ProposalRequest, first: Models) -> Callable[[np.ndarray], np.ndarray]:
    """Excludes the evaluated points and, under a hard budget, what does not fit."""
    evaluated = request.evaluated
    fit = None if first.feasibility is None else first.feasibility.budget
    return lambda Z: excluded_rows(Z, evaluated, fit)
