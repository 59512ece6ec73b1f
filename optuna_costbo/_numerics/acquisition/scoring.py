"""Lambda_h of first actions under a model: what a value is, and how finalists are decided.

:func:`.rollout_values.rollout_values` is the estimator on arrays (a mean vector and a joint
covariance over a finite action set); this module builds those arrays from the model and the
cost model (:func:`rollout_values_on`, :func:`scorer`), says what a value is
(:class:`Valuation`: the paper's, :data:`PAPER`, or the shipped one, :data:`RATE`) and decides
between the rollout's few finalists on blocks of draws (:func:`decide`).

This module imports only numpy and scipy.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtrit

from optuna_costbo._numerics.acquisition.rollout_values import rollout_values
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.gp.model import GPModel


__all__ = ["HARD_RATE", "PAPER", "RATE", "Valuation", "decide", "rollout_values_on", "scorer"]


@dataclass(frozen=True)
class Valuation:
    """What a rollout value is: the arguments of :func:`.rollout_values.rollout_values` that
    tell the paper's estimator (:data:`PAPER`) from the shipped one (:data:`RATE`).

    Attributes:
        noise_free: Condition fantasies on the latent value drawn (keeps the posterior's total
            variance); the paper's estimator conditions on it as a noisy observation.
        per_unit_cost: Value a first action per unit of the budget its trajectories consume.
        last_overruns: Roll out under the sampler's own budget rule (a trial starts while
            any budget is left) instead of the paper's (a step only where the budget left
            covers its predicted cost).
        best_prefix: With ``per_unit_cost``, the best rate over the trajectories' prefixes.
        final_factor: The few polished finalists are scored again on up to ``final_factor``
            blocks of ``n_samples`` fresh trajectories, which decide the choice (see
            :func:`decide`; 1: on the screening draws, as the paper).
    """

    noise_free: bool
    per_unit_cost: bool
    last_overruns: bool
    best_prefix: bool
    final_factor: int


PAPER = Valuation(
    noise_free=False, per_unit_cost=False, last_overruns=False, best_prefix=False, final_factor=1
)
"""The paper's Lambda_h (Lee et al., UAI 2021), as published."""

# NOTE: final_factor 8: the choice then agrees across QMC scramblings (0.90 -> 0.98 on mid-run
# states; docs/design-decisions.md, "The rollout's candidate sets and draws").
RATE = Valuation(
    noise_free=True, per_unit_cost=True, last_overruns=True, best_prefix=True, final_factor=8
)
"""The shipped rollout's value: per unit of budget consumed, best prefix, noise-free
fantasies, under the study's own budget rule."""

HARD_RATE = dataclasses.replace(RATE, last_overruns=False)
"""The shipped rollout's value under a hard budget: a step starts only when the budget left
covers its predicted cost."""

Scorer = Callable[[np.ndarray], np.ndarray]
"""``normals (N, max(h-1, 1)) -> values (B,)``: Lambda_h of fixed first actions on draws."""


def scorer(
    model: GPModel,
    first: np.ndarray,  # (B, D) first actions
    inner: np.ndarray,  # (M, D) inner candidates
    mean_inner: np.ndarray,  # (M,) posterior mean at the inner candidates
    best: float,
    tau: float,
    cost: CostModel,
    horizon: int,
    valuation: Valuation,
    cost_exponent: float = 1.0,
    *,
    feasibility: Feasibility | None = None,
    pf_inner: np.ndarray | None = None,  # (M,) the inner candidates' PF, if known
) -> Scorer:
    """Lambda_h of each first action, with ``first`` and ``inner`` as the action set, as a
    function of the draws: the action set's joint posterior and costs are computed once.
    With ``feasibility`` every improvement counts as much as its point is likely feasible
    (see :func:`.rollout_values.rollout_values`, ``feasible``)."""
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
            mean,
            cov,
            noise_var,
            best,
            B,
            costs,
            tau,
            horizon,
            normals,
            pair_cost=pair_cost if pair_fn is not None else None,
            first_cost=first_cost,
            noise_free=valuation.noise_free,
            per_unit_cost=valuation.per_unit_cost,
            last_overruns=valuation.last_overruns,
            best_prefix=valuation.best_prefix,
            cost_exponent=cost_exponent,
            feasible=feasible,
        )

    return score


def rollout_values_on(
    model: GPModel,
    first: np.ndarray,  # (B, D) first actions
    inner: np.ndarray,  # (M, D) inner candidates
    mean_inner: np.ndarray,  # (M,) posterior mean at the inner candidates
    best: float,
    tau: float,
    normals: np.ndarray,  # (N, max(h-1, 1))
    cost: CostModel,
    horizon: int,
    valuation: Valuation,
    cost_exponent: float = 1.0,
    *,
    feasibility: Feasibility | None = None,
    pf_inner: np.ndarray | None = None,  # (M,)
) -> np.ndarray:
    """Lambda_h of each first action, with ``first`` and ``inner`` as the action set: (B,)."""
    score = scorer(
        model, first, inner, mean_inner, best, tau, cost, horizon, valuation, cost_exponent,
        feasibility=feasibility, pf_inner=pf_inner,
    )  # fmt: skip
    return score(normals)


# NOTE: a leader is clear of a rival when their mean difference over the blocks exceeds the
# one-sided 99% Student-t quantile times its standard error (at least 2 blocks); a rival is as
# good when that interval lies within 1% of the leader's value, a difference no choice turns
# on (on the agreement states the finalists the draws flip between differ by ~0.1%).
_CONFIDENCE = 0.99
_SAME = 0.01


def decide(
    score: Scorer,
    normals: np.ndarray,  # (K * N, max(h-1, 1))
    n_blocks: int,
    tie_key: np.ndarray,  # (F,)
) -> tuple[int, float]:
    """The finalist to choose and its value: finalists scored on blocks of the draws until
    every rival is either clearly worse than the leader or as good, and by ``tie_key`` among
    the leader and those as good.

    ``normals`` is cut into ``n_blocks`` consecutive blocks (of a scrambled Sobol sequence,
    each a balanced set). After each block from the second on, the leader (the largest mean
    value over the blocks so far) is compared with every other finalist on the per-block
    differences (common draws): a rival is clearly worse when the mean difference exceeds
    the one-sided 99% Student-t quantile times its standard error, as good when the whole
    interval lies within :data:`_SAME` of the leader's value. Scoring stops once every rival
    is one or the other. Among the leader and the rivals as good as it (or, after the last
    block, not yet told apart from it) the one with the largest ``tie_key`` (a value that
    does not depend on the draws, e.g. the closed-form first-step rate) is chosen, so that
    the choice does not flip with the scrambling.

    NOTE: the blocks of one scrambled sequence are not independent replicates; their spread
    overstates the error of the mean (the whole sequence is better balanced than its blocks),
    so both verdicts are conservative. Values of -inf (unaffordable, excluded) are never
    chosen while a finite one exists.

    Returns:
        ``(index, value)``: the finalist and its mean value over the blocks scored.
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
        # stdtrit(df, p) is Student's t quantile (what scipy.stats.t.ppf calls, without its
        # per-call overhead).
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
