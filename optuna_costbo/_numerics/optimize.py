"""Maximization of K acquisitions over the legal points of the box, by batched L-BFGS-B runs.

The optimizer knows nothing of which acquisition it maximizes (BoTorch's split): a
:class:`Search` gives batched functions of box points and a codec; the scheme is Lee et al.
(UAI 2021, section 5) with Optuna's ``optim_mixed`` steps for mixed spaces. scipy's public
``fmin_l_bfgs_b`` is called in this module only, and the GP fit's.
"""

from __future__ import annotations

from collections.abc import Callable
import contextlib
from dataclasses import dataclass
import math
import os
import threading

import numpy as np
from scipy.optimize import fmin_l_bfgs_b

from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.starts import extra_starts
from optuna_costbo._numerics.starts import keep_best
from optuna_costbo._numerics.starts import run_starts


RowFunAndGrad = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``(Z (m, D), which (m,)) -> (values (m,), grads (m, D))``: row i under acquisition
``which[i]`` (for :func:`lbfgsb_runs`, row i is a point of run ``which[i]``)."""
RowFun = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``(Z (m, D), which (m,)) -> values (m,)``."""

# scipy.optimize.minimize's L-BFGS-B settings, but for the iterations.
_LBFGS = {"factr": 2.2204460492503131e-09 / np.finfo(float).eps, "pgtol": 1e-5, "maxiter": 200}
_GTOL = 1e-5
_MAX_FUN = 15_000  # scipy's default
# NOTE(optimize): rounds of "L-BFGS-B over the float columns, then discrete neighbour sweep" in
# mixed spaces; the caps only bound the worst case (two rounds are the rule).
_MAX_ROUNDS = 4
_MAX_SWEEPS = 50


@dataclass(frozen=True)
class Search:
    """K acquisitions to maximize over the legal points; ``rows`` (K',): the asked ones as
    rows of these K (an acquisition asked twice is maximized once)."""

    fun_and_grad: RowFunAndGrad
    fun: RowFun | None  # the values alone (default: fun_and_grad's)
    codec: BoxCodec
    screened: tuple[np.ndarray, np.ndarray] | None = None  # points (M, D), values (M, K)
    extra_starts: np.ndarray | None = None  # (k, D) start a run of every acquisition
    max_evals: int | None = None  # cap on the evaluations of each L-BFGS-B phase
    exclude: Callable[[np.ndarray], np.ndarray] | None = None  # (m, D) -> (m,) never returned
    rows: np.ndarray | None = None  # (K',)


def default_n_candidates(dim: int) -> int:
    """Points screened for starts: ``max(1024, 100 * dim)`` (the paper's 10 * d missed the
    maximum more often, for a few ms less; docs/design-decisions.md)."""
    return max(1024, 100 * dim)


def maximize(
    search: Search,
    rng: np.random.Generator | None = None,
    *,
    n_candidates: int | None = None,
    n_restarts: int = 5,
) -> tuple[np.ndarray, np.ndarray]:
    """The best legal point of each acquisition (K, D) and its value (K,), never NaN.

    1. Screen ``search.screened``, or (K = 1) ``n_candidates`` Latin hypercube points from
       ``rng``, plus the extra starts. 2. L-BFGS-B from the ``n_restarts`` best distinct points
       and every extra start over the numeric columns (grids relaxed), projected to legal
       points. 3. Mixed spaces: float-only polishes alternating with discrete neighbour sweeps.
    4. The best point that ``exclude`` allows (an excluded one only if nothing else is left).
    Non-finite values count as -inf.
    """
    codec, D = search.codec, search.codec.dim
    if n_restarts < 1:
        raise ValueError(f"n_restarts must be >= 1, got {n_restarts}")
    given_fg = search.fun_and_grad
    fg, f = on_active(codec, given_fg, search.fun or (lambda Z, w: given_fg(Z, w)[0]))

    def values_of(Z: np.ndarray, which: np.ndarray) -> np.ndarray:  # (m, D), (m,) -> (m,)
        return clean(f(Z, which))

    def runs_of(on: np.ndarray) -> RowFunAndGrad:  # runs (R,) under acquisitions on (R,)
        return lambda Z, runs: fg(Z, on[runs])

    extra = extra_starts(codec, search.extra_starts)  # (k, D)
    k = len(extra)
    if search.screened is None:
        n_cand = default_n_candidates(D) if n_candidates is None else int(n_candidates)
        if n_cand < 1:
            raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
        if D == 0:  # nothing to choose
            return np.zeros((1, 0)), values_of(np.zeros((1, 0)), np.zeros(1, dtype=np.intp))
        assert rng is not None
        pool = np.vstack([extra, codec.latin_hypercube_points(n_cand, rng)])  # (M, D)
        pool_v = values_of(pool, np.zeros(len(pool), dtype=np.intp))[:, None]  # (M, 1)
    else:
        points, screened_v = search.screened  # (M, D), (M, K)
        K = screened_v.shape[1]
        extra_v = np.zeros((0, K))  # (k, K)
        if k:
            extra_v = f(np.tile(extra, (K, 1)), np.repeat(np.arange(K), k)).reshape(K, k).T
        pool = np.vstack([extra, points])  # (k + M, D)
        pool_v = clean(np.vstack([extra_v, screened_v])).reshape(len(pool), K)  # (k + M, K)
    X, V, which = run_starts(pool, pool_v, k, n_restarts)  # (R, D), (R,), (R,)
    K, cap = pool_v.shape[1], search.max_evals

    constant = set(codec.constant_columns.tolist())
    numeric = np.array([c for c in codec.continuous_columns if c not in constant], dtype=np.intp)
    discrete = set(codec.discrete_columns.tolist())
    floats = np.array([c for c in numeric if c not in discrete], dtype=np.intp)

    # Phase 2: relaxed L-BFGS-B from every start, projected; rounding may lose to the start, so
    # each acquisition keeps its best distinct of starts and rounded optima.
    if len(numeric) and len(X):
        relaxed, _ = lbfgsb_runs(runs_of(which), X, V, numeric, None, cap)
        proj = codec.project(relaxed)  # (R, D)
        X, V, which = keep_best(X, V, proj, values_of(proj, which), which, K)

    # Phase 3: float-only polish (grid columns now legal) alternating with discrete sweeps;
    # each round polishes only the points the previous sweep moved.
    if len(discrete) or any(len(b) > 1 for b in codec.categorical_blocks):
        polish = np.full(len(X), len(discrete) > 0)  # (R,)
        for _ in range(_MAX_ROUNDS):
            if len(floats) and polish.any():
                rows = np.flatnonzero(polish)
                Zr, _ = lbfgsb_runs(runs_of(which[rows]), X[rows], V[rows], floats, None, cap)
                Zr = codec.project(Zr)
                Vr = values_of(Zr, which[rows])
                better = Vr > V[rows]
                X[rows[better]], V[rows[better]] = Zr[better], Vr[better]
            polish = _sweep(codec, values_of, X, V, which)
            if not polish.any():
                break

    out_X, out_V = _pick(codec, values_of, search.exclude, X, V, which, pool, pool_v)
    if search.rows is None:
        return out_X, out_V
    return out_X[search.rows], out_V[search.rows]


def on_active(
    codec: BoxCodec, fun_and_grad: RowFunAndGrad, fun: RowFun
) -> tuple[RowFunAndGrad, RowFun]:
    """The functions seen through the space's conditions: inactive parameters at their fill,
    zero gradient in their columns (L-BFGS-B leaves them alone)."""
    if not codec.conditional:
        return fun_and_grad, fun

    def wrapped(Z: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Zd, off = codec.deactivate_with_mask(Z)  # (m, D) each
        values, grads = fun_and_grad(Zd, which)
        return values, np.where(off, 0.0, grads)

    return wrapped, lambda Z, which: fun(codec.deactivate(Z), which)


def clean(values: np.ndarray) -> np.ndarray:
    """Values as float (m,), with NaN and +-inf replaced by -inf (unusable)."""
    values = np.asarray(values, dtype=float).reshape(-1)
    return np.where(np.isfinite(values), values, -np.inf)


class _Stop(Exception):
    """Ends a run early: it used up its evaluations, or another run's evaluation failed."""


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
    """L-BFGS-B ascent over ``Z[:, cols]`` from each of R starts, each run scipy's on its own
    (200 iterations, at most ``max_evals`` evaluations), every round of evaluations one batched
    call for the runs that asked; ``sequential``: run after run (the same iterates). Returns the
    best evaluated points (R, D) and values (R,); a run meeting non-finite values keeps its best.

    NOTE(optimize): scipy has no batched L-BFGS-B; Optuna's ``batched_lbfgsb`` suspends each
    run in a greenlet. Here each run is ``fmin_l_bfgs_b`` in a kept thread whose objective hands
    its point to this thread and waits; a run sees only its own answers, so the result is
    deterministic (docs/design-decisions.md, "L-BFGS-B runs").
    """
    R, k = len(Z0), len(cols)
    best_x = Z0[:, cols].copy()  # (R, k)
    best_v = np.asarray(V0, dtype=float).copy()  # (R,)
    if R == 0 or k == 0:
        return Z0.copy(), best_v
    if bounds is None:
        bounds = np.stack([np.zeros((R, k)), np.ones((R, k))], axis=-1)  # (R, k, 2)
    max_fun = max_evals or _MAX_FUN
    options = {**_LBFGS, "maxfun": max_fun}

    def evaluate(X: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """-values (m,) and -gradients (m, k) of runs' points X (m, k); tracks the best."""
        Z = Z0[runs]  # (m, D), a copy
        Z[:, cols] = X
        v, g = fun_and_grad(Z, runs)
        v = clean(v)
        better = v > best_v[runs]
        if better.any():
            best_v[runs[better]] = v[better]
            best_x[runs[better]] = X[better]
        gc = np.asarray(g, dtype=float)[:, cols]  # (m, k)
        gc = np.where(np.isfinite(gc), gc, 0.0)
        finite = np.isfinite(v)
        return np.where(finite, -v, math.inf), np.where(finite[:, None], -gc, 0.0)

    counts = [0] * R  # evaluations of each run; one more than max_fun ends it

    def counted(r: int) -> None:
        if counts[r] >= max_fun:
            raise _Stop
        counts[r] += 1

    if sequential or R == 1:
        for r in range(R):

            def alone(x: np.ndarray, r: int = r) -> tuple[float, np.ndarray]:  # (k,) -> f, (k,)
                counted(r)
                f, g = evaluate(x[None, :], np.array([r]))  # (1,), (1, k)
                return float(f[0]), np.array(g[0])

            with contextlib.suppress(_Stop):
                fmin_l_bfgs_b(alone, Z0[r, cols], bounds=bounds[r], **options)
        return _put(Z0, cols, best_x), best_v

    # The first round evaluates every start; a run whose start's projected gradient is within
    # gtol ends at once in scipy and starts no thread.
    x0 = np.clip(Z0[:, cols], bounds[..., 0], bounds[..., 1])  # (R, k), as scipy starts
    f0, g0 = evaluate(x0, np.arange(R))  # (R,), (R, k)
    pg = np.where(g0 < 0, np.maximum(x0 - bounds[..., 1], g0), np.minimum(x0 - bounds[..., 0], g0))
    moving = np.flatnonzero(np.abs(pg).max(axis=1) > _GTOL).tolist()
    asked = list(x0)  # the point (k,) each run asked for last
    # NOTE: scipy < 1.15 writes into the gradient (Fortran intent(inout)): fresh arrays.
    answer = [(float(f), np.array(g)) for f, g in zip(f0, g0, strict=True)]  # value, (k,)
    waiting = [False] * R  # run r blocked on go[r] (before it starts, or asking for a point)
    go = [threading.Lock() for _ in range(R)]
    back, stop, count = threading.Lock(), threading.Event(), threading.Lock()
    left = [0]  # runs of this round still going on
    errors: list[BaseException] = []
    for lock in [*go, back]:
        lock.acquire()

    def arrived() -> None:  # a run asked for a point or ended: the round's last wakes this one
        with count:
            left[0] -= 1
            if left[0] == 0:
                back.release()

    def handed(x: np.ndarray, r: int) -> tuple[float, np.ndarray]:  # (k,) -> value, grad (k,)
        counted(r)
        if counts[r] > 1:  # the start was evaluated in the first round
            asked[r], waiting[r] = x, True
            arrived()
            if stop.is_set() or (go[r].acquire() and stop.is_set()):  # stopped: not to block
                raise _Stop
        return answer[r]

    def begin(r: int) -> bool:
        go[r].acquire()
        return not stop.is_set()

    def end(error: BaseException | None) -> None:
        if error is not None:
            errors.append(error)
        arrived()

    runs = moving
    try:
        for r in moving:
            waiting[r] = True
            _POOL.start((lambda x, r=r: handed(x, r)), x0[r], bounds[r], options, begin, r, end)
        while runs:  # the runs go on together until each asks or ends; this frame waits (depth)
            left[0] = len(runs)
            for r in runs:
                waiting[r] = False
                go[r].release()
            back.acquire()
            runs = [r for r in runs if waiting[r]]
            if runs:
                f, g = evaluate(np.stack([asked[r] for r in runs]), np.array(runs))  # (m,), (m, k)
                for i, r in enumerate(runs):
                    answer[r] = (float(f[i]), np.array(g[i]))
    except BaseException:  # an error or an interrupt: every run ends on its own
        stop.set()
        for lock in go:  # a run waiting now or asking later sees the stop
            with contextlib.suppress(RuntimeError):  # released already: its run has it
                lock.release()
        raise
    if errors:
        raise errors[0]
    return _put(Z0, cols, best_x), best_v


def _put(Z0: np.ndarray, cols: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Z0 (R, D) with its columns ``cols`` set to X (R, k)."""
    out: np.ndarray = Z0.copy()
    out[:, cols] = X
    return out


class _Threads:
    """Daemon threads kept for later runs (starting a thread costs more than most runs); each
    calls scipy itself, so a run's stack is this module's one frame deep."""

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)  # a forked child has none of them

    def reset(self) -> None:
        self.idle: list[Callable[[tuple], None]] = []  # each one's "start this"
        self.lock = threading.Lock()

    def start(self, *job: object) -> None:
        """Run ``(fun, x0, bounds, options, begin, r, end)`` in an idle thread or a new one:
        ``fmin_l_bfgs_b`` once ``begin(r)`` allows, then ``end(error or None)``."""
        with self.lock:
            start = self.idle.pop() if self.idle else None
        (start or self._new())(job)

    def _new(self) -> Callable[[tuple], None]:
        jobs: list[tuple] = []
        ready = threading.Lock()
        ready.acquire()

        def start(job: tuple) -> None:
            jobs.append(job)
            ready.release()

        def serve() -> None:
            while True:
                ready.acquire()
                fun, x0, bounds, options, begin, r, end = jobs.pop()
                error = None
                try:
                    if begin(r):
                        fmin_l_bfgs_b(fun, x0, bounds=bounds, **options)
                except _Stop:
                    pass
                except BaseException as caught:  # re-raised by the caller
                    error = caught
                end(error)
                with self.lock:
                    self.idle.append(start)

        threading.Thread(target=serve, name="costbo-lbfgsb", daemon=True).start()
        return start


_POOL = _Threads()


def _pick(
    codec: BoxCodec,
    values_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
    exclude: Callable[[np.ndarray], np.ndarray] | None,
    X: np.ndarray,  # (R, D) the runs' results
    V: np.ndarray,  # (R,)
    which: np.ndarray,  # (R,)
    pool: np.ndarray,  # (M, D)
    pool_v: np.ndarray,  # (M, K)
) -> tuple[np.ndarray, np.ndarray]:
    """Each acquisition's best point (K, D) and value (K,) that ``exclude`` allows."""
    K = pool_v.shape[1]
    out_X, out_V = np.empty((K, codec.dim)), np.empty(K)
    pool_bad: np.ndarray | None = None  # (M,) the pool's excluded rows, once for all
    for col in range(K):
        mine = which == col
        Xc, Vc = X[mine], V[mine]
        if not mine.any():  # no finite start: the first screened point, value -inf
            out_X[col], out_V[col] = pool[0], -math.inf
            continue
        bad = None if exclude is None else exclude(Xc)  # (r,)
        if bad is not None and bad.any():
            # NOTE: a run that ends on an evaluated point gives way to the best of its discrete
            # neighbours and the screened points; evaluated only where nothing else is left.
            more, _ = codec.discrete_neighbors_many(Xc[bad])  # (S, D)
            assert exclude is not None
            if pool_bad is None:
                pool_bad = exclude(pool)
            more_v = values_of(more, np.full(len(more), col)) if len(more) else np.zeros(0)
            X2 = np.vstack([Xc, more, pool])
            V2 = np.concatenate([Vc, more_v, pool_v[:, col]])
            bad2 = np.concatenate([exclude(X2[: len(X2) - len(pool)]), pool_bad])  # (len(X2),)
            V2 = np.where(bad2, -np.inf, V2)
            if np.isfinite(V2).any():
                Xc, Vc = X2, V2
        best = int(np.argmax(Vc))
        out_X[col], out_V[col] = Xc[best], Vc[best]
    return out_X, out_V


def _sweep(
    codec: BoxCodec,
    values_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
    X: np.ndarray,  # (R, D), updated in place
    V: np.ndarray,  # (R,), updated in place
    which: np.ndarray,  # (R,) each point's acquisition
) -> np.ndarray:
    """Greedy best-neighbour moves for all points at once; returns which points moved (R,)."""
    moved = np.zeros(len(X), dtype=bool)
    active = np.ones(len(X), dtype=bool)
    for _ in range(_MAX_SWEEPS):
        idx = np.flatnonzero(active)
        if len(idx) == 0:
            break
        nbrs, owner = codec.discrete_neighbors_many(X[idx])  # (S, D), (S,)
        if len(nbrs) == 0:
            break
        sizes = np.bincount(owner, minlength=len(idx))  # (len(idx),)
        nv = values_of(nbrs, which[idx][owner])  # (S,)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        for j, r in enumerate(idx):
            if sizes[j] == 0:
                active[r] = False
                continue
            seg = nv[offsets[j] : offsets[j + 1]]
            k = int(np.argmax(seg))
            if seg[k] > V[r]:
                X[r], V[r] = nbrs[offsets[j] + k], seg[k]
                moved[r] = True
            else:
                active[r] = False
    return moved
