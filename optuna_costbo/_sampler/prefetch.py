"""The next suggestion computed while the current trial runs (``prefetch=True``).

After a trial's point is chosen, a background thread computes the next trial's proposal with
the running trial as a pending point (the kriging believer the sampler uses for parallel
workers), so that on trials longer than a suggestion the next one is ready when they end.
The next trial takes it only when nothing else happened in between: the same study and
search space, the running trial finished, no other trial finished or started; otherwise it
is discarded and the sampler proposes afresh.

Determinism: the next suggestion always waits for the thread, and the thread draws from the
sampler's random generator while the main thread does not, so a sequential run with a seed
is the same run every time. It is not the run without prefetch: the prefetched point was
chosen before the running trial's value was known (asynchronous BO with one pending point).

Only for one worker thread: with other trials running (``n_jobs > 1``, other workers), or a
state-dependent ``cost_fn`` (its origin, the running trial's point, is not stored yet), no
thread is started.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from dataclasses import field
import threading
from typing import Any
from typing import Generic
from typing import TypeVar

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._optuna_compat import root_study


__all__ = ["Prefetch"]

_P = TypeVar("_P")


@dataclass
class _Job(Generic[_P]):
    study_id: int
    key: Any  # the search space
    trial_id: int  # the running trial the job took as pending
    finished: frozenset[int]  # trial ids finished when it started
    thread: threading.Thread | None = None
    result: list[_P | None] = field(default_factory=list)


class Prefetch(Generic[_P]):
    """At most one suggestion computed ahead, for the next trial of one study."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._job: _Job[_P] | None = None
        self._lock = threading.Lock()
        self.used = 0  # prefetched proposals taken (for tests and logs)

    def __getstate__(self) -> dict[str, Any]:
        return {"enabled": self.enabled}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["enabled"])  # type: ignore[misc]

    def start(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        key: Any,
        compute: Callable[[FrozenTrial], _P | None],
        lock: AbstractContextManager[Any],
    ) -> None:
        """Compute ``compute(next_trial)`` in a thread, holding ``lock``, with ``trial``
        running; ``next_trial`` stands for the trial after it (number + 1, no id)."""
        if not self.enabled:
            return
        trials = root_study(study).get_trials(deepcopy=False)
        if any(t.state == TrialState.RUNNING and t._trial_id != trial._trial_id for t in trials):
            return
        job: _Job[_P] = _Job(
            study._study_id,
            key,
            trial._trial_id,
            frozenset(t._trial_id for t in trials if t.state.is_finished()),
        )
        stand_in = FrozenTrial.__new__(FrozenTrial)
        stand_in.__dict__.update(trial.__dict__)
        stand_in._trial_id = -1
        stand_in.number = trial.number + 1

        def run() -> None:
            try:
                with lock:
                    job.result.append(compute(stand_in))
            except Exception:  # the next trial then proposes afresh (and raises, if it must)
                job.result.append(None)

        job.thread = threading.Thread(target=run, name="costbo-prefetch", daemon=True)
        with self._lock:
            if self._job is not None:
                return
            job.thread.start()
            self._job = job

    def take(self, study: optuna.Study, trial: FrozenTrial, key: Any) -> _P | None:
        """The proposal computed for ``trial``, if it is still valid; waits for it."""
        with self._lock:
            job, self._job = self._job, None
        if job is None:
            return None
        assert job.thread is not None
        job.thread.join()
        if job.study_id != study._study_id or job.key != key or not job.result:
            return None
        trials = root_study(study).get_trials(deepcopy=False)
        finished = {t._trial_id for t in trials if t.state.is_finished()}
        running = {t._trial_id for t in trials if t.state == TrialState.RUNNING}
        if finished != job.finished | {job.trial_id} or running != {trial._trial_id}:
            return None
        proposal = job.result[0]
        if proposal is not None:
            self.used += 1
        return proposal
