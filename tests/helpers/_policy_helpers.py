"""The policy called with plain arguments, as the numerical tests like to write it."""

from __future__ import annotations

import numpy as np

from optuna_costbo._numerics.acquisition.registry import make_acquisition
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.policy import Plan
from optuna_costbo._numerics.policy import propose as _propose
from optuna_costbo._numerics.request import CostData
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import WarmStart
from optuna_costbo._numerics.search_space import BoxCodec


def propose(
    codec: BoxCodec,
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    X_cost: np.ndarray,  # (k, D)
    costs: np.ndarray,  # (k,)
    *,
    acquisition: str,
    rng: np.random.Generator,
    remaining: float,
    budget: float,
    warm: WarmStart | None = None,
    X_running: np.ndarray | None = None,
    known_cost: KnownCost | None = None,
    rollout: AcquisitionStrategy | None = None,
) -> Proposal:
    """:func:`optuna_costbo._numerics.policy.propose` for the acquisition named ``acquisition``,
    or for the strategy ``rollout`` (a rollout with its own horizon and screening)."""
    strategy = (
        rollout if rollout is not None else make_acquisition(acquisition, AcquisitionOptions())
    )
    request = ProposalRequest(
        codec=codec,
        X=X,
        y=y,
        remaining=remaining,
        budget=budget,
        cost_data=CostData(X_cost, costs),
        known_cost=known_cost,
        X_running=X_running,
        warm=warm,
    )
    return _propose(request, Plan(strategy), rng)
