"""A pruner that stops a trial only at steps whose reports rank the study's finished trials
(issue 24; an experiment, registered in ``benchmarks/results/pruning/informative/PREREG.md``).

Optuna's pruners decide at every reported step, also at steps that say nothing about where a
trial will end: on YAHPO Gym's lcbench, the value at epoch 1 has a rank correlation of -0.04
to 0.30 with the final value over random configurations (``benchmarks/curve_crossing.py``).
:class:`InformativeSteps` wraps a pruner and lets its "prune" through only where the study's
own COMPLETE trials show the step to be informative: Spearman's rank correlation
(``scipy.stats.spearmanr``) between their values at the step (their latest report at or
before it) and their final values is at least ``threshold`` (0.5, fixed before any run, not
tuned). With fewer than ``min_complete`` such trials there is no evidence, and the wrapped
pruner decides alone.

Hyperband's brackets record a trial's rung before deciding (Optuna's successive halving sets
the rung's system attr, then answers), so a vetoed trial goes on as a promoted one would.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from optuna.pruners import BasePruner
from scipy import stats as sstats


__all__ = ["InformativeSteps", "step_rank_correlation"]

THRESHOLD = 0.5
MIN_COMPLETE = 5


def _value_at(intermediate: dict[int, float], step: int) -> float:
    """The latest report at or before ``step`` (nan if none)."""
    steps = [s for s in intermediate if s <= step]
    return float(intermediate[max(steps)]) if steps else math.nan


def step_rank_correlation(trials: list[Any], step: int) -> tuple[float, int]:
    """Spearman's rho between the COMPLETE ``trials``' values at ``step`` and their final
    values, and how many trials it is over (nan below 3 trials or without spread)."""
    early, final = [], []
    for t in trials:
        v = _value_at(t.intermediate_values, step)
        if t.value is not None and math.isfinite(v) and math.isfinite(t.value):
            early.append(v)
            final.append(float(t.value))
    if len(early) < 3 or np.ptp(early) == 0 or np.ptp(final) == 0:
        return math.nan, len(early)
    return float(sstats.spearmanr(early, final).statistic), len(early)


class InformativeSteps(BasePruner):
    """Wrap ``pruner``: its "prune" stands only at steps whose reports rank the study's
    COMPLETE trials by their final values (rank correlation >= ``threshold`` over at least
    ``min_complete`` of them); elsewhere the trial goes on."""

    def __init__(
        self, pruner: Any, threshold: float = THRESHOLD, min_complete: int = MIN_COMPLETE
    ) -> None:
        self.pruner = pruner
        self.threshold = float(threshold)
        self.min_complete = int(min_complete)
        self.vetoes = 0

    def prune(self, study: Any, trial: Any) -> bool:
        if not self.pruner.prune(study, trial):
            return False
        step = trial.last_step
        if step is None:
            return True
        from optuna.trial import TrialState

        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        rho, n = step_rank_correlation(complete, step)
        if n < self.min_complete or math.isnan(rho):
            return True
        if rho >= self.threshold:
            return True
        self.vetoes += 1
        return False
