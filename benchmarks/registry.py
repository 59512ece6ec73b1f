"""The benchmark methods: key -> :class:`Method` (label, sampler factory).

The same eight methods in every experiment: ``CostRolloutSampler`` with
``acquisition="rollout-paper"`` (the paper's estimator, h=2 and h=4: the reproduction uses it),
``"ei"``, ``"eipu"``, ``"ei-cool"``, and Optuna's ``TPESampler``, ``GPSampler`` (needs torch)
and ``RandomSampler``, each run until the same budget; ``rollout1`` (h=1) is a control run
only on request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna

from optuna_costbo import CostRolloutSampler


CostFn = Callable[..., float]
# (budget, seed, cost_fn, options) -> sampler; options: extra CostRolloutSampler keywords
Factory = Callable[[float, int, "CostFn | None", dict[str, Any]], optuna.samplers.BaseSampler]


@dataclass(frozen=True)
class Method:
    label: str
    factory: Factory


def _costbo(acquisition: str, horizon: int = 2) -> Factory:
    def make(
        budget: float, seed: int, cost_fn: CostFn | None, options: dict[str, Any]
    ) -> optuna.samplers.BaseSampler:
        return CostRolloutSampler(
            budget,
            acquisition=acquisition,
            horizon=horizon,
            cost_fn=cost_fn,
            seed=seed,
            **options,
        )

    return make


# key -> Method; the order is the order of the tables.
METHODS: dict[str, Method] = {
    # The paper's estimator, unchanged (the package's default "rollout" is the cost-aware one).
    "rollout2": Method("rollout h=2", _costbo("rollout-paper", 2)),
    "rollout4": Method("rollout h=4", _costbo("rollout-paper", 4)),
    # A control, not run by default: the rollout's machinery (candidate screening, local
    # polish, affordability) with no lookahead, i.e. EI over the affordable candidates.
    "rollout1": Method("rollout h=1", _costbo("rollout-paper", 1)),
    "ei": Method("EI", _costbo("ei")),
    "eipu": Method("EIpu", _costbo("eipu")),
    "ei-cool": Method("EI-cool", _costbo("ei-cool")),
    "tpe": Method("Optuna TPE", lambda b, s, c, o: optuna.samplers.TPESampler(seed=s)),
    "gp": Method("Optuna GP", lambda b, s, c, o: optuna.samplers.GPSampler(seed=s)),
    "random": Method("Random", lambda b, s, c, o: optuna.samplers.RandomSampler(seed=s)),
}
ROLLOUTS = ("rollout2", "rollout4")
DEFAULT_METHODS = tuple(m for m in METHODS if m != "rollout1")
"""The methods an experiment runs unless ``--methods`` says otherwise."""
