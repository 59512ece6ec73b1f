"""Which observations a GP uses when there are many: its fit's subset and its working set."""

from __future__ import annotations

import numpy as np

from optuna_costbo._numerics.checks import is_int


def fit_subset(y: np.ndarray, max_points: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices (max_points,) the hyperparameters are fitted on: the best quarter by
    value and a uniform draw of the rest (subset of data, Rasmussen and Williams 2006, 8.3.2)."""
    n = y.shape[0]
    if not (is_int(max_points) and max_points >= 1):
        raise ValueError(f"max_points must be a positive integer, got {max_points!r}.")
    if n <= max_points:
        return np.arange(n)
    order = np.argsort(y, kind="stable")  # (n,)
    n_best = max_points // 4
    rest = rng.choice(order[n_best:], size=max_points - n_best, replace=False)
    out: np.ndarray = np.sort(np.concatenate([order[:n_best], rest]))
    return out


def model_subset(
    y: np.ndarray,
    max_points: int,
    rng: np.random.Generator,
    X: np.ndarray | None = None,  # (n, D)
) -> np.ndarray:
    """Sorted indices (max_points,) the models are conditioned on: the best quarter by value,
    the newest quarter of the rest, and the rest farthest-first from those (random without X)."""
    n = y.shape[0]
    if not (is_int(max_points) and max_points >= 4):
        raise ValueError(f"max_points must be an integer >= 4, got {max_points!r}.")
    if n <= max_points:
        return np.arange(n)
    quarter = max_points // 4
    best = np.argsort(y, kind="stable")[:quarter]  # (q,)
    others = np.setdiff1d(np.arange(n), best)  # (n - q,) ascending: oldest first
    newest = others[-quarter:]  # (q,)
    older = others[:-quarter]  # (n - 2q,)
    k = max_points - 2 * quarter
    if X is None:
        rest = rng.choice(older, size=k, replace=False)
    else:
        rest = _farthest_first(X, np.concatenate([best, newest]), older, k)
    out: np.ndarray = np.sort(np.concatenate([best, newest, rest]))
    return out


def _farthest_first(
    X: np.ndarray,  # (n, D)
    kept: np.ndarray,  # (a,) indices already kept
    pool: np.ndarray,  # (p,) indices to choose from
    k: int,
) -> np.ndarray:
    """``k`` indices of ``pool``, each the farthest (Euclidean) from all kept before it: (k,)."""
    P = X[pool]  # (p, D)
    p2 = (P * P).sum(axis=1)  # (p,)
    d2 = np.full(len(pool), np.inf)  # (p,) squared distance to the nearest kept point
    for start in range(0, len(kept), 256):
        A = X[kept[start : start + 256]]  # (b, D)
        # |p - a|^2 = |p|^2 + |a|^2 - 2 p.a: a matrix product, not a (p, b, D) array
        block = ((A * A).sum(axis=1) - 2.0 * (P @ A.T)).min(axis=1)  # (p,)
        d2 = np.minimum(d2, np.maximum(p2 + block, 0.0))
    PT = np.ascontiguousarray(P.T)  # (D, p): one contiguous row per coordinate
    chosen = np.empty(k, dtype=int)
    for i in range(k):
        j = int(np.argmax(d2))
        chosen[i] = j
        diff = PT - PT[:, j : j + 1]  # (D, p)
        np.minimum(d2, np.einsum("ij,ij->j", diff, diff), out=d2)
        d2[j] = -1.0
    out: np.ndarray = pool[chosen]
    return out
