"""Learning curves as GPs over steps: a stopped trial's final value from its own reports.

Freeze-thaw Bayesian optimization (Swersky, Snoek & Adams 2014, "Freeze-Thaw Bayesian
Optimization", eq. 4-5) models each learning curve as its level plus a decay drawn from a GP
with the exponential-decay kernel

    k(t, t') = amplitude * (beta / (t + t' + beta)) ** alpha,

the covariance of an infinite mixture of decays ``exp(-lambda t)`` with a Gamma(alpha, beta)
weight on the rates; each report adds independent noise of variance ``noise``. The curves are
independent given their levels. Here the curve model has one job: a trial a pruner stopped at
step ``s`` gives a Gaussian *measurement* of its final value ``y(T)`` (``T``: the last step of
the completed curves), which the objective GP over the search space takes as an observation
with extra noise variance.

With a flat prior on the curve's level, the posterior of ``y(T)`` (noise-free) given the
curve's reports ``y_o`` at steps ``t_o`` is the universal-kriging predictor with an unknown
constant mean (Cressie 1993, 3.4.5):

    S = K(t_o, t_o) + noise I,   k = K(t_o, T),   m = 1' S^-1 y_o / 1' S^-1 1
    mean = m + k' S^-1 (y_o - m 1)
    var  = K(T, T) - k' S^-1 k + (1 - 1' S^-1 k)^2 / (1' S^-1 1)

Since a flat level makes ``y(T)``'s prior flat too, this posterior is proportional to the
likelihood of the reports as a function of ``y(T)``: multiplying it into the objective GP's
prior over the search space is exact Bayesian conditioning (a Gaussian observation of the
final value with variance ``var``), not an approximation. A curve stopped after one report
says little (``var`` about the decay's variance between that step and ``T``); a curve stopped
near ``T`` pins its final value.

The kernel's hyperparameters are fitted by restricted maximum likelihood (the level
integrated out under its flat prior) over the curves that have at least three reports.

This module imports only numpy and the package's curve bookkeeping and L-BFGS-B driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np

from optuna_costbo._numerics.curves import Curve
from optuna_costbo._numerics.curves import StoppedCurves
from optuna_costbo._numerics.curves import median_moves
from optuna_costbo._numerics.lbfgsb import lbfgsb_minimize


__all__ = [
    "CurveKernel",
    "decay_kernel",
    "final_measurements",
    "fit_curve_kernel",
    "measured_values",
]

# NOTE(freeze-thaw): the fit reads at most this many curves, each thinned to at most this many
# reports (its first and last kept): about 40 x 12 values pin four hyperparameters, and the
# fit runs on every suggestion of a pruned study (a few ms at these sizes).
_FIT_CURVES = 40
_FIT_REPORTS = 12
# Bounds of the log hyperparameters (time in units of T, values standardized):
# log amplitude, log alpha, log beta, log noise, log drift_var.
_BOUNDS = np.log(
    np.array([[1e-4, 1e2], [0.05, 20.0], [1e-3, 10.0], [1e-6, 1.0], [1e-4, 10.0]])
)  # (5, 2)
_X0 = np.log(np.array([1.0, 1.0, 0.1, 1e-2, 0.1]))  # (5,)


@dataclass(frozen=True)
class CurveKernel:
    """The exponential-decay kernel over steps, in the units of the curves it was fitted to.

    Attributes:
        amplitude: The decay's prior variance at ``t = 0`` (values' units squared), > 0.
        alpha: The Gamma weight's shape, > 0.
        beta: The Gamma weight's rate, in steps, > 0.
        noise: The variance of each report's own noise (values' units squared), > 0.
        drift_var: The variance of each curve's own scale of the study's typical move to the
            end (unitless, >= 0): with drift ``d(t)`` (0 at the final step), the covariance
            gains ``drift_var * d(t) d(t')``, a curve falling ``(1 + e) d(t)`` with
            ``e ~ N(0, drift_var)``. 0 without a drift.
    """

    amplitude: float
    alpha: float
    beta: float
    noise: float
    drift_var: float = 0.0


def decay_kernel(t: np.ndarray, u: np.ndarray, kernel: CurveKernel) -> np.ndarray:
    """``amplitude * (beta / (t + u + beta)) ** alpha`` for every pair, (..., k, m) from steps
    (..., k) and (..., m)."""
    s = t[..., :, None] + u[..., None, :] + kernel.beta  # (..., k, m)
    out: np.ndarray = kernel.amplitude * np.exp(kernel.alpha * (math.log(kernel.beta) - np.log(s)))
    return out


def _thin(curve: Curve, most: int) -> Curve:
    """At most ``most`` reports of the curve, evenly spread, its first and last kept."""
    steps, values = curve
    if len(steps) <= most:
        return steps, values
    idx = np.unique(np.round(np.linspace(0, len(steps) - 1, most)).astype(int))  # (<= most,)
    return steps[idx], values[idx]


def _stack(
    curves: Sequence[Curve], drifts: Sequence[np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The curves padded to one length: steps (c, k), values (c, k), a mask (c, k) of the
    real reports and each report's drift (c, k), zeros without ``drifts``. Padded entries are
    steps 0, values 0, drift 0."""
    k = max(len(c[0]) for c in curves)
    t = np.zeros((len(curves), k))  # (c, k)
    y = np.zeros((len(curves), k))  # (c, k)
    d = np.zeros((len(curves), k))  # (c, k)
    mask = np.zeros((len(curves), k), dtype=bool)  # (c, k)
    for i, (steps, values) in enumerate(curves):
        t[i, : len(steps)] = steps
        y[i, : len(steps)] = values
        mask[i, : len(steps)] = True
        if drifts is not None:
            d[i, : len(steps)] = drifts[i]
    return t, y, mask, d


def _covariances(
    t: np.ndarray, mask: np.ndarray, d: np.ndarray, kernel: CurveKernel
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reports' covariance with the pads made an identity block (c, k, k), its decay part
    and its drift part ``d d'`` (unscaled), both with the pads zeroed (c, k, k). The pads then
    leave every quadratic form, determinant and trace of the real reports unchanged."""
    pair = mask[:, :, None] & mask[:, None, :]  # (c, k, k)
    K = np.where(pair, decay_kernel(t, t, kernel), 0.0)  # (c, k, k)
    D = d[:, :, None] * d[:, None, :]  # (c, k, k), zero on pads
    S = K + kernel.drift_var * D
    diag = np.arange(t.shape[1])
    S[:, diag, diag] += np.where(mask, kernel.noise, 1.0)
    return S, K, D


def _neg_restricted_loglik(
    theta: np.ndarray, t: np.ndarray, y: np.ndarray, mask: np.ndarray, d: np.ndarray
) -> tuple[float, np.ndarray]:
    """The negative restricted log likelihood of the curves (each with its own flat level) and
    its gradient in the log hyperparameters ``theta`` (5,: amplitude, alpha, beta, noise and
    drift_var; 4,: drift_var 0).

    Per curve, with ``P = S^-1 - S^-1 1 1' S^-1 / (1' S^-1 1)`` (the level integrated out):
    ``-2 log L = y' P y + log|S| + log(1' S^-1 1) + const``, and
    ``d(-log L) = -(1/2) (P y)' dS (P y) + (1/2) tr(P dS)``.
    """
    amplitude, alpha, beta, noise = np.exp(theta[:4])
    drift_var = float(np.exp(theta[4])) if len(theta) > 4 else 0.0
    kernel = CurveKernel(float(amplitude), float(alpha), float(beta), float(noise), drift_var)
    S, K, D = _covariances(t, mask, d, kernel)  # (c, k, k) each
    ones = mask.astype(float)  # (c, k): the level enters the real reports only
    L = np.linalg.cholesky(S)  # (c, k, k)
    Sinv = np.linalg.inv(S)  # (c, k, k)
    Si1 = np.einsum("cij,cj->ci", Sinv, ones)  # (c, k)
    q = np.einsum("ci,ci->c", ones, Si1)  # (c,)
    P = Sinv - Si1[:, :, None] * Si1[:, None, :] / q[:, None, None]  # (c, k, k)
    Py = np.einsum("cij,cj->ci", P, y)  # (c, k)
    logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)  # (c,)
    value = 0.5 * float(np.sum(np.einsum("ci,ci->c", y, Py) + logdet + np.log(q)))
    # dS / d log hyperparameter, pads zero (c, k, k) each
    s = t[:, :, None] + t[:, None, :] + beta  # (c, k, k)
    d_amp = K
    d_alpha = K * alpha * (math.log(beta) - np.log(s))
    d_beta = K * alpha * (1.0 - beta / s)
    d_noise = np.zeros_like(K)
    diag = np.arange(t.shape[1])
    d_noise[:, diag, diag] = np.where(mask, noise, 0.0)
    parts = [d_amp, d_alpha, d_beta, d_noise] + ([drift_var * D] if len(theta) > 4 else [])
    grad = np.empty(len(theta))
    for j, dS in enumerate(parts):
        quad = np.einsum("ci,cij,cj->", Py, dS, Py)
        trace = np.einsum("cij,cji->", P, dS)
        grad[j] = -0.5 * quad + 0.5 * trace
    return value, grad


def fit_curve_kernel(
    curves: Sequence[Curve], drifts: Sequence[np.ndarray] | None = None
) -> CurveKernel | None:
    """The decay kernel fitted to ``curves`` by restricted maximum likelihood (with
    ``drifts``, (k,) per curve, its ``drift_var`` too); None when fewer than two curves have
    at least three reports (too little to tell decay from noise).

    The steps are read in units of the last step of all curves and the values standardized
    (by their standard deviation over every report used), then the fitted kernel is given back
    in the curves' own units.

    Args:
        curves: Learning curves (steps increasing, values finite), completed or stopped.
        drifts: The study's typical move to the end at each report of each curve, or None.
    """
    usable = [i for i, c in enumerate(curves) if len(c[0]) >= 3]
    if len(usable) < 2:
        return None
    if len(usable) > _FIT_CURVES:
        pick = np.round(np.linspace(0, len(usable) - 1, _FIT_CURVES)).astype(int)
        usable = [usable[i] for i in pick]
    thinned = [_thin(curves[i], _FIT_REPORTS) for i in usable]
    horizon = max(float(c[0][-1]) for c in curves)
    scale = float(np.std(np.concatenate([c[1] for c in thinned])))
    if not (horizon > 0.0 and scale > 0.0 and math.isfinite(scale)):
        return None
    scaled_drifts = None
    if drifts is not None:
        scaled_drifts = [_thin((curves[i][0], drifts[i]), _FIT_REPORTS)[1] / scale for i in usable]
    t, y, mask, d = _stack([(c[0] / horizon, c[1] / scale) for c in thinned], scaled_drifts)
    n_theta = 5 if drifts is not None else 4
    try:
        theta, _ = lbfgsb_minimize(
            lambda th: _neg_restricted_loglik(th, t, y, mask, d),
            _X0[:n_theta].copy(),
            _BOUNDS[:n_theta],
        )
    except np.linalg.LinAlgError:
        return None
    amplitude, alpha, beta, noise = np.exp(theta[:4])
    return CurveKernel(
        amplitude=float(amplitude) * scale**2,
        alpha=float(alpha),
        beta=float(beta) * horizon,
        noise=float(noise) * scale**2,
        drift_var=float(np.exp(theta[4])) if drifts is not None else 0.0,
    )


def final_measurements(
    stopped: Sequence[Curve],
    kernel: CurveKernel,
    final_step: float,
    drifts: Sequence[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each stopped curve's final value ``y(final_step)`` as a Gaussian measurement: its mean
    (p,) and variance (p,) given the curve's reports, with a flat prior on the curve's level
    (the universal-kriging predictor of the module docstring).

    Args:
        stopped: The curves (at least one report each, steps at most ``final_step``).
        kernel: The decay kernel, in the curves' units.
        final_step: The step whose value is the trial's final value.
        drifts: The study's typical move to the end at each report (k,) per curve, 0 at
            ``final_step`` (so the drift term adds nothing to the final value's covariances).
    """
    if not stopped:
        return np.empty(0), np.empty(0)
    t, y, mask, d = _stack(stopped, drifts)  # (p, k) each
    S, _, _ = _covariances(t, mask, d, kernel)  # (p, k, k)
    ones = mask.astype(float)  # (p, k)
    T = np.full((len(stopped), 1), float(final_step))  # (p, 1)
    k = np.where(mask, decay_kernel(t, T, kernel)[:, :, 0], 0.0)  # (p, k)
    kTT = decay_kernel(T, T, kernel)[:, 0, 0]  # (p,)
    rhs = np.stack([ones, k, y], axis=2)  # (p, k, 3)
    sol = np.linalg.solve(S, rhs)  # (p, k, 3): S^-1 1, S^-1 k, S^-1 y
    q = np.einsum("ci,ci->c", ones, sol[:, :, 0])  # (p,) 1' S^-1 1
    level = np.einsum("ci,ci->c", ones, sol[:, :, 2]) / q  # (p,)
    resid = y - level[:, None] * ones  # (p, k)
    mean = level + np.einsum("ci,ci->c", sol[:, :, 1], resid)  # k' S^-1 (y - m 1)
    kSk = np.einsum("ci,ci->c", k, sol[:, :, 1])  # (p,)
    oSk = np.einsum("ci,ci->c", ones, sol[:, :, 1])  # (p,)
    var = kTT - kSk + (1.0 - oSk) ** 2 / q  # (p,)
    floor = 1e-12 * (kernel.amplitude + kernel.noise)
    return mean, np.maximum(var, floor)


def measured_values(y: np.ndarray, curves: StoppedCurves) -> tuple[np.ndarray, np.ndarray] | None:
    """The observations' values with each stopped trial's at its curve's measurement of its
    final value (n,), and each value's variance beyond the model's noise (n,), 0 where exact;
    None where the curves cannot fit their kernel (:func:`fit_curve_kernel`).

    NOTE(freeze-thaw): the curves are first shifted by the completed curves' median move from
    each step to the end (:func:`.curves.median_moves`), so that each report alone is the
    median imputation of the final value, and the kernel models how a curve departs from the
    study's typical shape: by its own scale of that move (``drift_var``) and by a decay.
    Swersky et al.'s decays have mean zero: alone, a curve stopped after a few falling reports
    is measured near its last report, while the study's completed curves say how much such
    curves still fall (``benchmarks/curve_measurements.py``: on curves of one shape the
    kernel alone errs by 0.018 against the median imputation's 0.012 and this route's 0.009).
    The final step is the last step of the completed curves (of every curve if none
    completed); each curve is read at most ``_FIT_REPORTS`` reports, evenly spread, first and
    last kept.

    Args:
        y: The observations' values (n,), the stopped trials' at any placeholder.
        curves: The curves of the completed and the stopped trials, and the stopped rows.
    """
    if not len(curves.stopped):
        return None
    complete = [_thin(c, _FIT_REPORTS) for c in curves.complete if len(c[0])]
    stopped = [_thin(c, _FIT_REPORTS) for c in curves.stopped]
    steps = np.unique(np.concatenate([c[0] for c in (*complete, *stopped)]))  # (s,)
    drift = median_moves(curves.complete, steps)  # (s,)

    moved = [drift[np.searchsorted(steps, c[0])] for c in (*complete, *stopped)]  # (k,) each
    shifted = [(c[0], c[1] + m) for c, m in zip((*complete, *stopped), moved, strict=True)]
    kernel = fit_curve_kernel(shifted, moved if complete else None)
    if kernel is None:
        return None
    final_step = max(float(c[0][-1]) for c in (complete or stopped))
    p = len(stopped)
    mean, var = final_measurements(shifted[-p:], kernel, final_step, moved[-p:])  # (p,) each
    out = np.array(y, dtype=float)  # (n,)
    extra = np.zeros(len(out))  # (n,)
    out[curves.rows], extra[curves.rows] = mean, var
    return out, extra
