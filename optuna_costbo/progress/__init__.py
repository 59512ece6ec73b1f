"""A progress bar over the cost budget, as an Optuna callback (Optuna's counts ``n_trials``)."""

from __future__ import annotations

from optuna_costbo.progress.bar import CostProgressBar
from optuna_costbo.progress.hint import hint_cost_progress_bar


__all__ = ["CostProgressBar", "hint_cost_progress_bar"]
