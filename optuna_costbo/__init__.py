"""optuna-costbo: cost-aware, budget-constrained Bayesian optimization for Optuna."""

from __future__ import annotations

from optuna_costbo._ledger.costs import report_cost
from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo.pruner import CostBudgetPruner
from optuna_costbo.sampler import CostRolloutSampler


__version__ = "0.2.0"

__all__ = ["CostBudgetPruner", "CostRolloutSampler", "Ledger", "__version__", "report_cost"]
