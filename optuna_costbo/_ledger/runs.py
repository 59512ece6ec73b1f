"""Which trials ran under the study's budget, and which were imported (``add_trial(s)``).

A trial is run under the budget only if a :class:`~optuna_costbo.CostRolloutSampler` saw it
start: ``before_trial`` writes this process's token on it (trial system attr ``costbo:run``).
Each process registers its own random token once per study, as a study system attr key
``costbo:runner:<token>`` (one key per process: workers never race for one value). In a study
with a registered token, a trial without one of the study's tokens was imported: copied from
another study (``add_trials`` copies system attrs, and trial ids of two databases can
coincide, so neither a copied token nor a trial id can pass for a run), made with
``create_trial``, or run by another sampler. It feeds the models and is not charged. A study
without a registered token charges every trial, to :class:`~optuna_costbo.CostBudgetPruner` and
:class:`~optuna_costbo.progress.CostProgressBar` used with another sampler; a
:class:`~optuna_costbo.CostRolloutSampler`'s own ledger (``marked``) charges none of them.
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


__all__ = ["Runs", "mark_run", "study_runs"]


class Runs:
    """The tokens of one study known to this process: its own, the study's, foreign ones.

    The study's tokens are read (one read of the study's system attrs) only when a trial
    carries a token not seen before: another worker's, or one copied from another study.
    A token is registered before any trial carries it, so one read settles it for good.
    """

    def __init__(self) -> None:
        self.own: str | None = None
        self.valid: set[str] = set()
        self.foreign: set[str] = set()
        self.lock = threading.Lock()

    def active(self, marked: bool = False) -> bool:
        """Whether trials without a token of the study count as imported: always in a
        sampler's own ledger (``marked``), else once the study has a registered token."""
        return marked or bool(self.valid)

    def learn(self, study: optuna.Study, trials: Iterable[FrozenTrial]) -> None:
        """Settle the tokens of ``trials`` not seen before (reads the study once if any)."""
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
    """The :class:`Runs` of ``study`` in this process (per storage object and study)."""
    cache = per_storage(study._storage)
    with _lock:
        if cache is None:
            return _unreferenced.setdefault((id(study._storage), study._study_id), Runs())
        runs: Runs = cache.setdefault(("runs", study._study_id), Runs())
    return runs


def mark_run(study: optuna.Study, trial: FrozenTrial) -> None:
    """Mark ``trial`` as run under the study's budget (one write; the first trial of a
    process in a study also registers the process's token)."""
    runs = study_runs(study)
    storage = study._storage
    with runs.lock:
        if runs.own is None:
            token = uuid.uuid4().hex
            storage.set_study_system_attr(study._study_id, RUNNER_ATTR_PREFIX + token, True)
            runs.own = token
            runs.valid.add(token)
    storage.set_trial_system_attr(trial._trial_id, RUN_ATTR, runs.own)
