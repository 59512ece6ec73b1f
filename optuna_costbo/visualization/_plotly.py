"""Plotly front end of the cost-history plot."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger import COST_ATTR
from optuna_costbo._logging import get_logger
from optuna_costbo.visualization import _cost_history as ch
from optuna_costbo.visualization._cost_history import CostHistory
from optuna_costbo.visualization._cost_history import get_cost_histories


if TYPE_CHECKING:
    import plotly.graph_objects as go


_logger = get_logger(__name__)

PLOT_EXTRA_HINT = 'pip install "optuna-costbo[plot]"'

# Plotly's default qualitative palette (plotly.colors.qualitative.Plotly), written out so that
# the colors are known without importing plotly at module import time.
_COLORS = (
    "#636EFA",
    "#EF553B",
    "#00CC96",
    "#AB63FA",
    "#FFA15A",
    "#19D3F3",
    "#FF6692",
    "#B6E880",
    "#FF97FF",
    "#FECB52",
)


def _import_plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError as exc:
        raise ImportError(
            f"plot_cost_history needs plotly, which is not installed: {PLOT_EXTRA_HINT}"
        ) from exc
    return go


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
    """Plot the best value so far against the cumulative cost of finished trials.

    The cost-aware counterpart of :func:`optuna.visualization.plot_optimization_history`:
    the x axis is what the budget ledger charged the study's finished trials, in completion
    order (COMPLETE, PRUNED and FAIL trials; the sampler's own time too when it counts against
    the budget, as for measured wall-clock costs: the axis then says "incl. sampler time"), so
    the curve ends at the ledger's spent. The y axis is the best value so far (a step
    function; only COMPLETE trials improve it), each COMPLETE trial a point, and a dashed
    vertical line marks the budget. Colors follow Optuna's ``plot_optimization_history``.

    Args:
        study_or_studies: A study, or a sequence of studies to overlay (points and a line
            per study, in the study's pair of colors; one gray budget line if the studies
            share a budget, else a budget line per study in its line's color, named in the
            legend).
        budget: Position of the budget line; ``None`` reads each study's ``cost_budget``
            user attr (stored by :class:`~optuna_costbo.CostRolloutSampler`). No line is
            drawn for a study without one.
        cost_attr: The trial user attr holding each trial's cost (the sampler's
            ``cost_attr``). Trials without it are charged their wall-clock time.
        target: A function of a COMPLETE trial giving the value to plot instead of the
            objective value. As in Optuna, no best value line is drawn for a target, whose
            better direction is unknown. Without it, a multi-objective study is drawn as the
            hypervolume of its front (COMPLETE, feasible trials) against cumulative cost,
            titled and labelled so.
        target_name: The y axis title and the points' legend name.
        labels: One legend label per study; default the study names.
        cost_unit: The unit of the costs, shown in the x axis title ("Cumulative Cost ($)")
            and with the budget. ``None``: the study user attr ``cost_unit`` if set, else
            seconds (``"s"``) when every trial's cost was measured wall-clock time, no unit
            when costs were reported.
        reference_point: For a multi-objective study, the hypervolume's reference point in
            the study's units (as Optuna's ``plot_hypervolume_history`` takes it); ``None``:
            the worst value of each objective over the plotted trials plus a tenth of its
            range.

    Returns:
        A :class:`plotly.graph_objects.Figure`.

    Raises:
        ImportError: plotly is not installed (``pip install "optuna-costbo[plot]"``).
        ValueError: ``labels`` of the wrong length, or a ``reference_point`` that is not one
            finite number per objective.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo import CostRolloutSampler, report_cost
            from optuna_costbo.visualization import plot_cost_history


            def objective(trial):
                x = trial.suggest_float("x", 0.0, 1.0)
                report_cost(trial, 1.0 + x)
                return (x - 0.3) ** 2


            sampler = CostRolloutSampler(budget=10.0, n_startup_trials=10, seed=0)
            study = optuna.create_study(sampler=sampler)
            study.optimize(objective)
            fig = plot_cost_history(study)  # budget line at 10.0 from the study
            fig.show()
    """
    go = _import_plotly()
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
    """Draw ``histories`` into a new ``go.Figure`` (``go``: the plotly.graph_objects module)."""
    # NOTE: arrays go in as lists: plotly >= 6 would serialize numpy arrays as base64 typed
    # arrays, which plotly.js older than 2.28 (older optuna-dashboard bundles) cannot read.
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
        # A front's trials have no one value to draw: its chart is the hypervolume line alone.
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
            # A shape has no legend entry: an empty trace gives the line its name there.
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
    """Per drawn trial: its number, its charge and the sampler's share of it, (m, 3)."""
    sampler = history.sampler_costs
    share = sampler if sampler is not None else np.zeros_like(history.costs)  # (n,)
    columns = [history.trial_numbers[mask], history.costs[mask], share[mask]]
    out: list[list[float]] = np.column_stack(columns).tolist()  # (m, 3)
    return out


def _cost_hover(history: CostHistory, unit: str | None) -> str:
    """Hover lines of a trial's charge (and the sampler's time in it) and the cost so far."""
    suffix = f" {unit}" if unit else ""
    text = f"Cost %{{customdata[1]:.4g}}{suffix}"
    if history.sampler_costs is not None:
        text += f" ({ch.SAMPLER_TIME_NOTE} %{{customdata[2]:.3g}}{suffix})"
    return f"{text}<br>{ch.COST_AXIS_TITLE} %{{x:.4g}}{suffix}<br>"
