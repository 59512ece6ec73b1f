"""Cost-history plots: plotly's ``plot_cost_history`` and its ``matplotlib`` twin."""

from __future__ import annotations

from optuna_costbo.visualization import matplotlib
from optuna_costbo.visualization._plotly import plot_cost_history


__all__ = ["matplotlib", "plot_cost_history"]
