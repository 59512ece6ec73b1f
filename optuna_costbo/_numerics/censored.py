"""A trial stopped early as a right-censored observation: its value replaced by the posterior
mean given its bound, ``E[Y | Y >= b]`` under a GP of the completed trials.

NOTE: one step of data augmentation (a single E-step), not a censored-likelihood GP.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erfcx

from optuna_costbo._numerics.gp.model import GPModel


_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def truncated_mean(mean: np.ndarray, sd: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """``E[Y | Y >= lower]`` for ``Y ~ N(mean, sd^2)``, elementwise; the inverse Mills ratio
    through ``erfcx`` stays accurate far in the upper tail (scipy's truncnorm.mean is slower)."""
    mean = np.asarray(mean, dtype=float)
    sd = np.asarray(sd, dtype=float)
    a = (np.asarray(lower, dtype=float) - mean) / sd
    out: np.ndarray = mean + sd * _SQRT_2_OVER_PI / erfcx(a / _SQRT2)
    return out


def impute_censored(model: GPModel, X: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """The posterior mean of each censored observation at X (c, D) given its bound (c,), under
    ``model``, a GP of the exact observations: (c,); a bound of -inf: the value is unknown."""
    mean, var = model.predict(X)  # (c,), (c,): the latent function
    noise = model.hyper.noise_var * model.y_std**2  # observation noise, original units
    sd = np.sqrt(np.maximum(var + noise, 1e-300))  # (c,)
    return truncated_mean(mean, sd, lower)


def finite_values(y: np.ndarray) -> np.ndarray:
    """y (n,) with +-inf replaced by the largest / smallest finite value (GPSampler's clip)."""
    finite = np.isfinite(y)
    if finite.all():
        return y
    if not finite.any():
        return np.zeros_like(y)
    out: np.ndarray = np.clip(y, y[finite].min(), y[finite].max())
    return out


def censoring(y_lower: np.ndarray | None, failed: np.ndarray) -> np.ndarray | None:
    """The bounds of censored observations (n,): NaN where exact, -inf where the value is
    unknown (``failed``, (n,): +inf); None while every value counts as exact (no bounds, or
    fewer than 2 exact ones).

    NOTE(inf): a +inf value clipped to the largest finite one is a spike that kept the search
    from its neighbourhood; it is a failure to avoid (the feasibility models' +1 label) and,
    for the objective model, no value at all.
    """
    lower = y_lower
    if failed.any():
        lower = np.full(len(failed), np.nan) if lower is None else lower.copy()
        lower[failed] = -np.inf
    if lower is None:
        return None
    censored = np.isfinite(lower) | np.isneginf(lower)  # (n,)
    if not censored.any() or int((~censored).sum()) < 2:
        return None
    return lower
