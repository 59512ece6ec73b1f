"""Whether the sampler's own time counts against the budget (``charge_sampler_time``).

By default (``None``) it does when costs are measured wall-clock time: the budget is then the
wall clock of the whole study, the sampler's suggestions included. A study's costs are
measured or reported from its first priced trial on (:func:`.ledger.measured_costs`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence

from optuna.trial import FrozenTrial

from optuna_costbo._ledger.ledger import measured_costs


__all__ = ["SamplerTimeCharge", "charges_sampler_time"]


def charges_sampler_time(
    option: bool | None, has_cost_fn: bool, trials: Iterable[FrozenTrial]
) -> bool | None:
    """Whether the sampler's time counts against the budget; ``None`` while undecided.

    ``option`` True or False is the user's choice. ``None`` (the default) charges it when the
    cost is measured wall-clock: no ``cost_fn`` and the first finished trial with a recorded
    cost has its wall-clock time recorded (not a cost the objective reported). Undecided
    (``None``) before any trial has a recorded cost.
    """
    if option is not None:
        return option
    if has_cost_fn:
        return False
    return measured_costs(list(trials))


class SamplerTimeCharge:
    """The sampler's ``charge_sampler_time`` option, resolved per study and remembered.

    Args:
        option: The user's choice; ``None`` decides per study (:func:`charges_sampler_time`).
        has_cost_fn: Whether the sampler has a ``cost_fn`` (its costs are then never measured).
    """

    def __init__(self, option: bool | None, has_cost_fn: bool) -> None:
        self.option = option
        self._has_cost_fn = has_cost_fn
        self._known: dict[int, bool] = {}  # study id -> the resolved option

    def resolve(
        self, study_id: int, trials: Callable[[], Sequence[FrozenTrial]] | Sequence[FrozenTrial]
    ) -> bool:
        """Whether the sampler's time counts in study ``study_id``, given its trials (or a
        function that reads them, called only while the choice is open)."""
        if self.option is not None:
            return self.option
        known = self._known.get(study_id)
        if known is not None:
            return known
        charged = charges_sampler_time(
            None, self._has_cost_fn, trials() if callable(trials) else trials
        )
        if charged is None:
            # Nothing priced yet: nothing is spent either, except a running trial's time.
            return not self._has_cost_fn
        self._known[study_id] = charged
        return charged
