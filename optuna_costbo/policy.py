"""One suggestion of the cost-aware BO policy, from encoded data to a point of the box.

This is the numerical half of the sampler: it fits the objective and cost models, builds the
acquisition the user chose and maximizes it. It knows nothing of Optuna.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import functools

import numpy as np
from threadpoolctl import ThreadpoolController

from optuna_costbo.acquisition import LogEIPerCost
from optuna_costbo.gp import GPHyperparams
from optuna_costbo.gp import GPModel
from optuna_costbo.gp import fit_gp
from optuna_costbo.optimize import maximize_acquisition
from optuna_costbo.search_space import BoxCodec


ACQUISITIONS = ("ei", "eipu", "ei-cool")
"""Acquisition names accepted by :func:`propose`."""

_NEEDS_COST_MODEL = frozenset({"eipu", "ei-cool"})


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


@functools.cache
def _threadpools() -> ThreadpoolController:
    return ThreadpoolController()


def needs_cost_model(acquisition: str) -> bool:
    """Whether ``acquisition`` uses a cost model."""
    return acquisition in _NEEDS_COST_MODEL


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
        remaining: Remaining budget, in cost units.
        budget: Total budget, in cost units.
        warm: Hyperparameters of the previous fits.
        min_noise_var: Noise variance floor of the objective model (standardized units).

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
            codec, X, y, X_cost, costs, acquisition, rng, remaining, budget, warm, min_noise_var
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
    warm: WarmStart | None,
    min_noise_var: float,
) -> Proposal:
    warm = warm or WarmStart()
    model = _fit(X, y, warm.objective, warm.n_fits, rng, min_noise_var)
    cost_model = None
    cost_exponent = 0.0
    if needs_cost_model(acquisition) and len(costs) > 0:
        cost_model = _fit(X_cost, np.log(costs), warm.cost, warm.n_fits, rng, 1e-4)
        if acquisition == "eipu":
            cost_exponent = 1.0
        else:
            # NOTE: EI-cool (Lee et al., "Cost-aware Bayesian optimization", 2020): the cost
            # exponent cools from 1 to 0 as the budget is used up.
            cost_exponent = float(np.clip(remaining / budget, 0.0, 1.0))
    acq = LogEIPerCost(model, float(np.min(y)), cost_model=cost_model, cost_exponent=cost_exponent)
    best_idx = np.argsort(y)[: min(3, len(y))]
    z, value = maximize_acquisition(
        acq.value_and_grad, codec, rng, extra_starts=X[best_idx], fun=acq
    )
    new_warm = WarmStart(
        objective=model.hyper,
        cost=cost_model.hyper if cost_model is not None else warm.cost,
        n_fits=warm.n_fits + 1,
    )
    return Proposal(z=z, value=value, objective_model=model, cost_model=cost_model, warm=new_warm)
