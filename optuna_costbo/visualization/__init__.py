"""Plots of a study's progress against its cost budget.

``plot_cost_history`` draws with plotly; ``optuna_costbo.visualization.matplotlib`` holds the
matplotlib twin. Neither library is imported until a plot is drawn; install them with
``pip install "optuna-costbo[plot]"``.
"""

from __future__ import annotations

from optuna_costbo.visualization import matplotlib
from optuna_costbo.visualization._plotly import plot_cost_history


__all__ = ["matplotlib", "plot_cost_history"]
