"""Whether a stopped-early trial is worth finishing: its rate, the truncated EI per unit of
the remaining cost, against brute-force Monte Carlo of the objective model's predictive."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optuna_costbo._numerics.continuation import MIN_REMAINING_SHARE
from optuna_costbo._numerics.continuation import continuation_log_rate
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel


def _models() -> tuple[GPModel, FittedLogCost]:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(10, 2))  # (10, 2)
    y = np.sin(5.0 * X[:, 0]) + X[:, 1]  # (10,)
    hyper = GPHyperparams(np.array([0.3, 0.5]), signal_var=1.0, noise_var=0.05, mean=0.0)
    log_c = 1.0 + 2.0 * X[:, 0]  # (10,)
    cost_hyper = GPHyperparams(np.array([0.5, 0.5]), signal_var=1.0, noise_var=1e-4, mean=0.0)
    return GPModel(X, y, hyper), FittedLogCost(GPModel(X, log_c, cost_hyper))


def test_the_rate_is_the_truncated_ei_of_the_predictive_per_remaining_cost() -> None:
    model, cost = _models()
    z = model.X[np.argmin(model.y)] + 0.05  # (2,) near the best: a fair chance to beat it
    best, lower, spent = float(model.y.min()), float(model.y.min()) - 0.1, 1.0
    mean, var = model.predict(z[None])
    sd = math.sqrt(float(var[0]) + model.hyper.noise_var * model.y_std**2)  # noise included
    draws = float(mean[0]) + sd * np.random.default_rng(1).normal(size=2_000_000)  # (N,)
    gain = np.maximum(best - draws[draws >= lower], 0.0)
    remaining = float(cost.cost(z[None])[0]) - spent
    rate = math.exp(continuation_log_rate(model, cost, z, lower, best, spent))
    se = gain.std() / math.sqrt(len(gain)) / remaining
    assert abs(rate - gain.mean() / remaining) < 5 * se


def test_the_rate_reads_the_full_trials_cost_and_floors_the_remaining_cost() -> None:
    model, cost = _models()
    z = np.array([0.35, 0.6])
    best = float(model.y.min())
    pruned = PrunedCost(cost, model, threshold=0.0, pruned_share=0.5, run_fraction=0.2)
    assert continuation_log_rate(model, pruned, z, -np.inf, best, 0.0) == pytest.approx(
        continuation_log_rate(model, cost, z, -np.inf, best, 0.0), rel=1e-12
    )
    full = float(cost.cost(z[None])[0])
    # Spent more than the predicted full cost: the remaining cost is a floor share of it.
    over = continuation_log_rate(model, cost, z, -np.inf, best, 10.0 * full)
    fresh = continuation_log_rate(model, cost, z, -np.inf, best, 0.0)
    assert over - fresh == pytest.approx(-math.log(MIN_REMAINING_SHARE), rel=1e-12)
    # A bound at or above the best: nothing to gain.
    assert continuation_log_rate(model, cost, z, best, best, 0.0) == -math.inf
