"""Matplotlib front end of the cost-history plot (``optuna_costbo.visualization.matplotlib``)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
import logging
from typing import TYPE_CHECKING

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo.visualization._cost_history import get_cost_histories


if TYPE_CHECKING:
    from matplotlib.axes import Axes


__all__ = ["plot_cost_history"]

_logger = logging.getLogger(__name__)


def plot_cost_history(
    study_or_studies: optuna.Study | Sequence[optuna.Study],
    *,
    budget: float | None = None,
    cost_attr: str = "cost",
    target: Callable[[FrozenTrial], float] | None = None,
    target_name: str = "Objective Value",
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Plot the best value so far against the cumulative cost of finished trials, in matplotlib.

    Same data and semantics as :func:`optuna_costbo.visualization.plot_cost_history`: the
    cumulative cost of finished trials in completion order on x (COMPLETE, PRUNED and FAIL
    trials all add cost), the best value so far as a step line (only COMPLETE trials improve
    it, in the study's direction), each COMPLETE trial as a point, and a dashed vertical line
    at the budget.

    Args:
        study_or_studies: A study, or a sequence of studies to overlay.
        budget: Position of the budget line; ``None`` reads each study's ``cost_budget``
            user attr. No line is drawn for a study without one.
        cost_attr: The trial user attr holding each trial's cost.
        target: A function of a COMPLETE trial giving the value to plot instead of the
            objective value; then no best value line is drawn.
        target_name: The y axis label and the points' legend name.
        labels: One legend label per study; default the study names.
        ax: Axes to draw into; default a new figure's axes.

    Returns:
        The :class:`matplotlib.axes.Axes` drawn into.

    Raises:
        ImportError: matplotlib is not installed (``pip install "optuna-costbo[plot]"``).
        ValueError: A multi-objective study without ``target``, or ``labels`` of the wrong
            length.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo.visualization.matplotlib import plot_cost_history

            study = optuna.create_study(study_name="demo")
            for cost, value in [(2.0, 3.0), (1.0, 1.0), (4.0, 2.0)]:
                study.add_trial(optuna.create_trial(value=value, user_attrs={"cost": cost}))
            ax = plot_cost_history(study, budget=8.0)
            ax.figure.savefig("cost_history.png")
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "optuna_costbo.visualization.matplotlib needs matplotlib, which is not installed: "
            'pip install "optuna-costbo[plot]"'
        ) from exc

    histories = get_cost_histories(
        study_or_studies, budget=budget, cost_attr=cost_attr, target=target, labels=labels
    )
    if ax is None:
        _, ax = plt.subplots()
    assert ax is not None
    ax.set_title("Cost History Plot")
    ax.set_xlabel("Cumulative cost")
    ax.set_ylabel(target_name)
    if all(len(h.trial_numbers) == 0 for h in histories):
        _logger.warning("The study has no finished trials to plot.")
    overlay = len(histories) > 1
    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for i, history in enumerate(histories):
        color = cycle[i % len(cycle)]
        complete = history.complete  # (n,)
        ax.scatter(
            history.cumulative_costs[complete],
            history.values[complete],
            color=color,
            alpha=0.6,
            label=f"{target_name} of {history.label}" if overlay else target_name,
        )
        if history.best_values is not None:
            ax.step(
                history.cumulative_costs,
                history.best_values,
                where="post",
                color=color,
                label=f"Best value of {history.label}" if overlay else "Best Value",
            )
    seen: list[float] = []
    for history in histories:
        if history.budget is None or history.budget in seen:
            continue
        seen.append(history.budget)
        ax.axvline(
            history.budget,
            color="gray",
            linestyle="--",
            label="Budget" if len(seen) == 1 else None,
        )
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    return ax
