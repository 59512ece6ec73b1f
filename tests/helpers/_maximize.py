"""Maximizations through :func:`optuna_costbo._numerics.optimize.maximize` as tests ask them:
one acquisition of the points alone, or an acquisition context's exponents."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import numpy as np

from optuna_costbo._numerics.optimize import Search
from optuna_costbo._numerics.optimize import maximize


def maximize_one(
    f: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    codec: Any,
    rng: np.random.Generator,
    *,
    fun: Callable[[np.ndarray], np.ndarray] | None = None,
    screened: tuple[np.ndarray, np.ndarray] | None = None,  # points (M, D), values (M,)
    n_candidates: int | None = None,
    n_restarts: int = 5,
    **options: Any,
) -> tuple[np.ndarray, float]:
    """The best legal point (D,) of ``f(Z) -> (values (m,), grads (m, D))`` and its value."""
    search = Search(
        lambda Z, _: f(Z),
        None if fun is None else (lambda Z, _: fun(Z)),
        codec,
        screened=None if screened is None else (screened[0], np.asarray(screened[1])[:, None]),
        **options,
    )
    Z, values = maximize(search, rng, n_candidates=n_candidates, n_restarts=n_restarts)
    return Z[0], float(values[0])


def maximize_exponents(
    ctx: Any, exponents: Sequence[float], pool: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """``ctx``'s maximizers (K, D) and values (K,) of ``log EI - e log c`` for each exponent."""
    out: tuple[np.ndarray, np.ndarray] = ctx.record(
        exponents, *maximize(ctx.search(exponents, pool), ctx.rng)
    )
    return out
