"""OptunaHub package ``samplers/cost_rollout``: the sampler of the ``optuna-costbo`` package.

The implementation is maintained in the ``optuna-costbo`` package (``requirements.txt``); this
module makes it loadable with ``optunahub.load_module("samplers/cost_rollout")``.
"""

from __future__ import annotations

from optuna_costbo import CostBudgetPruner
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


__all__ = ["CostBudgetPruner", "CostRolloutSampler", "report_cost"]
