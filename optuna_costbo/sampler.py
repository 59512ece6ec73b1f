"""CostRolloutSampler: cost-aware Bayesian optimization under a budget, as an Optuna sampler.

This module is glue: Optuna's sampler hooks. A trial's relative parameters come from
:class:`._sampler.suggest.Suggester` (one read of the study, the start-up design or the
policy's proposal, the parallel clash rule); its independent ones from
:mod:`._sampler.independent`. After a trial the sampler records its cost
(:mod:`._ledger.record`), stores the ledger (:mod:`._ledger.ledger`), redraws the dashboard
chart when due and stops the study when the budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
import datetime
import math
import time
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger import BUDGET_ATTR
from optuna_costbo._ledger import COST_ATTR
from optuna_costbo._ledger import RISK_ATTR
from optuna_costbo._ledger import Ledger
from optuna_costbo._ledger import SamplerTimeCharge
from optuna_costbo._ledger import charge_and_sum
from optuna_costbo._ledger import mark_run
from optuna_costbo._ledger import record_finished_trial
from optuna_costbo._ledger import refresh_ledger
from optuna_costbo._ledger import store_ledger
from optuna_costbo._ledger import validate_budget
from optuna_costbo._ledger import write_ledger
from optuna_costbo._ledger.dead_trials import LifeStamps
from optuna_costbo._ledger.finished import finishing_trial
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.record import CostFnError
from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.acquisition.registry import make_acquisition
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._optuna_compat import heartbeat_thread
from optuna_costbo._optuna_compat import store_constraints
from optuna_costbo._sampler import ChartSchedule
from optuna_costbo._sampler import StopRule
from optuna_costbo._sampler import Suggester
from optuna_costbo._sampler import TrialBook
from optuna_costbo._sampler import UserCost
from optuna_costbo._sampler import check_distinct_choices
from optuna_costbo._sampler import check_objectives
from optuna_costbo._sampler import check_options
from optuna_costbo._sampler import check_overrun_risk
from optuna_costbo._sampler import check_stopping
from optuna_costbo._sampler import end_if_spent
from optuna_costbo._sampler import recommended_trial
from optuna_costbo._sampler import record_stop
from optuna_costbo._sampler import stop
from optuna_costbo._sampler import stop_reason
from optuna_costbo.progress import hint_cost_progress_bar


__all__ = ["CostRolloutSampler"]


_logger = get_logger(__name__)


class CostRolloutSampler(BaseSampler):
    """Cost-aware Bayesian optimization that stops the study when its cost budget is spent.

    Each trial's cost is the user attr ``cost_attr`` if the objective reports one (money,
    energy, simulated seconds; see :func:`optuna_costbo.report_cost`), else ``cost_fn`` of its
    parameters if given, else its measured wall-clock time. The ledger (budget, spent,
    remaining) is recomputed from storage and stored as study user attrs, so several workers
    sharing a study share one budget. Once the spent cost reaches ``budget``,
    ``study.optimize`` returns by itself; trials that a worker starts after that are pruned at
    their first suggestion. With measured wall-clock costs the sampler's own time counts too
    (the budget is then the study's wall clock); full suggestions take at most a tenth of it,
    beyond that a quick one (the last fitted hyperparameters, EI-cool on 512 candidates).

    After ``n_startup_trials`` quasi-random (scrambled Sobol) trials, a Gaussian process with a
    Matern-5/2 ARD kernel models the objective, a second one models log(cost), and the chosen
    acquisition is maximized over the encoded search space (floats, log floats, integers,
    steps, one-hot categoricals; conditional parameters are modelled, see docs/concepts.md).
    Parameters whose range changes between trials, and those no completed trial has asked
    for yet, are sampled by ``independent_sampler``. A study of 2 to 4 objectives gets a GP per
    objective, and the feasible Pareto front's expected hypervolume improvement (EHVI) per unit
    of predicted cost is maximized instead (docs/multi_objective.md); ``study.best_trials`` is
    its answer.

    The same seed gives the same suggestions when costs are reported or come from ``cost_fn``;
    measured wall-clock costs vary from run to run, and so do the suggestions made from them.

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
            study.optimize(objective)  # no n_trials: returns once 2 s are spent

    Args:
        budget: Total budget in cost units (seconds by default). A positive finite number, or
            ``None`` with ``value_per_cost``: the stopping rule alone ends the study.
        acquisition: ``"rollout"`` (default): the nonmyopic CMDP rollout of Lee et al. (UAI
            2021), which rolls out EI per unit cost and then EI over the remaining budget and
            values each plan per unit of the budget it consumes, cooled as EI-cool
            (docs/design-decisions.md, "The default acquisition").
            ``"rollout-paper"``: the paper's estimator as published (cost enters only when
            the budget cuts a trajectory short). ``"eipu"``: EI per unit predicted cost,
            myopic and about half the suggestion time. ``"ei-cool"``: EI / cost^alpha with
            alpha = remaining / total budget. ``"ei"``: log expected improvement, ignoring
            cost. With several objectives each maps to its hypervolume form: EHVI, EHVI per
            unit cost, and EHVI-cool for ``"ei-cool"`` and the rollouts.
        horizon: Rollout steps h (``None``: 2). Read by the rollouts only; given with another
            acquisition it draws a ``UserWarning``.
        cost_fn: A known cost, used instead of a fitted cost model and charged to the budget
            when the objective reports none: ``cost_fn(params) -> float``, or, for costs that
            depend on where you come from (moving sensors, reconfiguring a machine),
            ``cost_fn(params, previous_params) -> float`` with ``previous_params`` the
            parameters of the latest earlier trial (``None`` for the first). Values must be
            finite and non-negative.
        cost_attr: Name of the trial user attr holding a trial's cost. The objective may set
            it; otherwise the sampler records the cost there, where optuna-dashboard shows
            and sorts it.
        n_startup_trials: Quasi-random trials before the models take over; ``None`` means
            ``number of parameters + 1``, at least 4, but at most a third of the trials the
            budget is predicted to buy (at least ``number of parameters + 1``, at least 3).
            They count against the budget.
        seed: Seed for all of the sampler's randomness.
        independent_sampler: Sampler for parameters outside the relative search space;
            defaults to :class:`~optuna.samplers.RandomSampler`. Each such parameter is
            logged at WARNING after the start-up trials, as Optuna's samplers do.
        deterministic_objective: Whether the objective returns the same value for the same
            parameters. ``True`` holds the objective model's noise at its floor instead of
            fitting it, as Optuna's ``GPSampler(deterministic_objective=True)``. Either way
            the sampler never proposes parameters that a finished or running trial already
            has while any other configuration is left.
        constraints_func: Optuna's constraints: ``constraints_func(trial) -> Sequence[float]``
            after each COMPLETE or PRUNED trial, feasible when every value is <= 0, stored as
            Optuna's samplers store them (``study.best_trial`` respects them). A GP models
            each constraint and every acquisition, the rollout's trajectories included, is
            weighted by the probability of feasibility. Infeasible trials are charged as any
            other.
        value_per_cost: The objective units one cost unit is worth (your exchange rate: "an
            error 0.001 lower is worth 10 more seconds" is ``1e-4``). With it, the study stops
            as soon as no point's expected improvement is worth its predicted cost
            (``max EI / c < value_per_cost``, EI discounted by how far the model's earlier
            expectations were met), or when the budget is spent, whichever comes first; the
            trial that would have run is pruned and costs nothing. See :meth:`stop_reason`
            and docs/stopping.md.
        overrun_risk: How far the budget may be overrun. ``"auto"`` (default): hard at 0.05
            when costs are reported or come from ``cost_fn`` (money, energy), soft when they
            are the measured wall clock. A probability in (0, 1) makes the budget hard, the
            paper's constraint, with this largest chance that the study overruns: only
            configurations whose cost fits the budget left (less what running trials are
            predicted to spend) under the cost model are proposed, each taking its chance of
            overrunning out of what earlier proposals left (exactly, with ``cost_fn`` or a
            fixed price per trial), the rollout's trajectories obey the same rule, and when
            nothing fits the study stops (:meth:`stop_reason`). ``None``: a soft budget, a
            trial starts whenever budget is left (the overrun is at most the last trial's
            cost, per worker). The first trials, before any cost is known, cannot be checked.

    A trial a pruner stopped after reporting is a censored observation of its final value,
    and every acquisition is then weighted by the probability that a trial completes
    (docs/pruning.md). The unit of the costs, for the dashboard chart, the progress bar and
    the plots, is the study user attr ``cost_unit`` when set
    (``study.set_user_attr("cost_unit", "$")``); else seconds for measured costs.
    """

    def __init__(
        self,
        budget: float | None,
        *,
        acquisition: str = "rollout",
        horizon: int | None = None,
        cost_fn: Callable[..., float] | None = None,
        cost_attr: str = COST_ATTR,
        n_startup_trials: int | None = None,
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        deterministic_objective: bool = False,
        constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
        value_per_cost: float | None = None,
        overrun_risk: float | str | None = "auto",
    ) -> None:
        check_stopping(budget, value_per_cost)
        check_overrun_risk(overrun_risk)
        if constraints_func is not None and not callable(constraints_func):
            raise ValueError(
                f"constraints_func must be None or a callable, got {constraints_func!r}"
            )
        check_options(
            horizon=horizon, n_startup_trials=n_startup_trials, cost_attr=cost_attr, seed=seed
        )
        self._constraints_func = constraints_func
        self._budget = math.inf if budget is None else validate_budget(budget)
        self._cost_attr = cost_attr
        self._user_cost = UserCost(cost_fn) if cost_fn is not None else None
        options = AcquisitionOptions() if horizon is None else AcquisitionOptions(horizon)
        self._suggester = Suggester(
            budget=self._budget,
            acquisition=make_acquisition(
                acquisition, options, given=() if horizon is None else ("horizon",)
            ),
            cost_attr=cost_attr,
            n_startup_trials=n_startup_trials,
            user_cost=self._user_cost,
            deterministic=bool(deterministic_objective),
            seed=seed,
            charge=SamplerTimeCharge(has_cost_fn=cost_fn is not None),
            stop_rule=StopRule(value_per_cost) if value_per_cost is not None else None,
            independent_sampler=independent_sampler,
            overrun_risk=overrun_risk,
        )
        self._chart = ChartSchedule(cost_attr)
        self._book = TrialBook()  # the sampler's seconds per trial, trials cut short
        self._stamps = LifeStamps()  # running trials' signs of life (_ledger.dead_trials)

    # -- public API -------------------------------------------------------------------------

    @property
    def budget(self) -> float:
        """The total budget, in cost units (``math.inf`` when a stopping rule alone ends the
        study)."""
        return self._budget

    def ledger(self, study: optuna.Study) -> Ledger:
        """The study's budget ledger, recomputed from storage now."""
        return refresh_ledger(
            study, self._budget, self._cost_attr, self._suggester.charges_time(study)
        )

    def remaining_budget(self, study: optuna.Study) -> float:
        """Budget minus the cost of every finished trial of ``study``, never below 0 (the
        overrun is :attr:`Ledger.overrun`, the study user attr ``cost_overrun``).

        Under ask-and-tell there is no optimize loop to stop: check this before ``ask``.
        """
        return self.ledger(study).remaining

    def stop_reason(self, study: optuna.Study) -> str | None:
        """Why ``study`` stopped (its budget was spent, or the next trial was not worth its
        cost), as stored on the study (user attr ``cost_stop_reason``); None while it runs."""
        return stop_reason(study)

    def recommended_trial(self, study: optuna.Study) -> FrozenTrial | None:
        """The COMPLETE trial (feasible, with constraints) whose configuration the objective
        GP, fitted now to every trial, rates best: its posterior mean, not its observed value.
        Under a noisy objective it is a better guess of the best configuration than
        ``study.best_trial``, which favours a lucky draw (docs/concepts.md). The number of the
        one the sampler's latest model named is the study user attr
        ``cost_recommended_trial``. None before a trial has completed.
        """
        return recommended_trial(study, self._cost_attr)

    def reseed_rng(self) -> None:
        self._suggester.reseed()

    # -- BaseSampler ------------------------------------------------------------------------

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._suggester.search_space(study, trial)

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        check_objectives(study, self._suggester.stop_rule is not None)
        if not search_space:
            return {}
        with self._book.timed(study, trial):
            return self._suggester.sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        check_objectives(study, self._suggester.stop_rule is not None)
        check_distinct_choices(param_name, param_distribution)
        with self._book.timed(study, trial):
            return self._suggester.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        started = time.perf_counter()
        hint_cost_progress_bar(study, self._budget)
        mark_run(study, trial)  # run under this budget, unlike trials added to the study
        self._suggester.before_trial(study, trial)
        imported = time.perf_counter()
        self._chart.warm_imports(study)
        imported = time.perf_counter() - imported  # a one-time import: not charged
        trials = self._suggester.reads.read(study, trial)  # the trial's one read of the study
        charged = self._suggester.charges_time(study, trials)
        ledger = charge_and_sum(study, trials, self._budget, self._cost_attr, charged)
        attrs = study._storage.get_study_user_attrs(study._study_id)
        if attrs.get(BUDGET_ATTR) != (self._budget if math.isfinite(self._budget) else None):
            write_ledger(study, ledger)
        risk = self._suggester.overrun_risk(study, trials)
        if RISK_ATTR not in attrs or attrs[RISK_ATTR] != risk:
            # Read by CostBudgetPruner, which then stops a trial before it would cross.
            study._storage.set_study_user_attr(study._study_id, RISK_ATTR, risk)
        if end_if_spent(study, ledger, trial):
            self._book.skip(trial._trial_id)
        self._stamps.start(study, trial)  # its last sign of life, should its worker die
        self._book.begin(trial, time.perf_counter() - started, imported)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._stamps.stop(trial._trial_id)
        self._suggester.after_trial(study, trial, state, values)
        # NOTE: Optuna has stopped this trial's heartbeat by now; keep it beating while the
        # cost, the ledger and the chart are written, or another worker's fail_stale_trials
        # could fail a trial that finished fine.
        with heartbeat_thread(trial._trial_id, study._storage):
            self._after_trial(study, trial, state, values)

    # -- after a trial: its cost, the ledger, the chart, the stop ---------------------------

    def _after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        measured = datetime.datetime.now()
        inside, beyond = self._book.finish(trial._trial_id, measured)
        error = record_finished_trial(
            study,
            trial,
            sampler_seconds=inside,
            cost_attr=self._cost_attr,
            user_cost=self._user_cost,
            overhead=beyond,
            now=measured,
            reported_unit=not self._suggester.charges_time(study),
        )
        charged = self._suggester.trial_finished(study, trial, inside + beyond)
        spent, read = store_ledger(study, self._budget, self._cost_attr, charged, trial._trial_id)
        self._chart.after_trial(
            study, spent, self._budget, trial=trial, state=state, values=values, trials=read
        )
        if spent >= self._budget:
            record_stop(study, f"the budget is spent ({spent:.6g} of {self._budget:.6g})")
            stop(study)
            final = recommended_trial(
                study, self._cost_attr, finishing_trial(trial, state, values)
            )
            if final is not None:
                self._suggester.recommendations.store(study, final.number)
        if self._constraints_func is not None and not trial.system_attrs.get(SKIPPED_ATTR):
            # After the cost and the ledger: a constraints_func that raises fails the trial
            # (as Optuna's samplers do), but what it spent is already charged. A trial the
            # sampler skipped (the study stopped first) ran nothing to constrain.
            store_constraints(self._constraints_func, study, trial, state)
        if isinstance(error, CostFnError) and state == TrialState.COMPLETE:
            raise error  # charged and booked first: the study's books agree on resume
        if error is not None:
            _logger.warning(str(error))  # as Optuna treats a bad return value (_ledger.record)
