"""The ledger's stored format: attribute keys and cost sources (renaming one orphans old runs)."""

from __future__ import annotations

import enum

from optuna.trial import TrialState


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
RUNNER_ATTR_PREFIX = "costbo:runner:"  # study system attr key: prefix + a process's token
# With a stopping rule: the largest log(EI / c) when the trial was proposed, and the log EI of
# the point it was given (a trial of the start-up design has neither).
NEXT_RATE_ATTR = "costbo:best_log_rate"
CHOSEN_EI_ATTR = "costbo:chosen_log_ei"
# Under a hard budget: the chance, when proposed, that the trial's cost overruns the budget left.
OVERRUN_CHANCE_ATTR = "costbo:overrun_chance"

FINISHED_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


class CostSource(str, enum.Enum):
    """Where a trial's cost came from (system attr ``costbo:cost_source``); equals its string."""

    WALL_CLOCK = "wall_clock"  # the trial's wall-clock time less the sampler's own
    REPORTED = "reported"  # by the objective (report_cost or the user attr)
    COST_FN = "cost_fn"  # by the user's cost_fn
    ESTIMATED = "estimated"  # no valid cost in the user's unit: the median so far
    # Earlier versions also wrote "heartbeat" (a dead worker's trial): read as not measured.
