"""The maximizer's starts: the best distinct screened points of each acquisition, the forced
extra starts, and after a relaxed run the best distinct of starts and rounded optima."""

from __future__ import annotations

import numpy as np

from optuna_costbo._numerics.search_space import BoxCodec


def extra_starts(codec: BoxCodec, given: np.ndarray | None) -> np.ndarray:
    """The extra starts (k, D), projected to legal points."""
    D = codec.dim
    if given is None:
        return np.zeros((0, D))
    extra = np.asarray(given, dtype=float)
    if extra.ndim == 1:
        extra = extra.reshape(1, -1)
    if extra.ndim != 2 or extra.shape[1] != D:
        raise ValueError(f"extra_starts must have shape (k, {D}), got {extra.shape}")
    return codec.project(extra) if len(extra) else np.zeros((0, D))


def run_starts(
    pool: np.ndarray,  # (M, D) legal points, the first n_extra of them forced starts
    pool_v: np.ndarray,  # (M, K) their values under each acquisition
    n_extra: int,
    n_restarts: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs' starts (R, D), values (R,) and acquisitions (R,): each acquisition's best
    distinct pool points and every extra start with a finite value (log EI at the best observed
    point is small, the model being sure of it, but a local maximum lies next to it)."""
    X_parts, V_parts, which_parts = [np.zeros((0, pool.shape[1]))], [np.zeros(0)], [np.zeros(0)]
    for col in range(pool_v.shape[1]):
        order = top_distinct(pool, pool_v[:, col], n_restarts)
        forced = [i for i in range(n_extra) if np.isfinite(pool_v[i, col])]
        order = distinct_union(pool, order, np.array(forced, dtype=np.intp))
        X_parts.append(pool[order])
        V_parts.append(pool_v[order, col])
        which_parts.append(np.full(len(order), col))
    return np.vstack(X_parts), np.concatenate(V_parts), np.concatenate(which_parts).astype(np.intp)


def keep_best(
    X: np.ndarray, V: np.ndarray, proj: np.ndarray, proj_v: np.ndarray, which: np.ndarray, K: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per acquisition, the best distinct of the starts X (R, D) and the rounded optima proj
    (R, D), as many as it had starts."""
    parts = []
    for col in range(K):
        mine = which == col
        Xc, Vc = np.vstack([X[mine], proj[mine]]), np.concatenate([V[mine], proj_v[mine]])
        keep = top_distinct(Xc, Vc, int(mine.sum()))
        parts.append((Xc[keep], Vc[keep], np.full(len(keep), col, dtype=np.intp)))
    return (
        np.vstack([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )


def top_distinct(Z: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best distinct rows of Z (m, D) with finite values, best first
    (a stable sort: ties keep the row order)."""
    order = np.argsort(-v, kind="stable")
    order = order[np.isfinite(v[order])]
    head = order[: 4 * k]  # duplicates are rare: look at a short head first
    _, first = np.unique(Z[head], axis=0, return_index=True)
    if len(first) < k and len(head) < len(order):
        head = order
        _, first = np.unique(Z[head], axis=0, return_index=True)
    out: np.ndarray = head[np.sort(first)][:k]
    return out


def distinct_union(Z: np.ndarray, first: np.ndarray, more: np.ndarray) -> np.ndarray:
    """``first`` followed by the rows of ``more`` whose points are not among the earlier ones."""
    out = list(first)
    seen = {Z[i].tobytes() for i in out}
    for i in more:
        key = Z[i].tobytes()
        if key not in seen:
            seen.add(key)
            out.append(int(i))
    return np.array(out, dtype=np.intp)
