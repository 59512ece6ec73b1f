"""One trial's parameters: one read of the study, the plan, the proposal, parallel clashes."""

from __future__ import annotations

from collections.abc import Sequence
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
from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import imported_rule
from optuna_costbo._ledger.units import SamplerTimeCharge
from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.acquisition.strategies import EI
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.multi_objective import front_exponent
from optuna_costbo._numerics.policy import Plan
from optuna_costbo._numerics.policy import cost_known
from optuna_costbo._numerics.policy import fits_budget
from optuna_costbo._numerics.policy import needs_cost_model
from optuna_costbo._numerics.policy import propose
from optuna_costbo._numerics.request import FitSchedule
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import WarmStart
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._sampler import clash
from optuna_costbo._sampler.effort import EffortRule
from optuna_costbo._sampler.effort import best_value
from optuna_costbo._sampler.independent import IndependentSampling
from optuna_costbo._sampler.options import overrun_risk
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


_logger = get_logger(__name__)


class Suggester:
    """Every suggestion of one sampler, with its bookkeeping (the sampler's options as given)."""

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

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["lock"]
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
        """The completed trials' space without single-valued parameters, from the trial's read."""
        space = self.reads.search_space(study, trial)
        return {name: dist for name, dist in space.items() if not dist.single()}

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, name: str, dist: BaseDistribution
    ) -> Any:
        trials = self.reads.read(study, trial)
        n_complete = sum(t.state == TrialState.COMPLETE for t in trials)
        return self.independent.sample(
            study, trial, name, dist, n_complete, startup_count(self.n_startup_trials, 1)
        )

    def trial_finished(self, study: optuna.Study, trial: FrozenTrial, seconds: float) -> bool:
        """Forget ``trial``'s proposal and read, tell the effort rule; whether time is charged."""
        self.pending.discard(trial._trial_id)
        self.reads.drop(trial)
        charged = self.charges_time(study)
        if charged:
            with self.lock:
                self.effort.record_finished(study._study_id, trial.datetime_start, seconds)
        return charged

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        """The start-up design's point, or the proposal after the stopping rule and clashes."""
        bridge = self.reads.bridge(search_space, trial)
        # The lock covers reading the trials too: a thread that proposes meanwhile must see
        # this one's proposal as pending, and this one must see its.
        with self.lock:
            trials = self.reads.read(study, trial)
            if self.overrun_risk(study, trials) is not None:  # hard: no trial may be missed
                trials = self.reads.current(study, trial)
            proposal = self.propose(study, trial, bridge, trials)
            if not isinstance(proposal, Proposal):
                return proposal  # the start-up design's point
            if proposal.over_budget is not None:
                end_study(study, trial, proposal.over_budget)
            if self.stop_rule is not None:
                self.stop_rule.apply(
                    study, trial, proposal.best_log_rate, proposal.chosen_log_ei, trials
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
        trials: list[FrozenTrial],
        previous: Proposal | None = None,
    ) -> Proposal | dict[str, Any]:
        """The model's proposal from ``trials``, or the start-up design's point; ``previous``
        (before a clash) lends its fitted models while the data are unchanged."""
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
            imported=imported_rule(study, trials, marked=True),
        )
        plan = self.plan(study, trial, bridge, request, ledger, charged)
        if not isinstance(plan, Plan):
            return plan
        start = time.perf_counter()
        proposal = propose(request, plan, self.rng, reuse=previous)
        sid, route, end = study._study_id, plan.route, time.perf_counter()
        self.effort.record_suggestion(sid, route, end - start, len(request.y))
        if route.quick and proposal.queue:
            self.effort.keep_queue(sid, key, proposal, end - begin, best_value(trials, sign))
        self.warm[key] = proposal.warm
        self.recommendations.note(study, request, proposal)
        if proposal.message is not None:
            _logger.debug(f"Trial {trial.number}: {proposal.message}")
            note_budget_end(study, ledger, self.budget_end_noted)
        return proposal

    def plan(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        bridge: SpaceBridge,
        request: ProposalRequest,
        ledger: Ledger,
        charged: bool,
    ) -> Plan | dict[str, Any]:
        """The whole decision of one suggestion, made once; the policy below obeys it."""
        # 1. The start-up design's point while fewer trials completed than its size; under a
        #    hard budget, one that does not fit goes to the model instead.
        if len(request.y) < startup_count(self.n_startup_trials, len(bridge.names), ledger):
            assert request.evaluated is not None
            design = self.design.params(bridge, trial.number, request.evaluated)
            fits = fits_budget(request, bridge.encode_params([design]))  # (1,); None: no telling
            if fits is None or fits[0] or len(request.y) == 0:
                return design
        # 2. The route: quick while the sampler's time is charged and a full suggestion does
        #    not fit its share of the wall clock (.effort).
        route = self.effort.plan(
            study._study_id, len(request.y), ledger.remaining if charged else None
        )
        # 3. The acquisition as it runs: EI until anything predicts a cost; with several
        #    objectives, its hypervolume form with the cost exponent of the acquisition.
        acquisition = self.acquisition
        if acquisition.needs_cost and not cost_known(request):
            acquisition = EI()
        several = request.Y is not None and request.Y.shape[1] > 1
        exponent = (
            front_exponent(self.acquisition, request.remaining, request.budget) if several else 0.0
        )
        # 4. A cost model where the acquisition, a hard budget (request.overrun_risk: the risk
        #    left, None when soft) or the stopping rule reads one.
        plan = Plan(
            acquisition=acquisition,
            route=route,
            needs_cost=needs_cost_model(self.acquisition, request, route),
            front_exponent=exponent,
        )
        _logger.debug(
            f"Trial {trial.number}: {acquisition.name}, {'quick' if route.quick else 'full'} "
            f"route, risk {request.overrun_risk}, sampler time charged: {charged}"
        )
        return plan

    def _settle_clashes(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        bridge: SpaceBridge,
        proposal: Proposal,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        """Publish ``params``; propose again while another trial holds them (the final params)."""
        clash.publish(study, trial, params)
        for _ in range(clash.MAX_ROUNDS):
            if not clash.must_repropose(study, trial, params):
                break
            with self.lock:
                # A proposal made again reads the trials afresh: the clash is news.
                trials = root_study(study).get_trials(deepcopy=False)
                again = self.propose(study, trial, bridge, trials, previous=proposal)
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
    """Store the chance that ``trial``'s proposal overruns (hard budget: :func:`.risk_left`)."""
    if proposal.overrun_chance is not None:
        study._storage.set_trial_system_attr(
            trial._trial_id, OVERRUN_CHANCE_ATTR, proposal.overrun_chance
        )
