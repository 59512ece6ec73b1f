"""Lambda_h of first actions under a model (:func:`scorer`), and the choice between the
rollout's finalists on blocks of draws (:func:`decide`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import stdtrit

from optuna_costbo._numerics.acquisition.rollout_values import rollout_values
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.gp.model import GPModel


Scorer = Callable[[np.ndarray], np.ndarray]  # normals (N, max(h-1, 1)) -> values (B,)


def scorer(
    model: GPModel,
    first: np.ndarray,  # (B, D) first actions
    inner: np.ndarray,  # (M, D) inner candidates
    mean_inner: np.ndarray,  # (M,) posterior mean at the inner candidates
    best: float,
    tau: float,
    cost: CostModel,
    horizon: int,
    cost_exponent: float = 1.0,
    *,
    rate: bool,
    last_overruns: bool,
    feasibility: Feasibility | None = None,
    pf_inner: np.ndarray | None = None,  # (M,) the inner candidates' PF, if known
) -> Scorer:
    """:func:`.rollout_values.rollout_values` of the first actions, with ``first`` and ``inner``
    as the action set, as a function of the draws: posterior and costs computed once."""
    points = np.vstack([first, inner])  # (P, D)
    feasible = None  # (P,)
    if feasibility is not None:
        pf_rest = pf_inner if pf_inner is not None else feasibility.pf(inner)
        feasible = np.concatenate([feasibility.pf(first), pf_rest])
    B = first.shape[0]
    mean = np.concatenate([model.predict(first)[0], mean_inner])  # (P,)
    cov = model.posterior_cov(points)  # (P, P)
    noise_var = model.hyper.noise_var * model.y_std**2
    pair_fn = cost.pair_cost
    costs = cost.cost(points) if pair_fn is None else None  # (P,)
    first_cost = cost.cost(first) if pair_fn is not None else None  # (B,)
    rows: dict[int, np.ndarray] = {}

    def pair_cost(idx: np.ndarray) -> np.ndarray:  # (k,) -> (k, P)
        assert pair_fn is not None
        missing = [int(i) for i in idx if int(i) not in rows]
        if missing:
            block = np.asarray(pair_fn(points[missing], points), dtype=float)
            rows.update(zip(missing, block, strict=True))
        return np.stack([rows[int(i)] for i in idx])

    def score(normals: np.ndarray) -> np.ndarray:  # (N, max(h-1, 1)) -> (B,)
        return rollout_values(
            mean, cov, noise_var, best, B, costs, tau, horizon, normals,
            pair_cost=pair_cost if pair_fn is not None else None, first_cost=first_cost,
            rate=rate, last_overruns=last_overruns, cost_exponent=cost_exponent, feasible=feasible,
        )  # fmt: skip

    return score


# NOTE: a rival is clearly worse than the leader when their mean difference over the blocks
# exceeds the one-sided 99% Student-t quantile times its standard error, as good when that
# interval lies within 1% of the leader's value.
_CONFIDENCE = 0.99
_SAME = 0.01


def decide(
    score: Scorer,
    normals: np.ndarray,  # (K * N, max(h-1, 1))
    n_blocks: int,
    tie_key: np.ndarray,  # (F,)
) -> tuple[int, float]:
    """The finalist to choose and its mean value: finalists scored on consecutive blocks of
    ``normals`` until every rival is clearly worse than the leader or as good, then the largest
    ``tie_key`` (a value independent of the draws) among the leader and those as good.

    NOTE: blocks of one scrambled sequence are not independent replicates; their spread
    overstates the error, so both verdicts are conservative. -inf values are never chosen
    while a finite one exists.
    """
    size = len(normals) // n_blocks
    blocks: list[np.ndarray] = []  # each (F,)
    tied = np.zeros(len(tie_key), dtype=bool)  # rivals not clearly worse than the leader
    for k in range(n_blocks):
        blocks.append(score(normals[k * size : (k + 1) * size]))
        values = np.array(blocks)  # (k+1, F)
        mean = values.mean(axis=0)  # (F,)
        lead = int(np.argmax(mean))
        tied = np.zeros(len(mean), dtype=bool)
        if len(blocks) < 2 or not np.isfinite(mean[lead]):
            continue
        rivals = np.isfinite(mean)
        rivals[lead] = False
        diff = values[:, lead : lead + 1] - values[:, rivals]  # (k+1, r)
        gap = diff.mean(axis=0)  # (r,)
        # stdtrit: scipy.stats.t.ppf without its per-call overhead.
        half = float(stdtrit(len(blocks) - 1, _CONFIDENCE)) * (
            diff.std(axis=0, ddof=1) / np.sqrt(len(blocks))
        )  # (r,) half-width of the interval
        worse = gap > half
        same = np.abs(gap) + half <= _SAME * abs(float(mean[lead]))
        tied[rivals] = ~worse
        if np.all(worse | same):
            break
    mean = np.array(blocks).mean(axis=0)
    lead = int(np.argmax(mean))
    if not tied.any():
        return lead, float(mean[lead])
    candidates = np.flatnonzero(tied | (np.arange(len(mean)) == lead))
    pick = int(candidates[np.argmax(tie_key[candidates])])
    return pick, float(mean[pick])
