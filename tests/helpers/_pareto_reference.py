"""Plain references for fronts and hypervolumes (minimization), independent of the package:
dominance by a double loop, hypervolume by inclusion-exclusion, random fronts."""

from __future__ import annotations

import itertools

import numpy as np


def dominates(p: np.ndarray, q: np.ndarray) -> bool:
    """Whether p dominates q: no worse in every objective, better in one."""
    return bool(np.all(p <= q) and np.any(p < q))


def brute_non_dominated(Y: np.ndarray) -> np.ndarray:
    """(n,) bool: no other row dominates the row (a double loop)."""
    return np.array([not any(dominates(q, p) for q in Y) for p in Y], dtype=bool)


def hypervolume_ie(Y: np.ndarray, ref: np.ndarray) -> float:
    """Exact hypervolume by inclusion-exclusion over subsets (2^n terms: n <= 12 or so).

    The region dominated by a subset S of points together is the box [max_S p, ref].
    """
    P = Y[np.all(Y < ref, axis=1)]
    total = 0.0
    for size in range(1, len(P) + 1):
        for subset in itertools.combinations(range(len(P)), size):
            corner = P[list(subset)].max(axis=0)
            total += (-1) ** (size + 1) * float(np.prod(np.clip(ref - corner, 0.0, None)))
    return total


def random_front(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """n points on the negative unit sphere in m objectives: all non-dominated, (n, m)."""
    Y = np.abs(rng.standard_normal((n, m)))
    return -Y / np.linalg.norm(Y, axis=1, keepdims=True)


def mixed_points(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """n uniform points in [0, 1]^m with ties and copies (a grid of 0.1): (n, m)."""
    return np.round(rng.random((n, m)), 1)


def hvi_of_draws(y: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """HVI of outcomes y (N, m) over boxes (B, m): sum_b prod_j (u - max(l, y))_+, (N,),
    in chunks of draws."""
    out = np.empty(len(y))
    step = max(1, (1 << 21) // max(1, lower.size))
    for start in range(0, len(y), step):
        part = y[start : start + step, None, :]  # (c, 1, m)
        widths = np.clip(upper - np.maximum(lower, part), 0.0, None)  # (c, B, m)
        out[start : start + step] = widths.prod(axis=2).sum(axis=1)
    return out
