"""Constrained versions of three suite problems (issue 27): the same objective, cost and budget,
plus a ``constraints_fn`` with Optuna's semantics (feasible when every value is <= 0).

- ``branin-expensive-c``: Branin inside the disk (x0 - 2.5)^2 + (x1 - 7.5)^2 <= 50, which keeps
  one of the three minima (pi, 2.275) and cuts the other two away; f* unchanged;
- ``hartmann6-expensive-c``: Hartmann-6 with ||x||_1 <= 1.8 (the unconstrained minimizer
  has ||x||_1 = 2.07, so the constraint is active and the cost bump sits outside the feasible
  set); f* of the constrained problem by SLSQP from the best feasible points of a Sobol sample;
- ``size-expensive-c``: the model-size problem with a size limit, width x depth <= 2000
  (the unconstrained optimum is near width 470, depth 16: about 7500); f* exact, by enumerating
  the integer (width, depth) pairs (the other terms reach 0 for every pair).

``version`` and ``settings`` name the constraint, so cached runs of the unconstrained problem
never count for these.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
import functools
import math
from typing import Any

import numpy as np
from scipy import optimize as sp_optimize
from scipy.stats import qmc

from benchmarks.harness.problem import Problem
from benchmarks.problems import synthetic
from benchmarks.problems.synthetic import SUITE


BRANIN_DISK = ((2.5, 7.5), 50.0)
HARTMANN_L1 = 1.8
SIZE_LIMIT = 2000


def branin_disk(params: dict[str, Any]) -> list[float]:
    (cx, cy), r2 = BRANIN_DISK
    return [(params["x0"] - cx) ** 2 + (params["x1"] - cy) ** 2 - r2]


def hartmann_l1(params: dict[str, Any]) -> list[float]:
    return [sum(params[f"x{i}"] for i in range(6)) - HARTMANN_L1]


def size_limit(params: dict[str, Any]) -> list[float]:
    return [float(params["width"] * params["depth"] - SIZE_LIMIT)]


def _branin_f_star() -> float:
    tf = synthetic.FUNCTIONS["branin"]
    (cx, cy), r2 = BRANIN_DISK
    feasible = [x for x in tf.argmins if (x[0] - cx) ** 2 + (x[1] - cy) ** 2 <= r2]
    if len(feasible) != 1:
        raise AssertionError("the disk should keep exactly one of Branin's minima")
    return tf.f_star


@functools.cache
def hartmann_f_star(n_sobol: int = 2**14, n_starts: int = 16) -> float:
    """min Hartmann-6 over [0, 1]^6 with sum(x) <= HARTMANN_L1: SLSQP from the best feasible
    points of a scrambled Sobol sample (seed 0)."""
    fn = synthetic.FUNCTIONS["hartmann6"].fn
    x = qmc.Sobol(6, seed=0).random(n_sobol)  # (n, 6)
    x = x[x.sum(axis=1) <= HARTMANN_L1]
    values = fn(x)  # (n,)
    best = math.inf
    for x0 in x[np.argsort(values)[:n_starts]]:
        res = sp_optimize.minimize(
            lambda z: float(fn(z)),
            x0,
            method="SLSQP",
            bounds=[(0.0, 1.0)] * 6,
            constraints=[{"type": "ineq", "fun": lambda z: HARTMANN_L1 - float(np.sum(z))}],
            options={"ftol": 1e-12, "maxiter": 500},
        )
        z = np.clip(res.x, 0.0, 1.0)
        if np.sum(z) <= HARTMANN_L1 + 1e-9:
            best = min(best, float(fn(z)))
    return best


def size_f_star() -> float:
    lo_w, hi_w = synthetic._SIZE_W
    lo_d, hi_d = synthetic._SIZE_D
    return min(
        synthetic._size_core(*synthetic._size_positions({"width": w, "depth": d}))
        for w in range(lo_w, hi_w + 1)
        for d in range(lo_d, hi_d + 1)
        if w * d <= SIZE_LIMIT
    )


def _constrained(name: str, fn: Any, f_star: float, text: str) -> Problem:
    base = SUITE[name]
    return dataclasses.replace(
        base,
        name=f"{name}-c",
        group="constrained",
        constraints_fn=fn,
        f_star=f_star,
        description=f"{base.description}; constraint {text}",
        settings={**base.settings, "constraint": text},
    )


def constrained_problems(names: Sequence[str] | None = None) -> dict[str, Problem]:
    """The constrained problems (all, or those named), by name."""
    makers = {
        "branin-expensive-c": lambda: _constrained(
            "branin-expensive", branin_disk, _branin_f_star(), "(x0-2.5)^2+(x1-7.5)^2 <= 50"
        ),
        "hartmann6-expensive-c": lambda: _constrained(
            "hartmann6-expensive", hartmann_l1, hartmann_f_star(), f"sum(x) <= {HARTMANN_L1:g}"
        ),
        "size-expensive-c": lambda: _constrained(
            "size-expensive", size_limit, size_f_star(), f"width * depth <= {SIZE_LIMIT}"
        ),
    }
    unknown = [n for n in names or () if n not in makers]
    if unknown:
        raise KeyError(f"unknown constrained problems {unknown}; known: {sorted(makers)}")
    return {n: makers[n]() for n in (names or makers)}
