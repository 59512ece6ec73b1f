"""The ledger: what the study has spent, summed from storage, and stored on the study.

NOTE: :func:`charge_and_sum` keeps the finished trials' charges and adds those finished since;
both it and :func:`compute_ledger` add in trial-number order, so they agree to the last bit.
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
from optuna_costbo._ledger.runs import study_runs


@dataclass(frozen=True)
class Ledger:
    """The state of a study's budget, recomputed from its trials.

    Attributes:
        budget: Total budget, in cost units.
        spent: Summed cost of finished trials (and of those whose cost is recorded).
        running_elapsed: Cost accrued so far by trials still running.
        n_finished: Number of finished trials run under the budget.
        n_running: Number of running trials.
        n_imported: Number of finished trials imported (``add_trial(s)``): not charged.
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
        """Budget minus spent, never below 0."""
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
    """Finished, or its cost recorded (its state is stored just after): counted as spent so that
    workers finishing together each store a ledger with the other's trial."""
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
    """Sum the costs of ``trials`` in order; those ``imported`` says were imported, apart."""
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
    """The finished trials of one study seen so far, summed left to right in number order.

    ``prefix_*``: sums over trials ``0 .. prefix - 1``, all final; ``final``: final trials above
    (charge, imported cost or None); ``active``: the :meth:`.runs.Runs.active` they were told by.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset(active=False)

    def reset(self, active: bool) -> None:
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
    """:func:`compute_ledger` of ``trials`` (as just read from storage), reading only the newly
    finished and those after the oldest open one; ``marked``: a sampler's own ledger."""

    def full() -> Ledger:  # without the cache: every trial looked at
        rule = imported_rule(study, trials, marked)
        return compute_ledger(trials, budget, cost_attr, charge_sampler_time, now, rule)

    runs = study_runs(study)
    cache = per_storage(study._storage)
    if cache is None:
        return full()
    key = ("ledger", study._study_id, cost_attr, bool(charge_sampler_time))
    with _cache_lock:
        entry = cache.setdefault(key, _Charges())
    now = now or datetime.datetime.now()
    with entry.lock:
        finished = entry.scan.take(trials)
        if finished is None:
            return full()
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


def imported_rule(
    study: optuna.Study, trials: Sequence[FrozenTrial], marked: bool = False
) -> Callable[[FrozenTrial], bool] | None:
    """Which of ``trials`` were imported (:mod:`.runs`); None: none of them."""
    runs = study_runs(study)
    runs.learn(study, trials)
    if not runs.active(marked):
        return None
    return lambda trial: runs.imported(trial, marked)


_cache_lock = threading.Lock()


def storage_trials(study: optuna.Study) -> list[FrozenTrial]:
    """All trials of the study from storage (HyperbandPruner's bracket studies included)."""
    return study._storage.get_all_trials(study._study_id, deepcopy=False)


def refresh_ledger(
    study: optuna.Study, budget: float, cost_attr: str, charge_sampler_time: bool = False
) -> Ledger:
    """The sampler's ledger of ``study`` as stored now (trials it did not start are imported)."""
    trials = storage_trials(study)
    return charge_and_sum(study, trials, budget, cost_attr, charge_sampler_time, marked=True)


def write_ledger(
    study: optuna.Study, ledger: Ledger, stored: dict[str, Any] | None = None
) -> None:
    """Store the ledger as study user attrs, skipping values already in ``stored`` (each write
    is a transaction) and infinite ones (a study without a budget: JSON has no infinity)."""
    storage, study_id = study._storage, study._study_id
    imports = ((IMPORTED_ATTR, ledger.imported_cost), (IMPORTED_TRIALS_ATTR, ledger.n_imported))
    for key, value in (
        (BUDGET_ATTR, ledger.budget),
        (SPENT_ATTR, ledger.spent),
        (REMAINING_ATTR, ledger.remaining),
        (OVERRUN_ATTR, ledger.overrun),
        *(imports if ledger.n_imported else ()),
    ):
        if math.isfinite(value) and (stored is None or stored.get(key) != value):
            storage.set_study_user_attr(study_id, key, value)


# NOTE: another round is needed only when a trial finished between a write and its read-back.
_MAX_STORE_ROUNDS = 16


def store_ledger(
    study: optuna.Study,
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
    own_trial_id: int | None = None,
) -> tuple[float, list[FrozenTrial]]:
    """Recompute and store the ledger; return the spent cost and the trials it was summed from.

    NOTE: last writer wins, and another worker may write a ledger older than this trial; so
    while others run, re-read and re-store until it no longer moves (alone: one read suffices).
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
    """The budget a :class:`~optuna_costbo.CostRolloutSampler` stored on the study, if any (a
    positive finite number)."""
    raw = study._storage.get_study_user_attrs(study._study_id).get(BUDGET_ATTR)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    return float(raw) if math.isfinite(raw) and raw > 0.0 else None
