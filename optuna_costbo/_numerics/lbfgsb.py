"""L-BFGS-B from many starts at once, and the local polish of given points.

:func:`lbfgsb_runs` runs R separate maximizations as one L-BFGS-B problem (one batched call of
the acquisition per iteration); :func:`.optimize.maximize_acquisition` and
:func:`.optimize.maximize_each` use it from their screened starts, :func:`local_maximize`
from given points within a small box around each. The acquisitions are batched functions of
the box points; a "row" function also gets which acquisition each row is under.

This module imports only numpy and scipy.
"""

from __future__ import annotations

from collections.abc import Callable
import math

import numpy as np
from scipy.optimize import minimize

from optuna_costbo._numerics.search_space import BoxCodec


__all__ = [
    "FunAndGrad",
    "RowFun",
    "RowFunAndGrad",
    "clean",
    "lbfgsb_runs",
    "local_maximize",
    "on_active",
]

FunAndGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``Z (m, D) -> (values (m,), grads (m, D))``."""
RowFunAndGrad = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``(Z (m, D), which (m,)) -> (values (m,), grads (m, D))``: row i under acquisition which[i]."""
RowFun = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``(Z (m, D), which (m,)) -> values (m,)``."""

_LBFGS_MAX_ITER = 200
_LBFGS_MAX_FUN = 15_000  # scipy's default


def on_active(
    codec: BoxCodec, fun_and_grad: RowFunAndGrad, fun: RowFun
) -> tuple[RowFunAndGrad, RowFun]:
    """The acquisitions seen through the space's conditions: evaluated with inactive
    parameters at their fill, with zero gradient in their columns (L-BFGS-B then leaves them
    alone). Unchanged for a space without conditions."""
    if not codec.conditional:
        return fun_and_grad, fun

    def wrapped(Z: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Zd, off = codec.deactivate_with_mask(Z)  # (m, D) each
        values, grads = fun_and_grad(Zd, which)
        return values, np.where(off, 0.0, grads)

    def wrapped_fun(Z: np.ndarray, which: np.ndarray) -> np.ndarray:  # (m, D), (m,) -> (m,)
        return fun(codec.deactivate(Z), which)

    return wrapped, wrapped_fun


def clean(values: np.ndarray) -> np.ndarray:
    """Values as float (m,), with NaN and +-inf replaced by -inf (unusable)."""
    values = np.asarray(values, dtype=float).reshape(-1)
    return np.where(np.isfinite(values), values, -np.inf)


def lbfgsb_runs(
    fun_and_grad: FunAndGrad,
    Z0: np.ndarray,  # (R, D) starts
    V0: np.ndarray,  # (R,) their values
    cols: np.ndarray,  # (k,) columns to optimize; the others stay fixed
    bounds: np.ndarray | None = None,  # (R, k, 2) per-start box; default [0, 1]
    max_evals: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """L-BFGS-B ascent over ``Z[:, cols]`` in [0, 1] from R starts at once.

    NOTE(optimize): the R runs are one L-BFGS-B problem in R * k variables whose objective is
    the sum of the R values (the problem is separable, so its maximizer is the R maximizers),
    as BoTorch's ``gen_candidates_scipy`` does. One batched call per iteration instead of R:
    measured on log EI of 100-point GPs, D = 5, R = 5: 12 ms vs 22 ms per maximization for R
    separate runs, reaching the same optima (D = 10: 17 vs 33 ms).

    The best point of each run is tracked here rather than taken from scipy, so a run that
    wanders into non-finite values (reported to scipy as +inf) keeps its best finite point.

    Returns:
        The best evaluated points (R, D) and their values (R,).
    """
    R, k = len(Z0), len(cols)
    Z = Z0.copy()  # (R, D) work buffer
    best_x = Z0[:, cols].copy()  # (R, k)
    best_v = V0.copy()  # (R,)
    zero = np.zeros(R * k)

    def neg(x: np.ndarray) -> tuple[float, np.ndarray]:
        Xc = x.reshape(R, k)
        Z[:, cols] = Xc
        v, g = fun_and_grad(Z)
        v = clean(v)
        better = v > best_v
        if better.any():
            best_v[better] = v[better]
            best_x[better] = Xc[better]
        if not np.all(np.isfinite(v)):
            return math.inf, zero
        gc = np.asarray(g, dtype=float)[:, cols]  # (R, k)
        return -float(v.sum()), -np.nan_to_num(gc, nan=0.0, posinf=0.0, neginf=0.0).ravel()

    minimize(
        neg,
        Z0[:, cols].ravel(),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * (R * k) if bounds is None else bounds.reshape(R * k, 2),
        options={"maxiter": _LBFGS_MAX_ITER, "maxfun": max_evals or _LBFGS_MAX_FUN},
    )
    out = Z0.copy()
    out[:, cols] = best_x
    return out, best_v


def local_maximize(
    fun_and_grad: FunAndGrad,
    codec: BoxCodec,
    starts: np.ndarray,  # (R, D) legal points
    radius: float,
    max_evals: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Polish each start by L-BFGS-B within a box of half-width ``radius`` around it.

    Only the continuous columns move (integer, stepped and categorical columns stay as they
    are); results are projected to legal points and evaluated there. A start is kept where
    its polished point is not better.

    Args:
        fun_and_grad: ``Z (R, D) -> (values (R,), grads (R, D))``, only ever called on R
            points in the order of ``starts`` (so row i may be an acquisition of its own).
        codec: The search space codec.
        starts: Legal points to polish, shape (R, D).
        radius: Half-width of the trust region in the unit box, > 0.
        max_evals: Cap on the evaluations of ``fun_and_grad`` (default: scipy's).

    Returns:
        The polished legal points (R, D) and their values (R,).
    """
    rows_fg, _ = on_active(codec, lambda Z, _w: fun_and_grad(Z), lambda Z, _w: fun_and_grad(Z)[0])
    none = np.zeros(0, dtype=np.intp)

    def fg(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # (R, D) -> (R,), (R, D)
        return rows_fg(Z, none)

    starts = codec.project(np.atleast_2d(np.asarray(starts, dtype=float)))  # (R, D)
    values = clean(fg(starts)[0])  # (R,)
    cols = codec.continuous_columns
    if len(cols) == 0 or len(starts) == 0:
        return starts, values
    low = np.clip(starts[:, cols] - radius, 0.0, 1.0)  # (R, k)
    high = np.clip(starts[:, cols] + radius, 0.0, 1.0)  # (R, k)
    Z, _ = lbfgsb_runs(fg, starts, values, cols, np.stack([low, high], axis=-1), max_evals)
    Z = codec.project(Z)  # (R, D)
    new_values = clean(fg(Z)[0])  # (R,)
    better = new_values > values
    return np.where(better[:, None], Z, starts), np.where(better, new_values, values)
