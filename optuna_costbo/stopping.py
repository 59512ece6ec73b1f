"""Stop any Optuna study once its next trial is not worth its cost: a callback."""

from __future__ import annotations

import numpy as np
import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._numerics.acquisition.registry import make_acquisition
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.policy import Plan
from optuna_costbo._numerics.policy import propose
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._sampler.options import check_stopping
from optuna_costbo._sampler.recommendation import fresh_request
from optuna_costbo._sampler.stopping import StopRule
from optuna_costbo._sampler.stopping import record_stop
from optuna_costbo._sampler.study_control import check_objectives
from optuna_costbo._sampler.study_control import stop


__all__ = ["CostAwareStopping"]


class CostAwareStopping:
    """An Optuna callback that stops the study when the next trial is not worth its cost.

    ``CostRolloutSampler(value_per_cost=...)``'s rule for any sampler: after each trial, GPs of
    the objective and log cost stop the study once ``max_x EI(x) / c(x) < value_per_cost``.

    Args:
        value_per_cost: Objective units one cost unit is worth, a positive finite number.
        cost_attr: The trial user attr holding costs (else wall-clock time is charged).
        min_trials: Completed trials before the rule is checked, at least 2.
        seed: Seed of the model fits and the maximizer.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo import report_cost
            from optuna_costbo.stopping import CostAwareStopping


            def objective(trial):
                x = trial.suggest_float("x", 0.0, 1.0)
                report_cost(trial, 1.0 + 4.0 * x)
                return (x - 0.3) ** 2


            study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
            stopping = CostAwareStopping(1e-3)  # an improvement of 1e-3 is worth one cost unit
            study.optimize(objective, n_trials=200, callbacks=[stopping])
    """

    def __init__(
        self,
        value_per_cost: float,
        *,
        cost_attr: str = COST_ATTR,
        min_trials: int = 5,
        seed: int | None = 0,
    ) -> None:
        check_stopping(1.0, value_per_cost)
        if value_per_cost is None:
            raise ValueError("value_per_cost must be a positive finite number, got None")
        self._rule = StopRule(value_per_cost)
        if not isinstance(min_trials, int) or min_trials < 2:
            raise ValueError(f"min_trials must be an int >= 2, got {min_trials!r}")
        self._cost_attr = cost_attr
        self._min_trials = min_trials
        self._rng = np.random.default_rng(seed)
        self._eipu = make_acquisition("eipu", AcquisitionOptions())
        self.last_rate: float | None = None  # the largest EI per predicted cost at the last check

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        root = root_study(study)
        check_objectives(root, stop_rule=True)
        trials = root.get_trials(deepcopy=False)
        if sum(t.state == TrialState.COMPLETE for t in trials) < self._min_trials:
            return
        request = fresh_request(
            root, trials, self._cost_attr, remaining=np.inf, budget=np.inf, rate_needed=True
        )
        if request is None or len(request.y) < self._min_trials:
            return
        proposal = propose(request, Plan(self._eipu), self._rng)
        rate = proposal.best_log_rate
        self.last_rate = float(np.exp(rate)) if rate is not None else None
        reason = self._rule.reason(rate)
        if reason is not None:
            record_stop(root, reason)
            stop(root)
