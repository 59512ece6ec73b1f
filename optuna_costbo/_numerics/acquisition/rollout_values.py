"""Lambda_h(x) = EI(x) + E[r_1 + ... + r_{h-1}] of the CMDP rollout (Lee et al., UAI 2021) on a
finite action set: rank-one fantasy updates over the set, common QMC draws for every action,
each checked against a plain one-trajectory-at-a-time reference in the tests.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import ndtr
from scipy.special import ndtri
from scipy.stats import qmc

from optuna_costbo._numerics.acquisition.ei import _INV_SQRT_2PI
from optuna_costbo._numerics.acquisition.ei import ei
from optuna_costbo._numerics.cost_model import COST_FLOOR


PairCost = Callable[[np.ndarray], np.ndarray]  # rows (k,) into P -> (k, |P|) costs of moving

_TINY_VAR = 1e-300
# NOTE: below this z, exp(-z^2 / 2) and ndtr(z) are exactly 0.0, so EI is exactly 0.0 (tested).
_Z_ZERO = -39.0


def qmc_normals(n_samples: int, horizon: int, seed: int | np.random.Generator) -> np.ndarray:
    """Scrambled Sobol normals (n_samples, max(h-1, 1)), one column per drawn step y_0..y_{h-2}
    (the last step's reward is in closed form)."""
    dim = max(horizon - 1, 1)
    # The next power of two (Sobol's balance), the first n_samples kept.
    m = max(int(n_samples) - 1, 0).bit_length()
    u = qmc.Sobol(d=dim, scramble=True, seed=seed).random_base2(m)[:n_samples]  # (N, h-1)
    u = np.clip(u, 1e-10, 1.0 - 1e-10)
    out: np.ndarray = ndtri(u)
    return out


def _take(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """a (B, N or 1, P), idx (B, N) -> (B, N): a[b, i, idx[b, i]] with broadcasting on N."""
    B, N = idx.shape
    rows = np.arange(B)[:, None]  # (B, 1)
    cols = np.arange(N)[None, :] if a.shape[1] != 1 else 0  # (1, N) or the one column
    out: np.ndarray = a[rows, cols, idx]
    return out


def rollout_values(
    mean: np.ndarray,  # (P,) posterior mean over the action set
    cov: np.ndarray,  # (P, P) joint posterior covariance of the latent objective
    noise_var: float,
    best: float,
    n_first: int,
    cost: np.ndarray | None,  # (P,) state-independent costs, or None with pair_cost
    tau: float,
    horizon: int,
    normals: np.ndarray,  # (N, max(h-1, 1))
    *,
    pair_cost: PairCost | None = None,
    first_cost: np.ndarray | None = None,  # (n_first,) cost of the first actions
    rate: bool = False,
    last_overruns: bool = False,
    cost_exponent: float = 1.0,
    feasible: np.ndarray | None = None,  # (P,) probability of feasibility
) -> np.ndarray:
    """Lambda_h (n_first,) of the first actions ``P[:n_first]``, -inf where unaffordable
    (minimization: rewards are improvements below ``best``; a step starts where the budget left
    covers its cost, or with ``last_overruns`` wherever budget is left).

    ``pair_cost``: state-dependent costs instead of ``cost`` (with ``first_cost``). ``rate``:
    the shipped value (docs/design-decisions.md, "The default acquisition"): fantasies on the
    latent value drawn (keeping the total variance), divided by the budget consumed (all of
    ``tau`` when the rest buys nothing) to the power ``cost_exponent``, the best over the
    trajectory's prefixes (Sidney's ratio rule). ``feasible`` (P,): improvements weighted by PF.
    """
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    if (cost is None) == (pair_cost is None):
        raise ValueError("give exactly one of cost and pair_cost")
    B = n_first
    P = mean.shape[0]
    N = normals.shape[0]
    if first_cost is None:
        if cost is None:
            raise ValueError("first_cost is required with pair_cost")
        first_cost = cost[:B]
    var0 = np.maximum(np.diag(cov), _TINY_VAR)  # (P,)
    ei0 = ei(mean[:B], var0[:B], best)  # (B,)
    if feasible is not None:
        ei0 = ei0 * feasible[:B]
    affordable0 = first_cost <= tau if not last_overruns else np.full(B, tau > 0.0)  # (B,)
    values = np.where(affordable0, ei0, -np.inf)  # (B,)
    if not affordable0.any():
        return values
    if horizon == 1:
        if not rate:
            return values
        left = (tau - first_cost)[:, None]  # (B, 1)
        consumed = _consumed(  # (B, 1)
            first_cost[:, None], left, np.arange(B)[:, None], np.ones_like(left, bool), tau,
            cost, pair_cost, last_overruns,
        )  # fmt: skip
        return np.where(affordable0, ei0 / consumed[:, 0] ** cost_exponent, -np.inf)

    # NOTE: the paper conditions a fantasy as a noisy observation (sd0 includes the noise); the
    # rate on the latent value itself, with a jitter that keeps the division finite.
    cond_noise = 1e-12 * float(np.max(var0)) if rate else noise_var
    # Step 0: draw y_0 at each first action and condition the whole action set on it.
    sd0 = np.sqrt(var0[:B] + cond_noise)  # (B,)
    y = mean[:B, None] + np.sqrt(var0[:B])[:, None] * normals[None, :, 0]  # (B, N)
    w = cov[:B, :] / sd0[:, None]  # (B, P)
    # (B, N, P), the sum formed in place: the same values as mean + w * u
    m = np.multiply(w[:, None, :], ((y - mean[:B, None]) / sd0[:, None])[..., None])
    m += mean
    v = np.maximum(var0[None, :] - w * w, _TINY_VAR)[:, None, :]  # (B, 1, P)
    W = [w[:, None, :]]  # low-rank factors of the conditioned covariance, each (B, N|1, P)
    ystar = np.minimum(best, y)  # (B, N)
    budget_left = np.broadcast_to((tau - first_cost)[:, None], (B, N)).copy()  # (B, N)
    prev = np.broadcast_to(np.arange(B)[:, None], (B, N))  # (B, N) index of the last action
    alive = np.broadcast_to(affordable0[:, None], (B, N)).copy()  # (B, N)
    total = np.zeros((B, N))  # (B, N) summed rewards of steps 1..h-1
    spent = np.broadcast_to(first_cost[:, None], (B, N)).copy()  # (B, N)
    prefix_rates = []  # (B,) each: the rate of the prefixes that end before the last step
    if rate:
        consumed0 = _consumed(spent, budget_left, prev, alive, tau, cost, pair_cost, last_overruns)
        prefix_rates.append(ei0 / consumed0.mean(axis=1) ** cost_exponent)

    for t in range(1, horizon):
        last = t == horizon - 1
        if pair_cost is None:
            assert cost is not None
            c_next = np.broadcast_to(cost, (B, N, P))
        else:
            uniq, inv = np.unique(prev, return_inverse=True)
            c_next = pair_cost(uniq)[inv.reshape(B, N)]  # (B, N, P)
        if last_overruns:
            # A step may start wherever budget is left: one mask per trajectory, (B, N, 1).
            afford = ((budget_left > 0.0) & alive)[..., None]
        else:
            afford = (c_next <= budget_left[..., None]) & alive[..., None]  # (B, N, P)
        j, gain_j = _base_policy(
            m, v, ystar, None if last else c_next, afford, feasible, spare_m=last
        )  # (B, N) each
        has = _take(afford, j) if afford.shape[-1] > 1 else afford[..., 0]  # (B, N)
        if last:
            total += np.where(has, gain_j, 0.0)
            if rate:
                step_cost = np.where(has, _take(c_next, j), 0.0)
                spent = spent + step_cost
                budget_left = budget_left - step_cost
                prev = np.where(has, j, prev)
                alive = alive & has
            break
        mj, vj = _take(m, j), _take(v, j)  # (B, N)
        yj = mj + np.sqrt(vj) * normals[None, :, t]  # (B, N)
        reward = np.maximum(ystar - yj, 0.0)  # (B, N)
        if feasible is not None:
            reward = reward * feasible[j]
        total += np.where(has, reward, 0.0)
        ystar = np.where(has, np.minimum(ystar, yj), ystar)
        # Column j of the conditioned covariance: cov[:, j] - sum_k W_k W_k[j].
        col = cov[j]  # (B, N, P)
        for Wk in W:
            col = col - Wk * _take(Wk, j)[..., None]
        sd = np.sqrt(vj + cond_noise)  # (B, N)
        wt = col / sd[..., None]  # (B, N, P)
        m = m + wt * ((yj - mj) / sd)[..., None]
        v = np.maximum(v - wt * wt, _TINY_VAR)
        W.append(wt)
        budget_left = budget_left - _take(c_next, j)
        spent = spent + np.where(has, _take(c_next, j), 0.0)
        prev = j
        alive = alive & has
        if rate:
            consumed_t = _consumed(
                spent, budget_left, prev, alive, tau, cost, pair_cost, last_overruns
            )  # (B, N)
            prefix_rates.append(
                (ei0 + total.mean(axis=1)) / consumed_t.mean(axis=1) ** cost_exponent
            )

    if not rate:
        values = np.where(affordable0, ei0 + total.mean(axis=1), -np.inf)
        return values
    consumed = _consumed(spent, budget_left, prev, alive, tau, cost, pair_cost, last_overruns)
    best_rate = (ei0 + total.mean(axis=1)) / consumed.mean(axis=1) ** cost_exponent  # (B,)
    for prefix_rate in prefix_rates:
        best_rate = np.maximum(best_rate, prefix_rate)
    return np.where(affordable0, best_rate, -np.inf)


def _base_policy(
    m: np.ndarray,  # (B, N, P) posterior means
    v: np.ndarray,  # (B, N or 1, P) posterior variances
    ystar: np.ndarray,  # (B, N) incumbents
    cost: np.ndarray | None,  # (B, N, P) costs (EI per unit cost), or None (EI)
    afford: np.ndarray,  # (B, N, P) affordable points, or (B, N, 1) the same for every point
    feasible: np.ndarray | None = None,  # (P,) probability of feasibility, or None
    spare_m: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The base policy's step in every trajectory: the index j (B, N) of the affordable point of
    largest EI (times PF; per unit cost with ``cost``), 0 where none is, and that EI at j (B, N).
    NOTE: a Mills-ratio bound on EI needs no Phi (erfc); Phi only where it reaches the best."""
    # The (B, N, P) arrays are formed in place (page faults cost more than the arithmetic).
    sigma = np.sqrt(np.maximum(v, _TINY_VAR))  # (B, N or 1, P)
    # (B, N, P); with spare_m in m's memory (the last step's means are not needed after it)
    z = np.subtract(ystar[..., None], m, out=m if spare_m else None)
    z /= sigma
    work = np.square(z)  # (B, N, P)
    bound = np.multiply(work, -0.5)  # (B, N, P)
    np.exp(bound, out=bound)
    bound *= _INV_SQRT_2PI  # phi(z)
    work += 1.0
    bound /= work
    np.maximum(z, 0.0, out=work)
    bound += work
    bound *= sigma  # >= EI
    if feasible is not None:
        bound *= feasible  # >= EI PF
    per = None if cost is None else np.maximum(cost, COST_FLOOR)  # (B, N, P)
    if per is not None:
        bound /= per
    if not afford.all():
        np.copyto(bound, -np.inf, where=~afford)
    q = np.argmax(bound, axis=-1)  # (B, N) the largest bound
    some = _take(afford, q) if afford.shape[-1] > 1 else afford[..., 0]  # (B, N) any affordable
    sigma = np.broadcast_to(sigma, z.shape)

    def score_at(*index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """EI exactly as .ei.ei computes it, and the score, at the elements ``index``."""
        zi = z[index]
        h = np.exp(-0.5 * zi * zi) * _INV_SQRT_2PI + zi * ndtr(zi)
        gain = sigma[index] * np.maximum(h, 0.0)
        if feasible is not None:
            gain = gain * feasible[index[-1]]
        return gain, gain if per is None else gain / per[index]

    B, N = q.shape
    rows, cols = np.arange(B)[:, None], np.arange(N)[None, :]  # (B, 1), (1, N)
    # A margin for rounding (relative, and absolute for subnormal EI, where the bound's
    # own rounding is coarse): a point is dropped only when its bound is clearly lower.
    floor = score_at(rows, cols, q)[1] * (1.0 - 1e-9) - 1e-290  # (B, N)
    floor = np.where(some, floor, np.inf)
    remain = bound >= floor[..., None]  # (B, N, P) the candidates that remain (all affordable)
    work.fill(-np.inf)  # the scores
    low = some & (floor <= 0.0)  # (B, N) trajectories whose floor prunes nothing
    if low.any():
        # NOTE: there every point remains; below _Z_ZERO, EI is exactly 0.0 (z = -inf gives NaN
        # and stays with score_at): set without its erfc, bit for bit score_at's value.
        zero = np.less(z, _Z_ZERO)  # (B, N, P)
        zero &= np.greater(z, -np.inf)
        zero &= remain
        zero &= low[..., None]
        work[zero] = 0.0
        remain &= ~zero
    at = np.nonzero(remain)
    work[at] = score_at(*at)[1]
    j = np.where(some, np.argmax(work, axis=-1), 0)  # (B, N)
    return j, np.where(some, score_at(rows, cols, j)[0], 0.0)


def _consumed(
    spent: np.ndarray,  # (B, N) summed costs of each trajectory
    budget_left: np.ndarray,  # (B, N)
    prev: np.ndarray,  # (B, N) index of each trajectory's last action
    alive: np.ndarray,  # (B, N) whether it took every step
    tau: float,
    cost: np.ndarray | None,  # (P,)
    pair_cost: PairCost | None,
    last_overruns: bool = False,
) -> np.ndarray:
    """Budget each trajectory consumes (B, N): its costs, or all of ``tau`` where it stopped with
    budget that buys no point (with ``last_overruns``: where it spent all of ``tau``)."""
    if last_overruns:
        out_o: np.ndarray = np.maximum(np.where(budget_left <= 0.0, tau, spent), COST_FLOOR)
        return out_o
    if pair_cost is None:
        assert cost is not None
        cheapest = np.full(spent.shape, float(np.min(cost)))  # (B, N)
    else:
        uniq, inv = np.unique(prev, return_inverse=True)
        cheapest = np.min(pair_cost(uniq), axis=1)[inv.reshape(prev.shape)]  # (B, N)
    stranded = ~alive | (budget_left < cheapest)
    out: np.ndarray = np.maximum(np.where(stranded, tau, spent), COST_FLOOR)
    return out
