"""Optuna distributions <-> the codec of :mod:`search_space`, conditional parameters included."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import math
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.trial import FrozenTrial

from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import Condition
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.param_specs import Param
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._optuna_compat import distribution_contains


@dataclass(frozen=True)
class Activity:
    """Conditional parameters: ``rules`` name -> (categorical parent, the choice indices that
    ask it); ``optional``: those whose parent is unknown."""

    rules: Mapping[str, tuple[str, frozenset[int]]] = field(default_factory=dict)
    optional: frozenset[str] = frozenset()

    @property
    def key(self) -> tuple[Any, ...]:
        return (
            tuple(sorted((k, p, tuple(sorted(c))) for k, (p, c) in self.rules.items())),
            tuple(sorted(self.optional)),
        )


def check_distinct_choices(name: str, distribution: BaseDistribution) -> None:
    """Raise ValueError if two choices of a categorical compare equal (``1`` and ``True``):
    Optuna stores a choice as the first equal one, so they cannot be told apart."""
    if not isinstance(distribution, CategoricalDistribution):
        return
    choices = distribution.choices
    for i, a in enumerate(choices):
        for b in choices[i + 1 :]:
            try:
                same = bool(a == b)
            except Exception:
                same = False
            if same:
                raise ValueError(
                    f"categorical parameter {name!r} has choices that compare equal: {a!r} and "
                    f"{b!r}. Optuna stores a choice by the first choice equal to it, so they "
                    "cannot be told apart; use choices that differ (for example strings)."
                )


def _to_param(distribution: BaseDistribution) -> Param:
    if isinstance(distribution, CategoricalDistribution):
        return CategoricalParam(n_choices=len(distribution.choices))
    if isinstance(distribution, (FloatDistribution, IntDistribution)):
        step = None if distribution.step is None else float(distribution.step)
        low, high = float(distribution.low), float(distribution.high)
        integer = isinstance(distribution, IntDistribution)
        return NumericParam(low, high, log=distribution.log, step=step, integer=integer)
    raise ValueError(
        f"unsupported distribution {type(distribution).__name__}; allowed: FloatDistribution, "
        "IntDistribution, CategoricalDistribution"
    )


def space_key(search_space: Mapping[str, BaseDistribution]) -> tuple[Any, ...]:
    """What identifies a space, for state kept per space: its names and distributions."""
    return tuple((n, repr(d)) for n, d in search_space.items())


class SpaceBridge:
    """An Optuna search space (name -> distribution, in a fixed order), its codec, its rows."""

    def __init__(
        self, search_space: Mapping[str, BaseDistribution], activity: Activity | None = None
    ) -> None:
        self.names = list(search_space)
        self.distributions = [search_space[name] for name in self.names]
        for name, dist in zip(self.names, self.distributions, strict=True):
            check_distinct_choices(name, dist)
        index = {name: i for i, name in enumerate(self.names)}
        activity = activity or Activity()
        conditions = {
            index[child]: Condition(index[parent], choices)
            for child, (parent, choices) in activity.rules.items()
            if child in index and parent in index
        }
        optional = {index[n] for n in activity.optional if n in index}
        optional |= {
            index[child]
            for child, (parent, _) in activity.rules.items()
            if child in index and parent not in index
        }
        self.conditional = frozenset(conditions) | frozenset(optional)
        self.codec = BoxCodec(
            [_to_param(d) for d in self.distributions], conditions=conditions, optional=optional
        )
        key = space_key(search_space)
        self.key = (*key, ("activity", activity.key)) if self.conditional else key
        self._rows: dict[int, tuple[Any, np.ndarray | None]] = {}  # trial id -> params, row/None

    def held_finished(self, done: Sequence[FrozenTrial]) -> tuple[list[FrozenTrial], np.ndarray]:
        """The finished trials ``done`` the space holds and their rows (f, D), kept per trial."""
        # NOTE: finished trials' params never change; compared anyway: ids coincide across storages
        rows = [self._rows.get(t._trial_id, (None, None)) for t in done]
        new = [i for i, (t, r) in enumerate(zip(done, rows, strict=True)) if r[0] != t.params]
        ok = self.holds_many([done[i].params for i in new])  # (len(new),)
        X = iter(self.encode_params([done[i].params for i, o in zip(new, ok, strict=True) if o]))
        for i, o in zip(new, ok, strict=True):
            rows[i] = (done[i].params, next(X) if o else None)
        self._rows = {t._trial_id: r for t, r in zip(done, rows, strict=True)}  # done's only
        held = [t for t, r in zip(done, rows, strict=True) if r[1] is not None]
        X_held = np.array([r[1] for r in rows if r[1] is not None], dtype=float)
        return held, X_held.reshape(len(held), self.codec.dim)  # (f, D)

    def encode_params(self, params: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Encode parameter dicts: (n, D)."""
        values = np.array(
            [
                [
                    d.to_internal_repr(p[name]) if name in p else math.nan
                    for name, d in zip(self.names, self.distributions, strict=True)
                ]
                for p in params
            ],
            dtype=float,
        ).reshape(len(params), len(self.names))  # (n, P); NaN: a conditional not asked
        return self.codec.encode(values)

    def decode(self, z: np.ndarray) -> dict[str, Any]:
        """One box point z (D,) to a parameter dict."""
        return self.decode_many(z.reshape(1, -1))[0]

    def decode_many(self, Z: np.ndarray) -> list[dict[str, Any]]:
        """Box points Z (m, D) to parameter dicts with Python-native values."""
        return [self._to_params(row) for row in self.codec.decode(Z)]  # rows (P,)

    def _to_params(self, internal: np.ndarray) -> dict[str, Any]:
        params: dict[str, Any] = {}
        for name, dist, value in zip(self.names, self.distributions, internal, strict=True):
            if math.isnan(value):  # switched off by the point's own choices: not asked
                continue
            if isinstance(dist, CategoricalDistribution):
                params[name] = dist.to_external_repr(round(float(value)))
            elif isinstance(dist, IntDistribution):
                params[name] = round(float(value))
            else:
                params[name] = float(value)
        return params

    def holds_params(self, params: Mapping[str, Any]) -> bool:
        """Whether ``params`` has, within its distribution, each parameter its choices ask for."""
        return bool(self.holds_many([params])[0])

    def holds_many(self, params: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """:meth:`holds_params` of each dict, (n,) bool; the choices' check in one batch."""
        ok = np.array([self._each_within(p) for p in params], dtype=bool)  # (n,)
        if self.codec.conditions and ok.any():
            rows = np.flatnonzero(ok)
            kept = [params[int(r)] for r in rows]
            z = self.encode_params(kept)  # (m, D), what they have
            given = np.array([[name in p for name in self.names] for p in kept])  # (m, P)
            asked = ~np.isnan(self.codec.decode(z))  # (m, P): what their choices switch on
            conditional = np.zeros(len(self.names), dtype=bool)
            conditional[list(self.codec.conditions)] = True
            ok[rows[np.any(asked & ~given & conditional, axis=1)]] = False
        return ok

    def _each_within(self, params: Mapping[str, Any]) -> bool:
        """Every parameter present (but conditional ones) and within its distribution."""
        for i, (name, dist) in enumerate(zip(self.names, self.distributions, strict=True)):
            if name not in params:
                if i not in self.conditional:
                    return False
                continue
            try:
                if not distribution_contains(dist, dist.to_internal_repr(params[name])):
                    return False
            except (ValueError, TypeError):
                return False
        return True
