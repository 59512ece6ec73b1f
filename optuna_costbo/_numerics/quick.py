"""The quick route: models on the last hyperparameters, the acquisition's one-step EI / c^e scored
once on uniform points and steps around the best ones; the best point no trial has returned."""

from __future__ import annotations

import numpy as np

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.models import Models
from optuna_costbo._numerics.models import build_models
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import Route
from optuna_costbo._numerics.search_space import rows_among


# NOTE(quick): local steps near the best points (as TPE's draws) matter once a basin is found.
QUICK_N_UNIFORM = 256
QUICK_N_LOCAL = 256
_LOCAL_SIGMA = 0.05
_N_BEST = 3
QUEUE = 8  # most points one quick suggestion ranks for the trials that follow (.effort)
_QUEUE_SPACING = 0.05


def candidates(
    request: ProposalRequest, rng: np.random.Generator, best_points: np.ndarray
) -> np.ndarray:
    """Legal uniform points, Gaussian steps around ``best_points`` (k, D) and their discrete
    neighbours (another choice of one categorical, an adjacent integer): (u + l + n, D)."""
    codec = request.codec
    uniform = codec.random_points(QUICK_N_UNIFORM, rng)  # (u, D)
    centers = best_points[rng.integers(len(best_points), size=QUICK_N_LOCAL)]  # (l, D)
    steps = centers + _LOCAL_SIGMA * rng.standard_normal(centers.shape)  # (l, D)
    local = codec.project(np.clip(steps, 0.0, 1.0))  # (l, D)
    # NOTE(quick): Gaussian steps leave a one-hot categorical where it was.
    neighbours, _ = codec.discrete_neighbors_many(best_points)  # (n, D)
    out: np.ndarray = np.vstack([uniform, local, neighbours])
    return out


def ranked(Z: np.ndarray, values: np.ndarray, k: int, spacing: float) -> np.ndarray:
    """Rows of the ``k`` best finite ``values`` of ``Z`` (m, D), each at least ``spacing``
    from those before it (greedy), best first: (<= k,)."""
    order = np.argsort(-values, kind="stable")  # (m,)
    order = order[np.isfinite(values[order])]
    chosen: list[int] = []
    for i in order:
        if len(chosen) == k:
            break
        if not chosen or np.min(np.linalg.norm(Z[chosen] - Z[i], axis=1)) >= spacing:
            chosen.append(int(i))
    return np.asarray(chosen, dtype=int)


QUICK = Route(quick=True)  # reusing the hyperparameters, nothing added to the costs


def quick_propose(
    request: ProposalRequest,
    rng: np.random.Generator,
    *,
    needs_cost: bool,
    exponent: float,
    route: Route = QUICK,
    models: Models | None = None,
) -> Proposal:
    """A proposal from the last hyperparameters and one look at candidates: log EI - ``exponent``
    log c (log EI without a cost model); ``warm`` changes only if the objective was fitted."""
    models = models or build_models(request, rng, needs_cost=needs_cost, route=route)
    cost, y = models.cost, models.y
    acq = LogEIPerCost(models.model, models.best, feasibility=models.feasibility)

    Z = candidates(request, rng, models.X[np.argsort(y)[: min(_N_BEST, len(y))]])  # (m, D)
    values = np.asarray(acq(Z), dtype=float)  # (m,)
    if cost is not None and exponent > 0.0:
        # NOTE(quick): log(c + overhead): the sampler's time is charged to every trial too.
        values = values - exponent * np.log(cost.cost(Z) + max(route.overhead, 0.0))
    values = np.where(np.isfinite(values), values, -np.inf)
    if request.evaluated is not None and len(request.evaluated) > 0:
        taken = rows_among(Z, request.evaluated)  # (m,)
        if not taken.all():
            values = np.where(taken, -np.inf, values)
    i = int(np.argmax(values))
    proposal = models.proposal(Choice(Z[i].copy(), float(values[i])), request)
    if request.constraints is None and request.overrun_risk is None:
        # NOTE(quick): the next best points, for the trials that follow while the data stay.
        rows = ranked(Z, values, QUEUE, _QUEUE_SPACING)  # (<= QUEUE,)
        proposal.queue = tuple((Z[j].copy(), float(values[j])) for j in rows if j != i)
    return proposal
