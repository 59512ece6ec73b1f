"""What changed in a study's trial list since the last look: the trials that have finished.

A finished trial (COMPLETE, PRUNED, FAIL) never changes state again, and Optuna refuses to set
its attrs or values (``check_trial_is_updatable``); Optuna's ``_CachedStorage`` (around every
RDBStorage a study is given) and the gRPC proxy's client never re-read one. So whatever is
summed or intersected over finished trials can be kept per study and updated with only the
trials that finished since, while running and waiting trials are looked at afresh every time.

:class:`FinishedScan` relies on the list being the study's whole trial list in trial-number
order (trial ``i`` at index ``i``), as ``BaseStorage.get_all_trials`` returns it. Anything else
(HyperbandPruner's per-bracket lists, a list the caller filtered) is recognized on the trials
it looks at and left to the caller's full recomputation; the scan is then left as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
import datetime
import threading
from typing import Any
import weakref

from optuna.trial import FrozenTrial
from optuna.trial import TrialState


__all__ = ["FinishedScan", "finishing_trial", "per_storage"]


class FinishedScan:
    """Which trials of a study have finished since the previous call of :meth:`take`.

    Attributes:
        seen: Trials ``0 .. seen - 1`` have been looked at.
        open: Numbers below ``seen`` of the trials that had not finished when last looked at
            (running or waiting), in increasing order.
    """

    def __init__(self) -> None:
        self.seen = 0
        self.open: list[int] = []

    def take(self, trials: Sequence[FrozenTrial]) -> list[FrozenTrial] | None:
        """The trials of ``trials`` that have finished since the last call, in number order.

        Returns None, and changes nothing, if ``trials`` is not the study's whole list in
        trial-number order (as far as the trials looked at tell) or is shorter than before.
        """
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
    """A dict that lives as long as ``storage`` (None if it cannot be weakly referenced).

    State kept per study belongs to a storage object, not to a sampler: every sampler, pruner
    and thread of this process that reads the study through that object shares it, and it
    goes with the object.
    """
    with _lock:
        try:
            return _by_storage.setdefault(storage, {})
        except TypeError:
            return None


def finishing_trial(
    trial: FrozenTrial,
    state: TrialState,
    values: Sequence[float] | None,
    now: datetime.datetime | None = None,
) -> FrozenTrial:
    """A copy of a trial that is finishing (still RUNNING in storage) as it will be stored.

    A sampler's ``after_trial`` runs before the trial's state is written; this gives the
    trial its final state, values and completion time so that it can be plotted already.
    """
    return FrozenTrial(
        number=trial.number,
        state=state,
        value=None,
        values=list(values) if values is not None and state == TrialState.COMPLETE else None,
        datetime_start=trial.datetime_start,
        datetime_complete=now or datetime.datetime.now(),
        params=trial.params,
        distributions=trial.distributions,
        user_attrs=trial.user_attrs,
        system_attrs=trial.system_attrs,
        intermediate_values=trial.intermediate_values,
        trial_id=trial._trial_id,
    )
