"""The incumbent EI improves on: the best observed value, or the plug-in of noisy EI (the best
posterior mean at the observations), which a lucky noisy draw does not set."""

from __future__ import annotations

import dataclasses

import numpy as np

from optuna_costbo._numerics.models import build_models
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.search_space import NumericParam


def _request(**kwargs: object) -> ProposalRequest:
    rng = np.random.default_rng(0)
    X = rng.random((30, 1))
    y = (X[:, 0] - 0.4) ** 2 + 0.1 * rng.standard_normal(30)  # noise sd 0.1
    y[7] = -1.0  # one lucky draw, far below the curve
    codec = BoxCodec([NumericParam(0.0, 1.0)])
    return ProposalRequest(codec=codec, X=X, y=y, remaining=1.0, budget=1.0, **kwargs)  # type: ignore[arg-type]


def test_the_plug_in_incumbent_is_the_best_posterior_mean_at_the_observations() -> None:
    request = _request(plug_in_incumbent=True)
    models = build_models(request, np.random.default_rng(1), needs_cost=False)
    mean = models.fitted.predict_mean(request.X)
    assert models.best == float(np.min(mean))
    assert models.best > -1.0 + 0.2  # the lucky draw does not set the bar
    plain = build_models(
        dataclasses.replace(request, plug_in_incumbent=False),
        np.random.default_rng(1),
        needs_cost=False,
    )
    assert plain.best == -1.0  # the best observed value


def test_a_deterministic_objective_keeps_the_observed_incumbent() -> None:
    request = _request(plug_in_incumbent=True, deterministic=True)
    assert build_models(request, np.random.default_rng(1), needs_cost=False).best == -1.0


def test_repeats_leave_only_the_running_trials_out() -> None:
    running = np.array([[0.5]])
    request = _request(evaluated=np.vstack([np.linspace(0, 1, 30)[:, None], running]))
    request = dataclasses.replace(request, X_running=running)
    assert request.not_again is request.evaluated  # by default nothing is proposed again
    again = dataclasses.replace(request, repeats=True)
    assert again.not_again is running  # a noisy objective: a finished point may be repeated
    fixed = dataclasses.replace(again, deterministic=True)
    assert fixed.not_again is request.evaluated  # a repeat of a deterministic one is waste
