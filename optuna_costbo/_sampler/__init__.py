"""The suggestion pipeline (:mod:`.suggest`), and what :mod:`optuna_costbo.sampler` uses."""

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
