"""The ledger: what the study has spent, recomputed from storage, and stored on the study.

Everything here is recomputed from storage on demand. A sampler object is never the only
holder of the ledger: other processes may share the study, a crashed worker's trial may be
failed by heartbeat, and trials may be added with :func:`optuna.study.Study.add_trial` (they
are imported, counted apart and not charged: :mod:`.runs`).

Recomputed, but not from scratch: :func:`charge_and_sum` keeps, per storage object and study,
the charges of the finished trials it has seen, summed, and adds only the trials that finished
since (:mod:`.finished`); running trials are charged afresh every time. A finished trial's
charge never changes (a dead worker's too: :mod:`.dead_trials`). Both add the charges in
trial-number order, so the incremental ledger is the full recomputation
:func:`compute_ledger`, to the last bit.

Only :func:`write_ledger` and :func:`store_ledger` write: the study's user attrs.
"""

from __future__ import annotations

from collections.abc import Callable
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
from optuna_costbo._ledger.finished import FinishedScan
from optuna_costbo._ledger.finished import per_storage
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import IMPORTED_ATTR
from optuna_costbo._ledger.keys import IMPORTED_TRIALS_ATTR
from optuna_costbo._ledger.keys import OVERRUN_ATTR
from optuna_costbo._ledger.keys import REMAINING_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._ledger.keys import CostSource
from optuna_costbo._ledger.runs import study_runs


__all__ = [
    "Ledger",
    "charge_and_sum",
    "compute_ledger",
    "imported_rule",
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
        n_finished: Number of finished trials (run under the budget).
        n_running: Number of running trials.
        n_imported: Number of finished trials imported (``add_trial(s)``, :mod:`.runs`):
            they inform the models and are not charged.
        imported_cost: Their summed cost (not in ``spent``).
    """

    budget: float
    spent: float
    running_elapsed: float
    n_finished: int
    n_running: int
    n_imported: int = 0
    imported_cost: float = 0.0

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
    imported: Callable[[FrozenTrial], bool] | None = None,
) -> Ledger:
    """Sum the costs of ``trials`` into a :class:`Ledger` (in the order given); a trial
    ``imported`` says was imported is counted apart, not charged (None: none was)."""
    now = now or datetime.datetime.now()
    spent = running = imported_cost = 0.0
    n_finished = n_running = n_imported = 0
    for trial in trials:
        if imported is not None and imported(trial):
            if trial.state in FINISHED_STATES:
                imported_cost += charged_cost(trial, cost_attr, False)
                n_imported += 1
        elif _finishing(trial):
            spent += charged_cost(trial, cost_attr, charge_sampler_time, now)
            n_finished += 1
        elif trial.state == TrialState.RUNNING:
            running += charged_cost(trial, cost_attr, charge_sampler_time, now)
            n_running += 1
    return Ledger(budget, spent, running, n_finished, n_running, n_imported, imported_cost)


class _Charges:
    """The finished trials of one study seen so far, for one way of charging them.

    The sums are kept as :func:`compute_ledger` makes them, left to right in trial-number
    order, so that both give the same floats: ``prefix_sum`` and ``prefix_imported`` hold the
    charges and imported costs of trials ``0 .. prefix - 1``, all final; ``final`` those of
    final trials numbered above (charge, imported cost or None for a trial run here).
    ``active``: whether untokened trials counted as imported (:mod:`.runs`) when seen.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset(active=False)

    def reset(self, active: bool) -> None:
        """Forget every trial seen (the way trials are told imported changed)."""
        self.active = active
        self.scan = FinishedScan()
        self.prefix = self.n_finished = self.n_imported = 0
        self.prefix_sum = self.prefix_imported = 0.0
        self.final: dict[int, tuple[float, float | None]] = {}

    def settle(self, trial: FrozenTrial, cost_attr: str, charge: bool, imported: bool) -> None:
        cost = charged_cost(trial, cost_attr, charge and not imported)
        self.final[trial.number] = (0.0, cost) if imported else (cost, None)

    def advance(self) -> None:
        """Move the final trials that follow the prefix into it."""
        while self.prefix in self.final:
            charge, imported = self.final.pop(self.prefix)
            if imported is None:
                self.prefix_sum += charge
                self.n_finished += 1
            else:
                self.prefix_imported += imported
                self.n_imported += 1
            self.prefix += 1


def charge_and_sum(
    study: optuna.Study,
    trials: Sequence[FrozenTrial],
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
    now: datetime.datetime | None = None,
    marked: bool = False,
) -> Ledger:
    """The ledger of ``trials``, the trial list just read from ``study``'s storage.

    Imported trials are counted apart (:mod:`.runs`). Equal to :func:`compute_ledger` of the
    same list, but reads only the trials that finished since the last call and those after
    the oldest trial not finished (in a study run by W workers, about W); a list that is not
    the study's whole list in number order (HyperbandPruner's brackets) is summed in full.
    ``marked``: the ledger of a :class:`~optuna_costbo.CostRolloutSampler`, which marks its
    runs (:meth:`.runs.Runs.active`).
    """
    runs = study_runs(study)
    cache = per_storage(study._storage)
    if cache is None:
        return _full(study, trials, budget, cost_attr, charge_sampler_time, now, marked)
    key = ("ledger", study._study_id, cost_attr, bool(charge_sampler_time))
    with _cache_lock:
        entry = cache.setdefault(key, _Charges())
    now = now or datetime.datetime.now()
    with entry.lock:
        finished = entry.scan.take(trials)
        if finished is None:
            return _full(study, trials, budget, cost_attr, charge_sampler_time, now, marked)
        runs.learn(study, [*finished, *trials[entry.prefix :]])
        if runs.active(marked) != entry.active:  # the first token, or another kind of reader
            entry.reset(runs.active(marked))
            finished = entry.scan.take(trials) or []
        for trial in finished:
            entry.settle(trial, cost_attr, charge_sampler_time, runs.imported(trial, marked))
        entry.advance()
        spent, n_finished = entry.prefix_sum, entry.n_finished
        imported_cost, n_imported = entry.prefix_imported, entry.n_imported
        running, n_running = 0.0, 0
        for number in range(entry.prefix, len(trials)):
            final = entry.final.get(number)
            if final is not None:
                if final[1] is None:
                    spent += final[0]
                    n_finished += 1
                else:
                    imported_cost += final[1]
                    n_imported += 1
                continue
            trial = trials[number]
            if runs.imported(trial, marked):
                continue
            if _finishing(trial):
                spent += charged_cost(trial, cost_attr, charge_sampler_time, now)
                n_finished += 1
            elif trial.state == TrialState.RUNNING:
                running += charged_cost(trial, cost_attr, charge_sampler_time, now)
                n_running += 1
    return Ledger(budget, spent, running, n_finished, n_running, n_imported, imported_cost)


def _full(
    study: optuna.Study,
    trials: Sequence[FrozenTrial],
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool,
    now: datetime.datetime | None,
    marked: bool,
) -> Ledger:
    """:func:`charge_and_sum` without its cache: every trial looked at."""
    imported = imported_rule(study, trials, marked)
    return compute_ledger(trials, budget, cost_attr, charge_sampler_time, now, imported)


def imported_rule(
    study: optuna.Study, trials: Sequence[FrozenTrial], marked: bool = False
) -> Callable[[FrozenTrial], bool] | None:
    """Which of ``trials`` of ``study`` were imported (:mod:`.runs`); None: none of them."""
    runs = study_runs(study)
    runs.learn(study, trials)
    if not runs.active(marked):
        return None
    return lambda trial: runs.imported(trial, marked)


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
    """The sampler's ledger of ``study`` as stored right now (trials it did not start are
    imported)."""
    trials = storage_trials(study)
    return charge_and_sum(study, trials, budget, cost_attr, charge_sampler_time, marked=True)


def write_ledger(
    study: optuna.Study, ledger: Ledger, stored: dict[str, Any] | None = None
) -> None:
    """Store budget, spent, remaining and overrun (and, if any, the imported trials' cost
    and count) as study user attrs (shown by optuna-dashboard).

    ``stored``: the study's user attrs as just read; values already stored are not written
    again (each write is a transaction, the slowest storage call on SQLite). A study run
    without a budget (a stopping rule ends it) stores what it spent only: JSON has no
    infinity.
    """
    storage, study_id = study._storage, study._study_id
    imports = ((IMPORTED_ATTR, ledger.imported_cost), (IMPORTED_TRIALS_ATTR, ledger.n_imported))
    for key, value in (
        (BUDGET_ATTR, ledger.budget),
        (SPENT_ATTR, ledger.spent),
        (REMAINING_ATTR, ledger.remaining),
        (OVERRUN_ATTR, ledger.overrun),
        *(imports if ledger.n_imported else ()),
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
