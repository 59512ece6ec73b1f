"""The CMDP rollout acquisition of Lee et al. (UAI 2021), vectorized over candidates and samples.

For a first action x that the remaining budget tau affords, the value of rolling out the base
policy for h steps is

    Lambda_h(x) = EI(x | D) + E[ sum_{t=1}^{h-1} r_t ],

where one simulated trajectory draws y_0 ~ p(y | x, D), conditions the model on it, pays
c(x), then for t = 1..h-1 picks x_t, the maximizer of the base acquisition among the points
still affordable (EI per unit cost for t < h-1, EI for the last step), draws y_t, collects
r_t = max(y*_t - y_t, 0), conditions and pays. A trajectory stops when nothing is affordable.

How it is made fast (each choice is checked against a slow plain reference in the tests):

- All actions live on one finite set P of points: the first actions A (rows ``:n_first``) and
  the inner candidates (the rest, plus A itself). The joint posterior over P is computed once;
  conditioning on a fantasy at a point of P is then a rank-one update of the mean vector and of
  the variances over P, O(|P|) per step, never a refactorization.
- The expectation is a quasi-Monte Carlo average over the SAME scrambled-Sobol normal draws
  for every first action (common random numbers), so Lambda_h is a deterministic function
  whose differences between actions are far less noisy than its values.
- The first step's reward is EI(x) in closed form (a control variate for r_0) and so is the
  last step's (EI at the chosen point), so the draws have h - 1 dimensions, not h + 1.
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


__all__ = ["PairCost", "qmc_normals", "rollout_values"]


PairCost = Callable[[np.ndarray], np.ndarray]
"""``rows (k,) indices into P -> (k, |P|)``: cost of moving from each row's point to each point."""

_TINY_VAR = 1e-300
# NOTE: below this z, exp(-z^2 / 2) (< e^-760) and ndtr(z) (erfc's underflow branch, from
# z < -37.7) are exactly 0.0, so EI's closed form is exactly 0.0 (tested).
_Z_ZERO = -39.0


def qmc_normals(n_samples: int, horizon: int, seed: int | np.random.Generator) -> np.ndarray:
    """Scrambled Sobol points mapped through the normal inverse CDF: (n_samples, max(h-1, 1)).

    One column per drawn step: y_0, ..., y_{h-2} (the last step's reward is in closed form).
    """
    dim = max(horizon - 1, 1)
    # NOTE: draw the next power of two (Sobol's balance needs it; scipy warns otherwise) and
    # keep the first n_samples points.
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
    noise_free: bool = False,
    per_unit_cost: bool = False,
    last_overruns: bool = False,
    best_prefix: bool = False,
    cost_exponent: float = 1.0,
    feasible: np.ndarray | None = None,  # (P,) probability of feasibility
) -> np.ndarray:
    """Lambda_h for each first action ``P[:n_first]``; -inf where the first action is unaffordable.

    Minimization convention: rewards are improvements below ``best``. Every point of P may be
    chosen by the base policy at the inner steps.

    Args:
        mean: Posterior mean of the objective over the action set, shape (P,).
        cov: Joint posterior covariance over the action set, shape (P, P).
        noise_var: Observation noise variance used when conditioning on fantasies.
        best: Incumbent (smallest observed value).
        n_first: Number of first actions; they are the first rows of the action set.
        cost: Predicted cost of each action, shape (P,), or ``None`` when ``pair_cost`` gives
            state-dependent costs.
        tau: Remaining budget.
        horizon: h >= 1.
        normals: Standard normal QMC draws, shape (N, max(h-1, 1)), shared by all actions.
        pair_cost: State-dependent costs: row indices into P -> cost of moving from each to
            every point of P, shape (k, P).
        first_cost: Cost of each first action, shape (n_first,); required with ``pair_cost``
            (it depends on the last evaluated point), else ``cost[:n_first]``.
        noise_free: Condition each fantasy as a noise-free value of the latent objective (the
            value drawn). The paper's estimator (default ``False``) draws the latent value but
            conditions on it as a noisy observation, which loses posterior variance when the
            noise is not negligible: Var(m') + E[v'] < v.
        per_unit_cost: Return Lambda_h per unit of budget the trajectory consumes (its summed
            costs; the whole remaining budget ``tau`` where the trajectory ends with budget
            that buys nothing more, since that budget is lost), a ratio of QMC averages. Under
            a uniform cost the consumed budget is the same for every first action and the
            argmax is Lambda_h's; with h = 1 and budget to spare it is EI per unit cost.
        last_overruns: The budget rule of a study that stops once its budget is spent: a step
            may start whenever some budget is left, whatever it costs (the last one overruns
            the budget), instead of only when the budget left covers its cost (the paper's
            rule, default). Per unit cost, a trajectory that spends the whole budget consumes
            ``tau`` (the overrun is not budget the rest of the run could have used).
        best_prefix: With ``per_unit_cost``, value a first action by the best rate over the
            trajectory's prefixes, max over k < h of (EI + E[r_1 + ... + r_k]) / E[budget
            consumed by steps 0..k], instead of the whole trajectory's rate. A first action
            whose own improvement per unit cost is high keeps that rate, not diluted by the
            steps after it; one whose value lies in what it makes possible keeps the h-step
            rate. This is the ratio rule for a chain of jobs (Sidney, Oper. Res. 23(2), 1975):
            the order minimizing weighted completion time, here the area under the
            best-value-against-cost curve, values a chain by its best prefix ratio.
        cost_exponent: With ``per_unit_cost``, divide by the budget consumed to this power
            alpha in [0, 1] (1: a rate; 0: Lambda_h, cost-blind but for truncation). The
            rollout cools it as EI-cool does, alpha = remaining / total budget.
        feasible: With constraints, each action's probability of feasibility, shape (P,): an
            improvement counts as much as its point is likely feasible (the first step's EI,
            the base policy's choices and the rewards; the incumbent is updated as if the
            point were feasible, an optimistic simplification).

    Returns:
        Lambda_h (or Lambda_h per unit cost), shape (n_first,).
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
        if not per_unit_cost:
            return values
        prev1 = np.arange(B)[:, None]  # (B, 1)
        left = (tau - first_cost)[:, None]  # (B, 1)
        consumed = _consumed(
            first_cost[:, None],
            left,
            prev1,
            np.ones_like(left, bool),
            tau,
            cost,
            pair_cost,
            last_overruns,
        )  # (B, 1)
        return np.where(affordable0, ei0 / consumed[:, 0] ** cost_exponent, -np.inf)

    # NOTE: fantasies. The paper's estimator draws the latent value and conditions on it as a
    # noisy observation (sd0 includes the noise); noise_free conditions on the latent value
    # itself, which keeps the total variance: Var(m') + E[v'] = v. A jitter far below any
    # variance that matters keeps the division finite where the posterior variance is ~0.
    cond_noise = 1e-12 * float(np.max(var0)) if noise_free else noise_var
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
    if per_unit_cost and best_prefix:
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
            if per_unit_cost:
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
        if per_unit_cost and best_prefix:
            consumed_t = _consumed(
                spent, budget_left, prev, alive, tau, cost, pair_cost, last_overruns
            )  # (B, N)
            prefix_rates.append(
                (ei0 + total.mean(axis=1)) / consumed_t.mean(axis=1) ** cost_exponent
            )

    if not per_unit_cost:
        values = np.where(affordable0, ei0 + total.mean(axis=1), -np.inf)
        return values
    consumed = _consumed(
        spent, budget_left, prev, alive, tau, cost, pair_cost, last_overruns
    )  # (B, N)
    rate = (ei0 + total.mean(axis=1)) / consumed.mean(axis=1) ** cost_exponent  # (B,)
    for prefix_rate in prefix_rates:
        rate = np.maximum(rate, prefix_rate)
    return np.where(affordable0, rate, -np.inf)


def _base_policy(
    m: np.ndarray,  # (B, N, P) posterior means
    v: np.ndarray,  # (B, N or 1, P) posterior variances
    ystar: np.ndarray,  # (B, N) incumbents
    cost: np.ndarray | None,  # (B, N, P) costs (EI per unit cost), or None (EI)
    afford: np.ndarray,  # (B, N, P) affordable points, or (B, N, 1) the same for every point
    feasible: np.ndarray | None = None,  # (P,) probability of feasibility, or None
    spare_m: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The base policy's step in every trajectory: the index j (B, N) of the affordable point
    with the largest EI (times its probability of feasibility, with ``feasible``; per unit
    cost, with ``cost``), 0 where none is affordable, and that EI (times PF) at j (B, N).
    Exactly the argmax of :func:`.ei.ei` (times PF) over all P points. ``spare_m``: ``m`` may
    be overwritten (the caller needs it no more).

    NOTE: EI = s h(z) with z = (y* - m) / s and h(z) = phi(z) + z Phi(z) <= max(z, 0) +
    phi(z) / (1 + z^2) (from the Mills-ratio bound Phi(z) >= phi(z) |z| / (1 + z^2) for
    z <= 0, and h(z) = z + h(-z)). The bound needs no Phi, whose erfc is most of EI's time;
    in each trajectory, a point whose bound is below the exact EI of the point with the
    largest bound cannot be the argmax, and Phi is evaluated only at the points that remain
    (a few of ~100 in each trajectory, measured).
    """
    # The (B, N, P) arrays are formed in place: fresh arrays of this size cost more in page
    # faults than in arithmetic (measured, 3x).
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
        # NOTE: there every point remains (a floor below 0 prunes nothing), and where the
        # incumbent lies far below every posterior mean (late in a low-dimensional run) no
        # point improves at all. Below z = _Z_ZERO, phi(z) and Phi(z) underflow to exactly 0,
        # so score_at gives exactly 0.0 (z = -inf gives NaN, and stays with score_at): those
        # points are set to 0.0 without their erfc, bit for bit what score_at gives.
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
    """Budget each trajectory consumes: its costs, or all of ``tau`` if it strands the rest.

    A trajectory strands its leftover budget when it stopped because nothing was affordable,
    or when what is left buys no point of the action set. With ``last_overruns`` any budget
    left buys a step, and a trajectory that spent all of ``tau`` (or more) consumed ``tau``.
    """
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
