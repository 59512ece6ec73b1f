"""Two workers proposing the same point: :func:`must_repropose` says, independent of timing,
which one moves (docs/parallel.md, "What is guaranteed")."""

from __future__ import annotations

from collections.abc import Mapping
import threading
import time
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._fresh import FreshWhenCopied


PROPOSED_ATTR = "costbo:proposed_params"  # trial system attr: the proposed parameters
CHECKED_ATTR = "costbo:proposal_checked"  # trial system attr: the proposal is final

# NOTE: how long to wait for a later trial holding the same point to say if it keeps it (long
# only if its worker died), and how often one trial proposes again (three workers clashing).
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.02
MAX_ROUNDS = 4


class Pending(FreshWhenCopied):
    """This process's proposals for trials still running: trial id -> params (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._params: dict[int, dict[str, Any]] = {}

    def set(self, trial_id: int, params: dict[str, Any]) -> None:
        with self._lock:
            self._params[trial_id] = params

    def discard(self, trial_id: int) -> None:
        with self._lock:
            self._params.pop(trial_id, None)

    def snapshot(self) -> dict[int, dict[str, Any]]:
        with self._lock:
            return dict(self._params)


def point_of(trial: FrozenTrial, proposed: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A running trial's point: its params over ``proposed`` (else its PROPOSED_ATTR)."""
    return {**(proposed or trial.system_attrs.get(PROPOSED_ATTR) or {}), **trial.params}


def _holds(trial: FrozenTrial, params: Mapping[str, Any]) -> bool:
    other = point_of(trial)
    return bool(params) and all(other.get(k) == v for k, v in params.items())


def must_repropose(study: optuna.Study, trial: FrozenTrial, params: Mapping[str, Any]) -> bool:
    """Whether another trial holds ``params`` and ``trial`` moves: always for a finished, earlier
    or unproposed one; for a later one, if it kept the point after seeing this proposal."""
    if not params:
        return False
    k0, v0 = next(iter(params.items()))
    for t in study._storage.get_all_trials(study._study_id, deepcopy=False):
        if t._trial_id == trial._trial_id:
            continue
        if t.state.is_finished():
            # NOTE: one dict lookup first: this loop runs over every trial on each suggestion.
            stored = t.params
            if stored.get(k0) == v0 and all(stored.get(k) == v for k, v in params.items()):
                return True
            continue
        if t.state != TrialState.RUNNING or not _holds(t, params):
            continue
        if t.number < trial.number or PROPOSED_ATTR not in t.system_attrs:
            return True
        if _later_trial_keeps(study, t, params):
            return True
    return False


def _later_trial_keeps(study: optuna.Study, later: FrozenTrial, params: Mapping[str, Any]) -> bool:
    """Wait until ``later`` finalized its proposal; whether it still holds ``params``."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        t = study._storage.get_trial(later._trial_id)
        if t.state != TrialState.RUNNING:
            return t.state == TrialState.COMPLETE and _holds(t, params)
        if t.system_attrs.get(CHECKED_ATTR):
            return _holds(t, params)
        if time.monotonic() > deadline:
            # its worker is stuck or dead: it keeps the point
            return True
        time.sleep(POLL_SECONDS)


def publish(study: optuna.Study, trial: FrozenTrial, params: Mapping[str, Any]) -> None:
    """Write ``params`` on ``trial`` (:data:`PROPOSED_ATTR`): others see them before Optuna
    stores the parameters one by one."""
    study._storage.set_trial_system_attr(trial._trial_id, PROPOSED_ATTR, dict(params))


def mark_checked(study: optuna.Study, trial: FrozenTrial) -> None:
    study._storage.set_trial_system_attr(trial._trial_id, CHECKED_ATTR, True)
