"""L-BFGS-B from many starts at once, and the local polish of given points.

:func:`lbfgsb_runs` runs R separate maximizations, each its own L-BFGS-B run, with the
evaluations of all runs that need one made in one batched call of the acquisition;
:func:`.optimize.maximize_acquisition` and :func:`.optimize.maximize_each` use it from their
screened starts, :func:`local_maximize` from given points within a small box around each. The
acquisitions are batched functions of the box points; a "row" function also gets which
acquisition (or which run) each row is under.

This module imports only numpy and scipy (its public ``scipy.optimize.fmin_l_bfgs_b``).
"""

from __future__ import annotations

from collections.abc import Callable
import contextlib
import functools
import math
import os
import threading

import numpy as np
from scipy.optimize import fmin_l_bfgs_b

from optuna_costbo._numerics.search_space import BoxCodec


__all__ = [
    "FunAndGrad",
    "RowFun",
    "RowFunAndGrad",
    "clean",
    "lbfgsb_minimize",
    "lbfgsb_runs",
    "local_maximize",
    "on_active",
]

FunAndGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``Z (m, D) -> (values (m,), grads (m, D))``."""
RowFunAndGrad = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``(Z (m, D), which (m,)) -> (values (m,), grads (m, D))``: row i under acquisition which[i]
(for :func:`lbfgsb_runs`, row i is a point of run which[i])."""
RowFun = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``(Z (m, D), which (m,)) -> values (m,)``."""

# scipy.optimize.minimize's L-BFGS-B settings, but for the iterations.
_LBFGS_MAX_ITER = 200
_LBFGS_MAX_FUN = 15_000  # scipy's default
_FTOL = 2.2204460492503131e-09
_GTOL = 1e-5
_EPS = np.finfo(float).eps  # scipy's factr is ftol / eps


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
    fun_and_grad: RowFunAndGrad,
    Z0: np.ndarray,  # (R, D) starts
    V0: np.ndarray,  # (R,) their values
    cols: np.ndarray,  # (k,) columns to optimize; the others stay fixed
    bounds: np.ndarray | None = None,  # (R, k, 2) per-start box; default [0, 1]
    max_evals: int | None = None,
    *,
    sequential: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """L-BFGS-B ascent over ``Z[:, cols]`` in [0, 1] from each of R starts, each run on its
    own.

    ``fun_and_grad(Z, runs)`` evaluates points Z (m, D), row i a point of run ``runs[i]`` (its
    acquisition, when the runs maximize different ones). Each run is ``scipy.optimize.minimize``
    (L-BFGS-B, its default settings) for at most 200 iterations and at most ``max_evals``
    evaluations (a run that asks for one more ends there; scipy's own ``maxfun`` is checked
    only between iterations, and a line search can take 20 more). Every evaluation round is
    one batched call for the runs that asked for one (:func:`_minimize_each`); ``sequential``
    evaluates each run's points alone, run after run (the same iterates).

    The best point of each run is tracked here rather than taken from scipy, so a run that
    wanders into non-finite values (reported to scipy as +inf) keeps its best finite point.

    Returns:
        The best evaluated points (R, D) and their values (R,).
    """
    R, k = len(Z0), len(cols)
    best_x = Z0[:, cols].copy()  # (R, k)
    best_v = np.asarray(V0, dtype=float).copy()  # (R,)
    if R == 0 or k == 0:
        return Z0.copy(), best_v
    if bounds is None:
        bounds = np.stack([np.zeros((R, k)), np.ones((R, k))], axis=-1)  # (R, k, 2)

    def evaluate(X: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """-values (m,) and -gradients (m, k) of runs' points X (m, k), for scipy; tracks
        the best points."""
        Z = Z0[runs]  # (m, D), a copy (integer indexing)
        Z[:, cols] = X
        v, g = fun_and_grad(Z, runs)
        v = clean(v)
        better = v > best_v[runs]
        if better.any():
            best_v[runs[better]] = v[better]
            best_x[runs[better]] = X[better]
        gc = np.asarray(g, dtype=float)[:, cols]  # (m, k)
        # As np.nan_to_num(gc, nan=0.0, posinf=0.0, neginf=0.0), without its per-call cost.
        gc = np.where(np.isfinite(gc), gc, 0.0)
        finite = np.isfinite(v)
        return np.where(finite, -v, math.inf), np.where(finite[:, None], -gc, 0.0)

    _minimize_each(evaluate, Z0[:, cols], bounds, max_evals or _LBFGS_MAX_FUN, sequential)
    out = Z0.copy()
    out[:, cols] = best_x
    return out, best_v


def lbfgsb_minimize(
    fun_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,  # (k,)
    bounds: np.ndarray,  # (k, 2)
    *,
    ftol: float = _FTOL,
    gtol: float = _GTOL,
    max_iter: int = _LBFGS_MAX_ITER,
    max_fun: int = _LBFGS_MAX_FUN,
) -> tuple[np.ndarray, float]:
    """``scipy.optimize.minimize(fun_and_grad, x0, jac=True, method="L-BFGS-B", bounds=bounds,
    options={"ftol": ftol, "gtol": gtol, "maxiter": max_iter, "maxfun": max_fun})``: its final
    point (k,) and value (by ``fmin_l_bfgs_b``, the same run without ``minimize``'s dispatch)."""
    x, f, _ = fmin_l_bfgs_b(
        fun_and_grad,
        x0,
        bounds=bounds,
        factr=ftol / _EPS,
        pgtol=gtol,
        maxiter=max_iter,
        maxfun=max_fun,
    )
    return np.asarray(x, dtype=float), float(f)


class _Stop(Exception):
    """Ends a run early: it used up its evaluations, or another run's evaluation failed."""


def _capped(
    fun_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]], max_fun: int
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """``fun_and_grad`` that ends its run (raises :class:`_Stop`) when asked for evaluation
    ``max_fun + 1``: the caller keeps the best point."""
    count = 0

    def capped(x: np.ndarray) -> tuple[float, np.ndarray]:  # (k,) -> value, grad (k,)
        nonlocal count
        if count >= max_fun:
            raise _Stop
        count += 1
        return fun_and_grad(x)

    return capped


def _minimize_each(
    evaluate: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    x0: np.ndarray,  # (R, k)
    bounds: np.ndarray,  # (R, k, 2)
    max_fun: int,
    sequential: bool,
) -> None:
    """One capped L-BFGS-B run from each row of ``x0``; ``evaluate(X (m, k), runs (m,))``
    gives the values (m,) and gradients (m, k) of points of the runs ``runs``.

    NOTE(optimize): scipy has no batched L-BFGS-B; Optuna's ``batched_lbfgsb`` suspends each
    run's ``fmin_l_bfgs_b`` in a greenlet (not a dependency here) at every evaluation. Threads
    play the greenlets' part: each run is ``fmin_l_bfgs_b`` in a thread of its own whose
    objective hands its point to this thread and waits; this thread evaluates the points of
    every run not yet ended in one call and resumes the runs one at a time, in run order. One
    thread runs at a time, so the result is deterministic and each run makes the iterates of
    ``minimize`` on its own (tested equal). Why not one problem in R * k variables:
    docs/design-decisions.md, "L-BFGS-B runs".
    """
    R = len(x0)
    if sequential or R == 1:

        def alone(r: int, x: np.ndarray) -> tuple[float, np.ndarray]:  # (k,) -> f, g (k,)
            f, g = evaluate(x[None, :], np.array([r]))  # (1,), (1, k)
            return float(f[0]), g[0]

        for r in range(R):
            with contextlib.suppress(_Stop):
                fun = _capped(functools.partial(alone, r), max_fun)
                lbfgsb_minimize(fun, x0[r], bounds[r], max_fun=max_fun)
        return
    # The first round evaluates every start; scipy ends a run at once where the start's
    # projected gradient is within gtol, and such runs start no thread.
    x0 = np.clip(x0, bounds[..., 0], bounds[..., 1])  # (R, k), as scipy starts
    f0, g0 = evaluate(x0, np.arange(R))  # (R,), (R, k)
    pg = np.where(g0 < 0, np.maximum(x0 - bounds[..., 1], g0), np.minimum(x0 - bounds[..., 0], g0))
    moving = np.flatnonzero(np.abs(pg).max(axis=1) > _GTOL).tolist()
    asked = list(x0)  # the point (k,) each run asked for last
    answer = [(float(f), g) for f, g in zip(f0, g0, strict=True)]  # value, gradient (k,)
    waiting = [False] * R  # run r blocked on go[r] (before it starts, or asking for a point)
    go = [threading.Lock() for _ in range(R)]
    back, stop = threading.Lock(), threading.Event()
    errors: list[BaseException] = []
    for lock in [*go, back]:
        lock.acquire()

    def run(r: int) -> None:
        first = True

        def handed(x: np.ndarray) -> tuple[float, np.ndarray]:  # (k,) -> value, grad (k,)
            nonlocal first
            if first:  # the start, evaluated in the first round
                first = False
                return answer[r]
            asked[r], waiting[r] = x, True
            back.release()
            go[r].acquire()
            if stop.is_set():
                raise _Stop
            return answer[r]

        go[r].acquire()
        try:
            if not stop.is_set():
                lbfgsb_minimize(_capped(handed, max_fun), x0[r], bounds[r], max_fun=max_fun)
        except _Stop:
            pass
        except BaseException as error:  # re-raised by the caller
            errors.append(error)
        finally:
            back.release()

    def resume(r: int) -> None:
        """Run r goes on (this thread waits) until it asks for a point or ends."""
        waiting[r] = False
        go[r].release()
        back.acquire()

    for r in moving:
        waiting[r] = True
        _POOL.start(functools.partial(run, r))
    try:
        for r in moving:
            resume(r)
        runs = [r for r in moving if waiting[r]]
        while runs:
            f, g = evaluate(np.stack([asked[r] for r in runs]), np.array(runs))  # (m,), (m, k)
            for i, r in enumerate(runs):
                answer[r] = (float(f[i]), g[i])
                resume(r)
            runs = [r for r in runs if waiting[r]]
    finally:  # on an error, the runs still waiting end
        stop.set()
        for r in range(R):
            if waiting[r]:
                resume(r)
    if errors:
        raise errors[0]


class _Threads:
    """Daemon threads kept for later runs (starting a thread costs more than most runs)."""

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)  # a forked child has none of them

    def reset(self) -> None:
        self.idle: list[Callable[[Callable[[], None]], None]] = []  # each one's "start this"
        self.lock = threading.Lock()

    def start(self, job: Callable[[], None]) -> None:
        """Run ``job`` (which must not raise) in an idle thread, or in a new one."""
        with self.lock:
            start = self.idle.pop() if self.idle else None
        (start or self._new())(job)

    def _new(self) -> Callable[[Callable[[], None]], None]:
        jobs: list[Callable[[], None]] = []
        ready = threading.Lock()
        ready.acquire()

        def start(job: Callable[[], None]) -> None:
            jobs.append(job)
            ready.release()

        def serve() -> None:
            while True:
                ready.acquire()
                jobs.pop()()
                with self.lock:
                    self.idle.append(start)

        threading.Thread(target=serve, name="costbo-lbfgsb", daemon=True).start()
        return start


_POOL = _Threads()


def local_maximize(
    fun_and_grad: RowFunAndGrad,
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
        fun_and_grad: ``(Z (m, D), runs (m,)) -> (values (m,), grads (m, D))``, row i a
            point of the polish of ``starts[runs[i]]`` (so each start may be polished under
            an acquisition of its own).
        codec: The search space codec.
        starts: Legal points to polish, shape (R, D).
        radius: Half-width of the trust region in the unit box, > 0.
        max_evals: Cap on the evaluations of ``fun_and_grad`` (default: scipy's).

    Returns:
        The polished legal points (R, D) and their values (R,).
    """
    rows_fg, _ = on_active(codec, fun_and_grad, lambda Z, runs: fun_and_grad(Z, runs)[0])
    starts = codec.project(np.atleast_2d(np.asarray(starts, dtype=float)))  # (R, D)
    every = np.arange(len(starts))  # (R,)
    values = clean(rows_fg(starts, every)[0])  # (R,)
    cols = codec.continuous_columns
    if len(cols) == 0 or len(starts) == 0:
        return starts, values
    low = np.clip(starts[:, cols] - radius, 0.0, 1.0)  # (R, k)
    high = np.clip(starts[:, cols] + radius, 0.0, 1.0)  # (R, k)
    Z, _ = lbfgsb_runs(rows_fg, starts, values, cols, np.stack([low, high], axis=-1), max_evals)
    Z = codec.project(Z)  # (R, D)
    new_values = clean(rows_fg(Z, every)[0])  # (R,)
    better = new_values > values
    return np.where(better[:, None], Z, starts), np.where(better, new_values, values)
