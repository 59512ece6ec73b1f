"""Maximization of an acquisition function over the unit box with mixed variables.

The optimizer knows nothing of which acquisition it maximizes: it takes a batched function
``Z (m, D) -> (values (m,), grads (m, D))`` and a :class:`.search_space.BoxCodec` that says which
columns are continuous, which are on a step grid and which form one-hot categorical blocks. It
only ever returns legal points (codec fixed points).

The scheme follows Lee et al. (UAI 2021, section 5): evaluate the acquisition on a Latin
hypercube, start L-BFGS-B from the best few points, and keep the best. Mixed spaces add a
projection to legal points and a discrete neighbourhood search, as Optuna's ``optim_mixed``.
"""

from __future__ import annotations

from collections.abc import Callable
import math

import numpy as np
from scipy.optimize import minimize

from optuna_costbo._numerics.search_space import BoxCodec


__all__ = ["default_n_candidates", "maximize_acquisition"]

FunAndGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]

# NOTE(optimize): rounds of "L-BFGS-B over the float columns, then discrete neighbour sweep" in
# mixed spaces. Each sweep step is one batched call for all restarts. On log EI of fitted GPs
# over a mixed 5-D space every one of 30 measured calls settled in 2 rounds; the caps only bound
# the worst case.
_MAX_ROUNDS = 4
_MAX_SWEEPS = 50
_LBFGS_MAX_ITER = 200
_LBFGS_MAX_FUN = 15_000  # scipy's default


def default_n_candidates(dim: int) -> int:
    """Size of the Latin hypercube screened for starting points: ``max(1024, 100 * dim)``.

    NOTE(optimize): the paper screens 10 * d points. Screening is one batched call, cheap next
    to the L-BFGS-B iterations, and better starts decide whether the global maximum is found.
    Measured on log EI of fitted GPs (16 problems x 2 seeds each, D = 3, 5, 10, n = 15 to 100,
    continuous and mixed; "solved" = within 1e-3 of a 5000-point, 20-restart reference):
    100 or 256 points missed the maximum in 3-6% of runs, 1024 points in none except one
    D = 10 problem that every setting missed, for 1-4 ms more per call.
    """
    return max(1024, 100 * dim)


def _on_active(
    codec: BoxCodec, fun_and_grad: FunAndGrad, fun: Callable[[np.ndarray], np.ndarray] | None
) -> tuple[FunAndGrad, Callable[[np.ndarray], np.ndarray] | None]:
    """The acquisition seen through the space's conditions: evaluated with inactive
    parameters at their fill, with zero gradient in their columns (L-BFGS-B then leaves them
    alone). Unchanged for a space without conditions."""
    if not codec.conditional:
        return fun_and_grad, fun

    def wrapped(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # (m, D) -> (m,), (m, D)
        Zd = codec.deactivate(Z)
        values, grads = fun_and_grad(Zd)
        return values, np.where(codec.inactive_columns(Zd), 0.0, grads)

    def wrapped_fun(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        Zd = codec.deactivate(Z)
        return fun(Zd) if fun is not None else fun_and_grad(Zd)[0]

    return wrapped, wrapped_fun


def _clean(values: np.ndarray) -> np.ndarray:
    """Values as float (m,), with NaN and +-inf replaced by -inf (unusable)."""
    values = np.asarray(values, dtype=float).reshape(-1)
    return np.where(np.isfinite(values), values, -np.inf)


def _lbfgsb(
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
        v = _clean(v)
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


def maximize_acquisition(
    fun_and_grad: FunAndGrad,
    codec: BoxCodec,
    rng: np.random.Generator,
    *,
    n_candidates: int | None = None,
    n_restarts: int = 5,
    extra_starts: np.ndarray | None = None,
    fun: Callable[[np.ndarray], np.ndarray] | None = None,
    max_evals: int | None = None,
    exclude: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, float]:
    """Maximize an acquisition over the legal points of the box.

    1. Screen ``n_candidates`` Latin hypercube points (made legal) plus ``extra_starts``
       (projected) in one batched call.
    2. From the ``n_restarts`` best distinct screened points, and from every extra start
       whatever its value, run L-BFGS-B over the numeric columns (integers and steps relaxed,
       one-hot columns fixed at the start's values), then project each result to a legal
       point and evaluate it there.
    3. With integer, stepped or categorical parameters: an L-BFGS-B polish over the float
       columns with the grid columns fixed at their rounded values, then a discrete sweep,
       batched over all restarts, that moves each point to its best neighbour (another choice
       of one categorical, or one step up/down of one integer or stepped parameter) while that
       improves; points that moved are polished again. Up to a few rounds.
    4. Return the best legal point evaluated.

    Non-finite values (NaN, +-inf) count as -inf. If no legal point evaluated has a finite
    value, the best screened point is returned with value -inf; the result is never NaN and
    always a codec fixed point.

    NOTE(optimize): measured with log EI of a 100-point GP on D = 5, defaults, one BLAS
    thread: median 23 ms per call (15 ms when ``fun`` is given, which spares the gradients of
    the 1024 screened points); mixed 5-D space (2 floats, an integer, a log float, a 3-way
    categorical): 33 ms (24 ms with ``fun``). About 12-30 calls of ``fun_and_grad`` in all;
    the GP predictions are ~85% of the time.

    Args:
        fun_and_grad: ``Z (m, D) -> (values (m,), grads (m, D))``, the acquisition to maximize
            and its gradient with respect to Z.
        codec: The search space codec.
        rng: Source of randomness (only the Latin hypercube uses it).
        n_candidates: Latin hypercube size; ``None`` for :func:`default_n_candidates`.
        n_restarts: Number of L-BFGS-B starts, >= 1. Default 5, as in the paper.
        extra_starts: Points that always start an L-BFGS-B run besides the screened ones,
            shape (k, D), e.g. the best observed points; projected to legal points first.
        fun: Optional value-only evaluator ``Z (m, D) -> (m,)`` used where gradients are not
            needed (screening, sweeps); defaults to ``fun_and_grad(Z)[0]``.
        max_evals: Cap on the evaluations of ``fun_and_grad`` in each L-BFGS-B phase, for
            acquisitions whose gradient is expensive (default: no cap below scipy's).
        exclude: ``Z (m, D) -> (m,) bool``: legal points that must not be returned (points
            already evaluated). They still start and steer the search; the result is the best
            point that is not excluded among the runs' results, their discrete neighbours and
            the screened points (an excluded point only if all of those are excluded).

    Returns:
        ``(z, value)``: the best legal point found, shape (D,), and its value.

    Raises:
        ValueError: If ``n_candidates`` or ``n_restarts`` is not positive, or ``extra_starts``
            has the wrong shape.

    Example:
        >>> import numpy as np
        >>> from optuna_costbo._numerics.search_space import BoxCodec, NumericParam
        >>> codec = BoxCodec([NumericParam(0.0, 1.0), NumericParam(0, 10, integer=True)])
        >>> def f(Z):  # (m, 2) -> (m,), (m, 2); peak at z = (0.3, 0.7)
        ...     return -((Z - [0.3, 0.7]) ** 2).sum(axis=1), -2 * (Z - [0.3, 0.7])
        >>> z, value = maximize_acquisition(f, codec, np.random.default_rng(0))
        >>> codec.decode(z[None, :]).round(6).tolist()  # the integer column rounds to 7
        [[0.3, 7.0]]
    """
    fun_and_grad, fun = _on_active(codec, fun_and_grad, fun)
    D = codec.dim
    n_cand = default_n_candidates(D) if n_candidates is None else int(n_candidates)
    if n_cand < 1:
        raise ValueError(f"n_candidates must be >= 1, got {n_candidates}")
    if n_restarts < 1:
        raise ValueError(f"n_restarts must be >= 1, got {n_restarts}")

    def values_of(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        return _clean(fun(Z) if fun is not None else fun_and_grad(Z)[0])

    if D == 0:  # nothing to choose
        return np.zeros(0), float(values_of(np.zeros((1, 0)))[0])

    pool = codec.latin_hypercube_points(n_cand, rng)  # (n_cand, D)
    n_extra = 0
    if extra_starts is not None:
        extra = np.asarray(extra_starts, dtype=float)
        if extra.ndim == 1:
            extra = extra.reshape(1, -1)
        if extra.ndim != 2 or extra.shape[1] != D:
            raise ValueError(f"extra_starts must have shape (k, {D}), got {extra.shape}")
        if len(extra):
            pool = np.vstack([codec.project(extra), pool])
            n_extra = len(extra)
    pool_v = values_of(pool)  # (n_pool,)

    order = _top_distinct(pool, pool_v, n_restarts)
    # The extra starts always start a run, even when their value is low: log EI at the best
    # observed point is small (the model is sure of it) but a local maximum lies next to it.
    forced = [i for i in range(n_extra) if np.isfinite(pool_v[i])]
    order = _distinct_union(pool, order, np.array(forced, dtype=np.intp))
    if len(order) == 0:
        return pool[0].copy(), -math.inf
    X = pool[order]  # (R, D) current legal points
    V = pool_v[order]  # (R,)

    constant = set(codec.constant_columns.tolist())
    numeric = np.array([c for c in codec.continuous_columns if c not in constant], dtype=np.intp)
    discrete = set(codec.discrete_columns.tolist())
    floats = np.array([c for c in numeric if c not in discrete], dtype=np.intp)
    has_neighbors = len(discrete) > 0 or any(len(b) > 1 for b in codec.categorical_blocks)

    # Phase 2: relaxed L-BFGS-B from every start, projected and evaluated in one batch.
    if len(numeric):
        relaxed, _ = _lbfgsb(fun_and_grad, X, V, numeric, max_evals=max_evals)
        proj = codec.project(relaxed)  # (R, D)
        # Rounding may lose to the start; keep the best R distinct of starts and rounded optima.
        X, V = np.vstack([X, proj]), np.concatenate([V, values_of(proj)])
        keep = _top_distinct(X, V, len(order))
        X, V = X[keep], V[keep]

    # Phase 3: float-only L-BFGS-B polish (grid columns now fixed at legal values, which moves
    # the float optimum when they were relaxed), alternating with discrete sweeps; each round
    # polishes only the points the previous sweep moved.
    if has_neighbors:
        polish = np.full(len(X), len(discrete) > 0)  # (R,)
        for _ in range(_MAX_ROUNDS):
            if len(floats) and polish.any():
                rows = np.flatnonzero(polish)
                Zr, _ = _lbfgsb(fun_and_grad, X[rows], V[rows], floats, max_evals=max_evals)
                Zr = codec.project(Zr)
                Vr = values_of(Zr)
                better = Vr > V[rows]
                X[rows[better]], V[rows[better]] = Zr[better], Vr[better]
            polish = _sweep(codec, values_of, X, V)
            if not polish.any():
                break

    if exclude is not None:
        X, V = _without_excluded(codec, values_of, exclude, X, V, pool, pool_v)
    best = int(np.argmax(V))
    return X[best].copy(), float(V[best])


def _without_excluded(
    codec: BoxCodec,
    values_of: Callable[[np.ndarray], np.ndarray],
    exclude: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,  # (R, D) the runs' results
    V: np.ndarray,  # (R,)
    pool: np.ndarray,  # (n_pool, D) screened points
    pool_v: np.ndarray,  # (n_pool,)
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates with excluded points set to -inf, plus fallbacks if that leaves none."""
    bad = exclude(X)  # (R,)
    if not bad.any():
        return X, V
    # NOTE: a run that ends on an evaluated point (EI converged onto the incumbent, or a
    # discrete space) gives way to the best of its discrete neighbours and the screened
    # points; evaluated only where nothing else is left.
    nbrs = [codec.discrete_neighbors(x) for x in X[bad]]
    more = [n for n in nbrs if len(n)]
    X2 = np.vstack([X, *more, pool]) if more else np.vstack([X, pool])
    V2 = np.concatenate([V, *(values_of(n) for n in more), pool_v])
    V2 = np.where(exclude(X2), -np.inf, V2)
    if not np.isfinite(V2).any():
        return X, V
    return X2, V2


def _top_distinct(Z: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best distinct rows of Z (m, D) with finite values, best first.

    The sort is stable, so ties keep the row order and the choice is deterministic.
    """
    order = np.argsort(-v, kind="stable")
    order = order[np.isfinite(v[order])]
    head = order[: 4 * k]  # duplicates are rare: look at a short head first
    _, first = np.unique(Z[head], axis=0, return_index=True)
    if len(first) < k and len(head) < len(order):
        head = order
        _, first = np.unique(Z[head], axis=0, return_index=True)
    out: np.ndarray = head[np.sort(first)][:k]
    return out


def _distinct_union(Z: np.ndarray, first: np.ndarray, more: np.ndarray) -> np.ndarray:
    """``first`` followed by the rows of ``more`` whose points are not among the earlier ones."""
    out = list(first)
    seen = {Z[i].tobytes() for i in out}
    for i in more:
        key = Z[i].tobytes()
        if key not in seen:
            seen.add(key)
            out.append(int(i))
    return np.array(out, dtype=np.intp)


def _sweep(
    codec: BoxCodec,
    values_of: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,  # (R, D), updated in place
    V: np.ndarray,  # (R,), updated in place
) -> np.ndarray:
    """Greedy best-neighbour moves for all points at once; returns which points moved (R,)."""
    moved = np.zeros(len(X), dtype=bool)
    active = np.ones(len(X), dtype=bool)
    for _ in range(_MAX_SWEEPS):
        idx = np.flatnonzero(active)
        if len(idx) == 0:
            break
        nbrs = [codec.discrete_neighbors(X[r]) for r in idx]
        sizes = np.array([len(n) for n in nbrs])
        if sizes.sum() == 0:
            break
        nv = values_of(np.vstack(nbrs))  # (sum sizes,)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        for j, r in enumerate(idx):
            if sizes[j] == 0:
                active[r] = False
                continue
            seg = nv[offsets[j] : offsets[j + 1]]
            k = int(np.argmax(seg))
            if seg[k] > V[r]:
                X[r], V[r] = nbrs[j][k], seg[k]
                moved[r] = True
            else:
                active[r] = False
    return moved


def local_maximize(
    fun_and_grad: FunAndGrad,
    codec: BoxCodec,
    starts: np.ndarray,  # (R, D) legal points
    radius: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Polish each start by L-BFGS-B within a box of half-width ``radius`` around it.

    Only the continuous columns move (integer, stepped and categorical columns stay as they
    are); results are projected to legal points and evaluated there. A start is kept where
    its polished point is not better.

    Args:
        fun_and_grad: ``Z (m, D) -> (values (m,), grads (m, D))``.
        codec: The search space codec.
        starts: Legal points to polish, shape (R, D).
        radius: Half-width of the trust region in the unit box, > 0.

    Returns:
        The polished legal points (R, D) and their values (R,).
    """
    fun_and_grad, _ = _on_active(codec, fun_and_grad, None)
    starts = codec.project(np.atleast_2d(np.asarray(starts, dtype=float)))  # (R, D)
    values = _clean(fun_and_grad(starts)[0])  # (R,)
    cols = codec.continuous_columns
    if len(cols) == 0 or len(starts) == 0:
        return starts, values
    low = np.clip(starts[:, cols] - radius, 0.0, 1.0)  # (R, k)
    high = np.clip(starts[:, cols] + radius, 0.0, 1.0)  # (R, k)
    Z, _ = _lbfgsb(fun_and_grad, starts, values, cols, np.stack([low, high], axis=-1))
    Z = codec.project(Z)  # (R, D)
    new_values = _clean(fun_and_grad(Z)[0])  # (R,)
    better = new_values > values
    return np.where(better[:, None], Z, starts), np.where(better, new_values, values)
