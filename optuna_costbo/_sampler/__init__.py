"""The suggestion pipeline: from a trial to its parameters, on Optuna's side of the package.

Modules, in the order one suggestion meets them:

- :mod:`.options`: checks of the sampler's plain options;
- :mod:`.space`: Optuna distributions <-> the codec (``SpaceBridge``);
- :mod:`.snapshot`: one read of the study per suggestion, encoded for the models;
- :mod:`.startup`: the start-up design (scrambled Sobol points by trial number);
- :mod:`.independent`: parameters outside the relative search space;
- :mod:`.effort`: the route of a suggestion (full or quick) when the sampler's time counts;
- :mod:`.hard_budget`: the budget rule (hard or soft) and the ``overrun_risk`` option;
- :mod:`.user_cost`: the user's ``cost_fn``, adapted for the models and the ledger;
- :mod:`.suggest`: one trial's parameters (read, propose, settle clashes);
- :mod:`.clash`: running trials as pending points, the rule for two workers on one point;
- :mod:`.trial_book`: this process's records of its running trials;
- :mod:`.study_control`: one objective, stopping the optimize loop, the end of the budget;
- :mod:`.stopping`: stopping when the next trial is not worth its cost; why a study stopped;
- :mod:`.recommendation`: the trial the objective model rates best;
- :mod:`.chart_schedule`: when the dashboard chart is redrawn.

What :mod:`optuna_costbo.sampler` uses is named here.
"""

from optuna_costbo._sampler.chart_schedule import ChartSchedule
from optuna_costbo._sampler.hard_budget import check_overrun_risk
from optuna_costbo._sampler.options import check_options
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


__all__ = [
    "ChartSchedule",
    "StopRule",
    "Suggester",
    "TrialBook",
    "UserCost",
    "check_distinct_choices",
    "check_objectives",
    "check_options",
    "check_overrun_risk",
    "check_stopping",
    "end_if_spent",
    "recommended_trial",
    "record_stop",
    "stop",
    "stop_reason",
]
