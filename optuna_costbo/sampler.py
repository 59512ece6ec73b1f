"""CostRolloutSampler: Optuna's sampler hooks, glue over :mod:`._sampler` and :mod:`._ledger`."""

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

from optuna_costbo._ledger.costs import validate_budget
from optuna_costbo._ledger.dead_trials import LifeStamps
from optuna_costbo._ledger.finished import finishing_trial
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.keys import RISK_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import refresh_ledger
from optuna_costbo._ledger.ledger import store_ledger
from optuna_costbo._ledger.ledger import write_ledger
from optuna_costbo._ledger.record import CostFnError
from optuna_costbo._ledger.record import record_finished_trial
from optuna_costbo._ledger.runs import mark_run
from optuna_costbo._ledger.units import SamplerTimeCharge
from optuna_costbo._logging import get_logger
from optuna_costbo._numerics.acquisition.registry import make_acquisition
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._optuna_compat import heartbeat_thread
from optuna_costbo._optuna_compat import store_constraints
from optuna_costbo._sampler.chart_schedule import ChartSchedule
from optuna_costbo._sampler.options import check_options
from optuna_costbo._sampler.options import check_overrun_risk
from optuna_costbo._sampler.options import check_stopping
from optuna_costbo._sampler.recommendation import recommended_trial
from optuna_costbo._sampler.space import check_distinct_choices
from optuna_costbo._sampler.stopping import StopRule
from optuna_costbo._sampler.stopping import record_stop
from optuna_costbo._sampler.stopping import stop_reason
from optuna_costbo._sampler.study_control import check_objectives
from optuna_costbo._sampler.study_control import end_if_spent
from optuna_costbo._sampler.study_control import stop
from optuna_costbo._sampler.suggest import Suggester
from optuna_costbo._sampler.trial_book import TrialBook
from optuna_costbo._sampler.user_cost import UserCost
from optuna_costbo.progress import hint_cost_progress_bar


__all__ = ["CostRolloutSampler"]


_logger = get_logger(__name__)


class CostRolloutSampler(BaseSampler):
    """Cost-aware Bayesian optimization that stops the study when its cost budget is spent.

    After the start-up trials, GPs model the objective (one per objective, up to 4) and
    log(cost); the ledger lives in storage, so workers sharing a study share one budget.

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
        budget: Total budget in cost units (seconds by default): a positive finite number, or
            ``None`` with ``value_per_cost`` (the stopping rule alone ends the study).
        acquisition: ``"rollout"`` (default: the nonmyopic rollout of Lee et al., UAI 2021,
            cooled as EI-cool), ``"rollout-paper"``, ``"eipu"`` (EI per unit cost),
            ``"ei-cool"`` or ``"ei"``; their EHVI forms with several objectives.
        horizon: Rollout steps (``None``: 2); read by the rollouts only.
        cost_fn: A known cost, used instead of a cost model: ``cost_fn(params)`` or
            ``cost_fn(params, previous_params)``, charged when the objective reports none;
            without either, a trial costs its wall-clock seconds (the sampler's included).
        cost_attr: Trial user attr holding a trial's cost: the objective may set it
            (:func:`optuna_costbo.report_cost`), else the sampler records it there.
        n_startup_trials: Quasi-random trials before the models; ``None``: ``d + 1`` (at least
            4), at most a third of the trials the budget is predicted to buy.
        seed: Seed for all of the sampler's randomness (runs repeat unless costs are measured).
        independent_sampler: Sampler for parameters outside the relative search space
            (default :class:`~optuna.samplers.RandomSampler`).
        deterministic_objective: ``True`` holds the objective model's noise at its floor, as
            ``GPSampler(deterministic_objective=True)`` does.
        constraints_func: Optuna's ``constraints_func(trial) -> Sequence[float]``, feasible
            when every value is <= 0; every acquisition is weighted by the chance of it.
        value_per_cost: Objective units one cost unit is worth: the study stops once no
            point's expected improvement is worth its predicted cost (docs/stopping.md).
        overrun_risk: ``"auto"`` (default: 0.05 for reported or ``cost_fn`` costs, soft for the
            wall clock); a probability in (0, 1): a hard budget, the largest chance the study
            overruns; ``None``: soft, a trial starts whenever budget is left.
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
        self._chart = ChartSchedule()
        self._book = TrialBook()  # the sampler's seconds per trial, trials cut short
        self._stamps = LifeStamps()  # running trials' signs of life (_ledger.dead_trials)

    # -- public API -------------------------------------------------------------------------

    @property
    def budget(self) -> float:
        """The total budget in cost units (``math.inf`` for ``budget=None``)."""
        return self._budget

    def ledger(self, study: optuna.Study) -> Ledger:
        """The study's budget ledger, recomputed from storage now."""
        return refresh_ledger(
            study, self._budget, self._cost_attr, self._suggester.charges_time(study)
        )

    def remaining_budget(self, study: optuna.Study) -> float:
        """Budget minus the cost of every finished trial, never below 0 (check it before
        ``ask`` under ask-and-tell: there is no optimize loop to stop)."""
        return self.ledger(study).remaining

    def stop_reason(self, study: optuna.Study) -> str | None:
        """Why ``study`` stopped (study user attr ``cost_stop_reason``); None while it runs."""
        return stop_reason(study)

    def recommended_trial(self, study: optuna.Study) -> FrozenTrial | None:
        """The COMPLETE (feasible) trial the objective GP, fitted now, rates best by posterior
        mean: under noise a better guess than ``study.best_trial``; None before one completes."""
        return recommended_trial(study, self._cost_attr)

    def reseed_rng(self) -> None:
        self._suggester.reseed()

    # -- BaseSampler ------------------------------------------------------------------------

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._suggester.search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
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
        self._suggester.independent.sampler.before_trial(study, trial)
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
        self._book.begin(trial, time.perf_counter() - started)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._stamps.stop(trial._trial_id)
        self._suggester.independent.sampler.after_trial(study, trial, state, values)
        # NOTE: Optuna has stopped this trial's heartbeat by now; keep it beating while the
        # cost, the ledger and the chart are written, or another worker's fail_stale_trials
        # could fail a trial that finished fine.
        with heartbeat_thread(trial._trial_id, study._storage):
            self._after_trial(study, trial, state, values)
        self._book.close()

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
            study, spent, self._budget, cost_attr=self._cost_attr, trial=trial, state=state,
            values=values, trials=read,
        )  # fmt: skip
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
