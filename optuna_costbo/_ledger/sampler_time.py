"""Whether the sampler's own time counts against the budget: the one rule, used everywhere.

Exactly when the costs are measured wall-clock time (reported and ``cost_fn`` costs are in the
user's units); before the first priced trial, unless there is a ``cost_fn``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

from optuna.trial import FrozenTrial

from optuna_costbo._ledger.ledger import measured_costs


def charges_sampler_time(trials: Sequence[FrozenTrial]) -> bool:
    """Whether the sampler's time counts against the budget of the study of ``trials``."""
    measured = measured_costs(trials)
    return True if measured is None else measured


class SamplerTimeCharge:
    """:func:`charges_sampler_time` per study, remembered once a priced trial decides it."""

    def __init__(self, has_cost_fn: bool) -> None:
        self._has_cost_fn = has_cost_fn
        self._known: dict[int, bool] = {}  # study id -> the decided rule

    def resolve(
        self, study_id: int, trials: Callable[[], Sequence[FrozenTrial]] | Sequence[FrozenTrial]
    ) -> bool:
        """The rule in study ``study_id``; ``trials`` may be a function, called only if needed."""
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
