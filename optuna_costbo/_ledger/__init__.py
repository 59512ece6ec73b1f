"""The cost ledger: what each trial cost and what the study has spent, from storage.

Modules (the ledger imports nothing from the suggestion pipeline, ``_sampler``):

- :mod:`.keys`: the attribute keys it stores and reads, :class:`.keys.CostSource`;
- :mod:`.costs`: checked costs, ``report_cost``, what one trial costs and is charged;
- :mod:`.ledger`: :class:`.ledger.Ledger`, summed incrementally, stored on the study;
- :mod:`.finished`: the trials finished since the last read, per storage and study;
- :mod:`.runs`: which trials ran under the budget and which were imported (``add_trials``);
- :mod:`.dead_trials`: a dead worker's trial charged to its last sign of life (stamped);
- :mod:`.record`: a finished trial's cost, written on it (reported, ``cost_fn``, wall clock);
- :mod:`.sampler_time`: whether the sampler's own time is charged;
- :mod:`.units`: the unit of a study's costs, for labels.

What the rest of the package uses is named here.
"""

from optuna_costbo._ledger.costs import charged_cost
from optuna_costbo._ledger.costs import report_cost
from optuna_costbo._ledger.costs import validate_budget
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.keys import OVERRUN_ATTR
from optuna_costbo._ledger.keys import RECOMMENDED_ATTR
from optuna_costbo._ledger.keys import RISK_ATTR
from optuna_costbo._ledger.keys import STOP_REASON_ATTR
from optuna_costbo._ledger.keys import CostSource
from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo._ledger.ledger import imported_rule
from optuna_costbo._ledger.ledger import measured_costs
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
    "OVERRUN_ATTR",
    "RECOMMENDED_ATTR",
    "RISK_ATTR",
    "STOP_REASON_ATTR",
    "CostSource",
    "Ledger",
    "SamplerTimeCharge",
    "charge_and_sum",
    "charged_cost",
    "charges_sampler_time",
    "compute_ledger",
    "cost_unit",
    "imported_rule",
    "mark_run",
    "measured_costs",
    "record_finished_trial",
    "refresh_ledger",
    "report_cost",
    "storage_trials",
    "store_ledger",
    "stored_budget",
    "validate_budget",
    "write_ledger",
]
