"""Matplotlib front end of the cost-history plot (``optuna_costbo.visualization.matplotlib``)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._logging import get_logger
from optuna_costbo.visualization import _cost_history as ch
from optuna_costbo.visualization._cost_history import get_cost_histories


if TYPE_CHECKING:
    from matplotlib.axes import Axes


__all__ = ["plot_cost_history"]

_logger = get_logger(__name__)

_RED = 3  # tab10's red: a single study's line, as in Optuna's matplotlib plots


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
    ax: Axes | None = None,
) -> Axes:
    """:func:`optuna_costbo.visualization.plot_cost_history` in matplotlib: the same
    arguments, and ``ax``, the axes to draw into (default a new figure's); returns the axes.

    Raises:
        ImportError: matplotlib is not installed (``pip install "optuna-costbo[plot]"``).
        ValueError: ``labels`` of the wrong length or a bad ``reference_point``.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo.visualization.matplotlib import plot_cost_history

            study = optuna.create_study()
            study.add_trial(optuna.create_trial(value=1.0, user_attrs={"cost": 2.0}))
            plot_cost_history(study, budget=8.0).figure.savefig("cost_history.png")
    """
    try:
        from matplotlib.colors import to_hex
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "optuna_costbo.visualization.matplotlib needs matplotlib, which is not installed: "
            'pip install "optuna-costbo[plot]"'
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
    if ax is None:
        _, ax = plt.subplots()
    assert ax is not None
    ax.set_title(ch.plot_title(histories))
    ax.set_xlabel(ch.cost_axis_title(histories))
    ax.set_ylabel(ch.value_title(histories, target_name))
    if all(len(h.trial_numbers) == 0 for h in histories):
        _logger.warning("The study has no finished trials to plot.")
    overlay = len(histories) > 1
    cmap = plt.get_cmap("tab10")

    def palette(k: int) -> str:
        return str(to_hex(cmap(k % 10)))

    for i, history in enumerate(histories):
        points_color, line_color = (palette(k) for k in ch.color_indices(i, len(histories), _RED))
        complete = history.complete & ~history.infeasible  # (n,)
        of_label = f" of {history.label}" if overlay else ""
        if not history.hypervolume:  # a front's trials have no one value to draw
            if history.infeasible.any():
                ax.scatter(
                    history.cumulative_costs[history.infeasible],
                    history.values[history.infeasible],
                    color="#b0b0b0",
                    marker="x",
                    label=f"{target_name}{of_label} (infeasible)",
                )
            ax.scatter(
                history.cumulative_costs[complete],
                history.values[complete],
                color=points_color,
                alpha=0.6,
                label=f"{target_name}{of_label}",
            )
        if history.best_values is not None:
            ax.step(
                history.cumulative_costs,
                history.best_values,
                where="post",
                color=line_color,
                label=f"{ch.line_name(history)}{of_label}",
            )
    for line in ch.budget_lines(histories):
        color = "gray"
        if line.study_index is not None:
            color = palette(ch.color_indices(line.study_index, len(histories), _RED)[1])
        ax.axvline(line.budget, color=color, linestyle="--", label=line.name)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    return ax
