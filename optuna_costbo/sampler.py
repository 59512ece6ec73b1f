"""CostRolloutSampler: cost-aware Bayesian optimization under a budget, as an Optuna sampler.

This module is glue: Optuna's sampler hooks. Per suggestion it reads the study once
(:mod:`._snapshot`), hands encoded arrays to :func:`optuna_costbo._numerics.policy.propose`
and decodes the point; it records each trial's cost and the ledger after the trial and stops
the study when the budget is spent. The parallel clash rule is in :mod:`._clash`, the user's
``cost_fn`` adapter in :mod:`._user_cost`, the dashboard schedule in :mod:`._chart_schedule`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
import dataclasses
import datetime
import threading
import time
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.samplers import RandomSampler
from optuna.samplers._base import _INDEPENDENT_SAMPLING_WARNING_TEMPLATE
from optuna.storages._heartbeat import get_heartbeat_thread
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo import _clash
from optuna_costbo._chart_schedule import ChartSchedule
from optuna_costbo._cost_record import record_cost
from optuna_costbo._effort import DEFAULT_SHARE
from optuna_costbo._effort import EffortRule
from optuna_costbo._effort import Route
from optuna_costbo._effort import charges_sampler_time
from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.checks import is_int
from optuna_costbo._numerics.policy import Proposal
from optuna_costbo._numerics.policy import WarmStart
from optuna_costbo._numerics.policy import propose
from optuna_costbo._numerics.quick import quick_propose
from optuna_costbo._numerics.registry import make_acquisition
from optuna_costbo._numerics.strategies import AcquisitionOptions
from optuna_costbo._snapshot import TrialReads
from optuna_costbo._snapshot import take_snapshot
from optuna_costbo._space import SpaceBridge
from optuna_costbo._space import check_distinct_choices
from optuna_costbo._startup import StartupDesign
from optuna_costbo._study_control import check_single_objective
from optuna_costbo._study_control import in_optimize_loop
from optuna_costbo._study_control import note_budget_end
from optuna_costbo._study_control import stop
from optuna_costbo._user_cost import UserCost
from optuna_costbo.budget import SAMPLER_SECONDS_ATTR
from optuna_costbo.budget import SKIPPED_ATTR
from optuna_costbo.budget import Ledger
from optuna_costbo.budget import store_ledger
from optuna_costbo.budget import stored_budget
from optuna_costbo.budget import study_ledger
from optuna_costbo.budget import validate_budget
from optuna_costbo.budget import write_ledger
from optuna_costbo.progress import hint_cost_progress_bar


__all__ = ["CostRolloutSampler"]


_logger = get_logger(__name__)


class CostRolloutSampler(BaseSampler):
    """Cost-aware Bayesian optimization that stops the study when its cost budget is spent.

    Each trial's cost is the user attr ``cost_attr`` if the objective reports one (money,
    energy, simulated seconds; see :func:`optuna_costbo.report_cost`), else the trial's
    wall-clock duration less the sampler's own time. The ledger (budget, spent, remaining) is
    recomputed from storage and stored as study user attrs, so several workers sharing a
    study share one budget. Once the spent cost reaches ``budget``, ``study.optimize`` returns
    by itself; trials that a worker starts after that are pruned at their first suggestion.

    After ``n_startup_trials`` quasi-random (scrambled Sobol) trials, a Gaussian process with a
    Matern-5/2 ARD kernel models the objective, a second one models log(cost), and the chosen
    acquisition is maximized over the encoded search space (floats, log floats, integers,
    steps, one-hot categoricals). Parameters outside the search space shared by all completed
    trials (conditional or dynamic ones) are sampled by ``independent_sampler``.

    Example:

        .. code-block:: python

            import time

            import optuna
            from optuna_costbo import CostRolloutSampler


            def objective(trial):
                x = trial.suggest_float("x", -1.0, 1.0)
                time.sleep(0.1 * (1.0 + x))  # expensive on the right
                return (x - 0.5) ** 2


            study = optuna.create_study(sampler=CostRolloutSampler(budget=2.0, seed=0))
            study.optimize(objective)  # no n_trials: returns once 2 s of trial time are spent

    Args:
        budget: Total budget in cost units (seconds by default). A positive finite number.
        acquisition: ``"eipu"`` (default: EI per unit predicted cost, the most robust on
            the package's benchmark suite), ``"rollout"`` (the nonmyopic CMDP rollout, which
            rolls out EI per unit cost and then EI over the remaining budget and values each
            point per unit of the budget its trajectories consume), ``"rollout-paper"`` (the
            paper's estimator as published: cost enters only when the budget cuts a
            trajectory short), ``"ei"`` (log expected improvement, ignores cost) or
            ``"ei-cool"`` (EI / cost^alpha with alpha = remaining budget over total budget:
            cost-aware early, plain EI late).
        horizon: Rollout steps h. Used by the rollouts.
        n_samples: Quasi-Monte Carlo trajectories per candidate. Used by the rollouts.
        cost_fn: A known cost, used instead of a fitted cost model and charged to the budget
            when the objective reports none: ``cost_fn(params) -> float``, or, for costs that
            depend on where you come from (moving sensors, reconfiguring a machine),
            ``cost_fn(params, previous_params) -> float`` with ``previous_params`` the
            parameters of the latest earlier trial (``None`` for the first). Values must be
            finite and non-negative.
        n_startup_trials: Quasi-random trials before the models take over; ``None`` means
            ``2 * (number of parameters + 1)``, at least 4. They count against the budget.
        cost_attr: Name of the trial user attr holding a trial's cost. The objective may set
            it; otherwise the sampler records the measured wall-clock cost there, where
            optuna-dashboard shows and sorts it.
        seed: Seed for all of the sampler's randomness.
        independent_sampler: Sampler for parameters outside the relative search space;
            defaults to :class:`~optuna.samplers.RandomSampler`.
        warn_independent_sampling: Log a warning when a parameter is sampled independently
            after the startup trials.
        charge_sampler_time: Whether the sampler's own computation time counts against the
            budget. ``None`` (default): it does when the cost is measured wall-clock (no
            ``cost_fn`` and the objective reports no cost), so that the budget is the wall
            clock of the whole study; not when costs are reported or come from ``cost_fn``.
            ``True`` or ``False`` force it. While it counts, each suggestion's effort is
            chosen against the trials' time (``max_sampler_share``).
        max_sampler_share: While the sampler's time counts: the share of the wall-clock that
            full suggestions (model fits and the chosen acquisition) may take, in (0, 1].
            Beyond it, suggestions take the quick route (the last fitted hyperparameters, EI
            on a candidate set, a few milliseconds). ``1.0`` always takes the full route.
        deterministic_objective: Whether the objective returns the same value for the same
            parameters. ``True`` holds the objective model's noise at its floor instead of
            fitting it, as Optuna's ``GPSampler(deterministic_objective=True)``. Whatever the
            setting, the sampler never proposes parameters that a finished or running trial
            already has while any other configuration is left (with a deterministic objective
            a repeat is wasted budget; with a noisy one EI rarely asks for an exact repeat).
        dashboard_chart: Keep a "Best value vs cumulative cost" chart for optuna-dashboard
            up to date: redrawn after a trial at most every 2 seconds, and when the budget is
            spent. ``None`` (default): when optuna-dashboard and plotly are installed and the
            storage is not in memory.
    """

    def __init__(
        self,
        budget: float,
        *,
        acquisition: str = "eipu",
        horizon: int = 2,
        n_samples: int = 64,
        cost_fn: Callable[..., float] | None = None,
        n_startup_trials: int | None = None,
        cost_attr: str = "cost",
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        warn_independent_sampling: bool = True,
        charge_sampler_time: bool | None = None,
        max_sampler_share: float = DEFAULT_SHARE,
        dashboard_chart: bool | None = None,
        deterministic_objective: bool = False,
    ) -> None:
        self._budget = validate_budget(budget)
        for name, value, low in (("horizon", horizon, 1), ("n_samples", n_samples, 1)):
            if not is_int(value) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self._user_cost = UserCost(cost_fn) if cost_fn is not None else None
        self._acquisition = make_acquisition(
            acquisition, AcquisitionOptions(horizon=horizon, n_samples=n_samples)
        )
        if n_startup_trials is not None and (not is_int(n_startup_trials) or n_startup_trials < 0):
            raise ValueError(
                f"n_startup_trials must be None or a non-negative int, got {n_startup_trials!r}"
            )
        if not isinstance(cost_attr, str) or not cost_attr:
            raise ValueError(f"cost_attr must be a non-empty str, got {cost_attr!r}")
        if seed is not None and not is_int(seed):
            raise ValueError(f"seed must be None or an int, got {seed!r}")
        self._n_startup_trials = n_startup_trials
        self._cost_attr = cost_attr
        self._seed = seed
        self._rng = np.random.default_rng(seed)
        self._design = StartupDesign(int(self._rng.integers(2**31)))
        self._independent_sampler = independent_sampler or RandomSampler(seed=seed)
        self._independent_default = independent_sampler is None
        self._warn_independent_sampling = warn_independent_sampling
        if charge_sampler_time is not None and not isinstance(charge_sampler_time, bool):
            raise ValueError(
                f"charge_sampler_time must be None, True or False, got {charge_sampler_time!r}"
            )
        self._charge_sampler_time = charge_sampler_time
        self._charges: dict[int, bool] = {}  # study id -> resolved charge_sampler_time=None
        self._effort = EffortRule(max_sampler_share)
        self._chart = ChartSchedule(dashboard_chart)
        self._deterministic = bool(deterministic_objective)
        self._lock = threading.RLock()
        self._warm: dict[tuple[Any, ...], WarmStart] = {}
        self._sampler_seconds: dict[int, float] = {}
        self._skipped: set[int] = set()
        self._pending = _clash.Pending()  # this process's proposals for running trials
        self._last_evaluated = np.empty((0, 0))  # (k, D) of the last start-up snapshot
        self._budget_end_noted: set[int] = set()  # studies told the budget buys no more
        self._reads = TrialReads()  # one read of the study per suggestion

    # -- pickling: a lock cannot be pickled ------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- public API -------------------------------------------------------------------------

    @property
    def budget(self) -> float:
        """The total budget, in cost units."""
        return self._budget

    def ledger(self, study: optuna.Study) -> Ledger:
        """The study's budget ledger, recomputed from storage now."""
        return study_ledger(study, self._budget, self._cost_attr, self._charges_time(study))

    def remaining_budget(self, study: optuna.Study) -> float:
        """Budget minus the cost of every finished trial of ``study`` (may be negative).

        Under ask-and-tell there is no optimize loop to stop: check this before ``ask``.
        """
        return self.ledger(study).remaining

    def reseed_rng(self) -> None:
        with self._lock:
            self._rng = np.random.default_rng()
        self._independent_sampler.reseed_rng()

    # -- BaseSampler ------------------------------------------------------------------------

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        space = self._reads.search_space(study, trial)
        return {name: dist for name, dist in space.items() if not dist.single()}

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        check_single_objective(study)
        if not search_space:
            return {}
        start = time.perf_counter()
        try:
            self._raise_if_skipped(study, trial)
            return self._sample_relative(study, trial, search_space)
        finally:
            self._add_sampler_seconds(trial, time.perf_counter() - start)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        check_single_objective(study)
        check_distinct_choices(param_name, param_distribution)
        start = time.perf_counter()
        try:
            self._raise_if_skipped(study, trial)
            complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if self._warn_independent_sampling and len(complete) >= self._startup_count(1):
                _logger.warning(
                    _INDEPENDENT_SAMPLING_WARNING_TEMPLATE.format(
                        param_name=param_name,
                        trial_number=trial.number,
                        independent_sampler_name=type(self._independent_sampler).__name__,
                        sampler_name=type(self).__name__,
                        fallback_reason="the parameter is not in the search space shared by "
                        "all completed trials (conditional or dynamic search space)",
                    )
                )
            if self._independent_default and not complete:
                # NOTE: before any trial completes there is no relative search space, and
                # workers that share a seed would draw the same random points. The start-up
                # design indexed by trial number gives each trial its own point.
                return self._design.first_wave_value(param_name, param_distribution, trial.number)
            return self._independent_sampler.sample_independent(
                study, trial, param_name, param_distribution
            )
        finally:
            self._add_sampler_seconds(trial, time.perf_counter() - start)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        hint_cost_progress_bar(study)
        self._independent_sampler.before_trial(study, trial)
        if self._chart.wanted(study):
            # Import plotly now, while no heartbeat is running: the first import takes
            # seconds, and after_trial runs after Optuna has stopped the trial's heartbeat.
            import optuna_dashboard  # noqa: F401
            import plotly.graph_objects  # noqa: F401

            import optuna_costbo.dashboard  # noqa: F401
        ledger = self.ledger(study)
        if stored_budget(study) != self._budget:
            write_ledger(study, ledger)
        if not ledger.exhausted:
            return
        if in_optimize_loop(study):
            # Another worker (or an earlier session) spent the budget: end this optimize loop
            # and prune the new trial at its first suggestion, before the objective's work.
            stop(study)
            with self._lock:
                self._skipped.add(trial._trial_id)
        else:
            _logger.warning(
                f"The cost budget of study {study.study_name!r} is spent "
                f"({ledger.spent:.6g} of {ledger.budget:.6g}); trial {trial.number} "
                "was asked for anyway (ask-and-tell: check sampler.remaining_budget(study))."
            )

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._independent_sampler.after_trial(study, trial, state, values)
        # NOTE: Optuna has stopped this trial's heartbeat by now; keep it beating while the
        # cost, the ledger and the chart are written, or another worker's fail_stale_trials
        # could fail a trial that finished fine.
        with get_heartbeat_thread(trial._trial_id, study._storage):
            self._after_trial(study, trial, state, values)

    # -- after a trial: its cost, the ledger, the chart, the stop ---------------------------

    def _after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        storage, trial_id = study._storage, trial._trial_id
        with self._lock:
            seconds = self._sampler_seconds.pop(trial_id, 0.0)
            self._skipped.discard(trial_id)
        self._pending.discard(trial_id)
        storage.set_trial_system_attr(trial_id, SAMPLER_SECONDS_ATTR, seconds)

        # A trial cut short because the budget was already spent costs nothing; any other
        # trial gets its cost recorded, after which the ledger counts it as spent although
        # its state is stored only after this method (see compute_ledger).
        skipped = bool(trial.system_attrs.get(SKIPPED_ATTR))
        error = (
            None
            if skipped
            else record_cost(
                study,
                trial,
                sampler_seconds=seconds,
                cost_attr=self._cost_attr,
                user_cost=self._user_cost,
            )
        )
        charged = self._charges_time(study)
        if charged and trial.datetime_start is not None:
            elapsed = (datetime.datetime.now() - trial.datetime_start).total_seconds()
            with self._lock:
                self._effort.record_trial(study._study_id, elapsed - seconds, seconds)
        spent = store_ledger(study, self._budget, self._cost_attr, charged)
        if self._chart.wanted(study) and self._chart.due(study, spent, self._budget):
            from optuna_costbo.dashboard import update_dashboard

            update_dashboard(
                study,
                cost_attr=self._cost_attr,
                budget=self._budget,
                trial=trial,
                state=state,
                values=values,
            )
        if spent >= self._budget:
            stop(study)
        if error is not None:
            # NOTE: as Optuna treats a bad return value: a warning, and the run goes on.
            # Optuna stores the trial's state after this hook and gives a sampler no way to
            # change it, so the trial keeps its state; the sampler treats it as failed (its
            # value stays out of the models) and the ledger charges its wall-clock time.
            _logger.warning(str(error))

    # -- a suggestion -----------------------------------------------------------------------

    def _startup_count(self, n_params: int) -> int:
        if self._n_startup_trials is not None:
            return self._n_startup_trials
        return max(4, 2 * (n_params + 1))

    def _charges_time(
        self, study: optuna.Study, trials: Sequence[FrozenTrial] | None = None
    ) -> bool:
        """Whether the sampler's time counts against the budget of ``study``."""
        if self._charge_sampler_time is not None:
            return self._charge_sampler_time
        known = self._charges.get(study._study_id)
        if known is not None:
            return known
        if trials is None:
            trials = study.get_trials(deepcopy=False)
        charged = charges_sampler_time(None, self._user_cost is not None, trials)
        if charged is None:
            # Nothing priced yet: nothing is spent either, except a running trial's time.
            return self._user_cost is None
        self._charges[study._study_id] = charged
        return charged

    def _raise_if_skipped(self, study: optuna.Study, trial: FrozenTrial) -> None:
        with self._lock:
            skipped = trial._trial_id in self._skipped
        if skipped:
            # Marked only now, when the trial is really cut short: a trial that never calls
            # the sampler (all parameters fixed or enqueued) runs and is charged as usual.
            study._storage.set_trial_system_attr(trial._trial_id, SKIPPED_ATTR, True)
            raise optuna.TrialPruned("the cost budget is spent; this trial was not run")

    def _add_sampler_seconds(self, trial: FrozenTrial, seconds: float) -> None:
        with self._lock:
            self._sampler_seconds[trial._trial_id] = (
                self._sampler_seconds.get(trial._trial_id, 0.0) + seconds
            )

    def _sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        bridge = SpaceBridge(search_space)
        # The lock covers reading the trials too: a thread that proposes meanwhile must see
        # this one's proposal as pending, and this one must see its.
        with self._lock:
            proposal = self._propose(study, trial, bridge, None)
            if proposal is None:
                return self._design.params(bridge, trial.number, self._last_evaluated)
            params = bridge.decode(proposal.z)
            self._pending.set(trial._trial_id, params)
        # Other workers see the proposal at once, before Optuna stores the parameters one by
        # one as the objective suggests them (see optuna_costbo._clash).
        storage = study._storage
        storage.set_trial_system_attr(trial._trial_id, _clash.PROPOSED_ATTR, params)
        for _ in range(_clash.MAX_ROUNDS):
            if not _clash.must_repropose(study, trial, params):
                break
            # Same data, same maximizer: propose again with the other trial as pending.
            with self._lock:
                again = self._propose(study, trial, bridge, proposal)
                if again is not None:
                    proposal, params = again, bridge.decode(again.z)
                self._pending.set(trial._trial_id, params)
            storage.set_trial_system_attr(trial._trial_id, _clash.PROPOSED_ATTR, params)
        storage.set_trial_system_attr(trial._trial_id, _clash.CHECKED_ATTR, True)
        return params

    def _propose(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        bridge: SpaceBridge,
        previous: Proposal | None,
    ) -> Proposal | None:
        """The model's proposal for ``trial``; None while the startup design is not done.

        ``previous``: this trial's proposal before a clash; its fitted models are reused when
        the data have not changed since.
        """
        trials = self._reads.trials(study, trial)
        snap = take_snapshot(
            trials,
            trial,
            bridge,
            study=study,
            sign=-1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0,
            budget_total=self._budget,
            cost_attr=self._cost_attr,
            charge_sampler_time=self._charges_time(study, trials),
            pending=self._pending.snapshot(),
        )
        if len(snap.y) < self._startup_count(len(bridge.names)):
            self._last_evaluated = snap.X_evaluated
            return None
        key = (
            study._study_id,
            tuple((n, repr(d)) for n, d in zip(bridge.names, bridge.distributions, strict=True)),
        )
        known = self._user_cost.on_box(bridge, snap.previous) if self._user_cost else None
        request = snap.request(bridge.codec, self._budget, known, self._warm.get(key))
        request = dataclasses.replace(request, deterministic=self._deterministic)
        route: Route = "full"
        if self._charges_time(study, trials):
            route = self._effort.route(study._study_id, snap.ledger.remaining)
        sid, n = study._study_id, len(snap.y)
        refit = route == "quick" and self._effort.refit_due(sid, n)
        start = time.perf_counter()
        if route == "quick":
            proposal = quick_propose(
                request,
                self._rng,
                needs_cost=self._acquisition.needs_cost,
                refit=refit,
                overhead=self._effort.overhead(sid),
            )
        else:
            proposal = propose(request, self._acquisition, self._rng, reuse=previous)
        seconds = time.perf_counter() - start
        self._effort.record_suggestion(sid, route, seconds, n=n, refit=refit)
        if route == "quick":
            _logger.debug(f"Trial {trial.number}: quick route (sampler time is charged)")
        self._warm[key] = proposal.warm
        if proposal.message is not None:
            _logger.debug(f"Trial {trial.number}: {proposal.message}")
            note_budget_end(study, snap.ledger, self._budget_end_noted)
        return proposal
