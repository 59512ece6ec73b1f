"""Whether the sampler's own time counts against the budget: the one rule, used everywhere.

It counts exactly when the costs are the measured wall clock (no ``cost_fn``, and the objective
reports no cost): the budget is then the wall clock of the whole study, suggestions included.
A cost the objective reports, or one a ``cost_fn`` gives, is in the user's units, to which the
sampler's seconds do not belong. A study's costs are measured or not from its first priced
trial on (:func:`.ledger.measured_costs`); before that, they are taken as measured unless there
is a ``cost_fn``. The sampler, :class:`~optuna_costbo.CostBudgetPruner` and
:class:`~optuna_costbo.progress.CostProgressBar` all read the rule here.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

from optuna.trial import FrozenTrial

from optuna_costbo._ledger.ledger import measured_costs


__all__ = ["SamplerTimeCharge", "charges_sampler_time"]


def charges_sampler_time(trials: Sequence[FrozenTrial], has_cost_fn: bool = False) -> bool:
    """Whether the sampler's time counts against the budget of the study of ``trials``."""
    if has_cost_fn:
        return False
    measured = measured_costs(trials)
    return True if measured is None else measured


class SamplerTimeCharge:
    """:func:`charges_sampler_time` per study, remembered once a priced trial decides it.

    Args:
        has_cost_fn: Whether the sampler has a ``cost_fn`` (its costs are then never measured).
    """

    def __init__(self, has_cost_fn: bool) -> None:
        self._has_cost_fn = has_cost_fn
        self._known: dict[int, bool] = {}  # study id -> the decided rule

    def resolve(
        self, study_id: int, trials: Callable[[], Sequence[FrozenTrial]] | Sequence[FrozenTrial]
    ) -> bool:
        """Whether the sampler's time counts in study ``study_id``, given its trials (or a
        function that reads them, called only while no priced trial has decided it)."""
        known = self._known.get(study_id)
        if known is not None:
            return known
        if self._has_cost_fn:
            return False
        read = trials() if callable(trials) else trials
        measured = measured_costs(read)
        if measured is None:
            return True  # nothing priced yet: nothing is spent either but a running trial's time
        self._known[study_id] = measured
        return measured
