"""Plots of a study's progress against its cost budget: plotly's ``plot_cost_history`` and
its ``matplotlib`` twin (``pip install "optuna-costbo[plot]"``, imported when drawing)."""

from __future__ import annotations

from optuna_costbo.visualization import matplotlib
from optuna_costbo.visualization._plotly import plot_cost_history


__all__ = ["matplotlib", "plot_cost_history"]
