"""The cost-history chart of ``plot_cost_history``, saved in the study for optuna-dashboard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.ledger import storage_trials
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

    The figure of :func:`optuna_costbo.visualization.plot_cost_history`, saved under
    :data:`GRAPH_OBJECT_ID`. Never raises but for ``trial`` without ``state``: without
    optuna-dashboard or plotly, or on an error (logged as a warning), it returns ``False``.

    Args:
        study: The study.
        cost_attr: The trial user attr holding costs (the sampler's ``cost_attr``).
        budget: The budget line; ``None`` reads the study's ``cost_budget`` user attr.
        trial: A finishing trial still RUNNING in storage, drawn with ``state`` and ``values``.
        state: The finishing trial's state; required with ``trial``.
        values: The finishing trial's values (``None`` unless COMPLETE).
        cost_unit: The costs' unit; ``None``: as the study says.
        trials: The study's trials as just read (``None``: read them here).

    Returns:
        Whether the chart was saved.

    Raises:
        ValueError: ``trial`` without ``state``.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo.dashboard import update_dashboard

            study = optuna.create_study(storage="sqlite:///tune.db")
            study.add_trial(optuna.create_trial(value=1.0, user_attrs={"cost": 2.0}))
            update_dashboard(study, budget=10.0)  # then: optuna-dashboard sqlite:///tune.db
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
        optuna_dashboard.save_plotly_graph_object(study, figure, graph_object_id=GRAPH_OBJECT_ID)
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
    # NOTE: no plotly.py template (6.5 kB of JSON per write): plotly.js's defaults draw it.
    figure.layout.template = None
    return figure
