"""Synthetic problems whose costs span three to five orders of magnitude (issue 59).

The suite's other problems span at most about 100x; neural-network tuning spans 1e5x (batch
size, width, depth and epochs multiply). Here a standard test function gets a log-linear
cost, as a network's size knobs give one:

    cost = span ** s(u),  s(u) = sum_j a_j v_j / sum_j a_j,  v_j = u_j or 1 - u_j,

u the unit-box position, j over a few "size" coordinates (:class:`LogLinearCost`): 1 at one
corner, ``span`` at the opposite one, and the optimum sits where its coordinates put it:
cheap (s* ~ 0.15), medium (~ 0.5) or dear (~ 0.85). Budget: 30 x the mean cost of a uniform
point (exact: a product of one-dimensional means), the rule of the issue's measurement. Some
are observed with Gaussian noise (sd 0.1 x the median random gap, as ``noisy.py``).

``python -m benchmarks.problems.extreme`` prints each problem's cost range: the ratio of the
95th to the 5th percentile of the cost of 1,000 uniform configurations (:func:`cost_range`).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import math
from typing import Any

import numpy as np

from benchmarks.harness.problem import AdditiveNoise
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import Separate
from benchmarks.problems.synthetic import FUNCTIONS
from benchmarks.problems.synthetic import _OnVector


GROUP = "extreme"
BUDGET_MULTIPLE = 30.0
"""Budget = this x the mean cost of a uniform point (issue 59's measurement)."""
MAX_TRIALS = 150
"""Trials per run at most: a frugal method buys thousands of trials at the cheap corner (GP
methods then take minutes per run); runs that hit it are flagged ``capped``."""
NOISE_LEVEL = 0.1
"""Noise sd as a fraction of the median random gap (value - f*) on the noisy problems."""


class LogLinearCost:
    """``span ** s(u)``, s the ``weights``-weighted mean of the unit positions of some
    coordinates, a negative weight counting from the top of the range (picklable)."""

    def __init__(
        self, names: Sequence[str], low: np.ndarray, high: np.ndarray, weights: Mapping[int, float]
    ) -> None:
        self.names = list(names)
        self.low = low  # (d,)
        self.span_x = high - low  # (d,)
        self.weights = dict(weights)
        self.total = sum(abs(w) for w in self.weights.values())

    def position(self, u: np.ndarray) -> float:
        """s(u) in [0, 1] for a unit-box point u (d,)."""
        s = sum(abs(w) * (u[j] if w > 0 else 1.0 - u[j]) for j, w in self.weights.items())
        return float(s) / self.total

    def unit(self, params: Mapping[str, Any]) -> np.ndarray:
        x = np.array([params[n] for n in self.names], dtype=float)  # (d,)
        return np.asarray((x - self.low) / self.span_x)

    def mean(self, span: float) -> float:
        """E[span ** s(u)] over uniform u: the product of the one-coordinate means."""
        out = 1.0
        for w in self.weights.values():
            e = abs(w) / self.total * math.log(span)
            out *= math.expm1(e) / e
        return out


class _Cost:
    """The cost of a problem: ``span ** s(u)`` (picklable)."""

    def __init__(self, shape: LogLinearCost, span: float) -> None:
        self.shape = shape
        self.span = span

    def __call__(self, params: Mapping[str, Any]) -> float:
        return float(self.span ** self.shape.position(self.shape.unit(params)))


# name -> (function, span, {coordinate: signed weight}, median random gap or None: no noise)
# NOTE(gaps): noisy.median_gap of the noise-free problem (20,000 uniform points, seed 0),
# rounded to 4 digits so the definitions do not depend on numpy's generator; the tests
# recompute them. Optimum positions s* (and Hartmann-6's cheap local minimum -3.20, s in
# brackets) from the functions' minimizers.
SPECS: dict[str, tuple[str, float, dict[int, float], float | None]] = {
    "hartmann3-1e3-cheap": ("hartmann3", 1e3, {0: 1.0}, None),  # s* 0.11
    "hartmann6-1e4-cheap-noisy": ("hartmann6", 1e4, {0: 1.0, 1: 1.0}, 3.221),  # 0.18 (0.64)
    "branin-1e5-cheap": ("branin", 1e5, {1: -1.0}, None),  # s* 0.18 (the other two 0.83-0.85)
    "hartmann3-1e5-medium": ("hartmann3", 1e5, {1: 1.0}, None),  # s* 0.56
    "hartmann6-1e3-medium": ("hartmann6", 1e3, {2: 1.0}, None),  # s* 0.48 (0.87)
    "levy4-1e4-medium-noisy": ("levy4", 1e4, {0: 1.0, 1: 1.0}, 36.91),  # s* 0.55
    "hartmann6-1e5-dear": ("hartmann6", 1e5, {0: -1.0, 1: -1.0}, None),  # s* 0.82 (0.36)
    "rosenbrock4-1e4-dear": ("rosenbrock4", 1e4, {0: 1.0, 1: 1.0}, None),  # s* 0.74
    "hartmann3-1e5-dear-noisy": ("hartmann3", 1e5, {0: -1.0, 2: 1.0}, 3.315),  # s* 0.87
}


def extreme_problem(name: str) -> Problem:
    """The problem ``name`` of :data:`SPECS`."""
    key, span, weights, gap = SPECS[name]
    tf = FUNCTIONS[key]
    names = [f"x{i}" for i in range(tf.dim)]
    bounds = zip(names, tf.low, tf.high, strict=True)
    shape = LogLinearCost(names, tf.low, tf.high, weights)
    evaluator = Separate(_OnVector(tf.fn, names), _Cost(shape, span))
    s_star = min(shape.position(shape.unit(dict(zip(names, x, strict=True)))) for x in tf.argmins)
    what = (
        f"{tf.name} ({tf.dim}-D), cost {span:.0e} ** s(u) over coordinates "
        f"{sorted(weights)}, the optimum at s = {s_star:.2f}"
    )
    noise: dict[str, Any] = {}
    if gap is not None:
        sd = float(f"{NOISE_LEVEL * gap:.4g}")
        noise = {
            "noisy_evaluator": AdditiveNoise(evaluator, sd),
            "settings": {"noise": f"gaussian sd={sd!r}"},
        }
        what += f"; Gaussian noise sd {sd:.4g}"
    return Problem(
        name=name,
        group=GROUP,
        budget=float(f"{BUDGET_MULTIPLE * shape.mean(span):.3g}"),
        evaluator=evaluator,
        params=tuple(Param(n, "float", float(lo), float(hi)) for n, lo, hi in bounds),
        f_star=tf.f_star,
        description=what,
        max_trials=MAX_TRIALS,
        **noise,
    )


def extreme_problems() -> dict[str, Problem]:
    """The suite's group ``extreme``: every problem of :data:`SPECS`."""
    return {name: extreme_problem(name) for name in SPECS}


def cost_range(costs: Sequence[float] | np.ndarray) -> float:
    """The ratio of the 95th to the 5th percentile of ``costs``."""
    low, high = np.percentile(np.asarray(costs, dtype=float), [5, 95])
    return float(high / low)


def uniform_costs(problem: Problem, n: int = 1000, seed: int = 0) -> np.ndarray:
    """Costs of ``n`` uniform points of the encoded box, shape (n,)."""
    rng = np.random.default_rng(seed)
    points = rng.random((n, problem.encoded_dim))  # (n, encoded_dim)
    return np.array([problem.evaluate(problem.decode(u))[1] for u in points])


if __name__ == "__main__":
    print("| problem | d | span | budget | cost p5 | p50 | p95 | p95 / p5 | B / mean |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in extreme_problems().values():
        c = uniform_costs(p)
        p5, p50, p95 = np.percentile(c, [5, 50, 95])
        span = SPECS[p.name][1]
        print(
            f"| `{p.name}` | {p.dim} | {span:.0e} | {p.budget:g} | {p5:.3g} | {p50:.3g} | "
            f"{p95:.3g} | {p95 / p5:.0f} | {p.budget / c.mean():.0f} |"
        )
