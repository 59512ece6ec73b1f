"""One trial's parameters: read the study, propose (or take the start-up design), settle clashes.

:class:`Suggester` is the sampler's ``sample_relative``. In order:

1. a proposal computed ahead for this trial (:mod:`.prefetch`), if still valid; else
2. :meth:`Suggester.propose`: one read of the study (:mod:`.snapshot`), the ledger, and either
   the start-up design (:class:`Startup`) or a :class:`~optuna_costbo._numerics.policy.Proposal`
   by the route the effort rule plans (:mod:`.effort`: the full policy or the quick route);
3. the clash loop: the point is published; while another worker holds it and this trial is
   the one to move (:func:`.clash.must_repropose`), it proposes again with the other trial
   pending, at most :data:`.clash.MAX_ROUNDS` times; the final point is marked checked;
4. the next trial's proposal started ahead, if asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import threading
import time
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.policy import FitSchedule
from optuna_costbo._numerics.policy import Proposal
from optuna_costbo._numerics.policy import WarmStart
from optuna_costbo._numerics.policy import propose
from optuna_costbo._numerics.quick import quick_propose
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._sampler import clash
from optuna_costbo._sampler.effort import EffortRule
from optuna_costbo._sampler.prefetch import Prefetch
from optuna_costbo._sampler.snapshot import TrialReads
from optuna_costbo._sampler.snapshot import minimize_sign
from optuna_costbo._sampler.snapshot import read_snapshot
from optuna_costbo._sampler.space import SpaceBridge
from optuna_costbo._sampler.startup import StartupDesign
from optuna_costbo._sampler.startup import startup_count
from optuna_costbo._sampler.stopping import StopRule
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
    """The relative parameters of each trial, for one sampler.

    Args:
        budget: The sampler's budget.
        acquisition: The acquisition strategy.
        cost_attr: The trial user attr holding costs.
        n_startup_trials: The user's option (``None``: :func:`.startup.startup_size`).
        user_cost: The user's ``cost_fn``, adapted, or ``None``.
        deterministic: Whether the objective is deterministic.
        seed: Seed of the sampler's randomness.
        effort: The route rule (shared with the sampler, which tells it the trials' seconds).
        charges_time: ``charges_time(study, trials)``: whether the sampler's time counts in
            ``study`` (the sampler's resolved option).
        prefetch: Compute the next proposal while a trial runs.
        stop_rule: Stop the study when the next trial is not worth its cost (``None``: no).
        pruned_trials: How trials stopped by a pruner inform the objective model: "censored",
            "impute" or "curves" (see ``CostRolloutSampler``).
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
        effort: EffortRule,
        charges_time: Callable[[optuna.Study, Sequence[FrozenTrial]], bool],
        prefetch: bool,
        stop_rule: StopRule | None = None,
        pruned_trials: str = "censored",
    ) -> None:
        self.budget = budget
        self.acquisition = acquisition
        self.cost_attr = cost_attr
        self.n_startup_trials = n_startup_trials
        self.user_cost = user_cost
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)
        self.design = StartupDesign(int(self.rng.integers(2**31)))
        self.effort = effort
        self.charges_time = charges_time
        self.schedule = FitSchedule()
        self.lock = threading.RLock()
        self.warm: dict[tuple[Any, ...], WarmStart] = {}
        self.pending = clash.Pending()  # this process's proposals for running trials
        self.reads = TrialReads()  # one read of the study per suggestion
        self.budget_end_noted: set[int] = set()  # studies told the budget buys no more
        moving = user_cost is not None and user_cost.moving
        self.prefetch: Prefetch[Proposal] = Prefetch(prefetch and not moving)
        self.stop_rule = stop_rule
        self.pruned_trials = pruned_trials
        self.last_read: list[FrozenTrial] = []  # the trials the last proposal was made from

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["lock"]
        state["last_read"] = []  # a read of the study is not carried to another process
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()

    def reseed(self) -> None:
        with self.lock:
            self.rng = np.random.default_rng()

    def search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        """The relative search space: the intersection of the completed trials' spaces,
        without single-valued parameters (from the read that the proposal will use)."""
        space = self.reads.search_space(study, trial)
        return {name: dist for name, dist in space.items() if not dist.single()}

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        """The parameters of ``trial`` in ``search_space`` (see the module docstring)."""
        bridge = SpaceBridge(search_space, self.reads.activity(trial))
        ready = self.prefetch.take(study, trial, bridge.key)
        if ready is not None:
            self.reads.discard(trial)  # read before the trials that started since
        # The lock covers reading the trials too: a thread that proposes meanwhile must see
        # this one's proposal as pending, and this one must see its.
        with self.lock:
            outcome = ready if ready is not None else self.propose(study, trial, bridge)
            if isinstance(outcome, Startup):
                return self.design.params(bridge, trial.number, outcome.evaluated)
            proposal = outcome
            if self.stop_rule is not None:
                # The read the proposal was made from; a proposal computed ahead read the study
                # before the trials that finished since, so the rule reads it again.
                read = (
                    self.last_read
                    if ready is None
                    else root_study(study).get_trials(deepcopy=False)
                )
                self.stop_rule.apply(
                    study, trial, proposal.best_log_rate, proposal.chosen_log_ei, read
                )
            params = bridge.decode(proposal.z)
            self.pending.set(trial._trial_id, params)
        params = self._settle_clashes(study, trial, bridge, proposal, params)
        self.prefetch.start(study, trial, bridge.key, self._ahead(study, bridge), self.lock)
        return params

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
                self.pending.set(trial._trial_id, moved)
            if moved == params:
                # Nothing else to propose (every legal point taken, as in an exhausted
                # discrete space): more rounds on the same data would give the same point.
                break
            params = moved
            clash.publish(study, trial, params)
        clash.mark_checked(study, trial)
        return params

    def _ahead(
        self, study: optuna.Study, bridge: SpaceBridge
    ) -> Callable[[FrozenTrial], Proposal | None]:
        """The computation of the next trial's proposal, for :class:`.prefetch.Prefetch`."""

        def compute(next_trial: FrozenTrial) -> Proposal | None:
            outcome = self.propose(study, next_trial, bridge)
            return outcome if isinstance(outcome, Proposal) else None

        return compute

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
            self.reads.trials(study, trial)
            if previous is None
            else root_study(study).get_trials(deepcopy=False)
        )
        self.last_read = trials
        charged = self.charges_time(study, trials)
        snap = read_snapshot(
            trials,
            trial,
            bridge,
            sign=minimize_sign(study),
            cost_attr=self.cost_attr,
            pending=self.pending.snapshot(),
        )
        ledger = charge_and_sum(study, trials, self.budget, self.cost_attr, charged)
        if len(snap.y) < startup_count(self.n_startup_trials, len(bridge.names), ledger):
            return Startup(snap.X_evaluated)
        key = (study._study_id, bridge.key)
        known = self.user_cost.on_box(bridge, snap.previous) if self.user_cost else None
        request = snap.request(
            bridge.codec,
            remaining=ledger.remaining,
            budget=self.budget,
            known_cost=known,
            warm=self.warm.get(key),
            deterministic=self.deterministic,
            schedule=self.schedule,
            rate_needed=self.stop_rule is not None,
            pruned_trials=self.pruned_trials,
        )
        sid = study._study_id
        plan = self.effort.plan(sid, len(snap.y), ledger.remaining if charged else None)
        start = time.perf_counter()
        if plan.route == "full":
            proposal = propose(request, self.acquisition, self.rng, reuse=previous)
        else:
            proposal = quick_propose(
                request,
                self.rng,
                needs_cost=self.acquisition.needs_cost,
                refit=plan.refit,
                overhead=plan.overhead,
            )
        self.effort.record_suggestion(
            sid, plan.route, time.perf_counter() - start, n=len(snap.y), refit=plan.refit
        )
        self.warm[key] = proposal.warm
        if proposal.message is not None:
            _logger.debug(f"Trial {trial.number}: {proposal.message}")
            note_budget_end(study, ledger, self.budget_end_noted)
        return proposal
