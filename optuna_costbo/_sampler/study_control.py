"""Small facts about the study a sampler runs in: one objective, the optimize loop, stopping,
and telling the user once that the budget buys no more trials."""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._logging import get_logger
from optuna_costbo._optuna_compat import in_optimize_loop
from optuna_costbo._optuna_compat import root_study


__all__ = [
    "MAX_OBJECTIVES",
    "check_objectives",
    "end_if_spent",
    "note_budget_end",
    "stop",
]

_logger = get_logger(__name__)


MAX_OBJECTIVES = 4
"""The most objectives a study may have: the hypervolume's box decomposition grows fast with
more (:mod:`optuna_costbo._numerics.pareto`)."""


def check_objectives(study: optuna.Study, stop_rule: bool) -> None:
    """Raise ``ValueError`` unless ``study`` has 1 to :data:`MAX_OBJECTIVES` objectives, and
    one only when the stopping rule (``value_per_cost``, an exchange rate of one objective's
    units) is on."""
    n = len(study.directions)
    if n > MAX_OBJECTIVES:
        raise ValueError(
            f"CostRolloutSampler supports studies with 1 to {MAX_OBJECTIVES} objectives; this "
            f"study has {n}."
        )
    if n > 1 and stop_rule:
        raise ValueError(
            "value_per_cost (the stopping rule) is for single-objective studies: it prices "
            f"one objective's units, and this study has {n} objectives. Give budget alone."
        )


def stop(study: optuna.Study) -> None:
    """Stop the optimize loop if there is one (``study.stop`` raises under ask-and-tell)."""
    if not in_optimize_loop(study):
        return
    root = root_study(study)
    try:
        root.stop()
    except RuntimeError:
        pass


def note_budget_end(study: optuna.Study, ledger: Ledger, noted: set[int]) -> None:
    """Say once per study (``noted``: the study ids told) that the budget left buys no more
    trials at their predicted costs."""
    if study._study_id in noted:
        return
    noted.add(study._study_id)
    _logger.info(
        f"Study {study.study_name!r}: the remaining budget, "
        f"{max(ledger.remaining, 0.0):.6g} of {ledger.budget:.6g}, buys no more trials at "
        "their predicted costs; trials go on, at the cheapest promising points, until the "
        "budget is spent. Stop the study if the budget is final."
    )


def end_if_spent(study: optuna.Study, ledger: Ledger, trial: FrozenTrial) -> bool:
    """Before ``trial``: whether the budget is spent and the trial must be cut short.

    In an optimize loop, another worker (or an earlier session) spent the budget: the loop is
    stopped and the trial is to be pruned at its first suggestion, before the objective's
    work (``True``). Under ask-and-tell there is no loop: a warning, and the trial runs.
    """
    if not ledger.exhausted:
        return False
    if in_optimize_loop(study):
        stop(study)
        return True
    _logger.warning(
        f"The cost budget of study {study.study_name!r} is spent "
        f"({ledger.spent:.6g} of {ledger.budget:.6g}); trial {trial.number} "
        "was asked for anyway (ask-and-tell: check sampler.remaining_budget(study))."
    )
    return False
