"""A pruner that stops a trial only at steps whose reports rank the study's finished trials
(issue 24; an experiment, registered in ``benchmarks/results/pruning/informative/PREREG.md``).

Optuna's pruners decide at every reported step, also at steps that say nothing about where a
trial will end: on YAHPO Gym's lcbench, the value at epoch 1 has a rank correlation of -0.04
to 0.30 with the final value over random configurations (``results/pruning/curve_crossing.md``).
:class:`InformativeSteps` wraps a pruner and lets its "prune" through only where the study's
own COMPLETE trials show the step to be informative: Spearman's rank correlation
(``scipy.stats.spearmanr``) between their values at the step (their latest report at or
before it) and their final values is at least 0.5 (fixed before any run, not tuned). With
fewer than 5 such trials there is no evidence, and the wrapped pruner decides alone. Adopted
for Median in the fifteenth session, then refined: the package now reads it over the better
half of the finished trials (below). This wrapper keeps the check over all of them
(:func:`all_trials_inform`, the package's ``completed_rank_correlation`` over every COMPLETE
trial), so the ``-informative`` runs repeat as they were made.

:class:`BetterHalfSteps` (the ``-betterhalf`` variants, registered in
``benchmarks/results/pruning/better-half/PREREG.md``) reads the correlation over the better half
of the finished trials instead, the trials a pruner must not lose. Adopted for Median: what
``CostBudgetPruner`` does since 2026-11-29, so a plain ``+median`` run now makes the same trials
as a ``+median-betterhalf`` one.

Hyperband's brackets record a trial's rung before deciding (Optuna's successive halving sets
the rung's system attr, then answers), so a vetoed trial goes on as a promoted one would.
"""

from __future__ import annotations

import math
from typing import Any

from optuna.pruners import BasePruner
from optuna.study import StudyDirection

from benchmarks.harness.package_probes import completed_rank_correlation


__all__ = [
    "BetterHalfSteps",
    "InformativeSteps",
    "better_half_rank_correlation",
    "step_rank_correlation",
]


def step_rank_correlation(trials: list[Any], step: int) -> tuple[float, int]:
    """Spearman's rho between the COMPLETE ``trials``' values at ``step`` and their final
    values, and how many trials it is over (nan below 3 trials or without spread): the
    package's check, which this experiment's runs first measured."""
    rho, n = completed_rank_correlation(trials, step)
    return float(rho), int(n)


class _Veto(BasePruner):
    """Wrap ``pruner``: its "prune" stands only where :meth:`informs` says the trial's step
    informs; ``vetoes`` counts the prunes overruled."""

    def __init__(self, pruner: Any) -> None:
        self.pruner = pruner
        self.vetoes = 0

    def informs(self, study: Any, trial: Any) -> bool:
        raise NotImplementedError

    def prune(self, study: Any, trial: Any) -> bool:
        if not self.pruner.prune(study, trial):
            return False
        if self.informs(study, trial):
            return True
        self.vetoes += 1
        return False


class InformativeSteps(_Veto):
    """Wrap ``pruner``: its "prune" stands only at steps whose reports rank the study's
    COMPLETE trials by their final values (rank correlation >= 0.5 over at least 5 of them;
    the package's ``CostBudgetPruner(..., informative_steps=True)`` check before the better
    half); elsewhere the trial goes on. ``vetoes`` counts the prunes it overruled."""

    def informs(self, study: Any, trial: Any) -> bool:
        return all_trials_inform(study.get_trials(deepcopy=False), trial.last_step)


def all_trials_inform(trials: list[Any], step: int | None) -> bool:
    """The check over all COMPLETE trials (rho >= 0.5 over >= 5 of them; True with fewer or
    without a step): what ``CostBudgetPruner`` did for Median from the fifteenth session, and
    what it still does while the better half holds fewer than 5 trials."""
    if step is None:
        return True
    rho, n = completed_rank_correlation(trials, step)
    return n < BETTER_HALF_MIN or math.isnan(rho) or rho >= 0.5


BETTER_HALF_MIN = 5
"""Trials the better half needs before its correlation is read (fixed before any run)."""


def better_half_rank_correlation(
    trials: list[Any], step: int, direction: StudyDirection = StudyDirection.MINIMIZE
) -> tuple[float, int]:
    """Spearman's rho between the values at ``step`` (the latest report at or before it) and
    the final values of the better half of the COMPLETE ``trials`` by final value (the best
    ``n // 2`` of ``n``; ``direction`` says which end is better), and how many trials it is
    over (nan below 3 or without spread): the package's ``completed_rank_correlation``."""
    rho, n = completed_rank_correlation(trials, step, better_half_of=direction)
    return float(rho), int(n)


class BetterHalfSteps(_Veto):
    """Wrap ``pruner`` (registered in ``benchmarks/results/pruning/better-half/PREREG.md``):
    its "prune" stands only at steps that rank the better half of the study's COMPLETE trials
    by their final values (rank correlation >= 0.5 over at least :data:`BETTER_HALF_MIN` of
    them); with fewer, the check over all COMPLETE trials decides, as
    :class:`InformativeSteps`. Adopted: the package's check for Median, which this wrapper
    repeats for any pruner.

    Why: over the study's finished trials an early step can rank well only because they span
    bad and good configurations (on lcbench, epoch 3 has rho 0.73-0.92 over random
    configurations and -0.01 to 0.69 within their best 10 %, ``curve_crossing.md``), while a
    pruner must not stop the trials that would end among the good ones. ``vetoes`` counts
    the prunes it overruled."""

    def informs(self, study: Any, trial: Any) -> bool:
        step = trial.last_step
        if step is None:
            return True
        trials = study.get_trials(deepcopy=False)
        rho, n = better_half_rank_correlation(trials, step, study.direction)
        if n >= BETTER_HALF_MIN and not math.isnan(rho):
            return bool(rho >= 0.5)
        return all_trials_inform(trials, step)
