"""Stop any Optuna study when its next trial is not worth its cost: a callback.

:class:`CostAwareStopping` is the rule of ``CostRolloutSampler(value_per_cost=...)`` for any
sampler (TPE, GPSampler, random search): after each trial it fits the package's models (a GP
on the objective and a GP on log cost, from the trials' costs) and stops the study once no
point's expected improvement is worth its predicted cost at the user's exchange rate,
``max_x EI(x) / c(x) < value_per_cost``. Why is stored as the study user attr
``cost_stop_reason`` and logged.

Example:

    .. code-block:: python

        import optuna
        from optuna_costbo import report_cost
        from optuna_costbo.stopping import CostAwareStopping


        def objective(trial):
            x = trial.suggest_float("x", 0.0, 1.0)
            report_cost(trial, 1.0 + 4.0 * x)  # seconds, dollars, ...
            return (x - 0.3) ** 2


        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
        # an improvement of 1e-3 is worth one cost unit
        study.optimize(objective, n_trials=200, callbacks=[CostAwareStopping(1e-3)])
"""

from __future__ import annotations

import numpy as np
import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger import COST_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._numerics.acquisition.registry import make_acquisition
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.policy import FitSchedule
from optuna_costbo._numerics.policy import Plan
from optuna_costbo._numerics.policy import propose
from optuna_costbo._optuna_compat import root_study
from optuna_costbo._sampler.options import check_stopping
from optuna_costbo._sampler.snapshot import completed_search_space
from optuna_costbo._sampler.snapshot import minimize_sign
from optuna_costbo._sampler.snapshot import read_snapshot
from optuna_costbo._sampler.space import SpaceBridge
from optuna_costbo._sampler.stopping import StopRule
from optuna_costbo._sampler.stopping import record_stop
from optuna_costbo._sampler.study_control import check_objectives
from optuna_costbo._sampler.study_control import stop


__all__ = ["CostAwareStopping"]


class CostAwareStopping:
    """An Optuna callback that stops the study when the next trial is not worth its cost.

    Args:
        value_per_cost: Objective units one cost unit is worth, a positive finite number.
        cost_attr: The trial user attr holding costs (a trial without it is charged its
            wall-clock duration).
        min_trials: Completed trials before the rule is checked (the models need some), at
            least 2.
        seed: Seed of the model fits and the maximizer.
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
        self.last_rate: float | None = None
        """The largest EI per unit of predicted cost at the last check (None before one)."""

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        root = root_study(study)
        check_objectives(root, stop_rule=True)
        trials = root.get_trials(deepcopy=False)
        if sum(t.state == TrialState.COMPLETE for t in trials) < self._min_trials:
            return
        space, activity = completed_search_space(root, trials)
        space = {n: d for n, d in space.items() if not d.single()}
        if not space:
            return
        bridge = SpaceBridge(space, activity)
        me = trials[-1] if trials else trial
        request = read_snapshot(
            trials,
            me,
            bridge,
            sign=minimize_sign(root),
            cost_attr=self._cost_attr,
            pending={},
            remaining=np.inf,
            budget=np.inf,
            known_cost=None,
            warm=None,
            deterministic=False,
            schedule=FitSchedule(),
            rate_needed=True,
        )
        if len(request.y) < self._min_trials or not any(
            t.state in FINISHED_STATES for t in trials
        ):
            return
        proposal = propose(request, Plan(self._eipu), self._rng)
        rate = proposal.best_log_rate
        self.last_rate = float(np.exp(rate)) if rate is not None else None
        reason = self._rule.reason(rate)
        if reason is not None:
            record_stop(root, reason)
            stop(root)
