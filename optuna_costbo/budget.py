"""The cost ledger: what each trial cost and what the study has spent.

Everything here is recomputed from storage on demand. A sampler object is never the only
holder of the ledger: other processes may share the study, a crashed worker's trial may be
failed by heartbeat, and trials may be added with :func:`optuna.study.Study.add_trial`.

Recomputed, but not from scratch: :func:`ledger_from_trials` keeps, per storage object and
study, the charges of the finished trials it has seen, summed, and adds only the trials that
finished since (:mod:`optuna_costbo._finished`); running trials are charged
afresh every time. A finished trial's charge never changes, except a dead worker's trial
before it is settled (:func:`settle_dead_trials` writes its charge later, perhaps from another
worker): such trials are kept apart and charged afresh, settled first, until they carry a
cost. Both add the charges in trial-number order, so the incremental ledger is the full
recomputation :func:`compute_ledger`, to the last bit.
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

from optuna_costbo import _dead_trials
from optuna_costbo._finished import FinishedScan
from optuna_costbo._finished import per_storage
from optuna_costbo._numerics.checks import is_real


__all__ = [
    "BUDGET_ATTR",
    "COST_SOURCE_ATTR",
    "FINISHED_STATES",
    "INVALID_COST_ATTR",
    "REMAINING_ATTR",
    "SAMPLER_SECONDS_ATTR",
    "SKIPPED_ATTR",
    "SPENT_ATTR",
    "Ledger",
    "charged_cost",
    "compute_ledger",
    "ledger_from_trials",
    "measured_costs",
    "objective_cost",
    "report_cost",
    "sampler_seconds",
    "settle_dead_trials",
    "storage_trials",
    "store_ledger",
    "stored_budget",
    "study_ledger",
    "validate_budget",
    "validate_cost",
    "write_ledger",
]


# Study user attrs (shown by optuna-dashboard in the study's attribute table).
BUDGET_ATTR = "cost_budget"
SPENT_ATTR = "cost_spent"
REMAINING_ATTR = "cost_remaining"

# Trial system attrs written by the sampler.
SAMPLER_SECONDS_ATTR = "costbo:sampler_seconds"
COST_SOURCE_ATTR = "costbo:cost_source"
INVALID_COST_ATTR = "costbo:invalid_reported_cost"
SKIPPED_ATTR = "costbo:skipped_budget_exhausted"

FINISHED_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


def validate_budget(budget: Any) -> float:
    """Return ``budget`` as a float, or raise a ValueError saying what is allowed."""
    if not is_real(budget):
        raise ValueError(f"budget must be a positive finite number, got {budget!r}")
    value = float(budget)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"budget must be a positive finite number, got {budget!r}")
    return value


def validate_cost(cost: Any, *, name: str = "cost") -> float:
    """Return a reported cost as a float, or raise a ValueError saying what is allowed.

    A cost must be a real number, finite and non-negative. Zero is a free evaluation (a
    cached result); a negative cost would make the budget meaningless.
    """
    if not is_real(cost):
        raise ValueError(
            f"{name} must be a non-negative finite number (int or float), got {cost!r} "
            f"of type {type(cost).__name__}"
        )
    value = float(cost)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be a non-negative finite number, got {cost!r}")
    return value


def report_cost(trial: optuna.trial.BaseTrial, cost: float, *, cost_attr: str = "cost") -> None:
    """Report the cost of ``trial`` from inside the objective (money, energy, a simulated cost).

    The value is validated at once, so a bad cost fails this trial with a clear message
    instead of reaching the ledger. Equivalent to ``trial.set_user_attr(cost_attr, cost)``.

    Args:
        trial: The running trial.
        cost: A non-negative finite number (0: a free trial, e.g. a cached result), in the
            same units as the sampler's budget.
        cost_attr: The user attr name the sampler reads (its ``cost_attr`` argument).
    """
    trial.set_user_attr(cost_attr, validate_cost(cost, name=f"the reported cost {cost_attr!r}"))


def _seconds(start: datetime.datetime | None, end: datetime.datetime | None) -> float:
    if start is None or end is None:
        return 0.0
    return max((end - start).total_seconds(), 0.0)


def _reported_cost(trial: FrozenTrial, cost_attr: str) -> float | None:
    raw = trial.user_attrs.get(cost_attr)
    if raw is None:
        return None
    try:
        return validate_cost(raw)
    except ValueError:
        return None


def sampler_seconds(trial: FrozenTrial) -> float:
    """Seconds the sampler spent choosing this trial's parameters, as recorded on the trial."""
    value = trial.system_attrs.get(SAMPLER_SECONDS_ATTR, 0.0)
    if not is_real(value):
        return 0.0
    return float(value) if math.isfinite(value) and value > 0.0 else 0.0


def objective_cost(
    trial: FrozenTrial, cost_attr: str, now: datetime.datetime | None = None
) -> float:
    """Cost of the objective alone for ``trial`` (the quantity the cost model learns).

    In order of precedence: the valid number the trial carries as user attr ``cost_attr``
    (reported by the objective, recorded by the sampler after the trial, or, for a trial
    failed by heartbeat, its start to last heartbeat, written by :func:`settle_dead_trials`);
    else the trial's wall-clock duration less the sampler's own time (a trial failed by
    heartbeat before it is settled or on a storage without heartbeats, trials added with
    ``add_trial``: zero when they have no timestamps). A running trial's cost so far is
    measured up to ``now``.
    """
    reported = _reported_cost(trial, cost_attr)
    if reported is not None:
        return reported
    end = trial.datetime_complete
    if end is None and trial.state == TrialState.RUNNING:
        end = now or datetime.datetime.now()
    return max(_seconds(trial.datetime_start, end) - sampler_seconds(trial), 0.0)


def charged_cost(
    trial: FrozenTrial,
    cost_attr: str,
    charge_sampler_time: bool,
    now: datetime.datetime | None = None,
) -> float:
    """What ``trial`` costs the budget: its objective cost, plus sampler time if charged."""
    if trial.system_attrs.get(SKIPPED_ATTR):
        return 0.0
    cost = objective_cost(trial, cost_attr, now)
    if charge_sampler_time:
        cost += sampler_seconds(trial)
    return cost


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
        """Budget minus spent (may be negative after an overrun)."""
        return self.budget - self.spent

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


def _unpriced_failure(trial: FrozenTrial, cost_attr: str) -> bool:
    """A failed trial without a cost: :func:`settle_dead_trials` may still charge it."""
    return (
        trial.state == TrialState.FAIL
        and cost_attr not in trial.user_attrs
        and COST_SOURCE_ATTR not in trial.system_attrs
        and not trial.system_attrs.get(SKIPPED_ATTR)
    )


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


def ledger_from_trials(
    study: optuna.Study,
    trials: Sequence[FrozenTrial],
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
    now: datetime.datetime | None = None,
) -> Ledger:
    """The ledger of ``trials``, the trial list just read from ``study``'s storage.

    Dead workers' trials are settled first (:func:`settle_dead_trials`). Equal to
    :func:`compute_ledger` of the same list, but reads only the trials that finished since
    the last call and those after the oldest trial not finished (in a study run by W workers,
    about W); a list that is not the study's whole list in number order (HyperbandPruner's
    brackets) is summed in full.
    """
    cache = per_storage(study._storage)
    if cache is None:
        settle_dead_trials(study, trials, cost_attr)
        return compute_ledger(trials, budget, cost_attr, charge_sampler_time, now)
    with _cache_lock:
        entry = cache.setdefault(
            ("ledger", study._study_id, cost_attr, bool(charge_sampler_time)), _Charges()
        )
    now = now or datetime.datetime.now()
    with entry.lock:
        finished = entry.scan.take(trials)
        if finished is None:
            settle_dead_trials(study, trials, cost_attr)
            return compute_ledger(trials, budget, cost_attr, charge_sampler_time, now)
        unpriced = [trials[number] for number in entry.unpriced]
        for trial in finished:
            if _unpriced_failure(trial, cost_attr):
                unpriced.append(trial)
            else:
                entry.final[trial.number] = charged_cost(trial, cost_attr, charge_sampler_time)
        settle_dead_trials(study, unpriced, cost_attr)
        entry.unpriced = []
        for trial in unpriced:
            if _unpriced_failure(trial, cost_attr):
                entry.unpriced.append(trial.number)
            else:  # settled: its charge is final now
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


def settle_dead_trials(
    study: optuna.Study, trials: Iterable[FrozenTrial], cost_attr: str
) -> dict[int, float]:
    """Charge the trials that a dead worker left, failed by heartbeat, to their last heartbeat.

    A failed trial that never reached the sampler's ``after_trial`` (no cost recorded, no
    cost source) is charged from its start to its last recorded heartbeat, not to the moment
    another worker noticed it was dead; the charge is written on the trial as its user attr
    ``cost_attr`` (where optuna-dashboard shows it), with system attr ``costbo:cost_source``
    ``"heartbeat"``, exactly once whichever workers race to do it, and set on the given
    ``trials`` too. Failed trials without a stored heartbeat (storages other than RDBStorage,
    heartbeat off, trials failed by hand or added failed) are left to the wall-clock rule. See
    :mod:`optuna_costbo._dead_trials` for what this relies on in Optuna's storage.

    Returns:
        Trial id -> charged cost, for the trials settled by this call.
    """
    unpriced = [
        t
        for t in trials
        if t.state == TrialState.FAIL
        and cost_attr not in t.user_attrs
        and COST_SOURCE_ATTR not in t.system_attrs
        and not t.system_attrs.get(SKIPPED_ATTR)
    ]
    return _dead_trials.settle(study._storage, unpriced, cost_attr, COST_SOURCE_ATTR)


def study_ledger(
    study: optuna.Study,
    budget: float,
    cost_attr: str,
    charge_sampler_time: bool = False,
) -> Ledger:
    """The ledger of ``study`` as stored right now, dead workers' trials settled first."""
    return ledger_from_trials(study, storage_trials(study), budget, cost_attr, charge_sampler_time)


def write_ledger(
    study: optuna.Study, ledger: Ledger, stored: dict[str, Any] | None = None
) -> None:
    """Store budget, spent and remaining as study user attrs (shown by optuna-dashboard).

    ``stored``: the study's user attrs as just read; values already stored are not written
    again (each write is a transaction, the slowest storage call on SQLite).
    """
    storage, study_id = study._storage, study._study_id
    for key, value in (
        (BUDGET_ATTR, ledger.budget),
        (SPENT_ATTR, ledger.spent),
        (REMAINING_ATTR, max(ledger.remaining, 0.0)),
    ):
        if stored is None or stored.get(key) != value:
            storage.set_study_user_attr(study_id, key, value)


def store_ledger(
    study: optuna.Study, budget: float, cost_attr: str, charge_sampler_time: bool = False
) -> float:
    """Recompute the ledger, store it, and return the spent cost.

    Last writer wins: a worker that computed an older ledger may have written after this one,
    so the ledger is read back once and stored again if it moved. (Leaving a value that is
    already stored as it is amounts to writing it when it was read: whoever wrote another
    value since reads back after writing.)
    """
    ledger = study_ledger(study, budget, cost_attr, charge_sampler_time)
    write_ledger(study, ledger, study._storage.get_study_user_attrs(study._study_id))
    again = study_ledger(study, budget, cost_attr, charge_sampler_time)
    if again.spent != ledger.spent:
        write_ledger(study, again)
    return again.spent


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
        if source in ("reported", "wall_clock"):
            return bool(source == "wall_clock")
    return None
