"""Running trials as pending points, and the rule for two workers that propose the same point.

Every proposal is written to its trial (:data:`PROPOSED_ATTR`) before the other workers'
proposals are read, so of two workers proposing the same point at the same moment, at least
the one that wrote last sees the other (:func:`publish`). :func:`must_repropose` then decides,
without depending on timing, which of them moves; a trial marks its final proposal
(:func:`mark_checked`) once it has checked it. The loop that proposes again is the
suggestion's (:mod:`.suggest`). ``docs/parallel.md`` ("What is guaranteed") states the rule
for users.
"""

from __future__ import annotations

from collections.abc import Mapping
import threading
import time
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState


__all__ = [
    "CHECKED_ATTR",
    "MAX_ROUNDS",
    "PROPOSED_ATTR",
    "Pending",
    "mark_checked",
    "must_repropose",
    "point_of",
    "publish",
]

PROPOSED_ATTR = "costbo:proposed_params"
"""Trial system attr: the parameters the sampler proposed for a running trial."""

CHECKED_ATTR = "costbo:proposal_checked"
"""Trial system attr, set once the proposal in PROPOSED_ATTR is final (checked for clashes)."""

# NOTE: how long a proposal waits for a later trial that holds the same point to say whether it
# keeps it (that trial is between two storage calls; it only takes long if its worker died),
# and how many times one trial proposes again after clashes (three workers clashing at once).
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.02
MAX_ROUNDS = 4


class Pending:
    """This process's proposals for trials still running: trial id -> params (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._params: dict[int, dict[str, Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"_params": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._params = dict(state["_params"])

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
    """A running trial's point: its stored params over what was proposed for it.

    ``proposed`` is this process's own record, if any; else the trial's PROPOSED_ATTR.
    """
    return {**(proposed or trial.system_attrs.get(PROPOSED_ATTR) or {}), **trial.params}


def _holds(trial: FrozenTrial, params: Mapping[str, Any]) -> bool:
    """Whether ``trial`` holds or was proposed exactly ``params``."""
    other = point_of(trial)
    return bool(params) and all(other.get(k) == v for k, v in params.items())


def must_repropose(study: optuna.Study, trial: FrozenTrial, params: Mapping[str, Any]) -> bool:
    """Whether another running trial holds ``params`` and ``trial`` is the one to move.

    The rule does not depend on timing. A later trial that proposed the same point moves
    if it saw this trial's proposal, and it says whether it did by marking its own final
    proposal (CHECKED_ATTR); so this trial moves when the other one is earlier, or later
    but kept the point (it wrote first and read before this trial wrote), or holds the
    point without proposing it (enqueued or fixed parameters). Waits go only from earlier
    to later trials, so they cannot form a cycle.

    A finished trial that holds ``params`` always makes ``trial`` move: another thread or
    worker proposed the point from data that did not yet include ``trial``'s proposal, and
    evaluated it before ``trial`` published its own (a proposal computed ahead, or a fast
    objective).
    """
    if not params:
        return False
    k0, v0 = next(iter(params.items()))
    for t in study._storage.get_all_trials(study._study_id, deepcopy=False):
        if t._trial_id == trial._trial_id:
            continue
        if t.state.is_finished():
            # A finished trial's point is its stored params. NOTE: one dict lookup rejects
            # almost every trial; at 10,000 trials this loop runs on each suggestion.
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
            # Failed or pruned: the point is free again; completed: it is taken.
            return t.state == TrialState.COMPLETE and _holds(t, params)
        if t.system_attrs.get(CHECKED_ATTR):
            return _holds(t, params)
        if time.monotonic() > deadline:
            # Its worker is stuck or dead: assume it keeps the point.
            return True
        time.sleep(POLL_SECONDS)


def publish(study: optuna.Study, trial: FrozenTrial, params: Mapping[str, Any]) -> None:
    """Write ``params`` on ``trial`` as its proposal (:data:`PROPOSED_ATTR`): other workers
    see it at once, before Optuna stores the parameters one by one as the objective suggests
    them."""
    study._storage.set_trial_system_attr(trial._trial_id, PROPOSED_ATTR, dict(params))


def mark_checked(study: optuna.Study, trial: FrozenTrial) -> None:
    """Mark ``trial``'s proposal final: checked for clashes (:data:`CHECKED_ATTR`)."""
    study._storage.set_trial_system_attr(trial._trial_id, CHECKED_ATTR, True)
