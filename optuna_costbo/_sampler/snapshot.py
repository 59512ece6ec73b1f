"""One read of the study per suggestion, encoded once into the policy's request."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import threading
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._fresh import FreshWhenCopied
from optuna_costbo._ledger.costs import objective_cost
from optuna_costbo._ledger.finished import FinishedScan
from optuna_costbo._ledger.finished import per_storage
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import INVALID_COST_ATTR
from optuna_costbo._ledger.keys import OVERRUN_CHANCE_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._numerics.cost_model import COST_FLOOR
from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.curves import Curve
from optuna_costbo._numerics.curves import PruningStats
from optuna_costbo._numerics.curves import finals_and_bounds
from optuna_costbo._numerics.curves import impute_finals
from optuna_costbo._numerics.curves import run_fractions
from optuna_costbo._numerics.request import CostData
from optuna_costbo._numerics.request import FitSchedule
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import WarmStart
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._optuna_compat import trial_constraints
from optuna_costbo._sampler.clash import point_of
from optuna_costbo._sampler.space import Activity
from optuna_costbo._sampler.space import SpaceBridge
from optuna_costbo._sampler.space import space_key


def minimize_signs(directions: Sequence[StudyDirection]) -> np.ndarray:
    """Per objective 1 (minimized) or -1 (maximized), (m,): values times these are minimized."""
    return np.array([-1.0 if d == StudyDirection.MAXIMIZE else 1.0 for d in directions])


class _SpaceOfStudy:
    """Completed trials' parameters with one distribution, and which categorical choices each
    came with (to tell when a conditional parameter is asked)."""

    def __init__(self) -> None:
        self.scan = FinishedScan()
        self.lock = threading.Lock()
        self.n_complete = 0
        self.dists: dict[str, BaseDistribution | None] = {}  # None: it changed (dynamic)
        self.present: Counter[str] = Counter()
        self.choices: dict[str, Counter[int]] = {}  # parent -> trials per choice index
        self.together: dict[tuple[str, str], Counter[int]] = {}  # (child, parent) -> per choice

    def add(self, trials: Sequence[FrozenTrial]) -> None:
        """Count the COMPLETE trials of ``trials``."""
        for trial in (t for t in trials if t.state == TrialState.COMPLETE):
            self.n_complete += 1
            for name, dist in trial.distributions.items():
                known = self.dists.setdefault(name, dist)
                if known is not None and known != dist:
                    self.dists[name] = None
                self.present[name] += 1
            for parent, dist in trial.distributions.items():
                if not isinstance(dist, CategoricalDistribution):
                    continue
                try:
                    choice = int(dist.to_internal_repr(trial.params[parent]))
                except (ValueError, KeyError):
                    continue
                self.choices.setdefault(parent, Counter())[choice] += 1
                for child in trial.params:
                    if child != parent:
                        self.together.setdefault((child, parent), Counter())[choice] += 1

    def space(self) -> tuple[dict[str, BaseDistribution], Activity]:
        """Every parameter with one distribution wherever it appears, by name; what each asks."""
        space = dict(sorted((n, d) for n, d in self.dists.items() if d is not None))
        return space, self.activity(space)

    def activity(self, space: Mapping[str, BaseDistribution]) -> Activity:
        """A parameter some trials lack is asked when its first categorical parent that tells
        (every trial of some choices has it, none of the others) takes those; else optional."""
        rules: dict[str, tuple[str, frozenset[int]]] = {}
        optional: set[str] = set()
        for child in space:
            n_child = self.present[child]
            if n_child == self.n_complete:
                continue
            for parent, dist in space.items():
                if parent == child or not isinstance(dist, CategoricalDistribution):
                    continue
                with_child = self.together.get((child, parent), Counter())
                seen = self.choices.get(parent, Counter())
                if sum(with_child.values()) != n_child:
                    continue  # it appears without this parent
                if all(with_child[c] in (0, seen[c]) for c in seen):
                    rules[child] = (parent, frozenset(c for c in seen if with_child[c] > 0))
                    break
            else:
                optional.add(child)
        return Activity(rules=rules, optional=frozenset(optional))


_spaces_lock = threading.Lock()


def completed_search_space(
    study: optuna.Study, trials: Sequence[FrozenTrial]
) -> tuple[dict[str, BaseDistribution], Activity]:
    """The completed trials' search space, kept per study and updated with the trials completed
    since (parameters whose range changed left out), and its conditional parameters."""
    cache = per_storage(study._storage)
    if cache is not None:
        with _spaces_lock:
            entry: _SpaceOfStudy = cache.setdefault(("space", study._study_id), _SpaceOfStudy())
        with entry.lock:
            finished = entry.scan.take(trials)
            if finished is not None:
                entry.add(finished)
                return entry.space()
    fresh = _SpaceOfStudy()
    fresh.add(trials)
    return fresh.space()


class TrialReads(FreshWhenCopied):
    """The one read of the study per trial, shared by the ledger, the search space, the
    proposal and the independent parameters; dropped when the trial finishes."""

    _KEEP = 64  # reads kept for running trials of this process (threads, n_jobs > 1)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: dict[int, list[FrozenTrial]] = {}
        self._activity: dict[int, Activity] = {}
        self._events = 0  # reads made and trials dropped by this process: its other trials
        self._seen: dict[int, int] = {}  # trial id -> _events when its read was made
        self._bridge: tuple[Any, SpaceBridge] = ((), SpaceBridge({}))  # (key, the last bridge)

    def read(self, study: optuna.Study, trial: FrozenTrial) -> list[FrozenTrial]:
        with self._lock:
            trials = self._reads.get(trial._trial_id)
        if trials is None:
            with self._lock:
                self._events += 1
                mark = self._events  # taken first: a read another thread begins meanwhile counts
            trials = root_study(study).get_trials(deepcopy=False)
            with self._lock:
                if len(self._reads) >= self._KEEP:
                    self._reads.clear()
                    self._activity.clear()
                    self._seen.clear()
                self._reads[trial._trial_id] = trials
                self._seen[trial._trial_id] = mark
        return trials

    def current(self, study: optuna.Study, trial: FrozenTrial) -> list[FrozenTrial]:
        """The trial's read, read again if it may be out of date (another trial was running, or
        this process began or finished one since): a hard budget must see every other trial's
        cost, spent or reserved. Alone, no read more."""
        trials = self.read(study, trial)
        others = any(
            t.state == TrialState.RUNNING and t._trial_id != trial._trial_id for t in trials
        )
        with self._lock:
            moved = self._seen.get(trial._trial_id) != self._events
        if others or moved:
            trials = root_study(study).get_trials(deepcopy=False)
            with self._lock:
                self._reads[trial._trial_id] = trials
        return trials

    def search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        space, activity = completed_search_space(study, self.read(study, trial))
        with self._lock:
            self._activity[trial._trial_id] = activity
        return space

    def activity(self, trial: FrozenTrial) -> Activity:
        with self._lock:
            return self._activity.get(trial._trial_id, Activity())

    def bridge(self, space: Mapping[str, BaseDistribution], trial: FrozenTrial) -> SpaceBridge:
        """The bridge of ``space`` and the trial's activity: the last one while both are alike."""
        activity = self.activity(trial)
        key = (space_key(space), activity.key)
        with self._lock:
            if self._bridge[0] != key:
                self._bridge = (key, SpaceBridge(space, activity))
            return self._bridge[1]

    def drop(self, trial: FrozenTrial) -> None:
        with self._lock:
            self._events += 1
            self._seen.pop(trial._trial_id, None)
            self._reads.pop(trial._trial_id, None)
            self._activity.pop(trial._trial_id, None)


def _usable(trial: FrozenTrial) -> bool:
    """COMPLETE with a valid cost: its value goes to the objective model."""
    return trial.state == TrialState.COMPLETE and INVALID_COST_ATTR not in trial.system_attrs


def read_snapshot(
    trials: Sequence[FrozenTrial],
    trial: FrozenTrial,
    bridge: SpaceBridge,
    *,
    sign: float | np.ndarray,
    cost_attr: str,
    pending: Mapping[int, Mapping[str, Any]],
    remaining: float,
    budget: float,
    known_cost: KnownCost | None,
    warm: WarmStart | None,
    deterministic: bool,
    schedule: FitSchedule,
    rate_needed: bool,
    overrun_risk: float | None = None,
    imported: Callable[[FrozenTrial], bool] | None = None,
) -> ProposalRequest:
    """The policy's request from ``trials`` (``sign`` per objective, (m,)); a pruned trial
    that reported is censored, its cost scaled to a full trial's (:mod:`.._numerics.curves`).
    ``imported``: which trials were added (warm starts): priced only by a ``cost_attr``."""
    done = [t for t in trials if t.state in FINISHED_STATES]
    finished, encoded = bridge.held_finished(done)  # encoded (f, D)
    # A trial whose reported cost was invalid counts as failed: its value stays out.
    complete = np.array([_usable(t) for t in finished], dtype=bool)  # (f,)
    signs = np.atleast_1d(np.asarray(sign, dtype=float))  # (m,)
    values = np.array([_finals(t, signs) for t in finished], dtype=float).reshape(
        len(finished), len(signs)
    )  # (f, m), NaN: none
    costs = np.array(
        [
            -1.0
            if t.system_attrs.get(SKIPPED_ATTR)
            or (imported is not None and cost_attr not in t.user_attrs and imported(t))
            else objective_cost(t, cost_attr)
            for t in finished
        ],
        dtype=float,
    )  # (f,)
    stopped = np.array([_stopped(t) for t in finished], dtype=bool)  # (f,)
    # Reports (and so pruning) exist in single-objective studies only: Optuna refuses them in
    # multi-objective ones.
    sign = float(signs[0])
    complete_curves = [_curve(t, sign) for t in finished if _usable(t) and t.intermediate_values]
    pruning = None
    lower = np.full(len(finished), np.nan)  # (f,)
    if stopped.any():
        curves = [_curve(t, sign) for t, s in zip(finished, stopped, strict=True) if s]
        values[stopped, 0], lower[stopped] = finals_and_bounds(complete_curves, curves)
        fractions = run_fractions(complete_curves, curves)  # (p,)
        costs[stopped] = np.where(costs[stopped] >= 0.0, costs[stopped] / fractions, -1.0)
        pruning = PruningStats(
            pruned_share=float(stopped.sum()) / float(stopped.sum() + complete.sum()),
            run_fraction=float(np.mean(fractions)),
        )
    observed = complete | stopped  # (f,)
    constraints = _constraint_matrix([t for t, o in zip(finished, observed, strict=True) if o])
    priced = (costs >= 0.0) & np.isfinite(costs)
    positive = costs[priced & (costs > 0.0)]
    # NOTE: a free trial (cost 0, a cached result) is cheaper than anything measured: the
    # log-cost model sees it at a tenth of the cheapest positive cost, not at log(0).
    floor = max(float(positive.min()) / 10.0, COST_FLOOR) if len(positive) else COST_FLOOR
    costs = np.where(priced, np.maximum(costs, floor), costs)

    others = [
        t for t in trials if t.state == TrialState.RUNNING and t._trial_id != trial._trial_id
    ]
    points = [point_of(t, pending.get(t._trial_id)) for t in others]
    held = [int(i) for i in np.flatnonzero(bridge.holds_many(points))]
    X_running = bridge.encode_params([points[i] for i in held]) if held else None  # (r, D)
    y_running = None
    reported = [others[i] for i in held if others[i].intermediate_values]
    if reported:
        imputed = iter(impute_finals(complete_curves, [_curve(t, sign) for t in reported]))
        y_running = np.array(
            [next(imputed) if others[i].intermediate_values else np.nan for i in held]
        )  # (r,)
    return ProposalRequest(
        codec=bridge.codec,
        X=encoded[observed],
        y=values[observed, 0],
        Y=values[observed] if len(signs) > 1 else None,
        remaining=remaining,
        budget=budget,
        cost_data=CostData(encoded[priced], costs[priced]),
        known_cost=known_cost,
        X_running=X_running,
        warm=warm,
        evaluated=encoded if X_running is None else np.vstack([encoded, X_running]),
        deterministic=deterministic,
        schedule=schedule,
        y_running=y_running,
        pruning=pruning,
        rate_needed=rate_needed,
        constraints=constraints,
        y_lower=lower[observed] if pruning is not None else None,
        stopped=stopped[observed] if pruning is not None else None,
        overrun_risk=None
        if overrun_risk is None
        else risk_left(overrun_risk, trials, trial, imported),
        labels=np.array([t.number for t in finished], dtype=int)[observed],
    )


def risk_left(
    risk: float,
    trials: Sequence[FrozenTrial],
    trial: FrozenTrial,
    imported: Callable[[FrozenTrial], bool] | None = None,
) -> float:
    """The study's risk less the chances its other trials took (a union bound keeps the study
    within it; imported trials took none), at least a thousandth so a sure fit goes on."""
    others = (
        t
        for t in trials
        if t._trial_id != trial._trial_id and (imported is None or not imported(t))
    )
    taken = sum(float(t.system_attrs.get(OVERRUN_CHANCE_ATTR, 0.0)) for t in others)
    return max(risk - taken, risk * 1e-3)


def _constraint_matrix(trials: Sequence[FrozenTrial]) -> np.ndarray | None:
    """The trials' constraint values, (n, k), NaN where missing; None when no trial has any."""
    rows = [trial_constraints(t) for t in trials]
    k = max((len(r) for r in rows if r is not None), default=0)
    if k == 0:
        return None
    out = np.full((len(rows), k), np.nan)  # (n, k)
    for i, row in enumerate(rows):
        if row is not None:
            out[i, : len(row)] = row
    return out


def _finals(trial: FrozenTrial, signs: np.ndarray) -> np.ndarray:
    """The values the objective models may use, to minimize, (m,); NaN if none."""
    if not _usable(trial) or trial.values is None:
        return np.full(len(signs), np.nan)
    out: np.ndarray = signs * np.asarray(trial.values, dtype=float)
    return out


def _stopped(trial: FrozenTrial) -> bool:
    """A trial its pruner stopped after it reported (a censored observation)."""
    return (
        trial.state == TrialState.PRUNED
        and bool(trial.intermediate_values)
        and INVALID_COST_ATTR not in trial.system_attrs
        and all(np.isfinite(v) for v in trial.intermediate_values.values())
    )


def _curve(trial: FrozenTrial, sign: float) -> Curve:
    steps = sorted(trial.intermediate_values)
    values = [trial.intermediate_values[s] for s in steps]
    return np.array(steps, dtype=float), sign * np.array(values, dtype=float)
