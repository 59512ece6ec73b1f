"""Is a trial that a pruner would stop still worth its remaining cost?

A pruner judges a reporting trial against the others at the same step. It cannot know that
the objective model expects this configuration to end well, nor what finishing it costs
against what a new trial would buy. Under the sampler's models, a trial at ``z`` whose reports
bound its final value from below by ``b`` (:func:`.curves.final_bounds`) has the expected
improvement ``E[(best - Y)+ | Y >= b]`` (:func:`.censored.truncated_ei`, ``Y`` the objective
model's predictive at ``z``, noise included), and finishing it costs what a full trial there
costs less what it has run up. Its rate, that improvement per unit of the remaining cost, is
comparable with the best rate a new trial offers (the largest EI per unit cost over the box,
which the acquisition finds): continuing is worth it when its rate is at least that.

NOTE: this is the stopping comparison of freeze-thaw BO (Swersky, Snoek & Adams 2014), which
weighs continuing a paused run against starting a new one, and of the Pandora's-box view of
cost-aware search (a box is opened while its expected gain beats its cost), with the model of
a curve's end reduced to the censoring bound the sampler already uses. Sunk cost is ignored:
only the cost still to come counts.

This module imports only numpy, scipy and the package's models.
"""

from __future__ import annotations

import math

import numpy as np

from optuna_costbo._numerics.censored import truncated_ei
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.gp.model import GPModel


__all__ = ["MIN_REMAINING_SHARE", "continuation_log_rate"]

MIN_REMAINING_SHARE = 0.02
"""The remaining cost is at least this share of the predicted full cost: a trial that has
already spent more than its predicted cost is not treated as free to finish."""


def continuation_log_rate(
    model: GPModel,
    cost: CostModel,
    z: np.ndarray,
    lower: float,
    best: float,
    spent: float,
) -> float:
    """``log(E[(best - Y)+ | Y >= lower] / remaining)`` for the trial at ``z`` (-inf when its
    expected improvement is zero).

    Args:
        model: The objective model (minimization, the study's units).
        cost: The cost model; of a :class:`.cost_model.PrunedCost` the full trials' one (the
            trial is past the pruner's verdict: what counts is the cost of finishing it).
        z: The trial's encoded point, (D,).
        lower: The lower bound on its final value that its reports give (may be -inf).
        best: The best value to improve on.
        spent: The cost the trial has run up so far (>= 0).
    """
    Z = np.asarray(z, dtype=float)[None, :]  # (1, D)
    mean, var = model.predict(Z)  # (1,), (1,)
    noise = model.hyper.noise_var * model.y_std**2
    sd = np.sqrt(np.maximum(var + noise, 1e-300))  # (1,)
    gain = float(truncated_ei(mean, sd, np.array(best), np.array(lower))[0])
    if gain <= 0.0:
        return -math.inf
    full_model = cost.base if isinstance(cost, PrunedCost) else cost
    full = float(full_model.cost(Z)[0])
    remaining = max(full - spent, MIN_REMAINING_SHARE * full)
    return math.log(gain) - math.log(remaining)
