"""Which trials ran under the study's budget, and which were imported (``add_trial(s)``).

NOTE: each process registers a random token on the study (one key each: no race) and writes it
on the trials it starts; a trial without one of the study's tokens was imported, since copied
attrs and trial ids can coincide across databases. Without any token, every trial is charged.
"""

from __future__ import annotations

from collections.abc import Iterable
import threading
import uuid

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.finished import per_storage
from optuna_costbo._ledger.keys import RUN_ATTR
from optuna_costbo._ledger.keys import RUNNER_ATTR_PREFIX


class Runs:
    """The tokens of one study known to this process: its own, the study's, foreign ones."""

    def __init__(self) -> None:
        self.own: str | None = None
        self.valid: set[str] = set()
        self.foreign: set[str] = set()
        self.lock = threading.Lock()

    def active(self, marked: bool = False) -> bool:
        """Whether untokened trials count as imported: in a sampler's own ledger, or once the
        study has a token."""
        return marked or bool(self.valid)

    def learn(self, study: optuna.Study, trials: Iterable[FrozenTrial]) -> None:
        """Settle the tokens of ``trials`` not seen before (a token is registered before use, so
        one read of the study settles it for good)."""
        with self.lock:
            unknown = {
                token
                for t in trials
                if isinstance(token := t.system_attrs.get(RUN_ATTR), str)
                and token not in self.valid
                and token not in self.foreign
            }
            if not unknown:
                return
            attrs = study._storage.get_study_system_attrs(study._study_id)
            n = len(RUNNER_ATTR_PREFIX)
            self.valid |= {key[n:] for key in attrs if key.startswith(RUNNER_ATTR_PREFIX)}
            self.foreign |= unknown - self.valid

    def imported(self, trial: FrozenTrial, marked: bool = False) -> bool:
        """Whether ``trial`` was imported: not started under this study's budget."""
        return self.active(marked) and trial.system_attrs.get(RUN_ATTR) not in self.valid


_lock = threading.Lock()
_unreferenced: dict[tuple[int, int], Runs] = {}  # storages that cannot be weakly referenced


def study_runs(study: optuna.Study) -> Runs:
    cache = per_storage(study._storage)
    with _lock:
        if cache is None:
            return _unreferenced.setdefault((id(study._storage), study._study_id), Runs())
        runs: Runs = cache.setdefault(("runs", study._study_id), Runs())
    return runs


def mark_run(study: optuna.Study, trial: FrozenTrial) -> None:
    """Mark ``trial`` as run under the study's budget (registering this process's token once)."""
    runs = study_runs(study)
    storage = study._storage
    with runs.lock:
        if runs.own is None:
            token = uuid.uuid4().hex
            storage.set_study_system_attr(study._study_id, RUNNER_ATTR_PREFIX + token, True)
            runs.own = token
            runs.valid.add(token)
    storage.set_trial_system_attr(trial._trial_id, RUN_ATTR, runs.own)
