"""Quasi-Monte Carlo EHVI over the non-dominated boxes: the second reference, beside brute-force
Monte Carlo, that the exact EHVI of ``optuna_costbo._numerics.acquisition.ehvi`` is checked
against (Daulton et al., NeurIPS 2020: the form that extends to correlated outcomes and
batches)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm
from scipy.stats import qmc

from optuna_costbo._numerics.acquisition.ehvi import _check
from optuna_costbo._numerics.acquisition.ehvi import _chunks


_OVERLAP_FLOOR = 1e-300  # each per-objective overlap's floor in log_ehvi_qmc


def normal_base_samples(n_samples: int, m: int, seed: int = 0) -> np.ndarray:
    """Fixed standard-normal QMC draws: scrambled Sobol points through the normal quantile.

    Args:
        n_samples: Number of draws, a power of 2 (Sobol's balance holds at powers of 2).
        m: Number of objectives.
        seed: Seed of the scrambling; the same seed gives the same draws.

    Returns:
        Draws (n_samples, m); an acquisition built on them is deterministic.
    """
    if n_samples < 1 or n_samples & (n_samples - 1):
        raise ValueError(f"n_samples must be a power of 2, got {n_samples}")
    u = qmc.Sobol(d=m, scramble=True, seed=seed).random_base2(int(math.log2(n_samples)))
    draws: np.ndarray = norm.ppf(np.clip(u, 1e-12, 1.0 - 1e-12))  # (n_samples, m)
    return draws


def _overlaps(
    mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray, base: np.ndarray
) -> np.ndarray:
    """``(u_bj - max(l_bj, y_sj))_+`` for the draws ``y = mean + std * base``: (n, S, B, m)."""
    y = mean[:, None, :] + std[:, None, :] * base[None]  # (n, S, m)
    out: np.ndarray = np.clip(upper - np.maximum(lower, y[:, :, None, :]), 0.0, None)
    return out


def _check_base(base: np.ndarray, m: int) -> np.ndarray:
    """``base`` as a float (S, m) array of finite draws."""
    base = np.asarray(base, dtype=float)
    if base.ndim != 2 or base.shape[1] != m or not np.all(np.isfinite(base)):
        raise ValueError(f"base must be a finite (S, {m}) array, got shape {base.shape}")
    return base


def ehvi_qmc(
    mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray, base: np.ndarray
) -> np.ndarray:
    """EHVI estimated by quasi-Monte Carlo: the mean HVI over the draws, (n,).

    Args:
        mean, std, lower, upper: As :func:`log_ehvi`.
        base: Standard-normal draws (S, m), e.g. :func:`normal_base_samples`; fixed draws
            make the estimate deterministic in ``mean`` and ``std``.
    """
    mean, std, lower, upper = _check(mean, std, lower, upper)
    base = _check_base(base, mean.shape[1])
    n, m = mean.shape
    out = np.empty(n)  # (n,)
    step = _chunks(n, len(base) * len(lower) * m).step
    for start in range(0, n, step):
        sl = slice(start, start + step)
        hvi = _overlaps(mean[sl], std[sl], lower, upper, base).prod(axis=3).sum(axis=2)  # (c, S)
        out[sl] = hvi.mean(axis=1)
    return out


def log_ehvi_qmc(
    mean: np.ndarray, std: np.ndarray, lower: np.ndarray, upper: np.ndarray, base: np.ndarray
) -> np.ndarray:
    """log of the QMC EHVI with each per-objective overlap floored at 1e-300: (n,), finite.

    ``log mean_s sum_b prod_j max(overlap_sbj, 1e-300)``, formed as log-sum-exps; it exceeds
    ``log ehvi_qmc`` by a relative ``B * 1e-300``-order amount wherever that is not tiny.
    Arguments as :func:`ehvi_qmc`.
    """
    mean, std, lower, upper = _check(mean, std, lower, upper)
    base = _check_base(base, mean.shape[1])
    n, m = mean.shape
    out = np.empty(n)  # (n,)
    step = _chunks(n, len(base) * len(lower) * m).step
    for start in range(0, n, step):
        sl = slice(start, start + step)
        overlap = _overlaps(mean[sl], std[sl], lower, upper, base)  # (c, S, B, m)
        log_hvi = logsumexp(np.log(np.maximum(overlap, _OVERLAP_FLOOR)).sum(axis=3), axis=2)
        out[sl] = logsumexp(log_hvi, axis=1) - math.log(len(base))  # (c,)
    return out
