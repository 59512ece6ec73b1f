"""A trial stopped early as a right-censored observation: its value replaced by the posterior
mean given its bound, ``E[Y | Y >= b]`` under a GP of the completed trials.

NOTE: one step of data augmentation (a single E-step), not a censored-likelihood GP.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erfcx

from optuna_costbo._numerics.gp.model import GPModel


__all__ = ["impute_censored", "truncated_mean"]

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
