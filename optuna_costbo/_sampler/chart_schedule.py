"""When the sampler redraws the optuna-dashboard chart (see :mod:`optuna_costbo.dashboard`)."""

from __future__ import annotations

import importlib.util
import math
import threading
import time
from typing import Any

import optuna

from optuna_costbo._fresh import FreshWhenCopied
from optuna_costbo._logging import get_logger


_INTERVAL_SECONDS = 2.0
_logger = get_logger(__name__)


def _missing() -> list[str]:
    return [
        m.replace("_", "-")
        for m in ("optuna_dashboard", "plotly")
        if importlib.util.find_spec(m) is None
    ]


class ChartSchedule(FreshWhenCopied):
    """Whether a study gets the chart (optuna-dashboard and plotly installed, the storage not
    in memory), and whether it is due for a redraw."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._times: dict[int, float] = {}  # study id -> time of the last redraw
        self._told: set[int] = set()  # studies told which package is missing
        self._missing = _missing()  # looked up once: find_spec is slow
        if not self._missing:
            # NOTE: imported with the sampler (seconds), not in a trial of a wall-clock budget
            # or after a trial's heartbeat has stopped.
            import optuna_dashboard  # noqa: F401
            import plotly.graph_objects  # noqa: F401

            import optuna_costbo.dashboard  # noqa: F401

    def wanted(self, study: optuna.Study) -> bool:
        if isinstance(study._storage, optuna.storages.InMemoryStorage):
            return False
        missing = self._missing
        if missing and study._study_id not in self._told:
            self._told.add(study._study_id)
            _logger.info(
                f"No 'Best value vs cumulative cost' chart for optuna-dashboard: "
                f"{' and '.join(missing)} not installed "
                '(pip install "optuna-costbo[dashboard]").'
            )
        return not missing

    def due(self, study: optuna.Study, spent: float, budget: float) -> bool:
        """Redraw at most every few seconds (a redraw reads every trial), and when spent."""
        now = time.monotonic()
        with self._lock:
            last = self._times.get(study._study_id, -math.inf)
            if spent < budget and now - last < _INTERVAL_SECONDS:
                return False
            self._times[study._study_id] = now
        return True

    def after_trial(self, study: optuna.Study, spent: float, budget: float, **update: Any) -> None:
        """Redraw the chart if wanted and due (``update``: for ``update_dashboard``)."""
        if self.wanted(study) and self.due(study, spent, budget):
            from optuna_costbo.dashboard import update_dashboard

            update_dashboard(study, budget=budget, **update)
