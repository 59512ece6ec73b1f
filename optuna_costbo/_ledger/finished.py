"""The trials of a study that finished since the last look, and state kept per storage object.

NOTE: a finished trial never changes (Optuna refuses updates; its caching storages never re-read
one), so sums over finished trials can be kept and updated with the newly finished only.
"""

from __future__ import annotations

from collections.abc import Sequence
import datetime
import threading
from typing import Any
import weakref

from optuna.trial import FrozenTrial
from optuna.trial import TrialState


class FinishedScan:
    """Which trials of a study have finished since the previous call of :meth:`take`."""

    def __init__(self) -> None:
        self.seen = 0  # trials 0 .. seen - 1 have been looked at
        self.open: list[int] = []  # those of them not finished then, in increasing order

    def take(self, trials: Sequence[FrozenTrial]) -> list[FrozenTrial] | None:
        """The trials finished since the last call, in number order; None (nothing changed) if
        ``trials`` is not the study's whole list in number order (HyperbandPruner's brackets)."""
        n = len(trials)
        if n < self.seen or (n > 0 and trials[-1].number != n - 1):
            return None
        finished: list[FrozenTrial] = []
        still_open: list[int] = []
        for number in [*self.open, *range(self.seen, n)]:
            trial = trials[number]
            if trial.number != number:
                return None
            if trial.state.is_finished():
                finished.append(trial)
            else:
                still_open.append(number)
        self.seen, self.open = n, still_open
        return finished


_lock = threading.Lock()
_by_storage: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def per_storage(storage: Any) -> dict[Any, Any] | None:
    """A dict that lives as long as ``storage``, shared by every reader of it in this process
    (None if it cannot be weakly referenced)."""
    with _lock:
        try:
            return _by_storage.setdefault(storage, {})
        except TypeError:
            return None


def finishing_trial(
    trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
) -> FrozenTrial:
    """A finishing trial (still RUNNING in storage during ``after_trial``) as it will be stored."""
    return FrozenTrial(
        number=trial.number,
        state=state,
        value=None,
        values=list(values) if values is not None and state == TrialState.COMPLETE else None,
        datetime_start=trial.datetime_start,
        datetime_complete=datetime.datetime.now(),
        params=trial.params,
        distributions=trial.distributions,
        user_attrs=trial.user_attrs,
        system_attrs=trial.system_attrs,
        intermediate_values=trial.intermediate_values,
        trial_id=trial._trial_id,
    )
