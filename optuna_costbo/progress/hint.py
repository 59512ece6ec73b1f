"""The pointer to :class:`~optuna_costbo.progress.CostProgressBar`, logged once per study."""

from __future__ import annotations

import math
import threading
from typing import Any
import weakref

import optuna

from optuna_costbo._ledger.finished import per_storage
from optuna_costbo._logging import get_logger


__all__ = ["hint_cost_progress_bar"]

_logger = get_logger(__name__)

PROGRESS_EXTRA_HINT = 'pip install "optuna-costbo[progress]"'

PROGRESS_BAR_HINT = (
    "Study {study!r} runs until its cost budget of {budget:.4g} is spent: for a progress bar "
    "over the budget, pass callbacks=[CostProgressBar()] to study.optimize "
    f"(from optuna_costbo.progress import CostProgressBar; {PROGRESS_EXTRA_HINT})."
)

OPEN_BARS: weakref.WeakSet[Any] = weakref.WeakSet()  # this process's open CostProgressBars

_lock = threading.Lock()


def hint_cost_progress_bar(study: optuna.Study, budget: float) -> bool:
    """Log :data:`PROGRESS_BAR_HINT` at INFO once per study and storage object, if ``budget``
    is finite and no bar is open; return whether this call logged it."""
    if not math.isfinite(budget):
        return False  # no budget: a stopping rule ends the study, there is no total to fill
    seen = per_storage(study._storage)
    if seen is None:  # a storage that cannot be weakly referenced: no place to remember it
        return False
    with _lock:
        if seen.get(("progress_hint", study._study_id)):
            return False
        seen[("progress_hint", study._study_id)] = True
        if OPEN_BARS:
            return False  # the user has a bar already
    _logger.info(PROGRESS_BAR_HINT.format(study=study.study_name, budget=budget))
    return True
