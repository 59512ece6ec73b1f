"""Where the ledger keeps its records: the attribute keys, the cost sources, finished states.

Study user attrs (``cost_budget``, ``cost_spent``, ``cost_remaining``, ``cost_overrun``) are
shown by optuna-dashboard in the study's attribute table; trial system attrs (``costbo:*``) are the
sampler's own records. These names and values are a stored format: changing one orphans what
earlier runs wrote.
"""

from __future__ import annotations

import enum

from optuna.trial import TrialState


__all__ = [
    "ALIVE_ATTR",
    "BUDGET_ATTR",
    "CHOSEN_EI_ATTR",
    "COST_ATTR",
    "COST_FN_ERROR_ATTR",
    "COST_SOURCE_ATTR",
    "FINISHED_STATES",
    "IMPORTED_ATTR",
    "IMPORTED_TRIALS_ATTR",
    "INVALID_COST_ATTR",
    "NEXT_RATE_ATTR",
    "OVERRUN_ATTR",
    "RECOMMENDED_ATTR",
    "REMAINING_ATTR",
    "RISK_ATTR",
    "RUNNER_ATTR_PREFIX",
    "RUN_ATTR",
    "SAMPLER_SECONDS_ATTR",
    "SKIPPED_ATTR",
    "SPENT_ATTR",
    "STOP_REASON_ATTR",
    "UNIT_ATTR",
    "CostSource",
]


COST_ATTR = "cost"  # the trial user attr holding a trial's cost, unless the user names another

# Study user attrs (shown by optuna-dashboard in the study's attribute table).
BUDGET_ATTR = "cost_budget"
SPENT_ATTR = "cost_spent"
REMAINING_ATTR = "cost_remaining"
OVERRUN_ATTR = "cost_overrun"  # spent beyond the budget (0 within it)
IMPORTED_ATTR = "cost_imported"  # the imported trials' summed cost, not charged (_ledger.runs)
IMPORTED_TRIALS_ATTR = "cost_imported_trials"  # how many trials were imported
RISK_ATTR = "cost_overrun_risk"  # the sampler's hard budget: its overrun risk (absent: soft)
RECOMMENDED_ATTR = "cost_recommended_trial"  # the trial with the best posterior mean (number)
STOP_REASON_ATTR = "cost_stop_reason"  # why the study stopped (budget spent, not worth it)
UNIT_ATTR = "cost_unit"  # set by the user: the unit of the costs ("$", "kWh"), for labels

# Trial system attrs written by the sampler.
SAMPLER_SECONDS_ATTR = "costbo:sampler_seconds"
ALIVE_ATTR = "costbo:alive_seconds"  # a running trial's last sign of life (_ledger.dead_trials)
COST_SOURCE_ATTR = "costbo:cost_source"
INVALID_COST_ATTR = "costbo:invalid_reported_cost"
COST_FN_ERROR_ATTR = "costbo:cost_fn_error"  # what cost_fn raised (the cost is then estimated)
SKIPPED_ATTR = "costbo:skipped_budget_exhausted"
RUN_ATTR = "costbo:run"  # the token of the process that started the trial (_ledger.runs)
# Study system attr keys: prefix + the token of each process that started trials.
RUNNER_ATTR_PREFIX = "costbo:runner:"
# With a stopping rule: the largest log(EI / c) over the space when the trial was proposed, the
# quantity the rule compares with log(value_per_cost) (a trial of the start-up design has none).
NEXT_RATE_ATTR = "costbo:best_log_rate"
# ... and the log EI of the point it was given (what the model expected of the trial).
CHOSEN_EI_ATTR = "costbo:chosen_log_ei"
# Under a hard budget: the chance, when the trial was proposed, that its cost overruns the
# budget left (what it spent of the study's overrun_risk).
OVERRUN_CHANCE_ATTR = "costbo:overrun_chance"

FINISHED_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


class CostSource(str, enum.Enum):
    """Where a trial's cost came from: the value of its system attr ``costbo:cost_source``.

    A ``str`` enum: a member equals the string stored (``CostSource.REPORTED == "reported"``),
    and ``.value`` is what is written.
    """

    WALL_CLOCK = "wall_clock"
    """Measured: the trial's wall-clock time less the sampler's own."""
    REPORTED = "reported"
    """Reported by the objective (``report_cost`` or the user attr)."""
    COST_FN = "cost_fn"
    """Given by the user's ``cost_fn``."""
    HEARTBEAT = "heartbeat"
    """A dead worker's trial charged to its last heartbeat by an earlier version (now its
    charge is derived from ``costbo:alive_seconds``, nothing written)."""
    ESTIMATED = "estimated"
    """No valid cost in the budget's unit (``cost_fn`` failed, or a trial of a study of
    reported costs reported none): the median cost so far (:func:`.costs.estimated_cost`)."""
