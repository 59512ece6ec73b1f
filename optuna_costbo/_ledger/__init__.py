"""The cost ledger: what each trial cost and what the study has spent, read from storage."""

# Names re-exported for the rest of the package (``as``: an explicit re-export).
from optuna_costbo._ledger.costs import charged_cost as charged_cost
from optuna_costbo._ledger.costs import report_cost as report_cost
from optuna_costbo._ledger.costs import validate_budget as validate_budget
from optuna_costbo._ledger.keys import BUDGET_ATTR as BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_ATTR as COST_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES as FINISHED_STATES
from optuna_costbo._ledger.keys import RISK_ATTR as RISK_ATTR
from optuna_costbo._ledger.keys import STOP_REASON_ATTR as STOP_REASON_ATTR
from optuna_costbo._ledger.ledger import Ledger as Ledger
from optuna_costbo._ledger.ledger import charge_and_sum as charge_and_sum
from optuna_costbo._ledger.ledger import compute_ledger as compute_ledger
from optuna_costbo._ledger.ledger import imported_rule as imported_rule
from optuna_costbo._ledger.ledger import refresh_ledger as refresh_ledger
from optuna_costbo._ledger.ledger import storage_trials as storage_trials
from optuna_costbo._ledger.ledger import store_ledger as store_ledger
from optuna_costbo._ledger.ledger import stored_budget as stored_budget
from optuna_costbo._ledger.ledger import write_ledger as write_ledger
from optuna_costbo._ledger.record import record_finished_trial as record_finished_trial
from optuna_costbo._ledger.runs import mark_run as mark_run
from optuna_costbo._ledger.units import SamplerTimeCharge as SamplerTimeCharge
from optuna_costbo._ledger.units import charges_sampler_time as charges_sampler_time
from optuna_costbo._ledger.units import cost_unit as cost_unit
