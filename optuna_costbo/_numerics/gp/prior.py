"""Weak priors of the GP hyperparameters: the "P" of the MAP fit in :mod:`.fit`."""

from __future__ import annotations

from collections.abc import Callable
import math

import numpy as np


LogPrior = Callable[[np.ndarray], tuple[float, np.ndarray]]
"""``theta (D+2,) -> (value, grad (D+2,))``: a negative log-prior of the packed parameters."""

# NOTE(gp): the priors of Optuna's GPSampler (optuna/_gp/prior.py), as penalties in nats:
# w (ls^2 + ls^-2) per lengthscale (smallest at the box's width), Gamma(2, 1) on the signal and
# Gamma(1.1, 30) on the noise variance (data are not explained as noise, yet interpolated), a
# N(0, 1) constant mean; docs/design-decisions.md, "The lengthscale prior".
LENGTHSCALE_PRIOR_WEIGHT: float = 0.1
_SIGNAL_GAMMA = (2.0, 1.0)  # (concentration, rate)
_NOISE_GAMMA = (1.1, 30.0)  # (concentration, rate)
MEAN_PRIOR_VAR: float = 1.0


def log_prior(log_params: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative log-prior (up to a constant) of theta (D+2,) and its gradient (D+2,); the
    mean's N(0, MEAN_PRIOR_VAR) prior is added by the fit, since the mean is not packed."""
    theta = np.asarray(log_params, dtype=float)  # (D+2,)
    D = theta.shape[0] - 2
    # NOTE(gp): clipped by maximum and minimum, np.clip's values without its per-call cost
    # (the two differ only in the sign of a zero, which exp does not see).
    up = np.exp(np.minimum(np.maximum(2.0 * theta[:D], -700.0), 700.0))  # (D,) ls^2
    down = np.exp(np.minimum(np.maximum(-2.0 * theta[:D], -700.0), 700.0))  # (D,) ls^-2
    s2 = math.exp(theta[D])
    noise = math.exp(theta[D + 1])
    a_s, b_s = _SIGNAL_GAMMA
    a_n, b_n = _NOISE_GAMMA
    value = (
        LENGTHSCALE_PRIOR_WEIGHT * float(np.sum(up + down))
        - (a_s - 1.0) * theta[D]
        + b_s * s2
        - (a_n - 1.0) * theta[D + 1]
        + b_n * noise
    )
    grad = np.empty(D + 2)  # (D+2,)
    grad[:D] = 2.0 * LENGTHSCALE_PRIOR_WEIGHT * (up - down)
    grad[D] = -(a_s - 1.0) + b_s * s2
    grad[D + 1] = -(a_n - 1.0) + b_n * noise
    return float(value), grad
