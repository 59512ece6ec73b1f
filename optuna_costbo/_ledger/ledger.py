"""The ledger: what the study has spent, recomputed from storage, and stored on the study.

Everything here is recomputed from storage on demand. A sampler object is never the only
holder of the ledger: other processes may share the study, a crashed worker's trial may be
failed by heartbeat, and trials may be added with :func:`optuna.study.Study.add_trial`.

Recomputed, but not from scratch: :func:`charge_and_sum` keeps, per storage object and study,
the charges of the finished trials it has seen, summed, and adds only the trials that finished
since (:mod:`.finished`); running trials are charged afresh every time. A finished trial's
charge never changes, except a dead worker's trial before it is charged to its heartbeat
(:func:`.dead_trials.charge_dead_trials` writes its charge later, perhaps from another
worker): such trials are kept apart and charged afresh, after an attempt to charge them to
their heartbeat, until they carry a cost. Both add the charges in trial-number order, so the
incremental ledger is the full recomputation :func:`compute_ledger`, to the last bit.

The functions that write say so in their names: :func:`charge_and_sum` and
:func:`refresh_ledger` may write a dead worker's charge on its trial; :func:`write_ledger`
and :func:`store_ledger` write the study's user attrs.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
import datetime
import math
import threading
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.costs import charged_cost
from optuna_costbo._ledger.dead_trials import charge_dead_trials
from optuna_costbo._ledger.dead_trials import unpriced_failure
from optuna_costbo._ledger.finished import FinishedScan
from optuna_costbo._ledger.finished import per_storage
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import OVERRUN_ATTR
from optuna_costbo._ledger.keys import REMAINING_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._ledger.keys import CostSource


__all__ = [
    "Ledger",
    "charge_and_sum",
    "compute_ledger",
    "measured_costs",
    "refresh_ledger",
    "storage_trials",
    "store_ledger",
    "stored_budget",
    "write_ledger",
]


@dataclass(frozen=True)
class Ledger:
    """The state of a study's budget, recomputed from its trials.

    Attributes:
        budget: Total budget, in cost units.
        spent: Summed cost of finished trials (COMPLETE, PRUNED and FAIL, and trials whose
            cost the sampler has recorded while their final state is being stored).
        running_elapsed: Cost accrued so far by trials still running.
        n_finished: Number of finished trials.
        n_running: Number of running trials.
    """

    budget: float
    spent: float
    running_elapsed: float
    n_finished: int
    n_running: int

    @property
    def remaining(self) -> float:
        """Budget minus spent, never below 0 (what an overrun went beyond is :attr:`overrun`)."""
        return max(self.budget - self.spent, 0.0)

    @property
    def overrun(self) -> float:
        """Spent beyond the budget, 0 while within it."""
        return max(self.spent - self.budget, 0.0)

    @property
    def exhausted(self) -> bool:
        """Whether no budget is left for another trial."""
        return self.spent >= self.budget


def _finishing(trial: FrozenTrial) -> bool:
    """Whether ``trial`` counts as spent: finished, or its cost recorded while its final state
    is being stored.

    A trial whose cost the sampler has recorded is finishing: its state is written to storage
    just after. Counting it as spent keeps workers that finish together from each storing a
    ledger that misses the other's trial.
    """
    return trial.state in FINISHED_STATES or (
        trial.state == TrialState.RUNNING and COST_SOURCE_ATTR in trial.system_attrs
    )


def compute_ledger(
    trials: Iterable[FrozenTrial],
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
    now: datetime.datetime | None = None,
) -> Ledger:
    """Sum the costs of ``trials`` into a :class:`Ledger` (in the order given)."""
    now = now or datetime.datetime.now()
    spent = 0.0
    running = 0.0
    n_finished = 0
    n_running = 0
    for trial in trials:
        if _finishing(trial):
            spent += charged_cost(trial, cost_attr, charge_sampler_time, now)
            n_finished += 1
        elif trial.state == TrialState.RUNNING:
            running += charged_cost(trial, cost_attr, charge_sampler_time, now)
            n_running += 1
    return Ledger(budget, spent, running, n_finished, n_running)


class _Charges:
    """The finished trials of one study seen so far, for one way of charging them.

    The sum is kept as :func:`compute_ledger` makes it, left to right in trial-number order,
    so that both give the same float: ``prefix_sum`` holds the charges of trials
    ``0 .. prefix - 1``, all final; ``final`` the charges of final trials numbered above.
    """

    def __init__(self) -> None:
        self.scan = FinishedScan()
        self.prefix = 0
        self.prefix_sum = 0.0
        self.final: dict[int, float] = {}
        self.unpriced: list[int] = []  # numbers of failed trials not charged yet (see above)
        self.lock = threading.Lock()


def charge_and_sum(
    study: optuna.Study,
    trials: Sequence[FrozenTrial],
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
    now: datetime.datetime | None = None,
) -> Ledger:
    """The ledger of ``trials``, the trial list just read from ``study``'s storage.

    Dead workers' trials are charged to their heartbeat first (WRITES: see
    :func:`.dead_trials.charge_dead_trials`). Equal to
    :func:`compute_ledger` of the same list, but reads only the trials that finished since
    the last call and those after the oldest trial not finished (in a study run by W workers,
    about W); a list that is not the study's whole list in number order (HyperbandPruner's
    brackets) is summed in full.
    """
    cache = per_storage(study._storage)
    if cache is None:
        charge_dead_trials(study, trials, cost_attr)
        return compute_ledger(trials, budget, cost_attr, charge_sampler_time, now)
    with _cache_lock:
        entry = cache.setdefault(
            ("ledger", study._study_id, cost_attr, bool(charge_sampler_time)), _Charges()
        )
    now = now or datetime.datetime.now()
    with entry.lock:
        finished = entry.scan.take(trials)
        if finished is None:
            charge_dead_trials(study, trials, cost_attr)
            return compute_ledger(trials, budget, cost_attr, charge_sampler_time, now)
        unpriced = [trials[number] for number in entry.unpriced]
        for trial in finished:
            if unpriced_failure(trial, cost_attr):
                unpriced.append(trial)
            else:
                entry.final[trial.number] = charged_cost(trial, cost_attr, charge_sampler_time)
        charge_dead_trials(study, unpriced, cost_attr)
        entry.unpriced = []
        for trial in unpriced:
            if unpriced_failure(trial, cost_attr):
                entry.unpriced.append(trial.number)
            else:  # charged: final now
                entry.final[trial.number] = charged_cost(trial, cost_attr, charge_sampler_time)
        while entry.prefix in entry.final:
            entry.prefix_sum += entry.final.pop(entry.prefix)
            entry.prefix += 1
        spent, n_finished = entry.prefix_sum, entry.prefix
        running, n_running = 0.0, 0
        for number in range(entry.prefix, len(trials)):
            cost = entry.final.get(number)
            if cost is not None:
                spent += cost
                n_finished += 1
                continue
            trial = trials[number]
            if _finishing(trial):
                spent += charged_cost(trial, cost_attr, charge_sampler_time, now)
                n_finished += 1
            elif trial.state == TrialState.RUNNING:
                running += charged_cost(trial, cost_attr, charge_sampler_time, now)
                n_running += 1
    return Ledger(budget, spent, running, n_finished, n_running)


_cache_lock = threading.Lock()


def storage_trials(study: optuna.Study) -> list[FrozenTrial]:
    """All trials of the study from storage (works for HyperbandPruner's bracket studies)."""
    return study._storage.get_all_trials(study._study_id, deepcopy=False)


def refresh_ledger(
    study: optuna.Study,
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
) -> Ledger:
    """The ledger of ``study`` as stored right now, dead workers' trials charged first
    (writes them, see :func:`charge_and_sum`)."""
    return charge_and_sum(study, storage_trials(study), budget, cost_attr, charge_sampler_time)


def write_ledger(
    study: optuna.Study, ledger: Ledger, stored: dict[str, Any] | None = None
) -> None:
    """Store budget, spent, remaining and overrun as study user attrs (shown by
    optuna-dashboard).

    ``stored``: the study's user attrs as just read; values already stored are not written
    again (each write is a transaction, the slowest storage call on SQLite). A study run
    without a budget (a stopping rule ends it) stores what it spent only: JSON has no
    infinity.
    """
    storage, study_id = study._storage, study._study_id
    for key, value in (
        (BUDGET_ATTR, ledger.budget),
        (SPENT_ATTR, ledger.spent),
        (REMAINING_ATTR, ledger.remaining),
        (OVERRUN_ATTR, ledger.overrun),
    ):
        if not math.isfinite(value):
            continue
        if stored is None or stored.get(key) != value:
            storage.set_study_user_attr(study_id, key, value)


# NOTE: rounds of store_ledger's read-back; one more round is needed only when another
# worker's trial finished between this worker's last write and its read-back.
_MAX_STORE_ROUNDS = 16


def store_ledger(
    study: optuna.Study,
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
    own_trial_id: int | None = None,
) -> tuple[float, list[FrozenTrial]]:
    """Recompute the ledger, store it; the spent cost and the trials it was computed from.

    Last writer wins: another worker may write a ledger it computed before this worker's trial
    finished, after this worker's write. So while other trials run, the ledger is computed and
    stored again after each write until it no longer moves: the last write of all is then of
    the final ledger. With no trial running but ``own_trial_id``, no other worker can hold a
    ledger without this trial's cost, and one read suffices.
    """
    trials = storage_trials(study)
    ledger = charge_and_sum(study, trials, budget, cost_attr, charge_sampler_time)
    write_ledger(study, ledger, study._storage.get_study_user_attrs(study._study_id))
    written = ledger.spent
    alone = own_trial_id is not None and not any(
        t.state == TrialState.RUNNING and t._trial_id != own_trial_id for t in trials
    )
    for _ in range(0 if alone else _MAX_STORE_ROUNDS):
        trials = storage_trials(study)
        again = charge_and_sum(study, trials, budget, cost_attr, charge_sampler_time)
        if again.spent == written:
            break
        write_ledger(study, again)
        written = again.spent
    return written, trials


def stored_budget(study: optuna.Study) -> float | None:
    """The budget stored on the study by a :class:`CostRolloutSampler`, if any."""
    value = study._storage.get_study_user_attrs(study._study_id).get(BUDGET_ATTR)
    return float(value) if isinstance(value, (int, float)) else None


def measured_costs(trials: Sequence[FrozenTrial]) -> bool | None:
    """Whether the study's costs are measured wall-clock time: the source recorded for the
    first finished trial with a cost (``True``: measured, ``False``: reported or from a
    ``cost_fn``); ``None`` before any trial has one."""
    for t in trials:
        source = t.system_attrs.get(COST_SOURCE_ATTR)
        if source in (CostSource.REPORTED, CostSource.COST_FN, CostSource.WALL_CLOCK):
            return bool(source == CostSource.WALL_CLOCK)
    return None
