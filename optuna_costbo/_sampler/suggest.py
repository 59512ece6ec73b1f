"""One trial's parameters: read the study, propose (or take the start-up design), settle clashes.

:class:`Suggester` makes every suggestion of one sampler and keeps their bookkeeping (the
random generator, the start-up design, the warm starts, this process's pending proposals, the
effort rule). The whole decision of a relative sample is :meth:`Suggester.propose`:

1. one read of the study (the trial list read for the search space) and its ledger;
2. the start-up design while fewer trials completed than its size (:class:`Startup`);
3. the route (:mod:`.effort`: full, or quick while the sampler's time is charged and a full
   suggestion does not fit in its share of the wall clock);
4. the request (:func:`.snapshot.read_snapshot`) and the policy's proposal
   (:func:`optuna_costbo._numerics.policy.propose`), timed for the effort rule.

:meth:`Suggester.sample_relative` then applies the stopping rule, publishes the point and
settles clashes with other workers (:mod:`.clash`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import threading
import time
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.costs import previous_params
from optuna_costbo._ledger.keys import OVERRUN_CHANCE_ATTR
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.sampler_time import SamplerTimeCharge
from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.policy import FitSchedule
from optuna_costbo._numerics.policy import Proposal
from optuna_costbo._numerics.policy import ProposalRequest
from optuna_costbo._numerics.policy import WarmStart
from optuna_costbo._numerics.policy import fits_budget
from optuna_costbo._numerics.policy import propose
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._sampler import clash
from optuna_costbo._sampler.effort import EffortRule
from optuna_costbo._sampler.effort import best_value
from optuna_costbo._sampler.hard_budget import overrun_risk
from optuna_costbo._sampler.independent import IndependentSampling
from optuna_costbo._sampler.recommendation import Recommendations
from optuna_costbo._sampler.snapshot import TrialReads
from optuna_costbo._sampler.snapshot import minimize_signs
from optuna_costbo._sampler.snapshot import read_snapshot
from optuna_costbo._sampler.space import SpaceBridge
from optuna_costbo._sampler.startup import StartupDesign
from optuna_costbo._sampler.startup import startup_count
from optuna_costbo._sampler.stopping import StopRule
from optuna_costbo._sampler.stopping import end_study
from optuna_costbo._sampler.study_control import note_budget_end
from optuna_costbo._sampler.user_cost import UserCost


__all__ = ["Startup", "Suggester"]

_logger = get_logger(__name__)


@dataclass(frozen=True)
class Startup:
    """The start-up design is not done: the trial takes its design point.

    Attributes:
        evaluated: Encoded configurations the trials already have, (k, D): the design skips
            them.
    """

    evaluated: np.ndarray  # (k, D)


class Suggester:
    """The parameters of each trial, for one sampler.

    Args:
        budget: The sampler's budget.
        acquisition: The acquisition strategy.
        cost_attr: The trial user attr holding costs.
        n_startup_trials: The user's option (``None``: :func:`.startup.startup_size`).
        user_cost: The user's ``cost_fn``, adapted, or ``None``.
        deterministic: Whether the objective is deterministic.
        seed: Seed of the sampler's randomness.
        charge: Whether the sampler's time counts, per study (shared with the sampler's
            ledger).
        stop_rule: Stop the study when the next trial is not worth its cost (``None``: no).
        independent_sampler: The user's sampler for parameters outside the relative search
            space (``None``: ``RandomSampler(seed)``).
        overrun_risk: The user's ``overrun_risk`` (:mod:`.hard_budget`).
    """

    def __init__(
        self,
        *,
        budget: float,
        acquisition: AcquisitionStrategy,
        cost_attr: str,
        n_startup_trials: int | None,
        user_cost: UserCost | None,
        deterministic: bool,
        seed: int | None,
        charge: SamplerTimeCharge,
        stop_rule: StopRule | None,
        independent_sampler: BaseSampler | None,
        overrun_risk: float | str | None,
    ) -> None:
        self.budget = budget
        self.acquisition = acquisition
        self.cost_attr = cost_attr
        self.n_startup_trials = n_startup_trials
        self.user_cost = user_cost
        self.deterministic = deterministic
        self.charge = charge
        self.stop_rule = stop_rule
        self.overrun_option = overrun_risk
        self.rng = np.random.default_rng(seed)
        self.design = StartupDesign(int(self.rng.integers(2**31)))
        self.independent = IndependentSampling(independent_sampler, seed, self.design)
        self.effort = EffortRule()
        self.schedule = FitSchedule()
        self.lock = threading.RLock()
        self.warm: dict[tuple[Any, ...], WarmStart] = {}
        self.pending = clash.Pending()  # this process's proposals for running trials
        self.reads = TrialReads()  # one read of the study per suggestion
        self.budget_end_noted: set[int] = set()  # studies told the budget buys no more
        self.recommendations = Recommendations()
        self.last_read: list[FrozenTrial] = []  # the trials the last proposal was made from

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["lock"]
        state["last_read"] = []  # a read of the study is not carried to another process
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()

    # -- what the sampler calls ---------------------------------------------------------------

    def reseed(self) -> None:
        with self.lock:
            self.rng = np.random.default_rng()
        self.independent.sampler.reseed_rng()

    def overrun_risk(
        self, study: optuna.Study, trials: Sequence[FrozenTrial] | None = None
    ) -> float | None:
        """The hard budget's risk in ``study`` (None: soft)."""
        return overrun_risk(self.overrun_option, self.charges_time(study, trials))

    def charges_time(
        self, study: optuna.Study, trials: Sequence[FrozenTrial] | None = None
    ) -> bool:
        """Whether the sampler's time counts against the budget of ``study``."""
        return self.charge.resolve(
            study._study_id,
            (lambda: root_study(study).get_trials(deepcopy=False)) if trials is None else trials,
        )

    def search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        """The relative search space: the intersection of the completed trials' spaces,
        without single-valued parameters (from the read that the proposal will use)."""
        space = self.reads.search_space(study, trial)
        return {name: dist for name, dist in space.items() if not dist.single()}

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, name: str, dist: BaseDistribution
    ) -> Any:
        """One parameter outside the relative search space (:mod:`.independent`)."""
        trials = self.reads.read(study, trial)
        n_complete = sum(t.state == TrialState.COMPLETE for t in trials)
        return self.independent.sample(
            study, trial, name, dist, n_complete, startup_count(self.n_startup_trials, 1)
        )

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.independent.sampler.before_trial(study, trial)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self.independent.sampler.after_trial(study, trial, state, values)

    def trial_finished(self, study: optuna.Study, trial: FrozenTrial, seconds: float) -> bool:
        """``trial`` finished after ``seconds`` of the sampler's time (its cost recorded):
        forget its pending proposal, tell the effort rule; whether the sampler's time counts."""
        self.pending.discard(trial._trial_id)
        self.reads.drop(trial)
        charged = self.charges_time(study)
        if charged:
            with self.lock:
                self.effort.record_finished(study._study_id, trial.datetime_start, seconds)
        return charged

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        """The parameters of ``trial`` in ``search_space`` (see the module docstring)."""
        bridge = SpaceBridge(search_space, self.reads.activity(trial))
        # The lock covers reading the trials too: a thread that proposes meanwhile must see
        # this one's proposal as pending, and this one must see its.
        with self.lock:
            outcome = self.propose(study, trial, bridge)
            if isinstance(outcome, Startup):
                return self.design.params(bridge, trial.number, outcome.evaluated)
            proposal = outcome
            if proposal.over_budget is not None:
                end_study(study, trial, proposal.over_budget)
            if self.stop_rule is not None:
                self.stop_rule.apply(
                    study, trial, proposal.best_log_rate, proposal.chosen_log_ei, self.last_read
                )
            params = bridge.decode(proposal.z)
            self.pending.set(trial._trial_id, params)
            _note_overrun_chance(study, trial, proposal)
        return self._settle_clashes(study, trial, bridge, proposal, params)

    # -- the decision -------------------------------------------------------------------------

    def propose(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        bridge: SpaceBridge,
        previous: Proposal | None = None,
    ) -> Proposal | Startup:
        """The model's proposal for ``trial``, or :class:`Startup` while the start-up design
        is not done.

        ``previous``: this trial's proposal before a clash; its fitted models are reused when
        the data have not changed since. A proposal made again always reads the trials afresh:
        the clash is news.
        """
        trials = (
            self.reads.read(study, trial)
            if previous is None
            else root_study(study).get_trials(deepcopy=False)
        )
        self.last_read = trials
        charged = self.charges_time(study, trials)
        ledger = charge_and_sum(study, trials, self.budget, self.cost_attr, charged)
        key = (study._study_id, bridge.key)
        sign = float(minimize_signs(study.directions)[0])
        if previous is None and charged:  # a point a recent quick suggestion ranked next
            queued = self.effort.take_queued(study._study_id, key, trials, sign, ledger.remaining)
            if queued is not None:
                return queued
        begin = time.perf_counter()
        known = (
            self.user_cost.on_box(bridge, previous_params(trials, trial))
            if self.user_cost is not None
            else None
        )
        request = read_snapshot(
            trials,
            trial,
            bridge,
            sign=minimize_signs(study.directions),
            cost_attr=self.cost_attr,
            pending=self.pending.snapshot(),
            remaining=ledger.remaining,
            budget=self.budget,
            known_cost=known,
            warm=self.warm.get(key),
            deterministic=self.deterministic,
            schedule=self.schedule,
            rate_needed=self.stop_rule is not None,
            overrun_risk=overrun_risk(self.overrun_option, charged),
        )
        if len(request.y) < startup_count(self.n_startup_trials, len(bridge.names), ledger):
            startup = self._startup(request, bridge, trial)
            if startup is not None:
                return startup
        sid = study._study_id
        route = self.effort.plan(sid, len(request.y), ledger.remaining if charged else None)
        start = time.perf_counter()
        proposal = propose(request, self.acquisition, self.rng, route=route, reuse=previous)
        end = time.perf_counter()
        self.effort.record_suggestion(sid, route, end - start, len(request.y))
        if route.quick and proposal.queue:
            self.effort.keep_queue(sid, key, proposal, end - begin, best_value(trials, sign))
        self.warm[key] = proposal.warm
        self.recommendations.note(study, request, proposal)
        if proposal.message is not None:
            _logger.debug(f"Trial {trial.number}: {proposal.message}")
            note_budget_end(study, ledger, self.budget_end_noted)
        return proposal

    def _startup(
        self, request: ProposalRequest, bridge: SpaceBridge, trial: FrozenTrial
    ) -> Startup | None:
        """The start-up design's answer for ``trial``; under a hard budget, None when its
        point does not fit the budget left and a model can propose instead (it proposes what
        fits, or ends the study)."""
        assert request.evaluated is not None
        design = Startup(request.evaluated)
        if request.overrun_risk is None:
            return design
        z = bridge.encode_params([self.design.params(bridge, trial.number, request.evaluated)])
        fits = fits_budget(request, z)  # (1,) or None: nothing tells
        if fits is None or fits[0] or len(request.y) == 0:
            return design
        return None

    def _settle_clashes(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        bridge: SpaceBridge,
        proposal: Proposal,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        """Publish ``params``; while this trial must move off a point another trial holds,
        propose again (same data, the other trial now pending); the final parameters."""
        clash.publish(study, trial, params)
        for _ in range(clash.MAX_ROUNDS):
            if not clash.must_repropose(study, trial, params):
                break
            with self.lock:
                again = self.propose(study, trial, bridge, previous=proposal)
                moved = params
                if isinstance(again, Proposal):
                    proposal, moved = again, bridge.decode(again.z)
                    _note_overrun_chance(study, trial, proposal)
                self.pending.set(trial._trial_id, moved)
            if moved == params:
                # Nothing else to propose (every legal point taken, as in an exhausted
                # discrete space): more rounds on the same data would give the same point.
                break
            params = moved
            clash.publish(study, trial, params)
        clash.mark_checked(study, trial)
        return params


def _note_overrun_chance(study: optuna.Study, trial: FrozenTrial, proposal: Proposal) -> None:
    """Under a hard budget, store on ``trial`` the chance that its proposal overruns the
    budget left: what it takes of the study's overrun risk (:func:`.snapshot.risk_left`)."""
    if proposal.overrun_chance is not None:
        study._storage.set_trial_system_attr(
            trial._trial_id, OVERRUN_CHANCE_ATTR, proposal.overrun_chance
        )
