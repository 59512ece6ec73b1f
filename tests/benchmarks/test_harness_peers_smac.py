"""SMAC3 as an Optuna sampler (benchmarks/harness/peers_smac.py): Optuna's sampler test cases,
the ConfigSpace mapping, seeding, define-by-run spaces, the runner, and a model-guided search.

SMAC3 is benchmark-only and needs its own environment (ConfigSpace >= 1.0, pyrfr built with
SWIG; benchmarks/problems/README_yahpo.md); without it the module skips and says so.
"""

from __future__ import annotations

from pathlib import Path
import sys
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.testing.pytest_samplers import BasicSamplerTestCase
from optuna.testing.pytest_samplers import RelativeSamplerTestCase
from optuna.testing.pytest_samplers import SingleOnlySamplerTestCase
import pytest


sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

pytest.importorskip(
    "smac",
    reason="SMAC3 is not installed (benchmark-only peer: benchmarks/problems/README_yahpo.md)",
)

from benchmarks.harness import peers_smac


class TestSMACSampler(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Any:
        return lambda: peers_smac.SMACSampler(seed=0, n_trials=20)


DISTRIBUTIONS: list[tuple[BaseDistribution, list[Any]]] = [
    (FloatDistribution(-1.0, 2.0), [-1.0, 0.25, 2.0]),
    (FloatDistribution(1e-7, 10.0, log=True), [1e-7, 0.003, 10.0]),
    (FloatDistribution(-10.0, 10.0, step=0.5), [-10.0, 0.5, 10.0]),
    (IntDistribution(-3, 7), [-3, 0, 7]),
    (IntDistribution(1, 100, log=True), [1, 17, 100]),
    (IntDistribution(-10, 10, step=4), [-10, 2, 10]),
    (CategoricalDistribution([None, "a", 2.5, True]), [None, "a", 2.5, True]),
]


@pytest.mark.parametrize(("dist", "examples"), DISTRIBUTIONS)
def test_values_round_trip_through_configspace(
    dist: BaseDistribution, examples: list[Any]
) -> None:
    from ConfigSpace import Configuration

    space = peers_smac._config_space({"p": dist}, seed=0)
    for value in examples:
        config = Configuration(space, values={"p": peers_smac._smac_value(value, dist)})
        back = peers_smac._decode(config["p"], dist)
        assert back == value and type(back) is type(value)
    for config in space.sample_configuration(50):
        value = peers_smac._decode(config["p"], dist)
        assert dist._contains(dist.to_internal_repr(value))


def _quadratic(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -5.0, 5.0)
    y = trial.suggest_float("y", -5.0, 5.0)
    return (x - 0.3) ** 2 + (y + 0.7) ** 2


def _negated(trial: optuna.Trial) -> float:
    return -_quadratic(trial)


def _run(sampler: optuna.samplers.BaseSampler, n_trials: int, **study: Any) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(sampler=sampler, **study)
    s.optimize(_quadratic if study.get("direction") != "maximize" else _negated, n_trials)
    return s


def test_seeded_runs_repeat_and_a_maximized_study_mirrors_the_minimized_one() -> None:
    first = _run(peers_smac.SMACSampler(seed=3, n_trials=20), 15)
    again = _run(peers_smac.SMACSampler(seed=3, n_trials=20), 15)
    mirrored = _run(peers_smac.SMACSampler(seed=3, n_trials=20), 15, direction="maximize")
    other = _run(peers_smac.SMACSampler(seed=4, n_trials=20), 15)
    params = [t.params for t in first.trials]
    assert params == [t.params for t in again.trials]
    assert params == [t.params for t in mirrored.trials]
    assert params != [t.params for t in other.trials]
    assert len({tuple(p.values()) for p in params}) == len(params)  # no configuration twice


def test_define_by_run_space_uses_smac_on_the_shared_parameters() -> None:
    def objective(trial: optuna.Trial) -> float:
        kind = trial.suggest_categorical("kind", ["linear", "tree"])
        x = trial.suggest_float("x", -2.0, 2.0)
        if kind == "tree":
            return x**2 + 0.1 * trial.suggest_int("depth", 1, 8)
        return x**2 + trial.suggest_float("alpha", 1e-3, 1.0, log=True)

    sampler = peers_smac.SMACSampler(seed=0, n_trials=20)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=15)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    assert {t.params["kind"] for t in study.trials} == {"linear", "tree"}
    assert set(sampler.infer_relative_search_space(study, study.trials[-1])) == {"kind", "x"}
    # SMAC was told every trial completed before the last suggestion (the first one came
    # from the random sampler)
    assert sampler._told == {t.number for t in study.trials[:-1]}


def test_the_model_guides_the_search_on_a_quadratic() -> None:
    """30 trials, seeds 0-2: after the initial design SMAC's trials are far better than random
    search's (the median value of trials 10-29, averaged over the seeds, less than half)."""
    smac, rand = [], []
    for seed in range(3):
        smac.append(
            np.median(
                [
                    t.value
                    for t in _run(peers_smac.SMACSampler(seed=seed, n_trials=30), 30).trials[10:]
                ]
            )
        )
        rand.append(
            np.median(
                [t.value for t in _run(optuna.samplers.RandomSampler(seed=seed), 30).trials[10:]]
            )
        )
    assert np.mean(smac) < 0.5 * np.mean(rand), (smac, rand)


def test_the_runner_runs_the_smac_method_on_a_conditional_problem() -> None:
    from benchmarks.harness import methods
    from benchmarks.harness import runner
    from benchmarks.harness.problem import Param
    from benchmarks.harness.problem import Problem

    def evaluate(params: dict[str, Any], previous: dict[str, Any] | None) -> tuple[float, float]:
        return params["x"] ** 2 + params.get("depth", 0), 1.0

    problem = Problem(
        name="toy",
        group="test",
        budget=100.0,
        evaluator=evaluate,
        params=(
            Param("x", "float", -1.0, 1.0),
            Param("model", "cat", choices=("linear", "tree")),
            Param("depth", "int", 1, 5, condition=("model", ("tree",))),
        ),
        record_params=True,
        max_trials=25,
    )
    assert methods.unavailable(methods.resolve("smac")) is None
    run = runner.run_one(problem, "smac", 0)
    again = runner.run_one(problem, "smac", 0)
    assert not run.error and run.n_trials == 25 and run.capped
    assert run.params == again.params
    assert [("depth" in p) for p in run.params] == [p["model"] == "tree" for p in run.params]
