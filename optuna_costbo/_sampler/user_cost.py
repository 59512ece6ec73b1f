"""The user's ``cost_fn(params[, previous_params])``: arity checked, charged, on box points."""

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


Params = Mapping[str, Any]


class UserCost:
    """A user's cost function with its arity checked (ValueError if it takes neither form)."""

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
        """The cost on box points, for the acquisitions (what it raises: :class:`CostFnError`)."""
        cost_fn = _named(self.fn)
        extra = (previous,) if self.moving else ()

        def first(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
            params = bridge.decode_many(Z)
            return checked_costs([cost_fn(p, *extra) for p in params], "these parameters")

        if not self.moving:
            return KnownCost(fn=first)

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
