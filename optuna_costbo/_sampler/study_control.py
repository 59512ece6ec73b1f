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
    "check_single_objective",
    "end_if_spent",
    "note_budget_end",
    "stop",
]

_logger = get_logger(__name__)


def check_single_objective(study: optuna.Study) -> None:
    if len(study.directions) > 1:
        raise ValueError(
            "CostRolloutSampler supports single-objective studies only; this study has "
            f"{len(study.directions)} objectives."
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
