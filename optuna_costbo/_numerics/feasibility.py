"""Constraints: one GP per constraint and the probability that a point is feasible.

A trial is feasible when every constraint value is <= 0 (Optuna's convention). Each constraint
gets a GP fitted to its observed values; with independent posteriors, the probability of
feasibility is

    PF(x) = prod_i Phi(-mu_i(x) / sigma_i(x)),

and acquisitions are weighted by it (EI * PF, in log space log EI + log PF), the constrained
EI of Gardner et al. ("Bayesian optimization with inequality constraints", ICML 2014) that
Optuna's GPSampler uses too. Until a feasible point is known, PF alone is maximized.

This module imports only numpy and scipy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import log_ndtr

from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel


__all__ = [
    "COMPLETION_MEMORY",
    "Feasibility",
    "completion_weights",
    "discounted",
    "feasible_rows",
    "fit_constraints",
    "recency_weights",
    "with_completion",
]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)

COMPLETION_MEMORY = 0.25
"""The completion model's memory as a share of the study's trials: a label ``a`` trials old
weighs ``exp(-a / (COMPLETION_MEMORY * n))`` (:func:`recency_weights`)."""

MIN_MEMORY_TRIALS = 10.0
"""The completion model's memory in trials is never shorter than this."""


def feasible_rows(C: np.ndarray) -> np.ndarray:
    """Which observations are feasible, every constraint value <= 0 (NaN: not), (n,) bool."""
    out: np.ndarray = np.all(np.nan_to_num(C, nan=np.inf) <= 0.0, axis=1)
    return out


def with_completion(C: np.ndarray | None, stopped: np.ndarray | None) -> np.ndarray | None:
    """The constraint values with completion as one more constraint (the last column), (n, k+1):
    +1 where a pruner stopped the trial, -1 where it completed; ``C`` as it is when no trial
    was stopped.

    NOTE(pruning): only a COMPLETE trial can be the study's best, so a proposal's expected
    improvement is realized only if the pruner lets it complete: the acquisitions are weighted
    by the probability of completing, the probability of feasibility of this constraint, whose
    GP regresses the +-1 labels (least-squares classification, Rasmussen and Williams 2006,
    6.5). Without it, a region the pruner stops at its first steps stays promising to a model
    that learns little from a trial stopped that early, and cheap (the pruner stops it fast):
    the sampler proposed near repeats of pruned trials for most of a run in 7 of 30 runs of
    the default with MedianPruner on the tuning problems (up to 304 of 400 trials).
    """
    if stopped is None or not np.any(stopped):
        return C
    label = np.where(stopped, 1.0, -1.0)[:, None]  # (n, 1)
    return label if C is None else np.hstack([C, label])


def recency_weights(
    n: int, memory: float = COMPLETION_MEMORY, min_trials: float = MIN_MEMORY_TRIALS
) -> np.ndarray:  # (n,)
    """``exp(-age / tau)`` for observations in the order they were made (age ``n - 1 - i``),
    ``tau = max(memory * n, min_trials)``: the newest weighs 1.

    NOTE(pruning): whether a pruner lets a trial complete drifts during a study. MedianPruner
    compares a trial's report with the median of the COMPLETE trials' reports at that step,
    and that bar tightens as the sampler finds better trials, so the start-up design's
    completions say little about what completes later. Measured with every label alike, the
    completion model expected 113 completions where 53 came (lcbench 7593, MedianPruner;
    ``benchmarks/results/pruning/completion_calibration.md``).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not (np.isfinite(memory) and memory > 0.0 and np.isfinite(min_trials) and min_trials > 0):
        raise ValueError(f"memory and min_trials must be positive, got {memory}, {min_trials}")
    tau = max(memory * n, min_trials)
    age = np.arange(n - 1, -1, -1, dtype=float)  # (n,)
    out: np.ndarray = np.exp(-age / tau)
    return out


def completion_weights(
    stopped: np.ndarray, memory: float = COMPLETION_MEMORY, min_trials: float = MIN_MEMORY_TRIALS
) -> np.ndarray:  # (n,)
    """The weights of the completion labels (:func:`with_completion`) of trials in the order
    they were made, ``stopped`` (n,) bool: a completed trial's label is discounted by its age
    (:func:`recency_weights`), a stopped trial's keeps its full weight.

    NOTE(pruning): the drift goes one way. A pruner whose bar tightens (MedianPruner's median
    of COMPLETE trials, a percentile, a successive-halving rung filling with better trials)
    stops later what it let complete before, while what it stopped it would stop again; so an
    old completion is weak evidence and an old stop is not. Discounting stops as well would
    reopen the regions the completion weighting closed (near repeats of pruned trials).
    """
    stopped = np.asarray(stopped, dtype=bool)  # (n,)
    out: np.ndarray = np.where(stopped, 1.0, recency_weights(len(stopped), memory, min_trials))
    return out


def discounted(model: GPModel, weight: np.ndarray) -> GPModel:
    """``model``'s GP with each observation discounted by ``weight`` (n,) in (0, 1]: its noise
    variance grows by ``(1 / w - 1)`` times the prior variance of one observation
    (``signal_var + noise_var``), so a weight of 1 leaves it as fitted and a small weight
    makes it a faint observation; the constant mean is profiled again under those variances
    (generalized least squares), so the old labels do not set the level either.

    NOTE: the kernel's hyperparameters are kept from the fit on the undiscounted labels (the
    discount changes which labels count, not how smooth the function is).
    """
    w = np.asarray(weight, dtype=float)  # (n,)
    if w.shape != (model.n,) or not np.all((w > 0.0) & (w <= 1.0)):
        raise ValueError(f"weight must be {model.n} values in (0, 1], got {weight!r}")
    h = model.hyper
    extra = (1.0 / w - 1.0) * (h.signal_var + h.noise_var) * model.y_std**2  # (n,)

    return GPModel(
        model.X, model.y, h, y_mean=model.y_mean, y_std=model.y_std, extra_noise=extra
    ).with_gls_mean()


class Feasibility:
    """The probability of feasibility under independent GPs of the constraints.

    Args:
        models: One GP per constraint, on the same box as the objective model.
    """

    def __init__(self, models: Sequence[GPModel]) -> None:
        self.models = list(models)

    @property
    def hypers(self) -> tuple[GPHyperparams, ...]:
        return tuple(m.hyper for m in self.models)

    def log_pf(self, Z: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        """``log PF`` at Z (m, D), (m,), and its gradient (m, D) if asked."""
        total = np.zeros(len(Z))  # (m,)
        grad = np.zeros(Z.shape) if return_grad else None  # (m, D)
        for model in self.models:
            if not return_grad:
                mean, var = model.predict(Z)
            else:
                mean, var, dmean, dvar = model.predict(Z, return_grad=True)
            sd = np.sqrt(var)
            u = -mean / sd  # (m,)
            log_phi_cdf = log_ndtr(u)
            total += log_phi_cdf
            if grad is not None:
                # d log Phi(u) / du = phi(u) / Phi(u), formed in log space (no underflow).
                ratio = np.exp(-0.5 * u * u - _LOG_SQRT_2PI - log_phi_cdf)  # (m,)
                du = -dmean / sd[:, None] - (u / (2.0 * var))[:, None] * dvar  # (m, D)
                grad += ratio[:, None] * du
        return (total,) if grad is None else (total, grad)

    def pf(self, Z: np.ndarray) -> np.ndarray:
        """The probability of feasibility at Z (m, D): (m,)."""
        out: np.ndarray = np.exp(self.log_pf(Z)[0])
        return out


def fit_constraints(
    X: np.ndarray,  # (n, D)
    C: np.ndarray,  # (n, k), NaN where a constraint is not known
    rng: np.random.Generator,
    warm: Sequence[GPHyperparams | None] | None = None,
    *,
    restarts: bool = True,
    weights: Sequence[np.ndarray | None] | None = None,
) -> Feasibility:
    """A GP per constraint, each fitted to the rows where its value is known.

    ``warm``: the last fits' hyperparameters, to start from; ``restarts``: add random restarts
    (the full route) or not (a quick refit); ``weights``: per constraint, None or the (n,)
    weights in (0, 1] of its observations (:func:`discounted`).
    """
    models = []
    for i in range(C.shape[1]):
        known = np.isfinite(C[:, i])
        if not known.any():  # no value of it yet: it constrains nothing
            continue
        start = warm[i] if warm is not None and i < len(warm) else None
        model = fit_gp(
            X[known],
            C[known, i],
            rng=rng,
            n_restarts=3 if restarts and start is None else 0,
            warm_start=start if start is not None and start.dim == X.shape[1] else None,
            max_points=256,
        )
        weight = weights[i] if weights is not None and i < len(weights) else None
        models.append(model if weight is None else discounted(model, np.asarray(weight)[known]))
    return Feasibility(models)
