"""HEBO as an Optuna sampler (benchmarks/harness/peers.py): Optuna's sampler test cases, the
distribution mapping, seeding, define-by-run spaces, and a gain over random search.

HEBO is benchmark-only and installed by hand (benchmarks/problems/README_yahpo.md); without it
the module skips and says so. HEBO's own acquisition effort takes seconds per suggestion, so
these tests give its evolutionary optimizer (and, in Optuna's test cases, the GP fit) less.
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
    "hebo.optimizers.hebo",
    reason="HEBO is not installed (benchmark-only peer: benchmarks/problems/README_yahpo.md)",
)

from benchmarks.harness import peers


# Optuna's test cases check types, bounds and robustness, not quality: the least effort.
LIGHT: dict[str, Any] = {
    "hebo_options": {
        "model_config": {
            "lr": 0.01,
            "num_epochs": 10,
            "verbose": False,
            "noise_lb": 8e-4,
            "pred_likeli": False,
        }
    },
    "evolution_options": {"pop": 10, "iters": 3},
}
# The quality test: HEBO's own GP fit, a smaller evolutionary search (HEBO's: pop 100, 100
# generations, 4-7 s per suggestion on this machine).
FAST = {"evolution_options": {"pop": 10, "iters": 5}}


class TestHEBOSampler(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Any:
        return lambda: peers.HEBOSampler(seed=0, **LIGHT)


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
def test_distributions_round_trip_through_hebo_columns(
    dist: BaseDistribution, examples: list[Any]
) -> None:
    for value in examples:
        back = peers._decode(peers._encode(value, dist), dist)
        assert back == value and type(back) is type(value)
    record = peers._hebo_param("p", dist)
    space = peers._import_hebo().DesignSpace().parse([record])
    lb, ub = float(space.opt_lb[0]), float(space.opt_ub[0])
    # HEBO's box ends decode to the distribution's bounds (categoricals: first, last choice)
    ends = [space.paras["p"].inverse_transform(np.array([lb, ub]))[k] for k in (0, 1)]
    decoded = [peers._decode(v, dist) for v in ends]
    if isinstance(dist, CategoricalDistribution):
        assert decoded == [dist.choices[0], dist.choices[-1]]
    else:
        assert isinstance(dist, (FloatDistribution, IntDistribution))
        assert decoded == pytest.approx([dist.low, dist.high])


def _quadratic(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -5.0, 5.0)
    y = trial.suggest_float("y", -5.0, 5.0)
    return (x - 0.3) ** 2 + (y + 0.7) ** 2


def _run(sampler: optuna.samplers.BaseSampler, n_trials: int, **study: Any) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(sampler=sampler, **study)
    s.optimize(_quadratic if study.get("direction") != "maximize" else _negated, n_trials)
    return s


def _negated(trial: optuna.Trial) -> float:
    return -_quadratic(trial)


def test_seeded_runs_repeat_and_a_maximized_study_mirrors_the_minimized_one() -> None:
    first = _run(peers.HEBOSampler(seed=3, **LIGHT), 8)
    again = _run(peers.HEBOSampler(seed=3, **LIGHT), 8)
    mirrored = _run(peers.HEBOSampler(seed=3, **LIGHT), 8, direction="maximize")
    other = _run(peers.HEBOSampler(seed=4, **LIGHT), 8)
    params = [t.params for t in first.trials]
    assert params == [t.params for t in again.trials]
    assert params == [t.params for t in mirrored.trials]
    assert params != [t.params for t in other.trials]
    # the start-up takes consecutive Sobol points: no two start-up trials are equal
    assert len({tuple(p.values()) for p in params[:3]}) == 3


def test_define_by_run_space_uses_hebo_on_the_shared_parameters() -> None:
    def objective(trial: optuna.Trial) -> float:
        kind = trial.suggest_categorical("kind", ["linear", "tree"])
        x = trial.suggest_float("x", -2.0, 2.0)
        if kind == "tree":
            depth = trial.suggest_int("depth", 1, 8)
            return x**2 + 0.1 * depth
        return x**2 + trial.suggest_float("alpha", 1e-3, 1.0, log=True)

    sampler = peers.HEBOSampler(seed=0, **LIGHT)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=10)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    assert {t.params["kind"] for t in study.trials} == {"linear", "tree"}
    space = sampler.infer_relative_search_space(study, study.trials[-1])
    assert set(space) == {"kind", "x"}  # the conditional ones come from the random sampler


def test_beats_random_search_on_a_quadratic() -> None:
    """30 trials, seeds 0-2: HEBO's mean best value is a tenth of random search's or less,
    and below 0.05 on every seed."""
    hebo, rand = [], []
    for seed in range(3):
        hebo.append(_run(peers.HEBOSampler(seed=seed, **FAST), 30).best_value)
        rand.append(_run(optuna.samplers.RandomSampler(seed=seed), 30).best_value)
    # random search: about 1 on average (the best squared distance of 30 uniform points in a
    # 10 x 10 box has mean ~100 / (30 pi)), with a long tail both ways
    assert np.mean(hebo) < 0.1 * np.mean(rand), (hebo, rand)
    assert max(hebo) < 0.05, hebo


def test_the_runner_runs_the_hebo_method_on_a_conditional_problem() -> None:
    """The harness's ``hebo`` (HEBO's defaults) end to end; 3 trials stay in the start-up
    (a random first trial, then Sobol points while fewer than 1 + d = 3 are observed)."""
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
        max_trials=3,
    )
    assert methods.unavailable(methods.resolve("hebo")) is None
    run = runner.run_one(problem, "hebo", 0)
    again = runner.run_one(problem, "hebo", 0)
    assert not run.error and run.n_trials == 3 and run.capped
    assert run.params == again.params
    assert [("depth" in p) for p in run.params] == [p["model"] == "tree" for p in run.params]
