"""A pruner that stops a trial only at steps whose reports rank the study's finished trials
(issue 24; an experiment, registered in ``benchmarks/results/pruning/informative/PREREG.md``).

Optuna's pruners decide at every reported step, also at steps that say nothing about where a
trial will end: on YAHPO Gym's lcbench, the value at epoch 1 has a rank correlation of -0.04
to 0.30 with the final value over random configurations (``benchmarks/curve_crossing.py``).
:class:`InformativeSteps` wraps a pruner and lets its "prune" through only where the study's
own COMPLETE trials show the step to be informative: Spearman's rank correlation
(``scipy.stats.spearmanr``) between their values at the step (their latest report at or
before it) and their final values is at least 0.5 (fixed before any run, not tuned). With
fewer than 5 such trials there is no evidence, and the wrapped pruner decides alone. Adopted
for Median, the check is now the package's (``optuna_costbo.pruner``); this wrapper calls it,
so the ``-informative`` runs repeat as they were made.

Hyperband's brackets record a trial's rung before deciding (Optuna's successive halving sets
the rung's system attr, then answers), so a vetoed trial goes on as a promoted one would.
"""

from __future__ import annotations

from typing import Any

from optuna.pruners import BasePruner

from benchmarks.harness.package_probes import completed_rank_correlation
from benchmarks.harness.package_probes import step_informs


__all__ = ["InformativeSteps", "step_rank_correlation"]


def step_rank_correlation(trials: list[Any], step: int) -> tuple[float, int]:
    """Spearman's rho between the COMPLETE ``trials``' values at ``step`` and their final
    values, and how many trials it is over (nan below 3 trials or without spread): the
    package's check, which this experiment's runs first measured."""
    rho, n = completed_rank_correlation(trials, step)
    return float(rho), int(n)


class InformativeSteps(BasePruner):
    """Wrap ``pruner``: its "prune" stands only at steps whose reports rank the study's
    COMPLETE trials by their final values (rank correlation >= 0.5 over at least 5 of them;
    the package's ``CostBudgetPruner(..., informative_steps=True)`` check); elsewhere the
    trial goes on. ``vetoes`` counts the prunes it overruled."""

    def __init__(self, pruner: Any) -> None:
        self.pruner = pruner
        self.vetoes = 0

    def prune(self, study: Any, trial: Any) -> bool:
        if not self.pruner.prune(study, trial):
            return False
        if step_informs(study, trial):
            return True
        self.vetoes += 1
        return False
