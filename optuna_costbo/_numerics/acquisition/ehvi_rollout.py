"""The two-step rollout for several objectives: hypervolume-improvement rewards.

The counterpart of :mod:`.rollout_values` for a front (Lee et al., UAI 2021, with the
hypervolume improvement as the reward). For a first action ``a`` of a finite action set P,

    Lambda_2(a) = EHVI(a) + E_y[ max_{x in P} EHVI(x | D + (a, y)) ],

one trajectory draws the latent outcome ``y ~ N(mu(a), s(a)^2)`` of every objective (they are
independent), conditions each objective's posterior over P on it (a rank-one update: the
fantasy is noise-free, as the shipped single-objective rollout's), adds ``y`` to the front
and takes the last step of the base policy, the point of largest EHVI (the last step of the
single-objective rollout is EI). Both rewards are in closed form given the draw
(:func:`.ehvi.ehvi`), so the draws have m dimensions, one per objective, shared by every first
action (common random numbers).

A first action is valued as the shipped single-objective rollout values it: per unit of the
budget its plan consumes, cooled (the consumed cost to the power ``cost_exponent``), and by
the better of its prefixes (its own EHVI per unit cost, or the two-step rate).

This module imports only numpy and scipy.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc

from optuna_costbo._numerics.acquisition.ehvi import ehvi
from optuna_costbo._numerics.pareto import non_dominated_boxes


__all__ = ["hvi_rollout_values", "qmc_outcome_normals"]

# NOTE: a variance below this (relative to the prior's scale, which the caller's units fix) is
# a point the model already knows: its fantasy changes nothing and the update is skipped.
_TINY_VAR = 1e-300


def qmc_outcome_normals(n_samples: int, m: int, seed: int | np.random.Generator) -> np.ndarray:
    """Scrambled Sobol points through the normal inverse CDF: (n_samples, m), one column per
    objective."""
    k = max(int(n_samples) - 1, 0).bit_length()  # Sobol's balance needs a power of two
    u = qmc.Sobol(d=m, scramble=True, seed=seed).random_base2(k)[:n_samples]  # (N, m)
    out: np.ndarray = ndtri(np.clip(u, 1e-10, 1.0 - 1e-10))
    return out


def hvi_rollout_values(
    means: np.ndarray,  # (m, P) posterior means of the objectives over the action set
    covs: np.ndarray,  # (m, P, P) their joint posterior covariances
    observed: np.ndarray,  # (k, m) the feasible observations
    ref: np.ndarray,  # (m,) the reference point
    n_first: int,
    cost: np.ndarray,  # (P,) predicted cost of each action
    normals: np.ndarray,  # (N, m) standard normal draws
    cost_exponent: float,
    pf: np.ndarray | None = None,  # (P,) probability of feasibility
) -> np.ndarray:
    """log of the cooled rate of Lambda_2 for each first action ``P[:n_first]``: (n_first,).

    ``value(a) = max(log EHVI(a) - e log c(a), log Lambda_2(a) - e log(c(a) + E[c(x*)]))``
    with ``e = cost_exponent`` and ``x*`` the last step's choice. With ``pf``, every reward
    counts as much as its point is likely feasible, and a fantasy joins the front only as
    often as its first action is feasible (the other trajectories keep the front as it is).
    -inf where a first action's values underflow.
    """
    means = np.asarray(means, dtype=float)
    covs = np.asarray(covs, dtype=float)
    m, P = means.shape
    if covs.shape != (m, P, P):
        raise ValueError(f"covs must have shape {(m, P, P)}, got {covs.shape}")
    if not 1 <= n_first <= P:
        raise ValueError(f"n_first must be in [1, {P}], got {n_first}")
    normals = np.asarray(normals, dtype=float)
    if normals.ndim != 2 or normals.shape[1] != m:
        raise ValueError(f"normals must be an (N, {m}) array, got shape {normals.shape}")
    weight = np.ones(P) if pf is None else np.asarray(pf, dtype=float)  # (P,)
    var = np.maximum(np.diagonal(covs, axis1=1, axis2=2), 0.0)  # (m, P)
    lower, upper = non_dominated_boxes(observed, ref)  # (B, m) each

    def rewards(mu: np.ndarray, sd: np.ndarray, lo: np.ndarray, up: np.ndarray) -> np.ndarray:
        # mu, sd (m, P) -> EHVI x PF at every point of P, (P,)
        return ehvi(mu.T, sd.T, lo, up) * weight  # type: ignore[no-any-return]

    first_reward = rewards(means, np.sqrt(var), lower, upper)[:n_first]  # (n_first,)
    later_reward = np.zeros(n_first)  # (n_first,) E[max EHVI after the fantasy]
    later_cost = np.zeros(n_first)  # (n_first,) E[cost of the last step's choice]
    for a in range(n_first):
        s2 = var[:, a]  # (m,)
        known = s2 <= _TINY_VAR
        gain = np.where(known[:, None], 0.0, covs[:, :, a] / np.where(known, 1.0, s2)[:, None])
        var_after = np.maximum(var - gain * covs[:, :, a], 0.0)  # (m, P)
        sd_after = np.sqrt(var_after)  # (m, P)
        # Unchanged front (the first action infeasible): the same conditioned posterior, the
        # current boxes.
        stay = weight[a] < 1.0
        for z in normals:  # (m,)
            y = means[:, a] + np.sqrt(s2) * z  # (m,) the fantasy's latent outcome
            mu_after = means + gain * (y - means[:, a])[:, None]  # (m, P)
            lo, up = non_dominated_boxes(np.vstack([observed, y]), ref)
            r = rewards(mu_after, sd_after, lo, up)  # (P,)
            i = int(np.argmax(r))
            reward, paid = weight[a] * r[i], weight[a] * cost[i]
            if stay:
                r0 = rewards(mu_after, sd_after, lower, upper)  # (P,)
                j = int(np.argmax(r0))
                reward += (1.0 - weight[a]) * r0[j]
                paid += (1.0 - weight[a]) * cost[j]
            later_reward[a] += reward
            later_cost[a] += paid
    later_reward /= len(normals)
    later_cost /= len(normals)
    c0 = cost[:n_first]  # (n_first,)
    with np.errstate(divide="ignore"):
        one_step = np.log(first_reward) - cost_exponent * np.log(c0)
        two_steps = np.log(first_reward + later_reward) - cost_exponent * np.log(c0 + later_cost)
    out: np.ndarray = np.maximum(one_step, two_steps)
    return out
