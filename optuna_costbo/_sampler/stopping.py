"""The ``value_per_cost`` rule, discounted by how far the model's promises were met, and the
record of why a study stopped (docs/design-decisions.md, "The stopping rule's discount")."""

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
from optuna_costbo._sampler.snapshot import minimize_signs
from optuna_costbo._sampler.study_control import stop


PSEUDO_TRIALS = 1.0  # weight of the calibration's prior: trials that met the mean expectation

_logger = get_logger(__name__)


def stop_reason(study: optuna.Study) -> str | None:
    """Why the study stopped, as recorded (None while it has not)."""
    value = study._storage.get_study_user_attrs(study._study_id).get(STOP_REASON_ATTR)
    return str(value) if value is not None else None


def record_stop(study: optuna.Study, reason: str) -> None:
    """Store and log ``reason`` as why the study stopped (the first reason stays)."""
    if stop_reason(study) is not None:
        return
    study._storage.set_study_user_attr(study._study_id, STOP_REASON_ATTR, reason)
    _logger.info(f"Study {study.study_name!r} stops: {reason}.")


def running_calibrations(
    values: Sequence[float], log_eis: Sequence[float | None], weight: float = PSEUDO_TRIALS
) -> list[float]:
    """``k = min(1, (G + w p) / (P + w p))`` before each trial: G the improvements the earlier
    recorded trials achieved, P the EI expected of them, p its mean (1.0 without a record)."""
    out = []
    best = math.inf
    gained = expected = 0.0
    count = 0
    for value, log_ei in zip(values, log_eis, strict=True):
        if log_ei is None:
            out.append(1.0)
        else:
            prior = weight * (expected + math.exp(log_ei)) / (count + 1)
            out.append(min(1.0, (gained + prior) / (expected + prior)))
        if not math.isfinite(value):
            continue
        if log_ei is not None:
            gained += max(0.0, best - value) if math.isfinite(best) else 0.0
            expected += math.exp(log_ei)
            count += 1
        best = min(best, value)
    return out


def calibration(trials: Sequence[FrozenTrial], sign: float, next_log_ei: float) -> float:
    """:func:`running_calibrations` of the COMPLETE trials' recorded log EI
    (``costbo:chosen_log_ei``), for a trial expected ``next_log_ei``; ``sign`` -1: maximize."""
    values, log_eis = [], []
    for t in sorted(trials, key=lambda t: t.number):
        if t.state != TrialState.COMPLETE or t.value is None or not math.isfinite(t.value):
            continue
        values.append(sign * float(t.value))
        recorded = t.system_attrs.get(CHOSEN_EI_ATTR)
        log_eis.append(float(recorded) if recorded is not None else None)
    return running_calibrations([*values, math.nan], [*log_eis, next_log_ei])[-1]


class StopRule:
    """The sampler's ``value_per_cost`` rule (objective units one cost unit is worth)."""

    def __init__(self, value_per_cost: float) -> None:
        self.value_per_cost = float(value_per_cost)

    def reason(self, best_log_rate: float | None, calibration: float = 1.0) -> str | None:
        """Why to stop at the largest log(EI / c) discounted by ``calibration``; None: go on."""
        if best_log_rate is None:
            return None
        discounted = best_log_rate + math.log(max(calibration, 1e-300))
        if discounted >= math.log(self.value_per_cost):
            return None
        rate = math.exp(discounted) if discounted > -700 else 0.0
        met = ""
        if calibration < 1.0:
            met = (
                f" (the model's expected improvements discounted by {calibration:.3g}, the share "
                "its trials achieved)"
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
        """Record the rate and the chosen point's log EI on ``trial`` (replays read them), and
        :func:`end_study` if the calibrated rate is below ``value_per_cost``."""
        if best_log_rate is not None and math.isfinite(best_log_rate):
            study._storage.set_trial_system_attr(trial._trial_id, NEXT_RATE_ATTR, best_log_rate)
        k = 1.0
        if chosen_log_ei is not None and math.isfinite(chosen_log_ei):
            study._storage.set_trial_system_attr(trial._trial_id, CHOSEN_EI_ATTR, chosen_log_ei)
            k = calibration(trials, float(minimize_signs(study.directions)[0]), chosen_log_ei)
        reason = self.reason(best_log_rate, k)
        if reason is not None:
            end_study(study, trial, reason)


def end_study(study: optuna.Study, trial: FrozenTrial, reason: str) -> None:
    """Record ``reason``; in an optimize loop, stop it and prune ``trial`` before its objective
    runs (under ask-and-tell the trial runs: check ``sampler.stop_reason(study)``)."""
    record_stop(study, reason)
    if in_optimize_loop(study):
        stop(study)
        study._storage.set_trial_system_attr(trial._trial_id, SKIPPED_ATTR, True)
        raise optuna.TrialPruned(f"the study stops: {reason}")
