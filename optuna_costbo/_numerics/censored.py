"""Trials stopped early as censored observations of the objective.

A trial a pruner stopped at step ``s`` with value ``v`` never reports a final value, but its
final value is bounded: no curve of the study moved further than the completed one that moved
the most from ``s`` to its end, so ``y >= b`` with ``b`` from :func:`.curves.final_bounds`.
Instead of an exact observation at a point estimate (the median imputation of
:func:`.curves.impute_finals`), the model can take the stopped trial as what it is, a
right-censored observation (for minimization): its value is replaced by the posterior mean
given the bound, ``E[Y | Y >= b]`` with ``Y ~ N(m, s^2)`` the predictive distribution (noise
included) of a GP fitted to the completed trials only. Where the completed trials already
predict a value above the bound, the stopped trial adds little beyond ``m``; where they
predict a better value than the bound allows, the stopped trial pulls the model up to
``b`` and beyond.

NOTE: this is one step of data augmentation (a single E-step), not a full censored-likelihood
GP (expectation propagation or Laplace over a probit-like likelihood, as in Gaussian process
survival models): hyperparameters come from the completed trials, and the imputed values are
then observed as exact. It needs no change of the GP and costs one extra prediction.

This module imports only numpy, scipy and the package's GP.
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
    """``E[Y | Y >= lower]`` for ``Y ~ N(mean, sd^2)``, elementwise (broadcast shapes).

    ``mean + sd * phi(a) / (1 - Phi(a))`` with ``a = (lower - mean) / sd``; the inverse Mills
    ratio is written with ``erfcx`` (``phi(a) / Phi(-a) = sqrt(2 / pi) / erfcx(a / sqrt 2)``),
    which stays accurate far in the upper tail (``a = 40``: 40.025) where ``1 - Phi`` rounds
    to zero. NOTE: scipy.stats.truncnorm.mean computes the same (the tests compare) but costs
    about 15 ms for 200 values against microseconds here, on every suggestion.

    Args:
        mean: Means of the untruncated normals.
        sd: Their standard deviations, > 0.
        lower: The truncation points (``-inf``: no truncation).
    """
    mean = np.asarray(mean, dtype=float)
    sd = np.asarray(sd, dtype=float)
    a = (np.asarray(lower, dtype=float) - mean) / sd
    out: np.ndarray = mean + sd * _SQRT_2_OVER_PI / erfcx(a / _SQRT2)
    return out


def impute_censored(model: GPModel, X: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """The posterior mean of each censored observation given its bound, (c,).

    Args:
        model: A GP of the exactly observed values (the completed trials).
        X: The censored observations' points, (c, D).
        lower: Their lower bounds (the value is at least this), (c,); -inf: none (the
            value is unknown, imputed at the model's prediction).
    """
    mean, var = model.predict(X)  # (c,), (c,): the latent function
    noise = model.hyper.noise_var * model.y_std**2  # observation noise, original units
    sd = np.sqrt(np.maximum(var + noise, 1e-300))  # (c,)
    return truncated_mean(mean, sd, lower)
