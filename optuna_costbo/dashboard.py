"""optuna-dashboard integration: the cost-history chart of ``plot_cost_history``, saved in the
study where optuna-dashboard lists user-defined plotly graphs."""

from __future__ import annotations

from collections.abc import Sequence
import inspect
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger import COST_ATTR
from optuna_costbo._ledger import storage_trials
from optuna_costbo._logging import get_logger


__all__ = ["GRAPH_NAME", "GRAPH_OBJECT_ID", "HYPERVOLUME_GRAPH_NAME", "update_dashboard"]

_logger = get_logger(__name__)

GRAPH_NAME = "Best value vs cumulative cost"
"""Title of the saved chart."""

HYPERVOLUME_GRAPH_NAME = "Hypervolume vs cumulative cost"
"""Title of the saved chart of a multi-objective study."""

GRAPH_OBJECT_ID = "costbo-cost-history"
"""ID under which the chart is saved (and overwritten by each update)."""

DASHBOARD_EXTRA_HINT = 'pip install "optuna-costbo[dashboard]"'


def update_dashboard(
    study: optuna.Study,
    *,
    cost_attr: str = COST_ATTR,
    budget: float | None = None,
    trial: FrozenTrial | None = None,
    state: TrialState | None = None,
    values: Sequence[float] | None = None,
    cost_unit: str | None = None,
    trials: Sequence[FrozenTrial] | None = None,
) -> bool:
    """Save (or overwrite) the study's cost-history chart for optuna-dashboard.

    The chart ("Best value vs cumulative cost", or "Hypervolume vs cumulative cost" for several
    objectives) is the plotly figure of
    :func:`optuna_costbo.visualization.plot_cost_history`, saved with
    ``optuna_dashboard.save_plotly_graph_object`` under the fixed ID :data:`GRAPH_OBJECT_ID`,
    so each call replaces the previous chart. It reads the study's trials from storage once
    (and its user attrs once when ``budget`` is not given), then writes the chart.

    Safe to call from a sampler or a callback: if optuna-dashboard or plotly is not installed
    it does nothing and returns ``False``; any other error while building or saving the chart
    is logged as a warning and also gives ``False``, never an exception.

    Args:
        study: The study.
        cost_attr: The trial user attr holding each trial's cost (the sampler's ``cost_attr``).
        budget: Position of the budget line; ``None`` reads the study's ``cost_budget``
            user attr.
        trial: A trial that is finishing but still RUNNING in storage, as in a sampler's
            ``after_trial(study, trial, state, values)``; pass ``state`` and ``values`` with
            it, and the chart includes it with that state (its cost is read from storage).
        state: The finishing trial's state. Required with ``trial``.
        values: The finishing trial's values (``None`` unless COMPLETE).
        trials: The study's trials as just read (``None``: read them here).
        cost_unit: The unit of the costs on the cost axis (``"$"``, ``"kWh"``). ``None``:
            the study user attr ``cost_unit`` if set, else ``"s"`` when every cost was
            measured wall-clock time, else no unit.

    Returns:
        ``True`` if the chart was saved, ``False`` otherwise.

    Raises:
        ValueError: ``trial`` without ``state`` (a calling error, not a monitoring one).

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo import CostRolloutSampler, report_cost
            from optuna_costbo.dashboard import update_dashboard


            def objective(trial):
                x = trial.suggest_float("x", 0.0, 1.0)
                report_cost(trial, 1.0 + x)
                return (x - 0.3) ** 2


            study = optuna.create_study(
                sampler=CostRolloutSampler(budget=10.0, n_startup_trials=10, seed=0),
                storage="sqlite:///tune.db",
            )
            study.optimize(objective, callbacks=[lambda study, _: update_dashboard(study)])
            # optuna-dashboard sqlite:///tune.db  shows the chart on the study page
    """
    if trial is not None and state is None:
        raise ValueError("update_dashboard: pass the finishing trial's state with trial")
    try:
        import optuna_dashboard
        import plotly.graph_objects as go
    except ImportError:
        _logger.debug(f"optuna-dashboard chart not saved: {DASHBOARD_EXTRA_HINT}")
        return False
    try:
        figure = _figure(go, study, cost_attr, budget, trial, state, values, cost_unit, trials)
        _save(optuna_dashboard.save_plotly_graph_object, study, figure)
    except Exception as exc:  # a monitoring side channel must not stop an optimization
        _logger.warning(f"Could not save the optuna-dashboard cost chart: {exc!r}")
        return False
    return True


def _figure(
    go: Any,
    study: optuna.Study,
    cost_attr: str,
    budget: float | None,
    trial: FrozenTrial | None,
    state: TrialState | None,
    values: Sequence[float] | None,
    cost_unit: str | None = None,
    read: Sequence[FrozenTrial] | None = None,
) -> Any:
    from optuna_costbo._ledger.finished import finishing_trial
    from optuna_costbo.visualization._cost_history import get_cost_histories
    from optuna_costbo.visualization._plotly import build_figure

    trials = list(read) if read is not None else storage_trials(study)
    if trial is not None:
        assert state is not None
        trials = [
            finishing_trial(t, state, values) if t._trial_id == trial._trial_id else t
            for t in trials
        ]
    histories = get_cost_histories(
        study, budget=budget, cost_attr=cost_attr, trials=trials, cost_unit=cost_unit
    )
    figure = build_figure(go, histories, target_name="Objective Value")
    front = all(h.hypervolume for h in histories)
    figure.update_layout(title=HYPERVOLUME_GRAPH_NAME if front else GRAPH_NAME)
    # NOTE: the dashboard renders the stored layout as is; dropping plotly.py's default
    # template (about 6.5 kB of JSON) keeps every update a few storage writes smaller, and
    # plotly.js's own defaults draw the chart.
    figure.layout.template = None
    return figure


def _save(save: Any, study: optuna.Study, figure: Any) -> None:
    """Call ``save_plotly_graph_object`` with the fixed chart ID, so that it overwrites."""
    # NOTE: optuna-dashboard 0.13 to 0.21 have ``save_plotly_graph_object(study, figure, *,
    # graph_object_id=None)``; without an ID each call would add one more chart.
    if "graph_object_id" not in inspect.signature(save).parameters:
        raise RuntimeError(
            "this optuna-dashboard's save_plotly_graph_object takes no graph_object_id; "
            "upgrade optuna-dashboard"
        )
    save(study, figure, graph_object_id=GRAPH_OBJECT_ID)
