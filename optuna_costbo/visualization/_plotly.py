"""Plotly front end of the cost-history plot."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._logging import get_logger
from optuna_costbo.visualization import _cost_history as ch
from optuna_costbo.visualization._cost_history import CostHistory
from optuna_costbo.visualization._cost_history import get_cost_histories


if TYPE_CHECKING:
    import plotly.graph_objects as go


_logger = get_logger(__name__)

PLOT_EXTRA_HINT = 'pip install "optuna-costbo[plot]"'

# plotly.colors.qualitative.Plotly, without importing plotly
_COLORS = "#636EFA #EF553B #00CC96 #AB63FA #FFA15A #19D3F3 #FF6692 #B6E880 #FF97FF #FECB52".split()


def plot_cost_history(
    study_or_studies: optuna.Study | Sequence[optuna.Study],
    *,
    budget: float | None = None,
    cost_attr: str = COST_ATTR,
    target: Callable[[FrozenTrial], float] | None = None,
    target_name: str = "Objective Value",
    labels: Sequence[str] | None = None,
    cost_unit: str | None = None,
    reference_point: Sequence[float] | None = None,
) -> go.Figure:
    """Plot the best value so far against the cumulative cost of the finished trials.

    The cost-aware :func:`optuna.visualization.plot_optimization_history`: x is what the
    budget ledger charged the finished trials in completion order (with the sampler's time
    when it counts), y the best value so far, and a dashed line marks the budget.

    Args:
        study_or_studies: A study, or studies to overlay.
        budget: The budget line; ``None`` reads each study's ``cost_budget`` user attr.
        cost_attr: The trial user attr holding costs (else wall-clock time is charged).
        target: A value of a COMPLETE trial to plot instead of the objective value (then no
            best-value line). Without it a multi-objective study shows its hypervolume.
        target_name: The y axis title and the points' legend name.
        labels: One legend label per study; default the study names.
        cost_unit: The costs' unit; ``None``: the study user attr ``cost_unit``, else ``"s"``
            for measured wall-clock costs.
        reference_point: The hypervolume's reference point; ``None``: each objective's worst
            value plus a tenth of its range.

    Returns:
        A :class:`plotly.graph_objects.Figure`.

    Raises:
        ImportError: plotly is not installed (``pip install "optuna-costbo[plot]"``).
        ValueError: ``labels`` of the wrong length or a bad ``reference_point``.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo.visualization import plot_cost_history

            study = optuna.create_study()
            for cost, value in [(2.0, 3.0), (1.0, 1.0), (4.0, 2.0)]:
                study.add_trial(optuna.create_trial(value=value, user_attrs={"cost": cost}))
            plot_cost_history(study, budget=8.0).show()
    """
    try:
        import plotly.graph_objects as go
    except ImportError as exc:
        raise ImportError(
            f"plot_cost_history needs plotly, which is not installed: {PLOT_EXTRA_HINT}"
        ) from exc
    histories = get_cost_histories(
        study_or_studies,
        budget=budget,
        cost_attr=cost_attr,
        target=target,
        labels=labels,
        cost_unit=cost_unit,
        reference_point=reference_point,
    )
    return build_figure(go, histories, target_name=target_name)


def build_figure(go: Any, histories: Sequence[CostHistory], *, target_name: str) -> Any:
    """Draw ``histories`` into a new ``go.Figure`` (``go``: plotly.graph_objects)."""
    # NOTE: lists, not arrays: plotly >= 6 writes arrays as base64, unread by plotly.js < 2.28.
    unit = ch.figure_cost_unit(histories)
    figure = go.Figure()
    figure.update_layout(
        title=ch.plot_title(histories),
        xaxis={"title": ch.cost_axis_title(histories)},
        yaxis={"title": ch.value_title(histories, target_name)},
        showlegend=True,
    )
    y_range = ch.value_range(histories)
    if y_range is not None:
        figure.update_yaxes(range=list(y_range))
    if all(len(h.trial_numbers) == 0 for h in histories):
        _logger.warning("The study has no finished trials to plot.")
    overlay = len(histories) > 1
    for i, history in enumerate(histories):
        points_color, line_color = (
            _COLORS[k % len(_COLORS)] for k in ch.color_indices(i, len(histories))
        )
        of_label = f" of {history.label}" if overlay else ""
        cost = _cost_hover(history, unit)
        point_sets = []
        if not history.hypervolume:
            if history.infeasible.any():
                point_sets.append((history.infeasible, " (infeasible)"))
            point_sets.append((history.complete & ~history.infeasible, ""))
        for mask, note in point_sets:
            figure.add_trace(
                go.Scatter(
                    x=history.cumulative_costs[mask].tolist(),
                    y=history.values[mask].tolist(),
                    mode="markers",
                    name=f"{target_name}{of_label}{note}",
                    legendgroup=history.label,
                    marker={"color": points_color} if not note else _INFEASIBLE_MARKER,
                    customdata=_customdata(history, mask),
                    hovertemplate=(
                        f"Trial %{{customdata[0]}}{note}<br>{cost}"
                        f"{target_name} %{{y:.6g}}<extra></extra>"
                    ),
                )
            )
        if history.best_values is not None:
            name = ch.line_name(history)
            figure.add_trace(
                go.Scatter(
                    x=history.cumulative_costs.tolist(),
                    y=history.best_values.tolist(),
                    mode="lines",
                    line={"shape": "hv", "color": line_color},
                    name=f"{name}{of_label}",
                    legendgroup=history.label,
                    connectgaps=False,
                    customdata=_customdata(history, np.ones(len(history.costs), dtype=bool)),
                    hovertemplate=(
                        f"After trial %{{customdata[0]}}<br>{cost}{name} %{{y:.6g}}<extra></extra>"
                    ),
                )
            )
    for line in ch.budget_lines(histories):
        color = "gray"
        if line.study_index is not None:
            color = _COLORS[ch.color_indices(line.study_index, len(histories))[1] % len(_COLORS)]
            # an empty trace names the line in the legend (a shape has no entry)
            figure.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="lines",
                    line={"dash": "dash", "color": color},
                    name=line.name,
                    legendgroup=histories[line.study_index].label,
                )
            )
        figure.add_vline(
            x=line.budget,
            line={"dash": "dash", "color": color},
            annotation_text=f"{ch.BUDGET_NAME} {ch.format_cost(line.budget, unit)}",
            annotation_position="top left",
            annotation_font_color=color,
        )
    return figure


_INFEASIBLE_MARKER = {"color": "#b0b0b0", "symbol": "x"}


def _customdata(history: CostHistory, mask: np.ndarray) -> list[list[float]]:
    """Per drawn trial: number, charge and the sampler's share, (m, 3)."""
    sampler = history.sampler_costs
    share = sampler if sampler is not None else np.zeros_like(history.costs)  # (n,)
    columns = [history.trial_numbers[mask], history.costs[mask], share[mask]]
    out: list[list[float]] = np.column_stack(columns).tolist()  # (m, 3)
    return out


def _cost_hover(history: CostHistory, unit: str | None) -> str:
    suffix = f" {unit}" if unit else ""
    text = f"Cost %{{customdata[1]:.4g}}{suffix}"
    if history.sampler_costs is not None:
        text += f" ({ch.SAMPLER_TIME_NOTE} %{{customdata[2]:.3g}}{suffix})"
    return f"{text}<br>{ch.COST_AXIS_TITLE} %{{x:.4g}}{suffix}<br>"
