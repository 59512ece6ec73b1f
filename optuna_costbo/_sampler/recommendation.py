"""The recommendation: the finished trial whose configuration the objective model rates best.

``study.best_trial`` is the best observed value; under a noisy objective it favours a lucky
draw. The recommendation is the COMPLETE trial (feasible, with constraints) with the best
posterior mean of the objective GP fitted to every observation: each suggestion's model names
it, it is stored as the study user attr ``cost_recommended_trial`` (its number, shown by
optuna-dashboard), and :func:`recommended_trial` fits the model afresh from storage.
"""

from __future__ import annotations

import threading

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import RECOMMENDED_ATTR
from optuna_costbo._numerics.policy import FitSchedule
from optuna_costbo._numerics.policy import Proposal
from optuna_costbo._numerics.policy import ProposalRequest
from optuna_costbo._numerics.policy import recommend
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._sampler.snapshot import completed_search_space
from optuna_costbo._sampler.snapshot import minimize_sign
from optuna_costbo._sampler.snapshot import read_snapshot
from optuna_costbo._sampler.space import SpaceBridge


__all__ = ["Recommendations", "recommended_trial"]


class Recommendations:
    """Stores each suggestion's recommendation on its study, when it changes (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stored: dict[int, int] = {}  # study id -> the trial number last stored

    def __getstate__(self) -> dict[str, int]:
        return {}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__()  # type: ignore[misc]

    def note(self, study: optuna.Study, request: ProposalRequest, proposal: Proposal) -> None:
        """Store the trial ``proposal`` recommends, if it is another than last stored."""
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


def recommended_trial(
    study: optuna.Study, cost_attr: str, finishing: FrozenTrial | None = None
) -> FrozenTrial | None:
    """The COMPLETE trial with the best posterior mean, from a model fitted now to the study's
    trials in its relative search space; None before a trial completed. ``finishing``: a trial
    as it is being stored (a sampler's ``after_trial``), in place of its RUNNING record.
    None in a multi-objective study, whose answer is the front, ``study.best_trials``."""
    root = root_study(study)
    if len(root.directions) > 1:
        return None
    trials = root.get_trials(deepcopy=False)
    if finishing is not None:
        trials = [finishing if t.number == finishing.number else t for t in trials]
    space, activity = completed_search_space(root, trials)
    space = {name: dist for name, dist in space.items() if not dist.single()}
    if not space:
        return None
    bridge = SpaceBridge(space, activity)
    request = read_snapshot(
        trials,
        trials[-1],
        bridge,
        sign=minimize_sign(root),
        cost_attr=cost_attr,
        pending={},
        remaining=0.0,
        budget=1.0,
        known_cost=None,
        warm=None,
        deterministic=False,
        schedule=FitSchedule(),
        rate_needed=False,
    )
    if len(request.y) == 0 or request.labels is None:
        return None
    row = recommend(request)
    return None if row is None else trials[int(request.labels[row])]
