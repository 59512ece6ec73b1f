"""The Matern-5/2 ARD kernel on the unit box: one formula, used by the model and the fit.

``k(x, x') = (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)`` with ``r = ||(x - x') / lengthscales||``
(unit signal variance). Its derivative with respect to ``r^2`` is ``-5/6 (1 + sqrt5 r)
exp(-sqrt5 r)``, so :func:`matern52_parts` returns that common factor beside the value: the
posterior gradient and the marginal-likelihood gradient are both built from it.

This module imports only numpy.
"""

from __future__ import annotations

import numpy as np


__all__ = ["matern52", "matern52_parts", "scaled_sq_dist"]

# NOTE(gp): the largest (n1, n2, D) difference array formed at once; measured, one array is
# faster than the loop over D from D = 4 up to several thousand elements, slower past them.
_BLOCK_ELEMENTS = 8192


def matern52(X1: np.ndarray, X2: np.ndarray, lengthscales: np.ndarray) -> np.ndarray:
    """Unit-variance Matern-5/2 ARD kernel matrix.

    Args:
        X1: First set of points, shape ``(n1, D)``.
        X2: Second set of points, shape ``(n2, D)``.
        lengthscales: Positive lengthscales, shape ``(D,)``.

    Returns:
        ``(1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)`` with ``r = ||(x1 - x2) / lengthscales||``,
        shape ``(n1, n2)``.
    """
    r2 = scaled_sq_dist(np.asarray(X1, dtype=float), np.asarray(X2, dtype=float), lengthscales)
    return matern52_parts(r2)[0]


def matern52_parts(r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel and its derivative factor as functions of the squared scaled distance.

    Args:
        r2: Squared scaled distances, any shape.

    Returns:
        ``(k, a)``, both of the shape of ``r2``: ``k = (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)``
        the unit-variance kernel and ``a = (1 + sqrt5 r) exp(-sqrt5 r)``, so that
        ``dk / d(r^2) = -5/6 a`` (finite at ``r = 0``).
    """
    # NOTE(gp): in place, three arrays instead of ten: on the (m, n) blocks of a screen, fresh
    # arrays cost more in page faults than the arithmetic (measured 3x). Same operations, in
    # the same order, as (1 + s5r + 5/3 r2) e and (1 + s5r) e.
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
    # NOTE(gp): Differences are formed per dimension instead of via |a|^2 + |b|^2 - 2 a.b, whose
    # cancellation loses all accuracy of r near zero (exactly where posterior variances and
    # their gradients are most sensitive). Small blocks in 4 or more dimensions (an
    # optimizer's few points against the observations) are formed in one (n1, n2, D) array,
    # where a loop over D costs more in numpy's per-call overhead than in arithmetic; others
    # loop over D in place, keeping memory at (n1, n2).
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
