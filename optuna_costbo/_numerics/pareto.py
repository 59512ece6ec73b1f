"""Pareto fronts, the reference point, hypervolume and the non-dominated boxes, all minimized;
the boxes make hypervolume improvement a sum of products (Yang et al., J. Glob. Optim. 2019).
"""

from __future__ import annotations

import numpy as np


_PAIR_ENTRIES = 1 << 22  # the mask compares pairs in chunks of at most this many entries
_MIN_RANGE = 1e-7  # the smallest range the reference margin scales by (BoTorch's MIN_Y_RANGE)


def _check_points(Y: np.ndarray, name: str = "Y") -> np.ndarray:
    out = np.asarray(Y, dtype=float)
    if out.ndim != 2 or out.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D array (n, m) with m >= 1, got shape {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite, got non-finite entries")
    return out


def _check_ref(ref: np.ndarray, m: int) -> np.ndarray:
    out = np.asarray(ref, dtype=float)
    if out.shape != (m,) or not np.all(np.isfinite(out)):
        raise ValueError(f"ref must be a finite array of shape ({m},), got {ref!r}")
    return out


def non_dominated_mask(Y: np.ndarray) -> np.ndarray:
    """Which rows of ``Y`` (n, m) no other row dominates (copies all kept): (n,) bool."""
    Y = _check_points(Y)
    n, m = Y.shape
    mask = np.ones(n, dtype=bool)  # (n,)
    rows = max(1, _PAIR_ENTRIES // max(1, n * m))
    for start in range(0, n, rows):
        block = Y[start : start + rows]  # (r, m)
        weakly = np.all(Y[None, :, :] <= block[:, None, :], axis=2)  # (r, n): Y[j] <= block[i]
        strictly = np.any(Y[None, :, :] < block[:, None, :], axis=2)  # (r, n)
        mask[start : start + rows] = ~np.any(weakly & strictly, axis=1)
    return mask


def pareto_front(Y: np.ndarray, ref: np.ndarray | None = None) -> np.ndarray:
    """The distinct non-dominated rows of ``Y`` (n, m), sorted: (k, m); with ``ref`` (m,), only
    those strictly below it."""
    Y = _check_points(Y)
    if ref is not None:
        Y = Y[np.all(Y < _check_ref(ref, Y.shape[1]), axis=1)]
    front = np.unique(Y[non_dominated_mask(Y)], axis=0)  # (k, m), sorted, no copies
    return front


def reference_point(Y: np.ndarray, scale: float = 0.1) -> np.ndarray:
    """``front nadir + scale * max(range of all of Y, 1e-7)`` of ``Y`` (n, m): (m,).

    NOTE(pareto): BoTorch's ``infer_reference_point`` mirrored, with the range over all of Y,
    not the front (docs/multi_objective.md, "The reference point").
    """
    Y = _check_points(Y)
    if len(Y) == 0:
        raise ValueError("reference_point needs at least one observation, got none")
    if not (np.isfinite(scale) and scale > 0.0):
        raise ValueError(f"scale must be a positive finite number, got {scale}")
    nadir = pareto_front(Y).max(axis=0)  # (m,)
    spread = np.maximum(Y.max(axis=0) - Y.min(axis=0), _MIN_RANGE)  # (m,)
    ref: np.ndarray = nadir + scale * spread
    return ref


def _boxes_2d(front: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The k + 1 strips of a sorted two-objective front (k, 2): lower, upper (k + 1, 2)."""
    k = len(front)
    lower = np.empty((k + 1, 2))  # (k + 1, 2)
    upper = np.empty((k + 1, 2))  # (k + 1, 2)
    lower[0, 0] = -np.inf
    lower[1:, 0] = front[:, 0]
    lower[:, 1] = -np.inf
    upper[:k, 0] = front[:, 0]
    upper[k, 0] = ref[0]
    upper[0, 1] = ref[1]
    upper[1:, 1] = front[:, 1]
    return lower, upper


def _boxes(front: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint boxes (B, m) covering the part of ``{y <= ref}`` the front (k, m) leaves.

    For m >= 3, a sweep along the last objective (Fonseca et al. 2006): each cross-section's
    boxes come from the (m - 1)-objective recursion, a box lasting while its section does.
    """
    k, m = front.shape
    if m == 1:
        top = front[:, 0].min() if k else ref[0]
        return np.full((1, 1), -np.inf), np.full((1, 1), top)
    if m == 2:
        return _boxes_2d(front[np.argsort(front[:, 0])], ref)
    order = np.argsort(front[:, -1], kind="stable")
    levels = front[order, -1]  # (k,) ascending
    sub_ref = ref[:-1]  # (m - 1,)
    lower, upper = _boxes(front[:0, :-1], sub_ref)  # one box: the empty cross-section's
    opened: dict[bytes, tuple[np.ndarray, np.ndarray, float]] = {
        np.concatenate([lower[0], upper[0]]).tobytes(): (lower[0], upper[0], -np.inf)
    }
    out_lower: list[np.ndarray] = []
    out_upper: list[np.ndarray] = []
    projected = front[:0, :-1]  # (0, m - 1): the cross-section's front so far

    def close(key: bytes, top: float) -> None:
        low, up, bottom = opened.pop(key)
        out_lower.append(np.append(low, bottom))
        out_upper.append(np.append(up, top))

    i = 0
    while i < k:
        j = i
        while j < k and levels[j] == levels[i]:
            j += 1  # the points at one level enter together: no box of zero height
        level = float(levels[i])
        entering = front[order[i:j], :-1]  # (j - i, m - 1)
        i = j
        # Points whose projection a projected point already weakly dominates change nothing.
        covered = np.all(projected[None, :, :] <= entering[:, None, :], axis=2).any(axis=1)
        if covered.all():
            continue
        # No copies: an entering projection equal to a passed one is covered, and two entering
        # points with one projection would be one point (the front holds no copies).
        candidates = np.concatenate([projected, entering[~covered]])  # (q, m - 1)
        projected = candidates[non_dominated_mask(candidates)]
        lower, upper = _boxes(projected, sub_ref)  # (b, m - 1) each
        keys = [row.tobytes() for row in np.concatenate([lower, upper], axis=1)]
        current = set(keys)
        for key in [key for key in opened if key not in current]:
            close(key, level)
        for key, low, up in zip(keys, lower, upper, strict=True):
            if key not in opened:
                opened[key] = (low, up, level)
    for key in list(opened):
        close(key, float(ref[-1]))
    return np.array(out_lower), np.array(out_upper)


def non_dominated_boxes(Y: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint boxes covering the part of ``{y <= ref}`` no row of ``Y`` (n, m) dominates:
    ``(lower (B, m), upper (B, m))``, lower corners possibly ``-inf``."""
    Y = _check_points(Y)
    ref = _check_ref(ref, Y.shape[1])
    lower, upper = _boxes(pareto_front(Y, ref), ref)
    keep = np.all(upper > lower, axis=1)  # (B,): no box of zero width (none expected)
    return lower[keep], upper[keep]


def hypervolume(Y: np.ndarray, ref: np.ndarray) -> float:
    """The hypervolume the rows of ``Y`` (n, m) dominate within ``{y <= ref}`` (ref (m,));
    for m >= 3, the box ``[ideal, ref]`` less the non-dominated boxes clipped to it."""
    Y = _check_points(Y)
    ref = _check_ref(ref, Y.shape[1])
    front = pareto_front(Y, ref)  # (k, m)
    if len(front) == 0:
        return 0.0
    if front.shape[1] == 1:
        return float(ref[0] - front[0, 0])
    if front.shape[1] == 2:
        # Sorted by the first objective, the second decreases: point i adds the rectangle
        # from its first value to the next point's (or ref), from its second value to ref.
        x_next = np.append(front[1:, 0], ref[0])  # (k,)
        return float(np.sum((x_next - front[:, 0]) * (ref[1] - front[:, 1])))
    ideal = front.min(axis=0)  # (m,)
    lower, upper = _boxes(front, ref)  # (B, m) each
    widths = np.clip(upper - np.maximum(lower, ideal), 0.0, None)  # (B, m)
    return float(np.prod(ref - ideal) - np.sum(np.prod(widths, axis=1)))
