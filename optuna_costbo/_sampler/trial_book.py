"""This process's records of its running trials: the sampler's seconds spent on each, the
time between trials charged with them, and the trials cut short because the budget was spent."""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import datetime
import threading
import time
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import SKIPPED_ATTR


__all__ = ["TrialBook"]

# NOTE: a gap between two trials of one thread longer than this is a pause (between two
# optimize calls, a user's own work), not the storage's and Optuna's per-trial overhead.
MAX_GAP_SECONDS = 1.0


class TrialBook:
    """Per-trial records of one sampler object (thread-safe; a copy starts empty)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[int, float] = {}  # trial id -> the sampler's seconds so far
        self._skipped: set[int] = set()  # trial ids to cut short at their first suggestion
        self._gaps: dict[int, float] = {}  # trial id -> seconds charged beyond its sampler's
        self._marks: dict[int, datetime.datetime] = {}  # thread -> its last cost measurement

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def skip(self, trial_id: int) -> None:
        """Cut ``trial_id`` short at its first suggestion (the budget is spent)."""
        with self._lock:
            self._skipped.add(trial_id)

    def begin(self, trial: FrozenTrial, seconds: float, uncharged: float = 0.0) -> None:
        """``trial`` starts after ``seconds`` of the sampler's ``before_trial``, ``uncharged``
        of them not charged (a one-time import); the time since this thread's last trial was
        measured (Optuna's and the sampler's work between trials) is charged with it, unless
        it is a pause (:data:`MAX_GAP_SECONDS`)."""
        with self._lock:
            self._seconds[trial._trial_id] = self._seconds.get(trial._trial_id, 0.0) + seconds
            extra = -uncharged
            mark = self._marks.get(threading.get_ident())
            if mark is not None and trial.datetime_start is not None:
                gap = (trial.datetime_start - mark).total_seconds()
                if 0.0 < gap <= MAX_GAP_SECONDS:
                    extra += gap
            self._gaps[trial._trial_id] = extra

    @contextlib.contextmanager
    def timed(self, study: optuna.Study, trial: FrozenTrial) -> Iterator[None]:
        """Count the time inside as the sampler's, after cutting the trial short if it is
        marked: a ``TrialPruned`` before the objective does any work.

        The mark is stored on the trial only then, when the trial is really cut short: a
        trial that never calls the sampler (all parameters fixed or enqueued) runs and is
        charged as usual.
        """
        start = time.perf_counter()
        try:
            with self._lock:
                skipped = trial._trial_id in self._skipped
            if skipped:
                study._storage.set_trial_system_attr(trial._trial_id, SKIPPED_ATTR, True)
                raise optuna.TrialPruned("the cost budget is spent; this trial was not run")
            yield
        finally:
            seconds = time.perf_counter() - start
            with self._lock:
                self._seconds[trial._trial_id] = self._seconds.get(trial._trial_id, 0.0) + seconds

    def finish(self, trial_id: int, measured: datetime.datetime) -> tuple[float, float]:
        """Forget ``trial_id``, whose cost is ``measured`` now: the sampler's seconds inside
        its clock, and the seconds charged with it beyond them (:meth:`begin`)."""
        with self._lock:
            self._skipped.discard(trial_id)
            self._marks[threading.get_ident()] = measured
            return self._seconds.pop(trial_id, 0.0), self._gaps.pop(trial_id, 0.0)
