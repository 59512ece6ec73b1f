"""The quick route: a suggestion in a few milliseconds, for trials that take a few more.

When the sampler's own time is charged to a wall-clock budget and trials are cheap, a full
suggestion (fitting both GPs, maximizing with L-BFGS-B, rolling out) can cost more than the
trial it chooses. The quick route keeps the models and drops the search:

- the models are those of :func:`.models.build_models` on its quick route: the objective and
  log-cost GPs rebuilt with the last fitted hyperparameters (one Cholesky factorization each,
  no marginal-likelihood fit; the objective's refitted without restarts when asked, or fitted
  when there are none yet), the cost model chosen where the full route chooses it;
- the acquisition is EI-cool (``log EI - alpha log(c + overhead)``, alpha = remaining / total
  budget, overhead = what a trial costs besides the objective; log EI without a cost model),
  evaluated once, in one batch, on a candidate set: uniform points of the box plus Gaussian
  steps around the best observed points, made legal;
- the best candidate that no trial has is returned.

This module imports only numpy (and the package's numerical modules).
"""

from __future__ import annotations

import numpy as np

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.ei import cool_exponent
from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.models import build_models
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import Route
from optuna_costbo._numerics.search_space import rows_among


__all__ = [
    "QUEUE",
    "QUICK",
    "QUICK_N_LOCAL",
    "QUICK_N_UNIFORM",
    "candidates",
    "quick_propose",
    "ranked",
]

# NOTE(quick): candidate-set sizes. One batched prediction of 512 points on a 100-point GP is
# about 1 ms; the local steps (sigma 0.05 of the box around the 3 best points) matter more
# than more uniform points once the model has found a basin, as in TPE's draws near good
# points.
QUICK_N_UNIFORM = 256
QUICK_N_LOCAL = 256
_LOCAL_SIGMA = 0.05
_N_BEST = 3
QUEUE = 8
_QUEUE_SPACING = 0.05
"""Most points one quick suggestion ranks for the trials that follow (:mod:`.effort`)."""


def candidates(
    request: ProposalRequest, rng: np.random.Generator, best_points: np.ndarray
) -> np.ndarray:
    """Legal candidate points: uniform ones, Gaussian steps around ``best_points`` (k, D)
    and their discrete neighbours (another choice of one categorical, an adjacent integer).

    Returns:
        Legal box points, shape (QUICK_N_UNIFORM + QUICK_N_LOCAL + neighbours, D).
    """
    codec = request.codec
    uniform = codec.random_points(QUICK_N_UNIFORM, rng)  # (u, D)
    centers = best_points[rng.integers(len(best_points), size=QUICK_N_LOCAL)]  # (l, D)
    steps = centers + _LOCAL_SIGMA * rng.standard_normal(centers.shape)  # (l, D)
    local = codec.project(np.clip(steps, 0.0, 1.0))  # (l, D)
    # NOTE(quick): Gaussian steps leave a one-hot categorical where it was.
    neighbours = [codec.discrete_neighbors(z) for z in best_points]  # each (k_i, D)
    out: np.ndarray = np.vstack([uniform, local, *neighbours])
    return out


def ranked(Z: np.ndarray, values: np.ndarray, k: int, spacing: float) -> np.ndarray:
    """Rows of the ``k`` best finite ``values`` of ``Z`` (m, D), each at least ``spacing``
    from those before it (greedy), best first; shape (<= k,)."""
    order = np.argsort(-values, kind="stable")  # (m,)
    order = order[np.isfinite(values[order])]
    chosen: list[int] = []
    for i in order:
        if len(chosen) == k:
            break
        if not chosen or np.min(np.linalg.norm(Z[chosen] - Z[i], axis=1)) >= spacing:
            chosen.append(int(i))
    return np.asarray(chosen, dtype=int)


QUICK = Route(quick=True)
"""The quick route, reusing the hyperparameters, with nothing added to the costs."""


def quick_propose(
    request: ProposalRequest,
    rng: np.random.Generator,
    *,
    needs_cost: bool,
    route: Route = QUICK,
) -> Proposal:
    """A proposal from the last hyperparameters and one batched look at a candidate set.

    Args:
        request: The encoded data and the budget state (as for :func:`.policy.propose`).
        rng: Source of randomness (candidates; a first fit when there is no warm start).
        needs_cost: Whether a cost model is used; if not, plain log EI.
        route: The quick route: whether to refit the objective GP's hyperparameters,
            warm-started, without restarts (a few L-BFGS-B iterations) instead of reusing
            them, and the cost added to every predicted cost (``overhead``, in cost units:
            what a trial costs the budget besides the objective).

    Returns:
        The proposal; its ``warm`` is the request's, unless the objective model was fitted.
    """
    models = build_models(request, rng, needs_cost=needs_cost, route=route)
    cost, y = models.cost, models.y
    alpha = cool_exponent(request.remaining, request.budget) if cost is not None else 0.0
    acq = LogEIPerCost(models.model, models.best, feasibility=models.feasibility)

    Z = candidates(request, rng, models.X[np.argsort(y)[: min(_N_BEST, len(y))]])  # (m, D)
    values = np.asarray(acq(Z), dtype=float)  # (m,)
    if cost is not None and alpha > 0.0:
        # NOTE(quick): log(c + overhead): when the suggestion's time is charged, a trial of
        # 5 ms and one of 50 ms cost the budget 15 and 60 ms, not a factor of 10.
        values = values - alpha * np.log(cost.cost(Z) + max(route.overhead, 0.0))
    values = np.where(np.isfinite(values), values, -np.inf)
    if request.evaluated is not None and len(request.evaluated) > 0:
        taken = rows_among(Z, request.evaluated)  # (m,)
        if not taken.all():
            values = np.where(taken, -np.inf, values)
    i = int(np.argmax(values))
    proposal = models.proposal(Choice(Z[i].copy(), float(values[i])), request)
    if request.constraints is None and request.overrun_risk is None:
        # NOTE(quick): the next best points, spread apart, for the trials that follow while
        # the data stay as they were (the effort rule decides how many are taken).
        rows = ranked(Z, values, QUEUE, _QUEUE_SPACING)  # (<= QUEUE,)
        proposal.queue = tuple((Z[j].copy(), float(values[j])) for j in rows if j != i)
    return proposal
