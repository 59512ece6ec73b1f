"""This process's records of its running trials (sampler seconds, gaps, trials cut short)."""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import datetime
import threading
import time

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._fresh import FreshWhenCopied
from optuna_costbo._ledger.keys import SKIPPED_ATTR


# NOTE: a longer gap between the end of a thread's after_trial and its next trial's start is a
# pause (between optimize calls, a slow callback), not Optuna's per-trial bookkeeping.
MAX_GAP_SECONDS = 1.0


class TrialBook(FreshWhenCopied):
    """Per-trial records of one sampler object (thread-safe; a copy starts empty)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[int, float] = {}  # trial id -> the sampler's seconds so far
        self._skipped: set[int] = set()  # trial ids to cut short at their first suggestion
        self._gaps: dict[int, float] = {}  # trial id -> seconds charged beyond its sampler's
        self._marks: dict[int, datetime.datetime] = {}  # thread -> its last cost measurement
        self._tails: dict[int, float] = {}  # thread -> seconds of after_trial after it

    def skip(self, trial_id: int) -> None:
        """Cut ``trial_id`` short at its first suggestion (the budget is spent)."""
        with self._lock:
            self._skipped.add(trial_id)

    def begin(self, trial: FrozenTrial, seconds: float) -> None:
        """``trial`` starts after ``seconds`` of ``before_trial``, charged with the thread's
        last after_trial tail and the gap since, unless that is a pause."""
        with self._lock:
            self._seconds[trial._trial_id] = self._seconds.get(trial._trial_id, 0.0) + seconds
            thread = threading.get_ident()
            extra = self._tails.pop(thread, 0.0)
            mark = self._marks.get(thread)
            if mark is not None and trial.datetime_start is not None:
                gap = (trial.datetime_start - mark).total_seconds()
                if 0.0 < gap <= MAX_GAP_SECONDS:
                    extra += gap
            self._gaps[trial._trial_id] = extra

    @contextlib.contextmanager
    def timed(self, study: optuna.Study, trial: FrozenTrial) -> Iterator[None]:
        """Count the time inside as the sampler's, first pruning the trial if :meth:`skip`
        marked it (a trial that never calls the sampler runs as usual)."""
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
        """Forget ``trial_id``, measured now: its sampler seconds, the seconds charged beyond."""
        with self._lock:
            self._skipped.discard(trial_id)
            self._marks[threading.get_ident()] = measured
            return self._seconds.pop(trial_id, 0.0), self._gaps.pop(trial_id, 0.0)

    def close(self) -> None:
        """The thread's ``after_trial`` ends now: its seconds since the cost was measured are
        charged to the thread's next trial in full, whatever the gap until it starts."""
        now = datetime.datetime.now()
        with self._lock:
            mark = self._marks.get(threading.get_ident())
            if mark is not None:
                self._tails[threading.get_ident()] = max((now - mark).total_seconds(), 0.0)
                self._marks[threading.get_ident()] = now
