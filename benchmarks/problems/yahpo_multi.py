"""Multi-objective YAHPO Gym problems (issue 52): the suite's group ``multi-real``.

Three of the suite's ``real`` instances with a second objective from the same surrogate, the
training time as the cost (reported, clipped at ``yahpo.COST_FLOOR``), the instance's budget
(``benchmarks/results/yahpo_calibration.json``), every objective minimized:

| problem | instance | objectives |
|---|---|---|
| ``yahpo-xgb-gbtree-16-mo`` | rbv2_xgboost 16, gbtree | 1 - acc, log timepredict |
| ``yahpo-rpart-41161-mo`` | rbv2_rpart 41161 | 1 - acc, log memory |
| ``yahpo-glmnet-41146-mo`` | iaml_glmnet 41146 | mmce, number of features used |

The best known front: ``python -m benchmarks.problems.yahpo_multi`` evaluates
:data:`N_CALIBRATION` uniform random configurations and keeps their non-dominated points; the
reference point is that front's nadir plus a tenth of its range, and ``hv_star`` its
hypervolume (both fixed with the problem, written to
``benchmarks/results/yahpo_multi_calibration.json``). The reports score against the
hypervolume of the union of that front and every run's points (:func:`best_known_hv`), so
a run that goes beyond the random front is not clamped at 0; the fingerprint keeps the
calibration's value. Needs the YAHPO environment (``README_yahpo.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
import functools
import json
import math
from pathlib import Path
import sys
import time
from typing import Any

import numpy as np

from benchmarks.problems import yahpo


GROUP = "multi-real"
MAX_TRIALS = 60
"""Trials per run at most (a random search gets about 40 in the budget)."""
N_CALIBRATION = 5000
CALIBRATION_PATH = yahpo.CALIBRATION_PATH.with_name("yahpo_multi_calibration.json")


def _log(x: float) -> float:
    return math.log(max(x, 1e-12))


# name -> (base instance, names of the two objectives, the second from the outputs)
SECOND: dict[str, tuple[str, str, Callable[[dict[str, float]], float]]] = {
    "yahpo-xgb-gbtree-16-mo": (
        "yahpo-xgb-gbtree-16",
        "log timepredict",
        lambda y: _log(float(y["timepredict"])),
    ),
    "yahpo-rpart-41161-mo": (
        "yahpo-rpart-41161",
        "log memory",
        lambda y: _log(float(y["memory"])),
    ),
    "yahpo-glmnet-41146-mo": ("yahpo-glmnet-41146", "nf", lambda y: float(y["nf"])),
}


def outputs(name: str, params: dict[str, Any]) -> tuple[tuple[float, float], float]:
    """((error, second objective), cost) of one configuration at full fidelity."""
    base, _, second = SECOND[name]
    inst = yahpo.get_instance(base)
    inst.check(params)
    bench = yahpo.benchmark_set(inst.scenario)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        (y,) = bench.objective_function([inst._row(params, inst.max_fidelity)])
    info = yahpo._SCENARIO_INFO[inst.scenario]
    error = min(max(float(info.error(y)), 0.0), 1.0)
    cost = max(float(y[info.runtime]), yahpo.COST_FLOOR)
    return (error, float(second(y))), cost


class _Evaluate:
    """``(params, previous) -> ((error, second), cost)`` by name (picklable)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[tuple[float, float], float]:
        return outputs(self.name, params)


@functools.lru_cache(maxsize=2)
def _calibration(path: str) -> dict[str, Any]:
    with open(path) as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def calibration_front(name: str, path: Path = CALIBRATION_PATH) -> np.ndarray:
    """The calibration's non-dominated points of a problem, (k, 2)."""
    return np.asarray(_calibration(str(path))["problems"][name]["front"], dtype=float)


def best_known_hv(problem: Any, runs: Iterable[Any]) -> float:
    """The hypervolume of the union of the calibration front and every run's points."""
    from benchmarks.harness import stats

    points = [calibration_front(problem.name)]
    points += [np.asarray(r.objectives, dtype=float).reshape(-1, 2) for r in runs]
    return stats.hypervolume(np.concatenate(points), problem.reference_point)


def as_problem(name: str, path: Path = CALIBRATION_PATH) -> Any:
    from benchmarks.harness.problem import Param
    from benchmarks.harness.problem import Problem

    base = yahpo.get_instance(SECOND[name][0])
    entry = _calibration(str(path))["problems"][name]
    params = tuple(
        Param(p.name, p.kind, p.low, p.high, p.log, tuple(p.choices), condition=p.condition)
        for p in base.params
    )
    return Problem(
        name=name,
        group=GROUP,
        budget=base.budget,
        evaluator=_Evaluate(name),
        params=params,
        description=f"{base.description}: {base.metric} against {SECOND[name][1]}",
        max_trials=MAX_TRIALS,
        reference_point=tuple(entry["reference_point"]),
        hv_star=float(entry["hv"]),
    )


def multi_real_problems() -> dict[str, Any]:
    """The group ``multi-real`` (needs yahpo-gym and the data to run, the JSON to define)."""
    return {name: as_problem(name) for name in SECOND}


def calibrate(n: int = N_CALIBRATION, seed: int = 0) -> dict[str, Any]:
    """Random configurations of each problem: the front, reference point and hypervolume."""
    from benchmarks.harness import stats

    out: dict[str, Any] = {"n": n, "seed": seed, "problems": {}}
    for name, (base, second_name, _) in SECOND.items():
        start = time.perf_counter()
        inst = yahpo.get_instance(base)
        configs = inst.sample(n, np.random.default_rng(seed))
        values = np.empty((n, 2))  # (n, 2)
        costs = np.empty(n)  # (n,)
        for i, params in enumerate(configs):
            values[i], costs[i] = outputs(name, params)
        front = stats.pareto_front(values)  # (k, 2)
        nadir, ideal = front.max(axis=0), front.min(axis=0)
        ref = nadir + 0.1 * (nadir - ideal)
        out["problems"][name] = {
            "base": base,
            "objectives": [inst.metric, second_name],
            "reference_point": [float(r) for r in ref],
            "hv": stats.hypervolume(front, ref),
            "front": [[float(a), float(b)] for a, b in front[np.argsort(front[:, 0])]],
            "cost_mean": float(costs.mean()),
            "second_range": [float(values[:, 1].min()), float(values[:, 1].max())],
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(name, {k: v for k, v in out["problems"][name].items() if k != "front"})
    return out


if __name__ == "__main__":
    result = calibrate(int(sys.argv[1]) if len(sys.argv) > 1 else N_CALIBRATION)
    CALIBRATION_PATH.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {CALIBRATION_PATH}")
