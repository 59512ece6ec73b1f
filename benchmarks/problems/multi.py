"""Multi-objective problems with costs (issue 52): the suite's group ``multi``.

ZDT1, ZDT2, ZDT3 (2 objectives, d = 4) and DTLZ2 (3 objectives, d = 5) on [0, 1]^d, each with
a cost that varies over the space, 1-10x or 1-100x, in the suite's two ways:

- ``-front``: the cost is highest on the Pareto set and falls away from it (the suite's
  ``expensive`` variants): 1 + (span - 1) exp(-s^2 / (2 w^2)) with s the root-mean-square
  distance of the distance variables to their Pareto-optimal values (ZDT: x2..xd -> 0; DTLZ2:
  x3..x5 -> 0.5), w = 0.15;
- ``-x1`` / ``-corner``: the cost grows along the front, with a variable that places a point
  on it (ZDT: x1, the first objective; DTLZ2: x1 and x2): part of the front is dear.

Every objective is minimized. The reference point is the best known front's nadir plus a tenth
of its range (ZDT1, ZDT2: (1.1, 1.1); DTLZ2: (1.1, 1.1, 1.1); ZDT3 from its disconnected
front), fixed with the problem. The best known front is the analytic Pareto front, so its
hypervolume ``hv_star`` is exact (ZDT1: 1.21 - 1/3, ZDT2: 1.21 - 2/3, DTLZ2: 1.1^3 - pi/6) or
computed on 200,001 points of the Pareto set (ZDT3; on ZDT1 the same grid is 2.5e-6 below
the closed form). Budgets:
30 times the mean cost of a uniform random point (``python -m benchmarks.problems.multi``
prints them), but at least 4 times the dearest cost (else a method on the front of a
``-front`` problem could buy one or two points), at most 60 trials (the suite's cap: a
method that settles in a cheap region would buy hundreds).
"""

from __future__ import annotations

from collections.abc import Callable
import functools
import math
from typing import Any

import numpy as np

from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem


MULTI_MAX_TRIALS = 60
"""Trials per run at most, the suite's cap (a cap of 40 stopped the default on
``dtlz2-front-expensive`` with 70 % of its budget left: it buys cheap trials)."""
WIDTH = 0.15
"""Width of the ``-front`` cost's bump (the suite's w)."""
GROUP = "multi"


def _x(params: dict[str, Any], d: int) -> np.ndarray:
    return np.array([float(params[f"x{i}"]) for i in range(1, d + 1)])  # (d,)


def zdt(kind: int, x: np.ndarray) -> np.ndarray:
    """ZDT1/2/3 of x (..., d) -> (..., 2); g = 1 + 9 mean(x2..xd), the Pareto set x2.. = 0."""
    f1 = x[..., 0]
    g = 1.0 + 9.0 * np.mean(x[..., 1:], axis=-1)
    r = f1 / g
    if kind == 1:
        h = 1.0 - np.sqrt(r)
    elif kind == 2:
        h = 1.0 - r**2
    else:
        h = 1.0 - np.sqrt(r) - r * np.sin(10.0 * math.pi * f1)
    return np.stack([f1, g * h], axis=-1)


def dtlz2(x: np.ndarray, m: int = 3) -> np.ndarray:
    """DTLZ2 of x (..., d) -> (..., m); the Pareto set x_m.. = 0.5, the front the unit
    sphere's positive orthant."""
    g = np.sum((x[..., m - 1 :] - 0.5) ** 2, axis=-1)
    theta = x[..., : m - 1] * (math.pi / 2)
    out = []
    for i in range(m):
        f = 1.0 + g
        for j in range(m - 1 - i):
            f = f * np.cos(theta[..., j])
        if i > 0:
            f = f * np.sin(theta[..., m - 1 - i])
        out.append(f)
    return np.stack(out, axis=-1)


def _front_distance(x: np.ndarray, family: str) -> np.ndarray:
    """Root-mean-square distance of the distance variables to the Pareto set, (..., d) -> (...)."""
    if family == "dtlz2":
        return np.sqrt(np.mean((x[..., 2:] - 0.5) ** 2, axis=-1))
    return np.sqrt(np.mean(x[..., 1:] ** 2, axis=-1))


def _cost(x: np.ndarray, family: str, where: str, span: float) -> np.ndarray:
    """The cost of x (..., d) -> (...), in [1, span]."""
    if where == "front":
        s = _front_distance(x, family)
        return 1.0 + (span - 1.0) * np.exp(-(s**2) / (2 * WIDTH**2))
    u = x[..., 0] if family != "dtlz2" else (x[..., 0] + x[..., 1]) / 2
    return np.asarray(span**u)  # x1 / corner: 1 at u = 0, span at u = 1


def _objectives(family: str, x: np.ndarray) -> np.ndarray:
    return dtlz2(x) if family == "dtlz2" else zdt(int(family[-1]), x)


class _Evaluate:
    """``evaluate(params, previous)`` -> ((f1, ..., fm), cost) (picklable)."""

    def __init__(self, family: str, where: str, span: float, d: int) -> None:
        self.family, self.where, self.span, self.d = family, where, span, d

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[tuple[float, ...], float]:
        x = _x(params, self.d)
        values = tuple(float(v) for v in _objectives(self.family, x))
        return values, float(_cost(x, self.family, self.where, self.span))


def _front_2d(family: str, n: int = 200_001) -> np.ndarray:
    """The analytic Pareto front of a ZDT problem on n points of its Pareto set, (k, 2)."""
    x = np.zeros((n, 4))
    x[:, 0] = np.linspace(0.0, 1.0, n)
    f = _objectives(family, x)  # (n, 2), sorted by f1
    earlier = np.concatenate([[np.inf], np.minimum.accumulate(f[:-1, 1])])  # (n,)
    return f[f[:, 1] < earlier]  # non-dominated: below every point of smaller f1


def _hv_2d(front: np.ndarray, ref: np.ndarray) -> float:
    """Exact 2-D hypervolume of a front sorted by f1 with f2 decreasing, (k, 2)."""
    f = front[np.all(front < ref, axis=1)]
    upper = np.concatenate([[ref[1]], f[:-1, 1]])  # (k,)
    return float(np.sum((ref[0] - f[:, 0]) * (upper - f[:, 1])))


@functools.cache
def calibration(family: str) -> tuple[tuple[float, ...], float]:
    """(reference point, hv_star) of a family: nadir + 10 % of the front's range, the front's
    hypervolume within it (closed forms where there are, checked against the grid in tests)."""
    if family == "dtlz2":
        return (1.1, 1.1, 1.1), 1.1**3 - math.pi / 6
    front = _front_2d(family)
    nadir, ideal = front.max(axis=0), front.min(axis=0)
    ref = nadir + 0.1 * (nadir - ideal)
    if family == "zdt1":
        return (1.1, 1.1), 1.21 - 1.0 / 3.0
    if family == "zdt2":
        return (1.1, 1.1), 1.21 - 2.0 / 3.0
    ref = np.round(ref, 4)  # a fixed, printable box
    return tuple(float(r) for r in ref), _hv_2d(front, ref)


def random_cost_mean(family: str, where: str, span: float, d: int, n: int = 100_000) -> float:
    x = np.random.default_rng(0).random((n, d))
    return float(np.mean(_cost(x, family, where, span)))


# (name, family, d, where, span)
SPECS: tuple[tuple[str, str, int, str, float], ...] = (
    ("zdt1-front-expensive", "zdt1", 4, "front", 100.0),
    ("zdt1-x1", "zdt1", 4, "x1", 10.0),
    ("zdt2-x1-expensive", "zdt2", 4, "x1", 100.0),
    ("zdt3-front", "zdt3", 4, "front", 10.0),
    ("dtlz2-front-expensive", "dtlz2", 5, "front", 100.0),
    ("dtlz2-corner", "dtlz2", 5, "corner", 10.0),
)
BUDGET_TRIALS = 30
"""Budget = this many times the mean cost of a uniform random point (rounded to 2 digits), at
least ``BUDGET_DEAREST`` times the dearest cost."""
BUDGET_DEAREST = 4


def _make(name: str, family: str, d: int, where: str, span: float) -> Problem:
    ref, hv_star = calibration(family)
    mean = random_cost_mean(family, where, span, d)
    budget = max(float(f"{BUDGET_TRIALS * mean:.2g}"), BUDGET_DEAREST * span)
    m = len(ref)
    return Problem(
        name=name,
        group=GROUP,
        budget=budget,
        evaluator=_Evaluate(family, where, span, d),
        params=tuple(Param(f"x{i}", "float", 0.0, 1.0) for i in range(1, d + 1)),
        description=(
            f"{family.upper()} ({m} objectives, d={d}), cost 1-{span:g}x "
            + ("highest on the Pareto set" if where == "front" else f"growing with {where}")
        ),
        max_trials=MULTI_MAX_TRIALS,
        reference_point=ref,
        hv_star=hv_star,
    )


def multi_problems() -> dict[str, Problem]:
    """The group ``multi``, by name."""
    return {spec[0]: _make(*spec) for spec in SPECS}


def describe(problems: Callable[[], dict[str, Problem]] = multi_problems) -> str:
    lines = ["| problem | m | d | budget | cost mean (random) | reference point | HV* |"]
    lines.append("|---|---|---|---|---|---|---|")
    for (name, family, d, where, span), p in zip(SPECS, problems().values(), strict=True):
        mean = random_cost_mean(family, where, span, d)
        ref = ", ".join(f"{r:g}" for r in p.reference_point)
        lines.append(
            f"| `{name}` | {p.n_objectives} | {d} | {p.budget:g} | {mean:.3g} | ({ref}) | "
            f"{p.hv_star:.6g} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe())
