"""Stopping when the next trial is not worth its cost, and the record of why a study stopped.

The rule (``value_per_cost``, objective units per cost unit, the user's exchange rate): stop
when no point's expected improvement is worth its predicted cost, ``max_x EI(x) / c(x) <
value_per_cost``, equivalently ``max_x EI(x) - value_per_cost * c(x) < 0``. This is the
stopping rule that pairs with EI per unit cost in Xie, Cai et al. ("Cost-aware Stopping for
Bayesian Optimization", ICML 2026), the one-step version of the Pandora's-box view (Xie et al.,
NeurIPS 2024): a box is worth opening while its expected gain exceeds its price.

The rate is discounted by the study's own record of how far the model's expectations were met
(:func:`calibration`): ``k x max_x EI(x) / c(x) < value_per_cost``, with ``k <= 1`` the
improvements the model's trials achieved over the EI it expected of their points, shrunk
towards 1 by one pseudo-trial that met the mean expectation. EI is an expectation under the
model; where the model has promised more than its trials delivered, its next promise is
worth less. NOTE: why this discount, docs/design-decisions.md, "The stopping rule's discount".

Why a study stopped is stored as its user attr ``cost_stop_reason`` (optuna-dashboard shows it)
and logged once.
"""

from __future__ import annotations

from collections.abc import Sequence
import math

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.keys import CHOSEN_EI_ATTR
from optuna_costbo._ledger.keys import NEXT_RATE_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import STOP_REASON_ATTR
from optuna_costbo._logging import get_logger
from optuna_costbo._optuna_compat import in_optimize_loop
from optuna_costbo._sampler.snapshot import minimize_sign
from optuna_costbo._sampler.study_control import stop


__all__ = [
    "StopRule",
    "calibration",
    "end_study",
    "record_stop",
    "running_calibrations",
    "stop_reason",
]

PSEUDO_TRIALS = 1.0
"""Weight of the calibration's prior: trials that met the model's mean expectation."""

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


def running_calibrations(
    values: Sequence[float],
    log_eis: Sequence[float | None],
    weight: float = PSEUDO_TRIALS,
    ceiling: float = 1.0,
) -> list[float]:
    """The calibration ``k`` before each trial of a study, in trial order (1.0 where the
    trial has no record of what the model expected of it).

    Before trial ``i``: G, the improvements the earlier trials with a record achieved on the
    best value before each; P, the EI expected of them. With ``p`` the mean of those
    expectations and of trial ``i``'s own, ``k = min(ceiling, (G + w p) / (P + w p))``: 1
    before any record, smaller as promises go unmet (and, with a ceiling above 1, larger as
    they are exceeded). Shared by the sampler (:func:`calibration`, the trial being proposed
    last) and the replays of recorded runs.

    Args:
        values: The trials' values to minimize (NaN: no value, as a pruned or failed trial).
        log_eis: The log EI the model expected of each trial's point (None: no record).
        weight: ``w``, the pseudo-trials of the prior.
        ceiling: The largest ``k``; the rule uses 1 (promises are only ever discounted).
    """
    out = []
    best = math.inf
    gained = expected = 0.0
    count = 0
    for value, log_ei in zip(values, log_eis, strict=True):
        if log_ei is None:
            out.append(1.0)
        else:
            prior = weight * (expected + math.exp(log_ei)) / (count + 1)
            out.append(min(ceiling, (gained + prior) / (expected + prior)))
        if not math.isfinite(value):
            continue
        if log_ei is not None:
            gained += max(0.0, best - value) if math.isfinite(best) else 0.0
            expected += math.exp(log_ei)
            count += 1
        best = min(best, value)
    return out


def calibration(
    trials: Sequence[FrozenTrial], sign: float, next_log_ei: float, weight: float = PSEUDO_TRIALS
) -> float:
    """How far the model's expectations were met so far, in (0, 1]: :func:`running_calibrations`
    of the study's COMPLETE trials that recorded what the model expected of them (the log EI of
    their point, ``costbo:chosen_log_ei``), for the trial being proposed, whose point the model
    expects ``next_log_ei`` of.

    Args:
        trials: The study's trials.
        sign: 1 for a minimize study, -1 for maximize (values are minimized inside).
        next_log_ei: The log EI the model expects of the trial being proposed.
        weight: ``w``, the pseudo-trials of the prior.
    """
    values, log_eis = [], []
    for t in sorted(trials, key=lambda t: t.number):
        if t.state != TrialState.COMPLETE or t.value is None or not math.isfinite(t.value):
            continue
        values.append(sign * float(t.value))
        recorded = t.system_attrs.get(CHOSEN_EI_ATTR)
        log_eis.append(float(recorded) if recorded is not None else None)
    return running_calibrations([*values, math.nan], [*log_eis, next_log_ei], weight)[-1]


class StopRule:
    """The sampler's ``value_per_cost`` rule.

    Args:
        value_per_cost: Objective units one cost unit is worth, a positive finite number.
    """

    def __init__(self, value_per_cost: float) -> None:
        self.value_per_cost = float(value_per_cost)

    def reason(self, best_log_rate: float | None, calibration: float = 1.0) -> str | None:
        """Why to stop, given the largest log(EI / c) (None: not known) and the calibration
        ``k`` of :func:`calibration`, or None to go on."""
        if best_log_rate is None:
            return None
        discounted = best_log_rate + math.log(max(calibration, 1e-300))
        if discounted >= math.log(self.value_per_cost):
            return None
        rate = math.exp(discounted) if discounted > -700 else 0.0
        met = (
            ""
            if calibration >= 1.0
            else (
                f" (the model's expected improvements discounted by {calibration:.3g}, the share "
                "its trials achieved)"
            )
        )
        return (
            f"the next trial is not worth its cost: the largest expected improvement per unit "
            f"of predicted cost is {rate:.4g}{met}, below value_per_cost = "
            f"{self.value_per_cost:.4g}"
        )

    def apply(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        best_log_rate: float | None,
        chosen_log_ei: float | None = None,
        trials: Sequence[FrozenTrial] = (),
    ) -> None:
        """Stop the study if the rule says so: the reason is recorded, the optimize loop is
        stopped and ``trial`` is pruned before its objective runs (it costs nothing). Under
        ask-and-tell there is no loop: the reason is recorded and logged, and the trial runs
        (check ``sampler.stop_reason(study)`` before ``ask``).

        The rate is recorded on the trial (system attr ``costbo:best_log_rate``), and so is the
        log EI of the trial's own point (``costbo:chosen_log_ei``): set against the values the
        trials reached, how far the model's expectations were met (:func:`calibration` of
        ``trials``, the read of the study the proposal was made from). From both, where the
        same study at a higher ``value_per_cost`` stops: at the first trial whose discounted
        rate is below it."""
        if best_log_rate is not None and math.isfinite(best_log_rate):
            study._storage.set_trial_system_attr(trial._trial_id, NEXT_RATE_ATTR, best_log_rate)
        k = 1.0
        if chosen_log_ei is not None and math.isfinite(chosen_log_ei):
            study._storage.set_trial_system_attr(trial._trial_id, CHOSEN_EI_ATTR, chosen_log_ei)
            k = calibration(trials, minimize_sign(study), chosen_log_ei)
        reason = self.reason(best_log_rate, k)
        if reason is not None:
            end_study(study, trial, reason)


def end_study(study: optuna.Study, trial: FrozenTrial, reason: str) -> None:
    """Stop the study for ``reason``: the reason is recorded, the optimize loop is stopped and
    ``trial`` is pruned before its objective runs (it costs nothing). Under ask-and-tell there
    is no loop: the reason is recorded and logged, and the trial runs (check
    ``sampler.stop_reason(study)`` before ``ask``)."""
    record_stop(study, reason)
    if in_optimize_loop(study):
        stop(study)
        study._storage.set_trial_system_attr(trial._trial_id, SKIPPED_ATTR, True)
        raise optuna.TrialPruned(f"the study stops: {reason}")
