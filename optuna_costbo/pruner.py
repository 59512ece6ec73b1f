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

from optuna_costbo._ledger.costs import charged_cost
from optuna_costbo._ledger.costs import validate_budget
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.keys import RISK_ATTR
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import storage_trials
from optuna_costbo._ledger.units import charges_sampler_time
from optuna_costbo._numerics.checks import is_real
from optuna_costbo._numerics.curves import step_rank_correlation


__all__ = ["CostBudgetPruner"]

# A step informs when it ranks the completed trials by final value with at least this rank
# correlation, over at least this many of them (the better half, or else all).
INFORMATIVE_RHO = 0.5
INFORMATIVE_MIN_COMPLETE = 5


class CostBudgetPruner(BasePruner):
    """Prune a reporting trial once the study's spent cost plus its own cost exceeds the budget.

    Under a hard budget (``overrun_risk``) it prunes once the next step, at the mean step cost,
    would cross it. The trial's own cost is its ``cost_attr`` user attr if the objective keeps
    it up to date, else its wall-clock time less the sampler's.

    Args:
        budget: The budget in cost units; ``None`` reads the study's (stored by
            :class:`~optuna_costbo.CostRolloutSampler`). A pruner given here, as in
            ``CostBudgetPruner(MedianPruner())``, is taken as ``wrapped_pruner``.
        wrapped_pruner: Another pruner consulted first; the trial is pruned if either says
            so. Not consulted in a multi-objective study (Optuna defines no pruning there).
        cost_attr: The trial user attr that carries reported costs.
        informative_steps: Obey the wrapped pruner only at steps whose values rank the better
            half of the COMPLETE trials by final value (rank correlation >= 0.5 over >= 5 of
            them, else over all of them; with fewer the wrapped pruner decides alone).
            ``None``: on for ``MedianPruner`` only (docs/design-decisions.md, "Pruned trials").

    Raises:
        ValueError: ``budget`` is not a positive finite number, ``None`` or a pruner, two
            pruners are given, or ``informative_steps`` is not ``None`` or a bool.

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
        # NOTE: a pruner first wraps it, as in Optuna's PatientPruner(MedianPruner(), ...).
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
        # Optuna defines no pruning for several objectives: only the budget check runs there.
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
            # a hard budget: stop before the next step, at the mean step cost, would cross it
            own += own / max(len(trial.intermediate_values), 1)
        return ledger.spent + own > budget


def _completed_pairs(trials: Sequence[FrozenTrial], step: int) -> tuple[np.ndarray, np.ndarray]:
    """The COMPLETE ``trials``' values at ``step`` and final values, both finite: (n,), (n,)."""
    early, final = [], []
    for t in trials:
        if t.state != TrialState.COMPLETE or t.value is None:
            continue
        steps = [s for s in t.intermediate_values if s <= step]  # its latest report by step
        value = float(t.intermediate_values[max(steps)]) if steps else math.nan
        if math.isfinite(value) and math.isfinite(t.value):
            early.append(value)
            final.append(float(t.value))
    return np.array(early), np.array(final)


def _pairs_correlation(
    early: np.ndarray, final: np.ndarray, better_half_of: StudyDirection | None
) -> tuple[float, int]:
    """Rank correlation of ``early`` and ``final`` (n,) and its count; over the best ``n // 2``
    by ``final`` when ``better_half_of`` (a direction) is given."""
    if better_half_of is not None:
        sign = 1.0 if better_half_of == StudyDirection.MINIMIZE else -1.0
        keep = np.argsort(sign * final, kind="stable")[: len(final) // 2]  # (n // 2,)
        early, final = early[keep], final[keep]
    return step_rank_correlation(early, final), len(early)


def _step_informs(study: optuna.Study, trial: FrozenTrial, trials: Sequence[FrozenTrial]) -> bool:
    """Whether ``trial``'s step ranks the COMPLETE ``trials`` (``informative_steps``); True
    without evidence."""
    step = trial.last_step
    if step is None:
        return True
    # NOTE: the better half first, the trials a pruner must not lose (docs/design-decisions.md).
    early, final = _completed_pairs(trials, step)  # (n,), (n,): read once for both checks
    rho, n = _pairs_correlation(early, final, better_half_of=study.direction)
    if n >= INFORMATIVE_MIN_COMPLETE and not math.isnan(rho):
        return rho >= INFORMATIVE_RHO
    rho, n = _pairs_correlation(early, final, better_half_of=None)
    return n < INFORMATIVE_MIN_COMPLETE or math.isnan(rho) or rho >= INFORMATIVE_RHO
