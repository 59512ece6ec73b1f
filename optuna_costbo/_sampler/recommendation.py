"""The recommendation: the COMPLETE (feasible) trial with the best posterior mean, less swayed
by a lucky noisy draw than ``study.best_trial`` (study user attr ``cost_recommended_trial``)."""

from __future__ import annotations

import threading

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._fresh import FreshWhenCopied
from optuna_costbo._ledger.keys import RECOMMENDED_ATTR
from optuna_costbo._numerics.policy import recommend
from optuna_costbo._numerics.request import FitSchedule
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._sampler.snapshot import completed_search_space
from optuna_costbo._sampler.snapshot import minimize_signs
from optuna_costbo._sampler.snapshot import read_snapshot
from optuna_costbo._sampler.space import SpaceBridge


class Recommendations(FreshWhenCopied):
    """Stores each suggestion's recommendation on its study when it changes (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stored: dict[int, int] = {}  # study id -> the trial number last stored

    def note(self, study: optuna.Study, request: ProposalRequest, proposal: Proposal) -> None:
        row = proposal.recommended
        if row is None or request.labels is None:
            return
        self.store(study, int(request.labels[row]))

    def store(self, study: optuna.Study, number: int) -> None:
        with self._lock:
            if self._stored.get(study._study_id) == number:
                return
            self._stored[study._study_id] = number
        study._storage.set_study_user_attr(study._study_id, RECOMMENDED_ATTR, number)


def fresh_request(
    root: optuna.Study,
    trials: list[FrozenTrial],
    cost_attr: str,
    *,
    remaining: float,
    budget: float,
    rate_needed: bool,
) -> ProposalRequest | None:
    """The study's data in its relative search space, for models fitted afresh (no pending
    points, no warm start); None without a parameter that varies."""
    space, activity = completed_search_space(root, trials)
    space = {name: dist for name, dist in space.items() if not dist.single()}
    if not space:
        return None
    return read_snapshot(
        trials,
        trials[-1],
        SpaceBridge(space, activity),
        sign=float(minimize_signs(root.directions)[0]),
        cost_attr=cost_attr,
        pending={},
        remaining=remaining,
        budget=budget,
        known_cost=None,
        warm=None,
        deterministic=False,
        schedule=FitSchedule(),
        rate_needed=rate_needed,
    )


def recommended_trial(
    study: optuna.Study, cost_attr: str, finishing: FrozenTrial | None = None
) -> FrozenTrial | None:
    """The COMPLETE trial with the best posterior mean of a model fitted now; None before one
    or with several objectives. ``finishing``: a trial being stored, for its RUNNING record."""
    root = root_study(study)
    if len(root.directions) > 1:
        return None
    trials = root.get_trials(deepcopy=False)
    if finishing is not None:
        trials = [finishing if t.number == finishing.number else t for t in trials]
    request = fresh_request(root, trials, cost_attr, remaining=0.0, budget=1.0, rate_needed=False)
    if request is None or len(request.y) == 0 or request.labels is None:
        return None
    row = recommend(request)
    return None if row is None else trials[int(request.labels[row])]
