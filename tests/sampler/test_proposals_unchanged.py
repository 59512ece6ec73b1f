"""Proposals of every acquisition, seed for seed, against a recording made before a refactor.

``tests/sampler/data/proposals.json`` holds the parameters every trial of a few short studies was
given (four problems: fitted cost, mixed space, known cost, moving cost; every acquisition;
two seeds). A change that is meant to leave behaviour alone must leave these unchanged.
Re-record only for an intended change of behaviour:
``python tests/sampler/test_proposals_unchanged.py --record``.

NOTE: the comparison is teacher-forced. Each trial is given the RECORDED parameters, and
the sampler's own proposal for it is compared with them, within 1e-3 of each parameter's
range (log ranges in log space; categoricals exactly). L-BFGS-B ends a few ulps apart on
CPUs whose BLAS and numpy kernels differ (the recording was made on one machine; CI runs
on another), and a live run would carry that 1e-8 difference into different data and
then different points; forced, every proposal sees the recorded history, so a machine
moves a point by about 1e-5 of its range, while a change of behaviour moves it far more.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
import sys
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
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


TOLERANCE = 1e-3
"""Largest difference allowed between a proposal and the recording, in units of the range."""


class _Forced(BaseSampler):
    """Gives each trial the recorded parameters and keeps the sampler's own proposals.

    Every hook is the sampler's; only the value a trial receives is replaced, so the sampler
    sees the recorded history (and its random state advances as it did when recording).
    """

    def __init__(self, inner: BaseSampler, recorded: list[dict[str, Any]] | None) -> None:
        self.inner = inner
        self.recorded = recorded
        self.proposed: dict[int, dict[str, Any]] = {}

    def _forced(self, trial: FrozenTrial, name: str, value: Any) -> Any:
        self.proposed.setdefault(trial.number, {})[name] = value
        if self.recorded is None:
            return value
        return self.recorded[trial.number][name]

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        params = self.inner.sample_relative(study, trial, search_space)
        return {name: self._forced(trial, name, value) for name, value in params.items()}

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, name: str, dist: BaseDistribution
    ) -> Any:
        value = self.inner.sample_independent(study, trial, name, dist)
        return self._forced(trial, name, value)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.inner.before_trial(study, trial)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Any,
    ) -> None:
        self.inner.after_trial(study, trial, state, values)


def _run(
    problem: str,
    acquisition: str,
    horizon: int,
    seed: int,
    recorded: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]], optuna.Study]:
    """The trials' parameters, the sampler's own proposals (trial number -> params) and the
    study; with ``recorded``, each trial is given the recorded parameters."""
    objective, budget, options = PROBLEMS[problem]
    inner = CostRolloutSampler(
        budget,
        acquisition=acquisition,
        horizon=horizon if acquisition.startswith("rollout") else None,
        n_startup_trials=4,
        seed=seed,
        overrun_risk=None,  # recorded under the soft budget (before 0.2's hard one)
        **options,
    )
    sampler = _Forced(inner, recorded)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=N_TRIALS)
    return [dict(t.params) for t in study.get_trials(deepcopy=False)], sampler.proposed, study


def _cases() -> list[tuple[str, str, int, int]]:
    return [(p, a, h, s) for p in PROBLEMS for a, h in ACQUISITIONS for s in SEEDS]


def _key(problem: str, acquisition: str, horizon: int, seed: int) -> str:
    return f"{problem}/{acquisition}/h{horizon}/seed{seed}"


def _distance(dist: BaseDistribution, a: Any, b: Any) -> float:
    """|a - b| in units of the parameter's range (log range for log parameters); 0 or inf
    for categoricals."""
    if isinstance(dist, CategoricalDistribution):
        return 0.0 if a == b else math.inf
    low, high = float(dist.low), float(dist.high)  # type: ignore[attr-defined]
    if getattr(dist, "log", False):
        a, b, low, high = (math.log(v) for v in (a, b, low, high))
    return abs(float(a) - float(b)) / max(high - low, 1e-300)


@pytest.mark.parametrize(("problem", "acquisition", "horizon", "seed"), _cases())
def test_proposals_are_unchanged(problem: str, acquisition: str, horizon: int, seed: int) -> None:
    recorded = json.loads(RECORDING.read_text())[_key(problem, acquisition, horizon, seed)]
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    params, proposed, study = _run(problem, acquisition, horizon, seed, recorded)
    assert params == recorded  # the forcing itself
    trials = study.get_trials(deepcopy=False)
    for number, r in enumerate(recorded):
        got = proposed[number]
        assert got.keys() == r.keys(), f"trial {number}"
        far = {
            k: _distance(trials[number].distributions[k], got[k], r[k])
            for k in r
            if _distance(trials[number].distributions[k], got[k], r[k]) > TOLERANCE
        }
        assert not far, f"trial {number}: proposed {got}, recorded {r} (off by {far})"


if __name__ == "__main__":
    if "--record" not in sys.argv:
        sys.exit("usage: python tests/sampler/test_proposals_unchanged.py --record")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    out = {_key(*case): _run(*case)[0] for case in _cases()}
    RECORDING.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(out)} studies in {RECORDING}")
