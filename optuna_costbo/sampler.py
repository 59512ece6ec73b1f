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
import functools
import threading
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.storages._heartbeat import get_heartbeat_thread
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo import _clash
from optuna_costbo._chart_schedule import ChartSchedule
from optuna_costbo._cost_record import record_trial
from optuna_costbo._effort import DEFAULT_SHARE
from optuna_costbo._effort import EffortRule
from optuna_costbo._effort import SamplerTimeCharge
from optuna_costbo._independent import IndependentSampling
from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.policy import Proposal
from optuna_costbo._numerics.policy import WarmStart
from optuna_costbo._numerics.policy import propose
from optuna_costbo._numerics.quick import quick_propose
from optuna_costbo._numerics.registry import make_acquisition
from optuna_costbo._numerics.strategies import AcquisitionOptions
from optuna_costbo._options import check_options
from optuna_costbo._prefetch import Prefetch
from optuna_costbo._snapshot import TrialReads
from optuna_costbo._snapshot import take_snapshot
from optuna_costbo._space import SpaceBridge
from optuna_costbo._space import check_distinct_choices
from optuna_costbo._startup import StartupDesign
from optuna_costbo._startup import startup_size
from optuna_costbo._study_control import check_single_objective
from optuna_costbo._study_control import end_if_spent
from optuna_costbo._study_control import note_budget_end
from optuna_costbo._study_control import stop
from optuna_costbo._trial_book import TrialBook
from optuna_costbo._user_cost import UserCost
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
        acquisition: ``"rollout"`` (default: the nonmyopic CMDP rollout, which rolls out
            EI per unit cost and then EI over the remaining budget and values each point per
            unit of the budget its trajectories consume; the best average rank at the end of
            the budget on the package's benchmark suite), ``"eipu"`` (EI per unit predicted
            cost, myopic and about half the suggestion time), ``"rollout-paper"`` (the
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
            ``2 * (number of parameters + 1)``, at least 4, but at most a third of the trials
            the budget is predicted to buy (at least parameters + 1). They count against the
            budget.
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
            storage is not in memory. ``True`` without them raises ``ImportError``.
        cost_unit: The unit of reported costs (``"$"``, ``"kWh"``) on the dashboard chart's
            cost axis. ``None`` (default): ``"s"`` when costs are measured wall-clock time,
            else no unit. (The progress bar and the plots take their own ``unit`` and
            ``cost_unit``.)
        prefetch: Compute the next suggestion while the current trial runs, with it as a
            pending point, so that on trials longer than a suggestion its time is hidden.
            Sequential runs stay deterministic for a seed, but differ from runs without it
            (the next point is chosen before the current trial's value is known). Only with
            one worker thread and no state-dependent ``cost_fn``; see docs/concepts.md.
    """

    def __init__(
        self,
        budget: float,
        *,
        acquisition: str = "rollout",
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
        cost_unit: str | None = None,
        prefetch: bool = False,
    ) -> None:
        self._budget = validate_budget(budget)
        check_options(
            horizon=horizon,
            n_samples=n_samples,
            n_startup_trials=n_startup_trials,
            cost_attr=cost_attr,
            seed=seed,
            charge_sampler_time=charge_sampler_time,
            cost_unit=cost_unit,
            prefetch=prefetch,
        )
        self._user_cost = UserCost(cost_fn) if cost_fn is not None else None
        self._acquisition = make_acquisition(
            acquisition, AcquisitionOptions(horizon=horizon, n_samples=n_samples)
        )
        self._n_startup_trials = n_startup_trials
        self._cost_attr = cost_attr
        self._cost_unit = cost_unit
        self._seed = seed
        self._rng = np.random.default_rng(seed)
        self._design = StartupDesign(int(self._rng.integers(2**31)))
        self._independent = IndependentSampling(
            independent_sampler,
            seed,
            self._design,
            warn=warn_independent_sampling,
            owner=type(self).__name__,
        )
        self._charge = SamplerTimeCharge(charge_sampler_time, cost_fn is not None)
        self._effort = EffortRule(max_sampler_share)
        self._chart = ChartSchedule(dashboard_chart, cost_attr=cost_attr, cost_unit=cost_unit)
        self._deterministic = bool(deterministic_objective)
        self._lock = threading.RLock()
        self._warm: dict[tuple[Any, ...], WarmStart] = {}
        self._book = TrialBook()  # the sampler's seconds per trial, trials cut short
        self._pending = _clash.Pending()  # this process's proposals for running trials
        self._last_evaluated = np.empty((0, 0))  # (k, D) of the last start-up snapshot
        self._budget_end_noted: set[int] = set()  # studies told the budget buys no more
        self._reads = TrialReads()  # one read of the study per suggestion
        moving = self._user_cost is not None and self._user_cost.moving
        self._prefetch: Prefetch[Proposal] = Prefetch(bool(prefetch) and not moving)

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
        self._independent.sampler.reseed_rng()

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
        with self._book.timed(study, trial):
            return self._sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        check_single_objective(study)
        check_distinct_choices(param_name, param_distribution)
        with self._book.timed(study, trial):
            return self._independent.sample(
                study, trial, param_name, param_distribution, self._startup_count(1)
            )

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        hint_cost_progress_bar(study)
        self._independent.sampler.before_trial(study, trial)
        self._chart.warm_imports(study)
        ledger = self.ledger(study)
        if stored_budget(study) != self._budget:
            write_ledger(study, ledger)
        if end_if_spent(study, ledger, trial):
            self._book.skip(trial._trial_id)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._independent.sampler.after_trial(study, trial, state, values)
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
        seconds = self._book.finish(trial._trial_id)
        self._pending.discard(trial._trial_id)
        error = record_trial(
            study,
            trial,
            sampler_seconds=seconds,
            cost_attr=self._cost_attr,
            user_cost=self._user_cost,
        )
        charged = self._charges_time(study)
        if charged:
            with self._lock:
                self._effort.record_finished(study._study_id, trial.datetime_start, seconds)
        spent = store_ledger(study, self._budget, self._cost_attr, charged)
        self._chart.after_trial(
            study, spent, self._budget, trial=trial, state=state, values=values
        )
        if spent >= self._budget:
            stop(study)
        if error is not None:
            _logger.warning(str(error))  # as Optuna treats a bad return value (_cost_record)

    # -- a suggestion -----------------------------------------------------------------------

    def _startup_count(self, n_params: int, ledger: Ledger | None = None) -> int:
        if self._n_startup_trials is not None:
            return self._n_startup_trials
        if ledger is None:
            return startup_size(n_params)
        return startup_size(n_params, ledger.n_finished, ledger.spent, ledger.remaining)

    def _charges_time(
        self, study: optuna.Study, trials: Sequence[FrozenTrial] | None = None
    ) -> bool:
        """Whether the sampler's time counts against the budget of ``study``."""
        return self._charge.resolve(
            study._study_id,
            (lambda: study.get_trials(deepcopy=False)) if trials is None else trials,
        )

    def _sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        bridge = SpaceBridge(search_space)
        ready = self._prefetch.take(study, trial, bridge.key)
        if ready is not None:
            self._reads.discard(trial)  # read before the trials that started since
        # The lock covers reading the trials too: a thread that proposes meanwhile must see
        # this one's proposal as pending, and this one must see its.
        with self._lock:
            proposal = ready if ready is not None else self._propose(study, trial, bridge, None)
            if proposal is None:
                return self._design.params(bridge, trial.number, self._last_evaluated)
            params = bridge.decode(proposal.z)
            self._pending.set(trial._trial_id, params)

        def repropose() -> dict[str, Any]:
            # Same data, same maximizer: propose again with the other trial as pending.
            nonlocal proposal, params
            with self._lock:
                again = self._propose(study, trial, bridge, proposal)
                if again is not None:
                    proposal, params = again, bridge.decode(again.z)
                self._pending.set(trial._trial_id, params)
            return params

        params = _clash.settle(study, trial, params, repropose)
        propose_next = functools.partial(self._propose, study, bridge=bridge, previous=None)
        self._prefetch.start(study, trial, bridge.key, propose_next, self._lock)
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
        # A proposal made again (after a clash) always reads afresh: the clash is news.
        trials = (
            self._reads.trials(study, trial)
            if previous is None
            else study.get_trials(deepcopy=False)
        )
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
        if len(snap.y) < self._startup_count(len(bridge.names), snap.ledger):
            self._last_evaluated = snap.X_evaluated
            return None
        key = (study._study_id, bridge.key)
        known = self._user_cost.on_box(bridge, snap.previous) if self._user_cost else None
        request = snap.request(
            bridge.codec, self._budget, known, self._warm.get(key), self._deterministic
        )
        sid = study._study_id
        proposal = self._effort.suggest(
            sid,
            len(snap.y),
            snap.ledger.remaining if self._charges_time(study, trials) else None,
            full=lambda: propose(request, self._acquisition, self._rng, reuse=previous),
            quick=lambda refit: quick_propose(
                request,
                self._rng,
                needs_cost=self._acquisition.needs_cost,
                refit=refit,
                overhead=self._effort.overhead(sid),
            ),
        )
        self._warm[key] = proposal.warm
        if proposal.message is not None:
            _logger.debug(f"Trial {trial.number}: {proposal.message}")
            note_budget_end(study, snap.ledger, self._budget_end_noted)
        return proposal
