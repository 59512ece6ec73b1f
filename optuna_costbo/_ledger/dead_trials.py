"""Trials whose worker died: charged from their start to their last sign of life.

A worker killed mid-trial never reaches ``after_trial``, so its trial carries no cost. It stays
RUNNING until another worker's optimize loop fails it by heartbeat
(``optuna.storages.fail_stale_trials``), and Optuna stamps its completion time then: when it
was *noticed*, at least the grace period after the worker died, often much later. Charging
start to completion would bill that wait.

So while a trial runs in ``study.optimize`` on a storage that records heartbeats, its worker
writes on it, at the start and then every heartbeat interval, the seconds since it started
(trial system attr ``costbo:alive_seconds``), on its own clock, the one that stamped the
trial's start. A failed trial without a cost is charged its last stamp: at most what it ran,
at least that less one interval. Only Optuna's storage API is used: a running trial's system
attrs can be set, a finished trial's cannot (Optuna refuses), and need not be: every worker
derives the same charge from the stamp, so nothing is written after the trial failed and no
two workers can disagree.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.keys import ALIVE_ATTR
from optuna_costbo._numerics.checks import is_real
from optuna_costbo._numerics.cost_model import COST_FLOOR
from optuna_costbo._optuna_compat import UpdateFinishedTrialError
from optuna_costbo._optuna_compat import in_optimize_loop


__all__ = ["LifeStamps", "alive_seconds"]


def alive_seconds(trial: FrozenTrial) -> float | None:
    """A failed trial's last stamp (seconds from its start, at least the models' cost floor,
    at most its start to completion); None for other trials and failed ones without a stamp."""
    stamp: Any = trial.system_attrs.get(ALIVE_ATTR)
    if trial.state != TrialState.FAIL or not is_real(stamp):
        return None
    seconds = float(stamp)
    if trial.datetime_start is not None and trial.datetime_complete is not None:
        seconds = min(seconds, (trial.datetime_complete - trial.datetime_start).total_seconds())
    return max(seconds, COST_FLOOR)


class LifeStamps:
    """The stamping threads of one sampler's running trials (a copy starts with none)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: dict[int, tuple[threading.Event, threading.Thread]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def start(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Stamp ``trial`` while it runs, if Optuna watches it by heartbeat (an optimize loop
        on a storage with a heartbeat interval)."""
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
        """Stop stamping ``trial_id`` (it is finishing: its cost is about to be recorded)."""
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
