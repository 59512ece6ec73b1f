"""Stopping when the next trial is not worth its cost, and the record of why a study stopped.

The rule (``value_per_cost``, objective units per cost unit, the user's exchange rate): stop
when no point's expected improvement is worth its predicted cost, ``max_x EI(x) / c(x) <
value_per_cost``, equivalently ``max_x EI(x) - value_per_cost * c(x) < 0``. This is the
stopping rule that pairs with EI per unit cost in Xie, Cai et al. ("Cost-aware Stopping for
Bayesian Optimization", ICML 2026), the one-step version of the Pandora's-box view (Xie et al.,
NeurIPS 2024): a box is worth opening while its expected gain exceeds its price.

Why a study stopped is stored as its user attr ``cost_stop_reason`` (optuna-dashboard shows it)
and logged once.
"""

from __future__ import annotations

import math

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.keys import CHOSEN_EI_ATTR
from optuna_costbo._ledger.keys import NEXT_RATE_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import STOP_REASON_ATTR
from optuna_costbo._logging import get_logger
from optuna_costbo._optuna_compat import in_optimize_loop
from optuna_costbo._sampler.study_control import stop


__all__ = ["StopRule", "record_stop", "stop_reason"]

_logger = get_logger(__name__)


def stop_reason(study: optuna.Study) -> str | None:
    """Why the study stopped, as recorded (None while it has not)."""
    value = study._storage.get_study_user_attrs(study._study_id).get(STOP_REASON_ATTR)
    return str(value) if value is not None else None


def record_stop(study: optuna.Study, reason: str) -> None:
    """Store ``reason`` as why the study stopped (once: a later reason does not replace it)
    and log it."""
    if stop_reason(study) is not None:
        return
    study._storage.set_study_user_attr(study._study_id, STOP_REASON_ATTR, reason)
    _logger.info(f"Study {study.study_name!r} stops: {reason}.")


class StopRule:
    """The sampler's ``value_per_cost`` rule.

    Args:
        value_per_cost: Objective units one cost unit is worth, a positive finite number.
    """

    def __init__(self, value_per_cost: float) -> None:
        self.value_per_cost = float(value_per_cost)

    def reason(self, best_log_rate: float | None) -> str | None:
        """Why to stop, given the largest log(EI / c) (None: not known), or None to go on."""
        if best_log_rate is None or best_log_rate >= math.log(self.value_per_cost):
            return None
        rate = math.exp(best_log_rate) if best_log_rate > -700 else 0.0
        return (
            f"the next trial is not worth its cost: the largest expected improvement per unit "
            f"of predicted cost is {rate:.4g}, below value_per_cost = {self.value_per_cost:.4g}"
        )

    def apply(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        best_log_rate: float | None,
        chosen_log_ei: float | None = None,
    ) -> None:
        """Stop the study if the rule says so: the reason is recorded, the optimize loop is
        stopped and ``trial`` is pruned before its objective runs (it costs nothing). Under
        ask-and-tell there is no loop: the reason is recorded and logged, and the trial runs
        (check ``sampler.stop_reason(study)`` before ``ask``).

        The rate is recorded on the trial (system attr ``costbo:best_log_rate``): the record of
        how the rule's quantity moved through the study, and what a study stopped at a higher
        ``value_per_cost`` would have been (it stops at the first trial below it). So is the
        log EI of the trial's own point (``costbo:chosen_log_ei``): set against the values
        the trials reached, how far the model's expectations were met."""
        if best_log_rate is not None and math.isfinite(best_log_rate):
            study._storage.set_trial_system_attr(trial._trial_id, NEXT_RATE_ATTR, best_log_rate)
        if chosen_log_ei is not None and math.isfinite(chosen_log_ei):
            study._storage.set_trial_system_attr(trial._trial_id, CHOSEN_EI_ATTR, chosen_log_ei)
        reason = self.reason(best_log_rate)
        if reason is None:
            return
        record_stop(study, reason)
        if in_optimize_loop(study):
            stop(study)
            study._storage.set_trial_system_attr(trial._trial_id, SKIPPED_ATTR, True)
            raise optuna.TrialPruned(f"the study stops: {reason}")
