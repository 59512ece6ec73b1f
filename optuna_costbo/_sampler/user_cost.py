"""The user's ``cost_fn``, adapted: checked once, charged after a trial, seen by the models.

``cost_fn(params)`` or ``cost_fn(params, previous_params)`` (a cost that depends on where you
come from). :class:`UserCost` says which form it has, charges a finished trial, and turns the
function into a :class:`~optuna_costbo._numerics.cost_model.KnownCost` on box points for the
acquisitions (decoding box points to parameters through the search-space bridge).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import inspect
from typing import Any

import numpy as np

from optuna_costbo._ledger.costs import checked_costs
from optuna_costbo._ledger.record import CostFnError
from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._sampler.space import SpaceBridge


__all__ = ["UserCost"]

Params = Mapping[str, Any]


class UserCost:
    """A user's cost function with its arity checked.

    Args:
        cost_fn: ``cost_fn(params) -> float`` or ``cost_fn(params, previous_params) -> float``.

    Raises:
        ValueError: If ``cost_fn`` is not callable or takes neither form.
    """

    def __init__(self, cost_fn: Callable[..., float]) -> None:
        self.fn = cost_fn
        self.arity = _arity(cost_fn)

    @property
    def moving(self) -> bool:
        """Whether the cost depends on the previous trial's parameters."""
        return self.arity == 2

    def charge(self, params: Params, previous: Params | None, what: str) -> float:
        """The cost of one evaluation at ``params`` (coming from ``previous``), checked."""
        args = (dict(params),) if not self.moving else (dict(params), previous)
        return float(checked_costs([self.fn(*args)], what)[0])

    def on_box(self, bridge: SpaceBridge, previous: Params | None) -> KnownCost:
        """The cost as a function of box points, for the acquisitions; what the function
        raises there is re-raised as a :class:`CostFnError` that names it."""
        cost_fn = _named(self.fn)
        if not self.moving:

            def single(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
                params = bridge.decode_many(Z)
                return checked_costs([cost_fn(p) for p in params], "these parameters")

            return KnownCost(fn=single)

        def first(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
            params = bridge.decode_many(Z)
            return checked_costs([cost_fn(p, previous) for p in params], "these parameters")

        def pair(Z_from: np.ndarray, Z_to: np.ndarray) -> np.ndarray:  # (k, D), (m, D) -> (k, m)
            sources, targets = bridge.decode_many(Z_from), bridge.decode_many(Z_to)
            rows = [[cost_fn(q, p) for q in targets] for p in sources]
            return checked_costs(rows, "these parameters").reshape(len(sources), len(targets))

        origin = None
        if previous is not None and bridge.holds_params(previous):
            origin = bridge.encode_params([previous])[0]  # (D,)
        return KnownCost(fn=first, pair_fn=pair, origin=origin)


def _named(cost_fn: Callable[..., float]) -> Callable[..., float]:
    def call(*args: Any) -> float:
        try:
            return cost_fn(*args)
        except Exception as exc:
            raise CostFnError(
                f"cost_fn failed on candidate parameters {args[0]!r}: {exc!r}"
            ) from exc

    return call


def _arity(cost_fn: Callable[..., float]) -> int:
    """1 for ``cost_fn(params)``, 2 for ``cost_fn(params, previous_params)``."""
    if not callable(cost_fn):
        raise ValueError(f"cost_fn must be callable or None, got {cost_fn!r}")
    try:
        params = inspect.signature(cost_fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(positional) == 2:
        return 2
    if len(positional) == 1:
        return 1
    raise ValueError(
        "cost_fn must take (params) or (params, previous_params); got a function with "
        f"{len(positional)} required positional arguments"
    )
