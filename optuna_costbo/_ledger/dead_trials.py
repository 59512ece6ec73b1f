"""A dead worker's trial, failed later by heartbeat, charged to its last sign of life.

NOTE: its completion is stamped when noticed, often long after death; so while it runs its
worker stamps the seconds since its start (``costbo:alive_seconds``), and every worker derives
the same charge from the last stamp (docs/parallel.md, 'A worker that dies').
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._fresh import FreshWhenCopied
from optuna_costbo._ledger.keys import ALIVE_ATTR
from optuna_costbo._numerics.checks import is_real
from optuna_costbo._numerics.cost_model import COST_FLOOR
from optuna_costbo._optuna_compat import UpdateFinishedTrialError
from optuna_costbo._optuna_compat import in_optimize_loop


def alive_seconds(trial: FrozenTrial) -> float | None:
    """A failed trial's last stamp, clipped to [cost floor, its duration]; else None."""
    stamp: Any = trial.system_attrs.get(ALIVE_ATTR)
    if trial.state != TrialState.FAIL or not is_real(stamp):
        return None
    seconds = float(stamp)
    if trial.datetime_start is not None and trial.datetime_complete is not None:
        seconds = min(seconds, (trial.datetime_complete - trial.datetime_start).total_seconds())
    return max(seconds, COST_FLOOR)


class LifeStamps(FreshWhenCopied):
    """The stamping threads of one sampler's running trials (a copy starts with none)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: dict[int, tuple[threading.Event, threading.Thread]] = {}

    def start(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Stamp ``trial`` while it runs, if Optuna watches it by heartbeat."""
        interval = getattr(study._storage, "get_heartbeat_interval", lambda: None)()
        if not interval or trial.datetime_start is None or not in_optimize_loop(study):
            return
        stop = threading.Event()
        thread = threading.Thread(
            target=_stamp,
            args=(study._storage, trial._trial_id, trial.datetime_start, float(interval), stop),
            name=f"costbo-alive-{trial._trial_id}",
            daemon=True,
        )
        with self._lock:
            self._stops[trial._trial_id] = (stop, thread)
        thread.start()

    def stop(self, trial_id: int) -> None:
        """Stop stamping ``trial_id`` (it is finishing)."""
        with self._lock:
            entry = self._stops.pop(trial_id, None)
        if entry is not None:
            entry[0].set()
            entry[1].join()


def _stamp(
    storage: optuna.storages.BaseStorage,
    trial_id: int,
    start: datetime.datetime,
    interval: float,
    stop: threading.Event,
) -> None:
    while True:
        seconds = (datetime.datetime.now() - start).total_seconds()
        try:
            storage.set_trial_system_attr(trial_id, ALIVE_ATTR, seconds)
        except UpdateFinishedTrialError:  # failed meanwhile: the last stamp is its charge
            return
        except Exception:  # the storage is away: try again at the next interval
            pass
        if stop.wait(interval):
            return
