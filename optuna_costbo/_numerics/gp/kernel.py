"""The Matern-5/2 ARD kernel on the unit box, written once for the model and the fit."""

from __future__ import annotations

import numpy as np


# NOTE(gp): the largest (n1, n2, D) difference array formed at once: one array beats a loop
# over D for small blocks, not for large ones.
_BLOCK_ELEMENTS = 8192


def matern52(X1: np.ndarray, X2: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """Unit-variance kernel matrix (n1, n2) of X1 (n1, D) and X2 (n2, D)."""
    r2 = scaled_sq_dist(np.asarray(X1, dtype=float), np.asarray(X2, dtype=float), lengthscales)
    return matern52_parts(r2)[0]


def matern52_parts(r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``k = (1 + sqrt5 r + 5/3 r^2) e`` and ``a = (1 + sqrt5 r) e``, ``e = exp(-sqrt5 r)``,
    from squared scaled distances (any shape): ``dk / d(r^2) = -5/6 a``, finite at r = 0."""
    # NOTE(gp): in place, three arrays instead of ten (fresh arrays cost more in page faults
    # than the arithmetic); the same operations in the same order.
    s5r = np.multiply(r2, 5.0)
    np.sqrt(s5r, out=s5r)
    e = np.negative(s5r)
    np.exp(e, out=e)
    s5r += 1.0  # 1 + sqrt5 r
    k = np.multiply(r2, 5.0 / 3.0)
    k += s5r
    k *= e
    s5r *= e
    return k, s5r


def scaled_sq_dist(X1: np.ndarray, X2: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """Squared ARD distance ``sum_d ((x1_d - x2_d) / ls_d)^2``, (n1, D), (n2, D) -> (n1, n2)."""
    # NOTE(gp): differences per dimension, not |a|^2 + |b|^2 - 2 a.b, whose cancellation loses
    # r near zero, where variances and their gradients are most sensitive.
    inv_ls = 1.0 / np.asarray(lengthscales, dtype=float)  # (D,)
    A = X1 * inv_ls  # (n1, D)
    B = X2 * inv_ls  # (n2, D)
    if A.shape[1] >= 4 and A.shape[0] * B.shape[0] * A.shape[1] <= _BLOCK_ELEMENTS:
        diff = A[:, None, :] - B[None, :, :]  # (n1, n2, D)
        out: np.ndarray = np.einsum("ijd,ijd->ij", diff, diff)  # (n1, n2)
        return out
    AT, BT = np.ascontiguousarray(A.T), np.ascontiguousarray(B.T)  # (D, n1), (D, n2)
    r2: np.ndarray = np.subtract.outer(AT[0], BT[0])  # (n1, n2)
    r2 *= r2
    diff = np.empty_like(r2)  # (n1, n2) work buffer
    for d in range(1, A.shape[1]):
        np.subtract.outer(AT[d], BT[d], out=diff)
        diff *= diff
        r2 += diff
    return r2
