"""The study a sampler runs in: its objectives, stopping its optimize loop, the budget's end."""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial

from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._logging import get_logger
from optuna_costbo._optuna_compat import in_optimize_loop
from optuna_costbo._optuna_compat import root_study


_logger = get_logger(__name__)


MAX_OBJECTIVES = 4  # the hypervolume's box decomposition grows fast with more


def check_objectives(study: optuna.Study, stop_rule: bool) -> None:
    """Raise ValueError unless ``study`` has 1 to :data:`MAX_OBJECTIVES` objectives (one with
    the stopping rule)."""
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
    """Say once per study (``noted``) that the budget left buys no more trials."""
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
    """Whether the budget is spent and ``trial`` must be cut short (the loop is stopped); under
    ask-and-tell a warning, and the trial runs."""
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
