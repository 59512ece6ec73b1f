"""Synthetic problems: known objective, known cost, budget and known optimum, so runs are
deterministic and cheap. The cost-aware suite's 13 problems (``SUITE``) and the paper's
synthetic problem (Lee et al. 2021, Section 5.1, Figure 4: ``synth-printed``).

Every problem is a minimization over a small space of :class:`~benchmarks.harness.problem.Param`
whose cost is a formula of the point (:class:`~benchmarks.harness.problem.Separate`). Groups:

- ``adversarial``: the optimum is expensive (the paper's motivating failure of EIpu), plus
  the paper's synthetic problem as printed (whose optimum is NOT the expensive region; kept
  because it is the paper's problem);
- ``control``: the optimum is cheap (cost-friendly) or every point costs 1 (uniform).

``python -m benchmarks.problems.synthetic`` prints each problem with the cost statistics of
uniform random points and what its budget buys.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import functools
import math
from typing import Any

import numpy as np
from scipy import optimize as sp_optimize

from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import Separate


SUITE_MAX_TRIALS = 60
"""Trials per suite run at most: with costs spanning 1-100x a method that settles in a cheap
region could buy hundreds of trials (GP methods then take minutes per run). Runs are
sequential and deterministic given the seed, so a run cached under a higher cap is cut to its
first SUITE_MAX_TRIALS trials when read (the same trials a run under this cap makes)."""


def _floats(names: Sequence[str], low: float, high: float) -> list[Param]:
    return [Param(n, "float", low, high) for n in names]


def _problem(
    *,
    name: str,
    group: str,
    params: Sequence[Param],
    objective: Callable[[dict[str, Any]], float],
    cost: Callable[[dict[str, Any]], float],
    budget: float,
    f_star: float,
    description: str,
    version: int = 1,
) -> Problem:
    return Problem(
        name=name,
        group=group,
        budget=budget,
        evaluator=Separate(objective, cost),
        params=tuple(params),
        f_star=f_star,
        description=description,
        version=version,
        max_trials=SUITE_MAX_TRIALS,
    )


# -- test functions (vectorised over the last axis: x (..., d) -> (...)) ---------------------


def branin(x: np.ndarray) -> np.ndarray:
    x1, x2 = x[..., 0], x[..., 1]
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * np.cos(x1) + 10


_H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H3_P = 1e-4 * np.array(
    [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]]
)
_H6_A = np.array(
    [
        [10, 3, 17, 3.5, 1.7, 8],
        [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8],
        [17, 8, 0.05, 10, 0.1, 14],
    ]
)
_H6_P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)
_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def _hartmann(x: np.ndarray, a: np.ndarray, p: np.ndarray) -> np.ndarray:
    inner = np.sum(a * (x[..., None, :] - p) ** 2, axis=-1)  # (..., 4)
    return -np.sum(_H_ALPHA * np.exp(-inner), axis=-1)


def hartmann3(x: np.ndarray) -> np.ndarray:
    return _hartmann(x, _H3_A, _H3_P)


def hartmann6(x: np.ndarray) -> np.ndarray:
    return _hartmann(x, _H6_A, _H6_P)


def levy(x: np.ndarray) -> np.ndarray:
    w = 1 + (x - 1) / 4
    head = np.sin(math.pi * w[..., 0]) ** 2
    mid = np.sum((w[..., :-1] - 1) ** 2 * (1 + 10 * np.sin(math.pi * w[..., :-1] + 1) ** 2), -1)
    tail = (w[..., -1] - 1) ** 2 * (1 + np.sin(2 * math.pi * w[..., -1]) ** 2)
    return head + mid + tail


def rosenbrock(x: np.ndarray) -> np.ndarray:
    return np.sum(100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (x[..., :-1] - 1) ** 2, axis=-1)


@dataclass(frozen=True)
class TestFunction:
    name: str
    fn: Callable[[np.ndarray], np.ndarray]
    low: np.ndarray  # (d,)
    high: np.ndarray  # (d,)
    argmins: np.ndarray  # (k, d): every global minimizer (the cost bumps sit on all of them)

    @property
    def dim(self) -> int:
        return len(self.low)

    @functools.cached_property
    def f_star(self) -> float:
        """The known minimum, polished by L-BFGS-B from the listed minimizers (so regrets of
        points near the optimum are never negative from rounding of published constants)."""
        best = math.inf
        for x0 in self.argmins:
            res = sp_optimize.minimize(
                lambda x: float(self.fn(x)),
                x0,
                method="L-BFGS-B",
                bounds=list(zip(self.low, self.high, strict=True)),
                options={"ftol": 1e-15, "gtol": 1e-12},
            )
            best = min(best, float(res.fun), float(self.fn(x0)))
        return best


def _box(d: int, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    return np.full(d, low), np.full(d, high)


FUNCTIONS = {
    "branin": TestFunction(
        "Branin",
        branin,
        np.array([-5.0, 0.0]),
        np.array([10.0, 15.0]),
        np.array([[-math.pi, 12.275], [math.pi, 2.275], [9.42478, 2.475]]),
    ),
    "hartmann3": TestFunction(
        "Hartmann-3", hartmann3, *_box(3, 0, 1), np.array([[0.114614, 0.555649, 0.852547]])
    ),
    "hartmann6": TestFunction(
        "Hartmann-6",
        hartmann6,
        *_box(6, 0, 1),
        np.array([[0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]]),
    ),
    "levy4": TestFunction("Levy-4", levy, *_box(4, -10, 10), np.ones((1, 4))),
    "rosenbrock4": TestFunction(
        "Rosenbrock-4", rosenbrock, *_box(4, -2.048, 2.048), np.ones((1, 4))
    ),
}

BUMP_WIDTH = 0.15
"""Width of the cost bump: g(u) = max_k exp(-||u - u*_k||^2 / (2 d w^2)) in unit-box
coordinates u (d = dimension), i.e. w is the root-mean-square distance per coordinate at which
g falls to exp(-1/2); cost 1 + 99 g = 61 there, 14 at 2w, 1.4 at 3w."""


class _Bump:
    """g(x) = max_k exp(-||u - u*_k||^2 / (2 d w^2)) in unit-box coordinates u (picklable)."""

    def __init__(self, tf: TestFunction, width: float) -> None:
        self.low = tf.low
        self.span = tf.high - tf.low
        self.centres = (tf.argmins - tf.low) / self.span  # (k, d)
        self.dim = tf.dim
        self.width = width

    def __call__(self, x: np.ndarray) -> float:
        u = (np.asarray(x, dtype=float) - self.low) / self.span
        sq = np.sum((u - self.centres) ** 2, axis=-1) / self.dim  # (k,)
        return float(np.max(np.exp(-0.5 * sq / self.width**2)))


class _OnVector:
    """``fn`` of the vector of the params ``names``, as a float (picklable)."""

    def __init__(self, fn: Callable[[np.ndarray], Any], names: Sequence[str]) -> None:
        self.fn = fn
        self.names = list(names)

    def __call__(self, params: dict[str, Any]) -> float:
        return float(self.fn(np.array([params[n] for n in self.names], dtype=float)))


class _BumpCost:
    """Cost ``base + scale * g(x)`` (picklable)."""

    def __init__(self, bump: _Bump, names: Sequence[str], base: float, scale: float) -> None:
        self.g = _OnVector(bump, names)
        self.base = base
        self.scale = scale

    def __call__(self, params: dict[str, Any]) -> float:
        return self.base + self.scale * self.g(params)


def _unit_cost(params: dict[str, Any]) -> float:
    return 1.0


def function_problem(
    key: str, shape: str, budget: float, group: str, width: float = BUMP_WIDTH
) -> Problem:
    """A test function with cost ``shape``: "expensive" (1 + 99 g, g peaked on the minima),
    "cheap" (10 - 9 g: the optimum is cheap) or "uniform" (1 everywhere)."""
    tf = FUNCTIONS[key]
    names = [f"x{i}" for i in range(tf.dim)]
    bounds = zip(names, tf.low, tf.high, strict=True)
    params = tuple(Param(n, "float", float(lo), float(hi)) for n, lo, hi in bounds)
    bump = _Bump(tf, width)
    cost: Callable[[dict[str, Any]], float]
    if shape == "expensive":
        cost = _BumpCost(bump, names, 1.0, 99.0)
        what = f"cost 1 + 99 g(x), g = 1 on every global minimizer, w = {width:g}"
    elif shape == "cheap":
        cost = _BumpCost(bump, names, 10.0, -9.0)
        what = f"cost 10 - 9 g(x): 1 on the minimizers, ~10 far from them, w = {width:g}"
    else:
        cost = _unit_cost
        what = "cost 1 everywhere"
    return _problem(
        name=f"{key}-{shape}",
        group=group,
        params=params,
        objective=_OnVector(tf.fn, names),
        cost=cost,
        budget=budget,
        f_star=tf.f_star,
        description=f"{tf.name} ({tf.dim}-D), {what}",
    )


# The paper's synthetic problem (Lee et al. 2021, Section 5.1).
SYNTH_R_STAR = 0.7819589
SYNTH_F_STAR = 10 * SYNTH_R_STAR * math.sin(2 * math.pi * SYNTH_R_STAR)


def _radius(p: dict[str, Any]) -> float:
    return math.hypot(p["x0"], p["x1"])


def _synth_f(p: dict[str, Any]) -> float:
    r = _radius(p)
    return 10.0 * r * math.sin(2.0 * math.pi * r)


def _synth_printed_cost(p: dict[str, Any]) -> float:
    return 10.0 - 5.0 * _radius(p)


def _synth_ring_cost(p: dict[str, Any]) -> float:
    return 1.0 + 9.0 * math.exp(-(((_radius(p) - SYNTH_R_STAR) / 0.1) ** 2))


def synthetic_printed() -> Problem:
    return _problem(
        name="synth-printed",
        group="adversarial",
        params=tuple(_floats(["x0", "x1"], -1.0, 1.0)),
        objective=_synth_f,
        cost=_synth_printed_cost,
        budget=150.0,
        f_star=SYNTH_F_STAR,
        description=(
            "paper's synthetic as printed: f = 10 r sin(2 pi r), c = 10 - 5 r, r = ||x||, "
            "[-1, 1]^2 (cost highest at the centre; the optimal ring r* = 0.782 costs 6.09)"
        ),
    )


def synthetic_ring() -> Problem:
    return _problem(
        name="synth-ring",
        group="adversarial",
        params=tuple(_floats(["x0", "x1"], -1.0, 1.0)),
        objective=_synth_f,
        cost=_synth_ring_cost,
        budget=150.0,
        f_star=SYNTH_F_STAR,
        description=(
            "paper's synthetic as described (cost peaked on the optimal ring): same f, "
            "c = 1 + 9 exp(-((r - r*) / 0.1)^2), r* = 0.782: 10 on the ring, 1 far from it"
        ),
    )


# A size-like problem: width and depth as log-scaled ints, the cost their product.
_SIZE_W = (8, 1024)
_SIZE_D = (1, 32)
_SIZE_OPT = (0.85, 0.8)  # log-positions of the best width and depth


def _size_positions(p: dict[str, Any]) -> tuple[float, float]:
    uw = math.log(p["width"] / _SIZE_W[0]) / math.log(_SIZE_W[1] / _SIZE_W[0])
    ud = math.log(p["depth"] / _SIZE_D[0]) / math.log(_SIZE_D[1] / _SIZE_D[0])
    return uw, ud


def _size_core(uw: float, ud: float) -> float:
    """Loss from capacity alone: falls with width and depth, then rises a little (overfit)."""
    return (
        0.1
        + 0.6 * (uw - _SIZE_OPT[0]) ** 2
        + 0.5 * (ud - _SIZE_OPT[1]) ** 2
        + 0.3 * (uw - _SIZE_OPT[0]) * (ud - _SIZE_OPT[1])
    )


def _size_f(p: dict[str, Any]) -> float:
    uw, ud = _size_positions(p)
    ulr = math.log(p["lr"] / 1e-4) / math.log(1.0 / 1e-4)
    lr_opt = 0.75 - 0.35 * uw  # wider nets want smaller learning rates
    do_opt = 0.35 * ud  # deeper nets want more dropout
    return (
        _size_core(uw, ud)
        + 0.8 * (ulr - lr_opt) ** 2
        + 0.05 * (1.0 - math.cos(8 * math.pi * (ulr - lr_opt)))  # ripples: local minima
        + 0.3 * (p["dropout"] - do_opt) ** 2
    )


def _size_f_star() -> float:
    # lr and dropout terms reach 0 at their optima for every (width, depth): enumerate ints.
    return min(
        _size_core(*_size_positions({"width": w, "depth": d}))
        for w in range(_SIZE_W[0], _SIZE_W[1] + 1)
        for d in range(_SIZE_D[0], _SIZE_D[1] + 1)
    )


def _size_cost(p: dict[str, Any]) -> float:
    return 10.0 ** sum(_size_positions(p))


def size_like() -> Problem:
    return _problem(
        name="size-expensive",
        group="adversarial",
        params=(
            Param("width", "int", *_SIZE_W, log=True),
            Param("depth", "int", *_SIZE_D, log=True),
            Param("lr", "float", 1e-4, 1.0, log=True),
            Param("dropout", "float", 0.0, 1.0),
        ),
        objective=_size_f,
        cost=_size_cost,
        version=2,  # 1 had a ripple term that went below f*
        budget=550.0,
        f_star=_size_f_star(),
        description=(
            "size-like: width 8-1024 and depth 1-32 (log ints), lr 1e-4-1 (log), dropout; "
            "cost 10^(u_w + u_d) = (width/8)^0.66 depth^0.4 (1-100), optimum at "
            "width ~470, depth ~16 (cost ~45), lr optimum shifts with width"
        ),
    )


# A mixed space whose best category is the expensive one.
_MIX_OFFSET = {"a": 0.3, "b": 0.5, "c": 0.8, "d": 0.0}
_MIX_COSTMUL = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 20.0}
_MIX_N_OPT = 7


def _mixed_f(p: dict[str, Any]) -> float:
    x = np.array([-5.0 + 15.0 * p["x0"], 15.0 * p["x1"]])
    return float(branin(x)) / 10.0 + _MIX_OFFSET[p["cat"]] + 0.02 * (p["n"] - _MIX_N_OPT) ** 2


def _mixed_cost(p: dict[str, Any]) -> float:
    return _MIX_COSTMUL[p["cat"]] * (1.0 + 4.0 * (p["n"] - 1) / 9.0)


def mixed() -> Problem:
    return _problem(
        name="mixed-expensive",
        group="adversarial",
        params=(
            Param("x0", "float"),
            Param("x1", "float"),
            Param("n", "int", 1, 10),
            Param("cat", "cat", choices=("a", "b", "c", "d")),
        ),
        objective=_mixed_f,
        cost=_mixed_cost,
        budget=600.0,
        f_star=FUNCTIONS["branin"].f_star / 10.0,
        description=(
            "mixed: Branin/10 on [0,1]^2 + 0.02 (n - 7)^2 (n in 1..10) + offset of cat "
            "(a 0.3, b 0.5, c 0.8, d 0); cost (1 + 4 (n-1)/9) x (20 if cat = d else 1): "
            "1-100, the optimum costs 73"
        ),
    )


def _all() -> dict[str, Problem]:
    problems = [
        synthetic_printed(),
        synthetic_ring(),
        # Branin has three minima, so three bumps: narrower, or the whole box is dear.
        function_problem("branin", "expensive", 900.0, "adversarial", width=0.1),
        function_problem("hartmann3", "expensive", 500.0, "adversarial"),
        function_problem("hartmann6", "expensive", 450.0, "adversarial"),
        function_problem("levy4", "expensive", 700.0, "adversarial"),
        function_problem("rosenbrock4", "expensive", 500.0, "adversarial"),
        size_like(),
        mixed(),
        function_problem("branin", "cheap", 150.0, "control", width=0.1),
        function_problem("hartmann3", "cheap", 170.0, "control"),
        function_problem("branin", "uniform", 30.0, "control"),
        function_problem("hartmann6", "uniform", 40.0, "control"),
    ]
    return {p.name: p for p in problems}


SUITE: dict[str, Problem] = _all()
"""The cost-aware suite, in the order of its tables."""


def describe(problems: Sequence[Problem] | None = None, n: int = 20000, seed: int = 0) -> str:
    """Cost statistics of uniform random points (in the encoded box) per problem."""
    rng = np.random.default_rng(seed)
    lines = [
        f"{'problem':<22}{'group':<12}{'d':>3}{'budget':>8}{'f*':>12}"
        f"{'c min':>8}{'c mean':>8}{'c max':>8}{'B/mean':>8}"
    ]
    for p in problems if problems is not None else SUITE.values():
        costs = np.array([p.evaluate(p.decode(u))[1] for u in rng.random((n, p.encoded_dim))])
        lines.append(
            f"{p.name:<22}{p.group:<12}{p.dim:>3}{p.budget:>8g}{p.f_star:>12.6g}"
            f"{costs.min():>8.2f}{costs.mean():>8.2f}{costs.max():>8.2f}"
            f"{p.budget / costs.mean():>8.1f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe())
