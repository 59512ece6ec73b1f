"""The policy called with plain arguments, as the numerical tests like to write it."""

from __future__ import annotations

import numpy as np

from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.policy import CostData
from optuna_costbo._numerics.policy import Proposal
from optuna_costbo._numerics.policy import ProposalRequest
from optuna_costbo._numerics.policy import WarmStart
from optuna_costbo._numerics.policy import propose as _propose
from optuna_costbo._numerics.registry import make_acquisition
from optuna_costbo._numerics.rollout_acquisition import Rollout
from optuna_costbo._numerics.rollout_acquisition import RolloutSettings
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.strategies import AcquisitionOptions


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
    rollout: RolloutSettings | None = None,
) -> Proposal:
    """:func:`optuna_costbo._numerics.policy.propose` for the acquisition named ``acquisition``
    (with ``rollout``'s settings for the rollout)."""
    strategy = (
        Rollout(rollout)
        if rollout is not None and acquisition == "rollout"
        else make_acquisition(acquisition, AcquisitionOptions())
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
    return _propose(request, strategy, rng)
