"""L-BFGS-B from many starts at once, and the local polish of given points.

:func:`lbfgsb_runs` runs R separate maximizations, each its own L-BFGS-B run, with the
evaluations of all runs that need one made in one batched call of the acquisition;
:func:`.optimize.maximize_acquisition` and :func:`.optimize.maximize_each` use it from their
screened starts, :func:`local_maximize` from given points within a small box around each. The
acquisitions are batched functions of the box points; a "row" function also gets which
acquisition (or which run) each row is under.

This module imports only numpy and scipy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
import math

import numpy as np
from scipy.optimize import minimize

from optuna_costbo._numerics.search_space import BoxCodec


try:  # NOTE: see _batched_runs: scipy's reverse-communication core (private, scipy >= 1.15).
    from scipy.optimize import _lbfgsb

    _SETULB = getattr(_lbfgsb, "setulb", None)
except ImportError:  # pragma: no cover - scipy without the module
    _SETULB = None
_SETULB_SIGNATURE = (
    "setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls,ln_task)"
)


__all__ = [
    "FunAndGrad",
    "RowFun",
    "RowFunAndGrad",
    "batched",
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
_MAXCOR = 10
_FTOL = 2.2204460492503131e-09
_GTOL = 1e-5
_MAXLS = 20
# setulb's task codes (scipy.optimize._lbfgsb_py.status_messages).
_FG, _NEW_X, _STOP = 3, 1, 5
_EPS = np.finfo(float).eps


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


def batched() -> bool:
    """Whether the runs share batched evaluations (scipy's reverse-communication L-BFGS-B
    core has the interface this module drives); otherwise they run one after another."""
    return _SETULB is not None and (_SETULB.__doc__ or "").startswith(_SETULB_SIGNATURE)


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
    acquisition, when the runs maximize different ones). Each run is scipy's L-BFGS-B with
    ``scipy.optimize.minimize``'s settings, for at most 200 iterations and at most
    ``max_evals`` evaluations (a run that asks for one more ends there; scipy's own ``maxfun``
    is checked only between iterations, and a line search can take 20 more).

    NOTE(optimize): the runs are R separate L-BFGS-B problems, each converging on its own, and
    every evaluation round is one batched call for the runs that asked for one, as Optuna's
    GPSampler batches its per-start runs. scipy has no batched interface; Optuna's runs scipy
    per start in greenlets (not a dependency here). This module drives scipy's own
    reverse-communication core, ``scipy.optimize._lbfgsb.setulb`` (the loop of scipy's
    ``_minimize_lbfgsb`` over R states): the same iterates as R calls of ``minimize``, which
    are the fallback (``sequential``, or a scipy whose core has another interface; tested
    equal). Why not one problem in R * k variables: docs/design-decisions.md, "L-BFGS-B runs".

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
    low = np.zeros((R, k)) if bounds is None else np.asarray(bounds[..., 0], dtype=float)
    high = np.ones((R, k)) if bounds is None else np.asarray(bounds[..., 1], dtype=float)
    x0 = np.clip(Z0[:, cols], low, high)  # (R, k)
    max_fun = max_evals or _LBFGS_MAX_FUN

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

    if sequential or not batched():
        for r in range(R):
            one, count = np.array([r]), [0]

            def neg(
                x: np.ndarray, one: np.ndarray = one, count: list[int] = count
            ) -> tuple[float, np.ndarray]:
                if count[0] >= max_fun:
                    raise _Exhausted
                count[0] += 1
                f, g = evaluate(x[None, :], one)
                return float(f[0]), g[0]

            try:
                _scipy_minimize(neg, x0[r], low[r], high[r], max_fun=max_fun)
            except _Exhausted:
                pass
    else:
        _batched_runs(evaluate, x0, low, high, max_fun)
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
    sequential: bool = False,
) -> tuple[np.ndarray, float]:
    """``scipy.optimize.minimize(fun_and_grad, x0, jac=True, method="L-BFGS-B", bounds=bounds,
    options={"ftol": ftol, "gtol": gtol, "maxiter": max_iter})``: its final point (k,) and
    value, the same iterates (tested equal); ``sequential`` calls ``minimize`` itself.

    NOTE(optimize): one run of scipy's core as :func:`lbfgsb_runs` drives it, without
    ``minimize``'s per-call set-up and per-evaluation bookkeeping (docs/design-decisions.md,
    "L-BFGS-B runs"). ``minimize`` itself where the core has another interface.
    """
    low, high = np.asarray(bounds[:, 0], dtype=float), np.asarray(bounds[:, 1], dtype=float)
    x = np.clip(np.asarray(x0, dtype=float), low, high)  # (k,)
    if sequential or not batched():
        return _scipy_minimize(fun_and_grad, x, low, high, ftol=ftol, gtol=gtol, max_iter=max_iter)

    def evaluate(X: np.ndarray, _runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f, g = fun_and_grad(X[0].copy())  # the one run's point (k,)
        return np.array([f], dtype=float), np.asarray(g, dtype=float)[None, :]

    (state,) = _batched_runs(
        evaluate,
        x[None, :],
        low[None, :],
        high[None, :],
        _LBFGS_MAX_FUN,
        ftol=ftol,
        gtol=gtol,
        max_iter=max_iter,
    )
    return state.x, state.f


def _scipy_minimize(
    fun_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,  # (k,)
    low: np.ndarray,  # (k,)
    high: np.ndarray,  # (k,)
    *,
    ftol: float = _FTOL,
    gtol: float = _GTOL,
    max_iter: int = _LBFGS_MAX_ITER,
    max_fun: int = _LBFGS_MAX_FUN,
) -> tuple[np.ndarray, float]:
    """One run of ``scipy.optimize.minimize`` with these settings: its final point and value
    (what the batched runs are checked against, and their fallback)."""
    res = minimize(
        fun_and_grad,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=np.stack([low, high], axis=1),
        options={"ftol": ftol, "gtol": gtol, "maxiter": max_iter, "maxfun": max_fun},
    )
    return np.asarray(res.x, dtype=float), float(res.fun)


class _Exhausted(Exception):
    """A run asked for more evaluations than it may make."""


@dataclass
class _State:
    """One run's L-BFGS-B state, as scipy's ``_minimize_lbfgsb`` keeps it."""

    x: np.ndarray  # (k,)
    low: np.ndarray  # (k,)
    high: np.ndarray  # (k,)
    ftol: float = _FTOL
    gtol: float = _GTOL
    max_iter: int = _LBFGS_MAX_ITER
    f: float = 0.0
    g: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_iter: int = 0
    n_fev: int = 0

    def __post_init__(self) -> None:
        k, m = len(self.x), _MAXCOR
        self.factr = self.ftol / _EPS  # scipy's factr for its ftol
        self.g = np.zeros(k)
        # Which bounds each variable has, as scipy codes them: 0 none, 1 lower, 2 both, 3 upper.
        has_low, has_high = np.isfinite(self.low), np.isfinite(self.high)  # (k,) each
        self.nbd = np.where(has_low, np.where(has_high, 2, 1), np.where(has_high, 3, 0))
        self.nbd = self.nbd.astype(np.int32)
        self.low = np.where(has_low, self.low, 0.0)
        self.high = np.where(has_high, self.high, 0.0)
        self.wa = np.zeros(2 * m * k + 5 * k + 11 * m * m + 8 * m)
        self.iwa = np.zeros(3 * k, dtype=np.int32)
        self.task = np.zeros(2, dtype=np.int32)
        self.ln_task = np.zeros(2, dtype=np.int32)
        self.lsave = np.zeros(4, dtype=np.int32)
        self.isave = np.zeros(44, dtype=np.int32)
        self.dsave = np.zeros(29)

    def step(self, max_fun: int) -> bool:
        """Advance to the next request for an evaluation (True) or to the end (False)."""
        setulb, task = _SETULB, self.task
        assert setulb is not None
        while True:
            setulb(
                _MAXCOR, self.x, self.low, self.high, self.nbd, self.f, self.g, self.factr,
                self.gtol, self.wa, self.iwa, task, self.lsave, self.isave, self.dsave, _MAXLS,
                self.ln_task,
            )  # fmt: skip
            code = int(task[0])
            if code == _FG:
                return True
            if code != _NEW_X:
                return False
            # A new iterate: scipy's own limits, checked where scipy checks them.
            self.n_iter += 1
            if self.n_iter >= self.max_iter:
                self.task[:] = (_STOP, 504)
            elif self.n_fev > max_fun:
                self.task[:] = (_STOP, 502)


def _batched_runs(
    evaluate: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    x0: np.ndarray,  # (R, k)
    low: np.ndarray,  # (R, k)
    high: np.ndarray,  # (R, k)
    max_fun: int,
    *,
    ftol: float = _FTOL,
    gtol: float = _GTOL,
    max_iter: int = _LBFGS_MAX_ITER,
) -> list[_State]:
    """Run R L-BFGS-B states until each ends, one batched evaluation per round for the runs
    that asked for one; the ended states."""
    states = [
        _State(x0[r].copy(), low[r].copy(), high[r].copy(), ftol, gtol, max_iter)
        for r in range(len(x0))
    ]
    asking = [r for r, s in enumerate(states) if s.step(max_fun)]
    while asking:
        asking = [r for r in asking if states[r].n_fev < max_fun]  # the others end here
        if not asking:
            break
        runs = np.array(asking, dtype=np.intp)
        f, g = evaluate(np.stack([states[r].x for r in asking]), runs)  # (m,), (m, k)
        for i, r in enumerate(asking):
            s = states[r]
            s.f, s.g = float(f[i]), g[i].copy()
            s.n_fev += 1
        asking = [r for r in asking if states[r].step(max_fun)]
    return states


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
