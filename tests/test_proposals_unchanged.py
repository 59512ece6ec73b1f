"""Proposals of every acquisition, seed for seed, against a recording made before a refactor.

``tests/data/proposals.json`` holds the parameters every trial of a few short studies was
given (four problems: fitted cost, mixed space, known cost, moving cost; every acquisition;
two seeds). A change that is meant to leave behaviour alone must leave these identical.
Re-record only for an intended change of behaviour:
``python tests/test_proposals_unchanged.py --record``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
import sys
from typing import Any

import optuna
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


RECORDING = Path(__file__).parent / "data" / "proposals.json"
ACQUISITIONS = [
    ("rollout", 2),
    ("rollout-paper", 2),
    ("rollout-paper", 3),
    ("ei", 2),
    ("eipu", 2),
    ("ei-cool", 2),
]
SEEDS = (0, 1)
N_TRIALS = 10


def _synthetic(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -1.0, 1.0)
    y = trial.suggest_float("y", -1.0, 1.0)
    r = math.hypot(x, y)
    report_cost(trial, 10.0 - 5.0 * min(r, 1.0))
    return 10.0 * r * math.sin(2.0 * math.pi * r)


def _mixed(trial: optuna.Trial) -> float:
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    depth = trial.suggest_int("depth", 1, 16)
    frac = trial.suggest_float("frac", 0.0, 1.0, step=0.25)
    kind = trial.suggest_categorical("kind", ["a", "b", "c"])
    report_cost(trial, 0.5 + 0.3 * depth + (1.0 if kind == "c" else 0.0))
    offset = {"a": 0.3, "b": 0.0, "c": -0.2}[kind]
    return (math.log10(lr) + 2.5) ** 2 + 0.05 * (depth - 11) ** 2 + (frac - 0.5) ** 2 + offset


def _plain(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", 0.0, 1.0)
    y = trial.suggest_float("y", 0.0, 1.0)
    return (x - 0.8) ** 2 + (y - 0.3) ** 2 + 0.2 * math.sin(9.0 * x)


def _known_cost(params: dict[str, Any]) -> float:
    return 1.0 + 9.0 * params["x"]


def _moving_cost(params: dict[str, Any], previous: dict[str, Any] | None) -> float:
    if previous is None:
        return 1.0
    return 0.1 + math.hypot(params["x"] - previous["x"], params["y"] - previous["y"])


# name -> (objective, budget, sampler options)
PROBLEMS: dict[str, tuple[Any, float, dict[str, Any]]] = {
    "synthetic": (_synthetic, 75.0, {}),
    "mixed": (_mixed, 1e4, {}),
    "known": (_plain, 1e4, {"cost_fn": _known_cost}),
    "moving": (_plain, 6.0, {"cost_fn": _moving_cost}),
}


def _run(problem: str, acquisition: str, horizon: int, seed: int) -> list[dict[str, Any]]:
    objective, budget, options = PROBLEMS[problem]
    sampler = CostRolloutSampler(
        budget,
        acquisition=acquisition,
        horizon=horizon,
        n_startup_trials=4,
        seed=seed,
        dashboard_chart=False,
        **options,
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=N_TRIALS)
    return [dict(t.params) for t in study.get_trials(deepcopy=False)]


def _cases() -> list[tuple[str, str, int, int]]:
    return [(p, a, h, s) for p in PROBLEMS for a, h in ACQUISITIONS for s in SEEDS]


def _key(problem: str, acquisition: str, horizon: int, seed: int) -> str:
    return f"{problem}/{acquisition}/h{horizon}/seed{seed}"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


@pytest.mark.parametrize(("problem", "acquisition", "horizon", "seed"), _cases())
def test_proposals_are_unchanged(problem: str, acquisition: str, horizon: int, seed: int) -> None:
    recorded = json.loads(RECORDING.read_text())[_key(problem, acquisition, horizon, seed)]
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    got = _run(problem, acquisition, horizon, seed)
    assert len(got) == len(recorded)
    for number, (g, r) in enumerate(zip(got, recorded, strict=True)):
        assert g.keys() == r.keys(), f"trial {number}"
        assert all(_same(g[k], r[k]) for k in g), f"trial {number}: {g} != {r}"


if __name__ == "__main__":
    if "--record" not in sys.argv:
        sys.exit("usage: python tests/test_proposals_unchanged.py --record")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    out = {_key(*case): _run(*case) for case in _cases()}
    RECORDING.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(out)} studies in {RECORDING}")
