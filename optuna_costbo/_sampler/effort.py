"""The route of a suggestion while the sampler's time is charged: full while its measured time
fits in ``share`` of the wall clock and of the budget left, else quick (the last fit's)."""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass
from dataclasses import field
import datetime
import math
from typing import Any

from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.quick import QUEUE
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import Route


_logger = get_logger(__name__)

SHARE = 0.1  # of the wall clock, for full suggestions (docs/concepts.md)


@dataclass
class _StudyEffort:
    trial_seconds: float = 0.0  # the trials' own wall-clock seconds, sampler time excluded
    full_seconds: float = 0.0  # seconds spent in full suggestions
    last_full: float | None = None  # duration of the latest full suggestion
    n_full: int = 0
    n_quick: int = 0
    n_fitted: int = 0  # observations when the hyperparameters were last fitted
    overhead: float = 0.0  # recent sampler seconds per trial (moving average)
    n_trials: int = 0  # trials in trial_seconds
    last_quick: float = 0.0  # seconds of the latest quick suggestion made afresh
    queue: list[Proposal] = field(default_factory=list)  # points for the next trials
    queue_key: Any = None  # the search space the queue was made in
    queue_best: float = math.inf  # the best value when it was made


class EffortRule:
    """Chooses each suggestion's route from measured seconds (``share`` 1: always full)."""

    def __init__(self, share: float = SHARE) -> None:
        self.share = float(share)
        self._studies: dict[int, _StudyEffort] = {}

    def _state(self, study_id: int) -> _StudyEffort:
        return self._studies.setdefault(study_id, _StudyEffort())

    @property
    def ratio(self) -> float:
        """Seconds of full suggestions allowed per second of trials."""
        return math.inf if self.share >= 1.0 else self.share / (1.0 - self.share)

    def credit(self, study_id: int) -> float:
        """Seconds of full suggestions the trials have paid for, less those spent."""
        s = self._state(study_id)
        if math.isinf(self.ratio):
            return math.inf
        return self.ratio * s.trial_seconds - s.full_seconds

    def full_allowed(self, study_id: int, remaining: float) -> bool:
        s = self._state(study_id)
        if s.last_full is None or math.isinf(self.ratio):
            return True
        return s.last_full <= self.credit(study_id) and s.last_full <= self.share * remaining

    def refit_due(self, study_id: int, n: int) -> bool:
        """Refit once the data grew by a quarter (at least 3): about log(n) refits in a run."""
        s = self._state(study_id)
        return n >= s.n_fitted + max(3, s.n_fitted // 4)

    def overhead(self, study_id: int) -> float:
        return self._state(study_id).overhead

    def record_suggestion(self, study_id: int, route: Route, seconds: float, n: int) -> None:
        s = self._state(study_id)
        if not route.quick or route.refit:
            s.n_fitted = max(s.n_fitted, n)
        if not route.quick:
            s.full_seconds += seconds
            s.last_full = seconds
            s.n_full += 1
        else:
            s.n_quick += 1

    def add_trial_seconds(
        self, study_id: int, trial_seconds: float, sampler_seconds: float = 0.0
    ) -> None:
        s = self._state(study_id)
        if math.isfinite(trial_seconds) and trial_seconds > 0.0:
            s.trial_seconds += trial_seconds
            s.n_trials += 1
        if math.isfinite(sampler_seconds) and sampler_seconds >= 0.0:
            s.overhead += 0.2 * (sampler_seconds - s.overhead)

    def plan(self, study_id: int, n: int, remaining: float | None) -> Route:
        """The next route on ``n`` observations; ``remaining``: None unless time is charged."""
        if remaining is None or self.full_allowed(study_id, remaining):
            return Route()
        _logger.debug("Quick route (the sampler's time is charged)")
        return Route(
            quick=True, refit=self.refit_due(study_id, n), overhead=self.overhead(study_id)
        )

    def batch(self, study_id: int) -> int:
        """How many trials one quick suggestion serves: its seconds over what a trial's own
        seconds pay for at :attr:`ratio`, at most :data:`.quick.QUEUE` (1 before measures)."""
        s = self._state(study_id)
        if s.n_trials == 0 or s.last_quick <= 0.0 or math.isinf(self.ratio):
            return 1
        paid = self.ratio * s.trial_seconds / s.n_trials
        return QUEUE if paid <= 0.0 else min(QUEUE, math.ceil(s.last_quick / paid))

    def keep_queue(self, sid: int, key: Any, proposal: Proposal, t: float, best: float) -> None:
        """A quick ``proposal`` in space ``key`` took ``t`` s with ``best`` the best value: keep
        the next :meth:`batch` - 1 points of its queue for the next trials."""
        s = self._state(sid)
        s.last_quick, s.queue_key, s.queue_best = t, key, best
        keep = proposal.queue[: self.batch(sid) - 1]
        s.queue = [dataclasses.replace(proposal, z=z, value=v, queue=()) for z, v in keep]

    def take_queued(
        self, sid: int, key: Any, trials: Sequence[FrozenTrial], sign: float, left: float
    ) -> Proposal | None:
        """The next kept point; none (the queue dropped) if the space changed, a trial improved
        on the best value or a full suggestion is due."""
        s = self._state(sid)
        if s.queue and (key != s.queue_key or best_value(trials, sign) < s.queue_best):
            s.queue = []
        if not s.queue or self.full_allowed(sid, left):
            s.queue = []
            return None
        s.n_quick += 1
        return s.queue.pop(0)

    def record_finished(
        self, study_id: int, start: datetime.datetime | None, sampler_seconds: float
    ) -> None:
        """A trial started at ``start`` finished now, ``sampler_seconds`` of it the sampler's."""
        if start is not None:
            elapsed = (datetime.datetime.now() - start).total_seconds()
            self.add_trial_seconds(study_id, elapsed - sampler_seconds, sampler_seconds)

    def counts(self, study_id: int) -> dict[str, int]:
        s = self._state(study_id)
        return {"full": s.n_full, "quick": s.n_quick}


def best_value(trials: Sequence[FrozenTrial], sign: float) -> float:
    """The best value (times ``sign``: smaller is better) among completed ``trials``."""
    values = [sign * t.values[0] for t in trials if t.state == TrialState.COMPLETE and t.values]
    return min((v for v in values if math.isfinite(v)), default=math.inf)
