"""Weak priors of the GP hyperparameters: the "P" of the MAP fit in :mod:`.fit`."""

from __future__ import annotations

from collections.abc import Callable
import math

import numpy as np


LogPrior = Callable[[np.ndarray], tuple[float, np.ndarray]]
"""``theta (D+2,) -> (value, grad (D+2,))``: a negative log-prior of the packed parameters."""

# NOTE(gp): Lengthscale prior: a penalty of LENGTHSCALE_PRIOR_WEIGHT * (ls^2 + ls^-2) nats per
# dimension, i.e. 0.1 / q + 0.1 q on the inverse squared lengthscale q = ls^-2, the form of
# Optuna's GPSampler (optuna/_gp/prior.py). It is smallest at ls = 1 (the width of the box)
# and costs 10 nats at ls = 0.1 or 10, so neither very wiggly nor almost linear fits are cheap.
# Why not the dimension-scaled log-normal prior of Hvarfner et al. (ICML 2024): see
# docs/design-decisions.md, "The lengthscale prior".
#: Weight of the lengthscale penalty ``w * (ls^2 + ls^-2)`` per dimension, in nats.
LENGTHSCALE_PRIOR_WEIGHT: float = 0.1
# NOTE(gp): Signal-variance and noise priors follow Optuna's GPSampler
# (optuna/_gp/prior.py): Gamma(2, 1) on the signal variance (mode 1, the variance of
# standardized data) and Gamma(1.1, 30) on the noise variance. Both are written as penalties on
# the variance itself (no log-Jacobian), so the noise penalty is -0.1 log(noise) + 30 noise: it
# strongly discourages explaining the data as noise (noise ~ 1 costs ~30 nats), but moving the
# noise from 3e-3 down to the 1e-6 floor costs < 1 nat, so deterministic objectives are still
# interpolated. Without these, ML-II for small n often picks the degenerate "all noise" or
# "tiny signal, lengthscale at a bound" optima.
_SIGNAL_GAMMA = (2.0, 1.0)  # (concentration, rate)
_NOISE_GAMMA = (1.1, 30.0)  # (concentration, rate)
# NOTE(gp): The constant mean gets a N(0, 1) prior in standardized units. It keeps the profiled
# (closed-form) mean finite and near the sample mean when 1^T K^-1 1 is tiny (e.g. very short
# lengthscales), where the pure GLS estimate is ill-determined.
#: Variance of the Gaussian prior on the constant mean (standardized units).
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
