"""CostBudgetPruner: prune a reporting trial that would overrun the study's cost budget."""

from __future__ import annotations

from collections.abc import Sequence
import math

import numpy as np
import optuna
from optuna.pruners import BasePruner
from optuna.pruners import MedianPruner
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger import BUDGET_ATTR
from optuna_costbo._ledger import COST_ATTR
from optuna_costbo._ledger import RISK_ATTR
from optuna_costbo._ledger import charge_and_sum
from optuna_costbo._ledger import charged_cost
from optuna_costbo._ledger import charges_sampler_time
from optuna_costbo._ledger import storage_trials
from optuna_costbo._ledger import validate_budget
from optuna_costbo._numerics.checks import is_real
from optuna_costbo._numerics.curves import step_rank_correlation


__all__ = ["CostBudgetPruner"]

INFORMATIVE_RHO = 0.5
"""A step informs when the completed trials' values there rank them by their final values
with at least this rank correlation."""
INFORMATIVE_MIN_COMPLETE = 5
"""Completed trials that must have reported at or before a step for it to be judged (in the
better half of them, or else over all of them)."""


class CostBudgetPruner(BasePruner):
    """Prune a reporting trial once the study's spent cost plus its own cost exceeds the budget.

    Under the sampler's hard budget (``overrun_risk``), it prunes one step earlier: once the
    next step, at the mean cost of the steps so far, would cross the budget.

    The trial's own cost so far is the user attr ``cost_attr`` if the objective keeps it
    up to date (for costs that are not seconds), else its wall-clock time since it started,
    less the sampler's time. The check runs whenever the trial calls ``trial.should_prune()``.

    Args:
        budget: The budget in cost units. ``None`` reads it from the study, where
            :class:`~optuna_costbo.CostRolloutSampler` stores it. A pruner given here, as in
            ``CostBudgetPruner(MedianPruner())``, is taken as ``wrapped_pruner`` (the budget
            is then read from the study).
        wrapped_pruner: Another pruner consulted first (for example a median pruner);
            the trial is pruned if either says so (a wrapped ``MedianPruner`` only at
            informative steps, see ``informative_steps``). Optuna defines no pruning for a
            study of several objectives; there only the budget check runs.
        cost_attr: Name of the trial user attr that carries reported costs.
        informative_steps: Obey the wrapped pruner only at steps that inform: where the
            values at the step (the latest report at or before it) of the better half of
            the study's COMPLETE trials (the best n // 2 of n by final value, the trials a
            pruner must not lose) rank them by their final values with a rank correlation
            of at least 0.5, over at least 5 such trials. With fewer (below 10 completed
            trials) the same is read over all completed trials, and with fewer than 5 of
            those the wrapped pruner decides alone. ``None``
            (default): on for a wrapped ``MedianPruner``, off for any other pruner (it pays
            for Median only; docs/design-decisions.md, "Pruned trials").

    Raises:
        ValueError: ``budget`` is neither a positive finite number, ``None`` nor a pruner, a
            pruner is given both as ``budget`` and as ``wrapped_pruner``, or
            ``informative_steps`` is not ``None``, ``True`` or ``False``.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo import CostBudgetPruner, CostRolloutSampler

            study = optuna.create_study(
                sampler=CostRolloutSampler(budget=60.0),
                pruner=CostBudgetPruner(optuna.pruners.MedianPruner()),  # budget: the study's
            )
    """

    def __init__(
        self,
        budget: float | BasePruner | None = None,
        *,
        wrapped_pruner: BasePruner | None = None,
        cost_attr: str = COST_ATTR,
        informative_steps: bool | None = None,
    ) -> None:
        # NOTE: ``CostBudgetPruner(MedianPruner())`` is how wrapping pruners are written
        # elsewhere (PatientPruner(MedianPruner(), ...)); it means the wrapped pruner.
        if isinstance(budget, BasePruner):
            if wrapped_pruner is not None:
                raise ValueError(
                    "CostBudgetPruner got two pruners: one as its first argument (budget) and "
                    "one as wrapped_pruner; pass a budget (a positive finite number or None) "
                    "first, or only one pruner"
                )
            budget, wrapped_pruner = None, budget
        elif budget is not None and (not is_real(budget)):
            raise ValueError(
                "budget must be a positive finite number, None (the study's budget) or a "
                f"pruner to wrap (also wrapped_pruner=...), got {budget!r}"
            )
        self._budget = None if budget is None else validate_budget(budget)
        if informative_steps is not None and not isinstance(informative_steps, bool):
            raise ValueError(
                f"informative_steps must be None, True or False, got {informative_steps!r}"
            )
        self._wrapped = wrapped_pruner
        self._cost_attr = cost_attr
        self._informative = (
            isinstance(wrapped_pruner, MedianPruner)
            if informative_steps is None
            else bool(informative_steps)
        )

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        trials: list[FrozenTrial] | None = None  # one read of the storage for both checks
        # NOTE: Optuna defines no pruning for several objectives (``trial.should_prune``
        # raises there); called anyway, only the budget check runs.
        several = len(study.directions) > 1
        if self._wrapped is not None and not several and self._wrapped.prune(study, trial):
            if not self._informative:
                return True
            trials = storage_trials(study)
            if _step_informs(study, trial, trials):
                return True
        attrs = study._storage.get_study_user_attrs(study._study_id)
        stored = attrs.get(BUDGET_ATTR)
        budget = self._budget
        if budget is None and isinstance(stored, (int, float)):
            budget = float(stored)
        if budget is None:
            return False
        trials = storage_trials(study) if trials is None else trials
        charged = charges_sampler_time(trials)
        ledger = charge_and_sum(study, trials, budget, self._cost_attr, charged)
        own = charged_cost(trial, self._cost_attr, charged)
        if attrs.get(RISK_ATTR) is not None:
            # A hard budget (the sampler's overrun_risk): stop before the next step would
            # cross it, that step taken to cost what the steps so far cost on average.
            own += own / max(len(trial.intermediate_values), 1)
        return ledger.spent + own > budget


def _value_at(intermediate: dict[int, float], step: int) -> float:
    """The latest report at or before ``step`` (nan if none)."""
    steps = [s for s in intermediate if s <= step]
    return float(intermediate[max(steps)]) if steps else math.nan


def _completed_pairs(trials: Sequence[FrozenTrial], step: int) -> tuple[np.ndarray, np.ndarray]:
    """The COMPLETE ``trials``' values at ``step`` (their latest report at or before it) and
    their final values, where both are finite, (n,) and (n,)."""
    early, final = [], []
    for t in trials:
        if t.state != TrialState.COMPLETE or t.value is None:
            continue
        value = _value_at(t.intermediate_values, step)
        if math.isfinite(value) and math.isfinite(t.value):
            early.append(value)
            final.append(float(t.value))
    return np.array(early), np.array(final)


def _pairs_correlation(
    early: np.ndarray, final: np.ndarray, better_half_of: StudyDirection | None
) -> tuple[float, int]:
    """:func:`.step_rank_correlation` of ``early`` (n,) and ``final`` (n,), over the better
    half by ``final`` (the best ``n // 2``) when ``better_half_of`` (a direction) is given."""
    if better_half_of is not None:
        sign = 1.0 if better_half_of == StudyDirection.MINIMIZE else -1.0
        keep = np.argsort(sign * final, kind="stable")[: len(final) // 2]  # (n // 2,)
        early, final = early[keep], final[keep]
    return step_rank_correlation(early, final), len(early)


def _step_informs(
    study: optuna.Study, trial: FrozenTrial, trials: Sequence[FrozenTrial] | None = None
) -> bool:
    """Whether the step ``trial`` reached ranks the study's COMPLETE trials by their final
    values (see ``informative_steps``); True without the evidence to say otherwise.
    ``trials``: the study's trials, when the caller has just read them."""
    step = trial.last_step
    if step is None:
        return True
    trials = storage_trials(study) if trials is None else trials
    # NOTE: the better half first: over all completed trials an early step can rank well only
    # because they span bad and good configurations (lcbench's epoch 3: rho 0.73-0.92 over
    # random configurations, -0.01 to 0.69 within their best 10 %), while the pruner must not
    # stop the trials that would end among the good ones (docs/design-decisions.md).
    early, final = _completed_pairs(trials, step)  # (n,), (n,): read once for both checks
    rho, n = _pairs_correlation(early, final, better_half_of=study.direction)
    if n >= INFORMATIVE_MIN_COMPLETE and not math.isnan(rho):
        return rho >= INFORMATIVE_RHO
    rho, n = _pairs_correlation(early, final, better_half_of=None)
    return n < INFORMATIVE_MIN_COMPLETE or math.isnan(rho) or rho >= INFORMATIVE_RHO
