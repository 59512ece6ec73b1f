"""One suggestion of the cost-aware BO policy, from encoded data to a point of the box.

This is the numerical half of the sampler: it fits the objective and cost models, builds the
acquisition the user chose and maximizes it. It knows nothing of Optuna.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
import functools

import numpy as np
from threadpoolctl import ThreadpoolController

from optuna_costbo.acquisition import LogEIPerCost
from optuna_costbo.gp import GPHyperparams
from optuna_costbo.gp import GPModel
from optuna_costbo.gp import fit_gp
from optuna_costbo.optimize import local_maximize
from optuna_costbo.optimize import maximize_acquisition
from optuna_costbo.rollout import plain_ei
from optuna_costbo.rollout import qmc_normals
from optuna_costbo.rollout import rollout_values
from optuna_costbo.search_space import BoxCodec


ACQUISITIONS = ("rollout", "ei", "eipu", "ei-cool")
"""Acquisition names accepted by :func:`propose`."""

_NEEDS_COST = frozenset({"rollout", "eipu", "ei-cool"})

_CHEAP_FACTOR = 1.25
"""When nothing is affordable, candidates may cost this many times the cheapest one."""

BoxCost = Callable[[np.ndarray], np.ndarray]
"""Known state-independent cost on box points: ``Z (m, D) -> (m,)``."""
BoxPairCost = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Known state-dependent cost: ``Z_from (k, D), Z_to (m, D) -> (k, m)``."""


@dataclass(frozen=True)
class KnownCost:
    """A cost function the user knows, in place of a fitted cost model.

    Attributes:
        fn: Cost of evaluating each point next, from the current state (for a
            state-dependent cost: from the last evaluated point).
        pair_fn: For a state-dependent cost, the cost of moving between any two points; the
            rollout charges trajectories with it. ``None`` for a state-independent cost.
        origin: For a state-dependent cost, the current state as a box point (D,) (the last
            evaluated point), if it lies in the space: the cheapest move stays near it, so
            the acquisition maximizer starts a run there.
    """

    fn: BoxCost
    pair_fn: BoxPairCost | None = None
    origin: np.ndarray | None = None

    def cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        """Cost of evaluating each point next."""
        out: np.ndarray = np.asarray(self.fn(Z), dtype=float)
        return out


_FD_STEP = 1e-6
_KNOWN_COST_MAX_EVALS = 30
# NOTE: log cost per unit of the box above which a forward difference has caught a step of a
# piecewise-constant cost, not a slope: a factor e^50 across the whole box.
_JUMP_SLOPE = 50.0


class _LogKnownCost:
    """A known cost as a "model" of log cost for :class:`LogEIPerCost`: zero variance and
    forward finite-difference gradients (the user's function has no gradient)."""

    def __init__(self, known: KnownCost) -> None:
        self._known = known

    def _log(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        out: np.ndarray = np.log(np.maximum(self._known.cost(Z), 1e-300))
        return out

    def predict(self, Xq: np.ndarray, return_grad: bool = False) -> tuple[np.ndarray, ...]:
        mean = self._log(Xq)  # (m,)
        var = np.zeros_like(mean)
        if not return_grad:
            return mean, var
        m, D = Xq.shape
        # NOTE: forward differences: D calls of the user's function per point, not 2D (the
        # value at the point is known). A difference steeper than _JUMP_SLOPE is a step of a
        # piecewise-constant cost (integer, stepped or snapped parameters) caught between the
        # two points; it counts as 0, the derivative almost everywhere.
        step = np.where(Xq + _FD_STEP <= 1.0, _FD_STEP, -_FD_STEP)  # (m, D), inside the box
        shifted = np.repeat(Xq[:, None, :], D, axis=1)  # (m, D, D)
        diag = np.arange(D)
        shifted[:, diag, diag] += step
        vals = self._log(shifted.reshape(m * D, D)).reshape(m, D)
        dmean = (vals - mean[:, None]) / step  # (m, D)
        dmean = np.where(np.abs(dmean) > _JUMP_SLOPE, 0.0, dmean)
        return mean, var, dmean, np.zeros_like(dmean)


@dataclass
class WarmStart:
    """Hyperparameters of the last fits, reused as the first start of the next ones."""

    objective: GPHyperparams | None = None
    cost: GPHyperparams | None = None
    n_fits: int = 0


@dataclass
class Proposal:
    """The chosen box point and what led to it."""

    z: np.ndarray  # (D,)
    value: float
    objective_model: GPModel
    cost_model: GPModel | None
    warm: WarmStart = field(default_factory=WarmStart)
    message: str | None = None  # something the caller should log


@dataclass(frozen=True)
class RolloutSettings:
    """Settings of the rollout acquisition.

    Attributes:
        horizon: Steps rolled out, h >= 1 (h = 1 is EI over affordable points).
        n_samples: Quasi-Monte Carlo trajectories per first action.
        n_pool: Sobol points screened by EI and EIpu under the current model; the first
            actions and the inner candidates are chosen from them.
        n_inner: Candidates of the inner argmax of the base policy: the best ``n_inner`` of
            the pool by EI and the best by EIpu (their union), besides the first actions.
        n_shortlist: First actions screened from the pool by EI and by EIpu (each).
        n_refine: Best first actions polished locally and scored again.
        refine_radius: Half-width of the box in which they are polished.
    """

    horizon: int = 2
    n_samples: int = 64
    n_pool: int = 1024
    n_inner: int = 64
    n_shortlist: int = 8
    n_refine: int = 3
    refine_radius: float = 0.05


@functools.cache
def _threadpools() -> ThreadpoolController:
    return ThreadpoolController()


def needs_cost_model(acquisition: str) -> bool:
    """Whether ``acquisition`` uses costs (a fitted cost model or a known cost)."""
    return acquisition in _NEEDS_COST


def _fit(
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    warm: GPHyperparams | None,
    n_fits: int,
    rng: np.random.Generator,
    min_noise_var: float,
) -> GPModel:
    # NOTE: a warm start from the previous suggestion's hyperparameters makes most fits a few
    # L-BFGS-B iterations; every 5th fit (and whenever there is no warm start) adds random
    # restarts so the fit can leave a poor basin as data accumulate.
    n_restarts = 3 if warm is None or n_fits % 5 == 0 else 0
    if warm is not None and warm.lengthscales.shape != (X.shape[1],):
        warm = None
        n_restarts = 3
    return fit_gp(
        X, y, rng=rng, n_restarts=n_restarts, min_noise_var=min_noise_var, warm_start=warm
    )


def _finite(y: np.ndarray) -> np.ndarray:
    """Replace +-inf objective values by the largest / smallest finite ones."""
    finite = np.isfinite(y)
    if finite.all():
        return y
    if not finite.any():
        return np.zeros_like(y)
    out: np.ndarray = np.clip(y, y[finite].min(), y[finite].max())
    return out


def propose(
    codec: BoxCodec,
    X: np.ndarray,  # (n, D) legal points with finished objective values
    y: np.ndarray,  # (n,) objective values to minimize
    X_cost: np.ndarray,  # (k, D) legal points with known costs
    costs: np.ndarray,  # (k,) positive costs
    *,
    acquisition: str,
    rng: np.random.Generator,
    remaining: float,
    budget: float,
    warm: WarmStart | None = None,
    min_noise_var: float = 1e-6,
    X_running: np.ndarray | None = None,
    known_cost: KnownCost | None = None,
    rollout: RolloutSettings | None = None,
) -> Proposal:
    """Fit the models and maximize the acquisition.

    Args:
        codec: The search space codec.
        X: Encoded points of trials with objective values, shape (n, D), n >= 1.
        y: Their objective values, as a minimization problem, shape (n,).
        X_cost: Encoded points of trials with known costs, shape (k, D).
        costs: Their costs, strictly positive, shape (k,).
        acquisition: One of :data:`ACQUISITIONS`.
        rng: Source of randomness for model fits and the optimizer.
        remaining: Remaining budget (budget minus spent), in cost units.
        budget: Total budget, in cost units.
        warm: Hyperparameters of the previous fits.
        min_noise_var: Noise variance floor of the objective model (standardized units).
        X_running: Encoded points of trials still running, shape (r, D): their predicted
            cost is reserved from the remaining budget.
        known_cost: A known cost function, used instead of a cost model.
        rollout: Settings of the rollout acquisition.

    Returns:
        The proposal, with the fitted models and the warm start for next time.
    """
    if acquisition not in ACQUISITIONS:
        raise ValueError(f"acquisition must be one of {ACQUISITIONS}, got {acquisition!r}")
    # NOTE: the matrices here are small (n <= a few hundred): multi-threaded BLAS only adds
    # thread start-up and, on a busy machine, spinning threads that made a 0.1 ms Cholesky
    # take 100 ms (measured on 2 cores). One thread is both faster and predictable.
    with _threadpools().limit(limits=1, user_api="blas"):
        return _propose(
            codec,
            X,
            _finite(np.asarray(y, dtype=float)),
            X_cost,
            costs,
            acquisition,
            rng,
            remaining,
            budget,
            warm or WarmStart(),
            min_noise_var,
            X_running,
            known_cost,
            rollout or RolloutSettings(),
        )


def _propose(
    codec: BoxCodec,
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    X_cost: np.ndarray,  # (k, D)
    costs: np.ndarray,  # (k,)
    acquisition: str,
    rng: np.random.Generator,
    remaining: float,
    budget: float,
    warm: WarmStart,
    min_noise_var: float,
    X_running: np.ndarray | None,
    known_cost: KnownCost | None,
    settings: RolloutSettings,
) -> Proposal:
    fitted = _fit(X, y, warm.objective, warm.n_fits, rng, min_noise_var)
    # NOTE: trials still running are pending points: a kriging believer conditions the model
    # on its own mean there (hyperparameters fixed), which takes their EI to about zero, so
    # parallel workers do not propose the same point.
    model = fitted
    if X_running is not None:
        for x_r in X_running:
            model = model.condition_on(x_r, float(model.predict(x_r[None, :])[0][0]))
    cost_model: GPModel | None = None
    log_cost: object | None = None  # a model of log cost with .predict
    if needs_cost_model(acquisition):
        if known_cost is not None:
            log_cost = _LogKnownCost(known_cost)
        elif len(costs) > 0:
            cost_model = _fit(X_cost, np.log(costs), warm.cost, warm.n_fits, rng, 1e-4)
            log_cost = cost_model
    new_warm = WarmStart(
        objective=fitted.hyper,
        cost=cost_model.hyper if cost_model is not None else warm.cost,
        n_fits=warm.n_fits + 1,
    )
    best = float(np.min(y))
    starts = X[np.argsort(y)[: min(3, len(y))]]  # (<=3, D)
    # NOTE: with a moving cost the cheap moves are next to the current point, where EI per
    # unit cost may peak although neither the screening nor the best points lead there.
    origin = known_cost.origin if known_cost is not None else None

    def maximize(cost_exponent: float) -> tuple[np.ndarray, float]:
        uses_cost = cost_exponent != 0.0
        acq = LogEIPerCost(
            model,
            best,
            cost_model=log_cost if uses_cost else None,  # type: ignore[arg-type]
            cost_exponent=cost_exponent,
        )
        extra = starts if origin is None or not uses_cost else np.vstack([starts, origin[None]])
        # NOTE: a known cost's gradient takes D calls of the user's function per point, and a
        # snapped or discrete cost is piecewise constant, so line searches stall at its steps.
        # Sensor problem (20-D, snapped): an EIpu maximization took ~90 evaluations per L-BFGS
        # phase; capped at 30, an EIpu suggestion took a third of the time (2 s instead of 6 s).
        max_evals = _KNOWN_COST_MAX_EVALS if uses_cost and known_cost is not None else None
        return maximize_acquisition(
            acq.value_and_grad, codec, rng, extra_starts=extra, fun=acq, max_evals=max_evals
        )

    if acquisition == "ei" or log_cost is None:
        z, value = maximize(0.0)
        return Proposal(z, value, model, cost_model, new_warm)
    if acquisition == "eipu":
        z, value = maximize(1.0)
        return Proposal(z, value, model, cost_model, new_warm)
    if acquisition == "ei-cool":
        # NOTE: EI-cool (Lee et al., "Cost-aware Bayesian optimization", 2020): the cost
        # exponent cools from 1 to 0 as the budget is used up.
        z, value = maximize(float(np.clip(remaining / budget, 0.0, 1.0)))
        return Proposal(z, value, model, cost_model, new_warm)

    def cost_of(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        if known_cost is not None:
            return known_cost.cost(Z)
        assert cost_model is not None
        out: np.ndarray = np.exp(cost_model.predict(Z)[0])
        return out

    reserved = 0.0
    if X_running is not None and len(X_running) > 0:
        reserved = float(np.sum(cost_of(X_running)))
    tau = remaining - reserved
    z_ei, _ = maximize(0.0)
    z_eipu, _ = maximize(1.0)
    z, value, message = _rollout_choice(
        model, codec, rng, best, tau, np.vstack([z_ei, z_eipu]), cost_of, known_cost, settings
    )
    return Proposal(z, value, model, cost_model, new_warm, message)


def _rollout_choice(
    model: GPModel,
    codec: BoxCodec,
    rng: np.random.Generator,
    best: float,
    tau: float,
    seeds: np.ndarray,  # (s, D) maximizers of EI and EIpu
    cost_of: Callable[[np.ndarray], np.ndarray],
    known_cost: KnownCost | None,
    settings: RolloutSettings,
) -> tuple[np.ndarray, float, str | None]:
    """Screen first actions with Lambda_h and return the best affordable one."""
    pool = codec.sobol_points(settings.n_pool, seed=int(rng.integers(2**31)))  # (M, D)
    mean_p, var_p = model.predict(pool)  # (M,), (M,)
    cost_p = cost_of(pool)  # (M,)
    ei_p = plain_ei(mean_p, var_p, best)  # (M,)
    eipu_p = ei_p / cost_p  # (M,)
    affordable = cost_p <= tau
    k = settings.n_shortlist
    first = np.unique(
        np.vstack([seeds, pool[_top(ei_p, affordable, k)], pool[_top(eipu_p, affordable, k)]]),
        axis=0,
    )  # (B, D)
    # NOTE: the inner argmax runs over the first actions plus the pool's best points by EI and
    # by EIpu: a trajectory's later steps pick points the current model already rates well.
    # benchmarks/inner_candidates.py: the best 64 of 1024 agree with all 1024 (the reference)
    # on Lambda_h's choice at least as often as all of 256 points did, in each of its 12
    # settings, at 0.2-0.4 times the cost. With a state-independent cost a point unaffordable
    # now stays unaffordable along every trajectory; with a state-dependent one it may not.
    if known_cost is None or known_cost.pair_fn is None:
        eligible = affordable
    else:
        eligible = np.ones_like(affordable)
    keep = np.union1d(
        _top(ei_p, eligible, settings.n_inner), _top(eipu_p, eligible, settings.n_inner)
    )
    inner, mean_c = pool[keep], mean_p[keep]  # (M', D), (M',)
    normals = qmc_normals(settings.n_samples, settings.horizon, rng)
    values = _rollout_values_on(
        model, first, inner, mean_c, best, tau, normals, cost_of, known_cost, settings
    )
    if np.isfinite(values).any():
        # Refine: polish the best few first actions locally by EI (the sharp part of
        # Lambda_h = EI + future value) and score them again with Lambda_h, next to the
        # unpolished ones, on the same draws and candidates.
        top = np.argsort(-values)[: settings.n_refine]
        top = top[np.isfinite(values[top])]
        polished, _ = local_maximize(
            LogEIPerCost(model, best).value_and_grad, codec, first[top], settings.refine_radius
        )
        again = np.unique(np.vstack([first[top], polished]), axis=0)  # (B2, D)
        values2 = _rollout_values_on(
            model, again, inner, mean_c, best, tau, normals, cost_of, known_cost, settings
        )
        if np.isfinite(values2).any():
            i = int(np.argmax(values2))
            return again[i], float(values2[i]), None
        i = int(np.argmax(values))
        return first[i], float(values[i]), None
    # Nothing affordable: the best EI among the points that cost at most 25% more than the
    # cheapest, so the unavoidable overrun stays close to the smallest possible one.
    cand = np.vstack([first, pool])
    mean, var = model.predict(cand)
    ei_all = plain_ei(mean, var, best)
    cost_all = cost_of(cand)
    near = cost_all <= _CHEAP_FACTOR * cost_all.min()
    i = int(np.argmax(np.where(near, ei_all, -np.inf)))
    message = (
        f"no point is affordable with the remaining budget {tau:.6g} (cheapest predicted "
        f"cost {cost_all.min():.6g}); proposing the best of the near-cheapest points, "
        f"predicted cost {cost_all[i]:.6g}. Stop the study if the budget is final."
    )
    return cand[i], float(ei_all[i]), message


def _top(score: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Indices of the (at most) ``k`` largest scores where ``mask`` holds, best first."""
    order = np.argsort(np.where(mask, -score, np.inf), kind="stable")[:k]
    out: np.ndarray = order[mask[order]]
    return out


def _rollout_values_on(
    model: GPModel,
    first: np.ndarray,  # (B, D) first actions
    inner: np.ndarray,  # (M, D) inner candidates
    mean_inner: np.ndarray,  # (M,) posterior mean at the inner candidates
    best: float,
    tau: float,
    normals: np.ndarray,  # (N, max(h-1, 1))
    cost_of: Callable[[np.ndarray], np.ndarray],
    known_cost: KnownCost | None,
    settings: RolloutSettings,
) -> np.ndarray:
    """Lambda_h of each first action, with ``first`` and ``inner`` as the action set: (B,)."""
    points = np.vstack([first, inner])  # (P, D)
    B = first.shape[0]
    mean = np.concatenate([model.predict(first)[0], mean_inner])  # (P,)
    cov = model.posterior_cov(points)  # (P, P)
    noise_var = model.hyper.noise_var * model.y_std**2
    if known_cost is None or known_cost.pair_fn is None:
        return rollout_values(
            mean, cov, noise_var, best, B, cost_of(points), tau, settings.horizon, normals
        )
    pair_fn = known_cost.pair_fn
    rows: dict[int, np.ndarray] = {}

    def pair_cost(idx: np.ndarray) -> np.ndarray:  # (k,) -> (k, P)
        missing = [int(i) for i in idx if int(i) not in rows]
        if missing:
            block = np.asarray(pair_fn(points[missing], points), dtype=float)
            rows.update(zip(missing, block, strict=True))
        return np.stack([rows[int(i)] for i in idx])

    return rollout_values(
        mean,
        cov,
        noise_var,
        best,
        B,
        None,
        tau,
        settings.horizon,
        normals,
        pair_cost=pair_cost,
        first_cost=cost_of(first),
    )
