"""The cost ledger: what each trial cost and what the study has spent, read from storage."""

from optuna_costbo._ledger.costs import charged_cost
from optuna_costbo._ledger.costs import report_cost
from optuna_costbo._ledger.costs import validate_budget
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import RISK_ATTR
from optuna_costbo._ledger.keys import STOP_REASON_ATTR
from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo._ledger.ledger import imported_rule
from optuna_costbo._ledger.ledger import refresh_ledger
from optuna_costbo._ledger.ledger import storage_trials
from optuna_costbo._ledger.ledger import store_ledger
from optuna_costbo._ledger.ledger import stored_budget
from optuna_costbo._ledger.ledger import write_ledger
from optuna_costbo._ledger.record import record_finished_trial
from optuna_costbo._ledger.runs import mark_run
from optuna_costbo._ledger.sampler_time import SamplerTimeCharge
from optuna_costbo._ledger.sampler_time import charges_sampler_time
from optuna_costbo._ledger.units import cost_unit


__all__ = [
    "BUDGET_ATTR",
    "COST_ATTR",
    "FINISHED_STATES",
    "RISK_ATTR",
    "STOP_REASON_ATTR",
    "Ledger",
    "SamplerTimeCharge",
    "charge_and_sum",
    "charged_cost",
    "charges_sampler_time",
    "compute_ledger",
    "cost_unit",
    "imported_rule",
    "mark_run",
    "record_finished_trial",
    "refresh_ledger",
    "report_cost",
    "storage_trials",
    "store_ledger",
    "stored_budget",
    "validate_budget",
    "write_ledger",
]
