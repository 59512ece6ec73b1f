"""Agreement of the default rollout's choice across QMC scramblings on mid-run states.

Two expensive-optimum problems (Branin 2-D, Hartmann 3-D, cost
1 + 99 exp(-|x - x*|^2 / 0.05)), GPs fitted to n random points, remaining budget half the cost
spent: the rollout chooses a point 8 times with everything fixed (model, pool, maximizer)
except the scrambling of its quasi-Monte Carlo normals. Agreement is the share of the choices
within 0.02 (box units) of the most common one. The measured table (horizons 2 and 4, 64 and
256 draws) is ``benchmarks/results/rollout_agreement.md``.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses

import numpy as np

from optuna_costbo._numerics.acquisition.rollout import Rollout
from optuna_costbo._numerics.acquisition.rollout import Screening
from optuna_costbo._numerics.acquisition.rollout_values import qmc_normals
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.search_space import BoxCodec


def branin(Z: np.ndarray) -> np.ndarray:  # (m, 2) in [0, 1]^2 -> (m,)
    x1, x2 = 15.0 * Z[:, 0] - 5.0, 15.0 * Z[:, 1]
    b, c = 5.1 / (4.0 * np.pi**2), 5.0 / np.pi
    out: np.ndarray = (
        (x2 - b * x1**2 + c * x1 - 6.0) ** 2 + 10.0 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10.0
    )
    return out


def hartmann3(Z: np.ndarray) -> np.ndarray:  # (m, 3) -> (m,)
    A = np.array([[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]])
    P = 1e-4 * np.array(
        [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]]
    )
    alpha = np.array([1.0, 1.2, 3.0, 3.2])
    out: np.ndarray = -np.sum(
        alpha * np.exp(-np.sum(A * (Z[:, None, :] - P) ** 2, axis=2)), axis=1
    )
    return out


PROBLEMS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], np.ndarray]] = {
    "branin": (branin, np.array([0.5427, 0.1517])),
    "hartmann3": (hartmann3, np.array([0.1146, 0.5556, 0.8525])),
}
"""Problem name -> (objective on the unit box, its minimizer x*, where the cost peaks)."""

STATES = [(name, n, state) for name in PROBLEMS for n in (12, 25) for state in range(3)]
"""The mid-run states: (problem, observations, state seed)."""


def agreement(points: np.ndarray, radius: float = 0.02) -> float:
    """Share of the rows of ``points`` (k, D) within ``radius`` of the most common one."""
    dist = np.linalg.norm(points[:, None] - points[None], axis=2)  # (k, k)
    return float((dist < radius).sum(axis=1).max() / len(points))


def state_agreement(
    name: str, n: int, state: int, horizon: int, n_samples: int = 64, scramblings: int = 8
) -> float:
    """Agreement of the default rollout's choice across ``scramblings`` QMC scramblings on
    one mid-run state: ``n`` random points of problem ``name``, seeded by ``state``."""
    f, opt = PROBLEMS[name]
    d = len(opt)
    codec = BoxCodec([NumericParam(0.0, 1.0)] * d)
    rng = np.random.default_rng(100 * state + n)
    X = rng.random((n, d))  # (n, d)
    y = f(X)  # (n,)
    c = 1.0 + 99.0 * np.exp(-np.sum((X - opt) ** 2, axis=1) / 0.05)  # (n,)
    model = fit_gp(X, y, rng=rng)
    cost = FittedLogCost(fit_gp(X, np.log(c), rng=rng, min_noise_var=1e-4))
    tau = 0.5 * float(np.sum(c))
    shipped = dataclasses.replace(
        Rollout.from_options(AcquisitionOptions(horizon=horizon)),
        screening=Screening(n_samples=n_samples),
    )
    picks = []
    for s in range(scramblings):

        def scrambled(n_: int, h_: int, _: object, s: int = s) -> np.ndarray:
            return qmc_normals(n_, h_, 1000 + s)

        ctx = AcquisitionContext(
            codec, model, float(y.min()), cost, np.random.default_rng(7), tau, 2.0 * tau,
            X[np.argsort(y)[:3]],
        )  # fmt: skip
        # The shipped acquisition="rollout" with these options, drawing other normals.
        strategy = dataclasses.replace(shipped, draws=scrambled)
        picks.append(strategy.choose(ctx).z)
    return agreement(np.array(picks))
