"""Method names and specs of benchmarks/harness/methods.py, and the problem type."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
import sys

import numpy as np
import optuna
import pytest


sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.harness import cache
from benchmarks.harness import methods
from benchmarks.harness import runner
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem


def test_registered_names_and_specs() -> None:
    assert methods.resolve("rollout").kwargs == {"acquisition": "rollout", "horizon": 2}
    spec = methods.resolve("ours:acquisition=eipu,horizon=4")
    assert (spec.family, spec.kwargs) == ("ours", {"acquisition": "eipu", "horizon": 4})
    variant = methods.resolve("rollout:charge_sampler_time=false,max_sampler_share=0.05")
    assert variant.kwargs == {
        "acquisition": "rollout",
        "horizon": 2,
        "charge_sampler_time": False,
        "max_sampler_share": 0.05,
    }
    tpe = methods.resolve("optuna-tpe:multivariate=true")
    assert (tpe.family, tpe.kind, tpe.kwargs) == ("optuna", "tpe", {"multivariate": True})
    legacy = methods.resolve("rollout-paper-h1")
    assert legacy.kwargs == {"acquisition": "rollout-paper", "horizon": 1}
    with pytest.raises(ValueError, match="unknown method base"):
        methods.resolve("nope:x=1")
    with pytest.raises(ValueError, match="key=value"):
        methods.resolve("ours:eipu")
    assert cache.method_dir("ours:acquisition=eipu") == "ours_acquisition=eipu"


def test_former_sampler_parameters_are_set_on_the_sampler_or_refused() -> None:
    variant = methods.resolve(
        "rollout:charge_sampler_time=false,max_sampler_share=0.05,dashboard_chart=false"
    )
    sampler = methods.make_sampler(variant, 10.0, 0, {})
    suggester = sampler._suggester
    assert suggester.charge.resolve(0, []) is False  # measured costs would be charged
    assert suggester.effort.share == 0.05
    assert suggester.acquisition.horizon == 2
    assert sampler._chart.wanted(None) is False
    assert methods.unavailable(variant) is None
    for removed in (
        "rollout:prefetch=true",
        "ours:pruned_trials=impute",
        "rollout:plug_in_incumbent=true",
        "rollout:n_samples=128",
    ):
        why = methods.unavailable(methods.resolve(removed))
        assert why is not None and "can no longer be set" in why
    assert methods.unavailable(methods.resolve("ours:pruned_trials=censored")) is None


def test_a_spec_reaches_the_sampler() -> None:
    sampler = methods.make_sampler(methods.resolve("ours:acquisition=ei-cool"), 10.0, 3, {})
    assert sampler.__class__.__name__ == "CostRolloutSampler"
    assert "rejects" in (methods.unavailable(methods.resolve("ours:no_such_option=1")) or "")
    tpe = methods.make_sampler(methods.resolve("optuna-tpe:n_startup_trials=3"), 1.0, 0, {})
    assert isinstance(tpe, optuna.samplers.TPESampler)


def test_tpe_and_tpe_multivariate_group_agree_on_a_fixed_space() -> None:
    # The docs say the two TPE rows differ only through the conditional instances, because
    # Optuna 5's TPESampler() is multivariate for one objective; this fails if that changes.
    def trials(name: str) -> list[tuple[float, float]]:
        sampler = methods.make_sampler(methods.resolve(name), 1.0, 5, {})
        study = optuna.create_study(sampler=sampler)
        study.optimize(
            lambda t: (t.suggest_float("x", -2, 2) - 0.3) ** 2 + t.suggest_float("y", 0, 1),
            n_trials=16,
        )
        return [(t.params["x"], t.params["y"]) for t in study.trials]

    tpe, tpe_mg = trials("optuna-tpe"), trials("optuna-tpe-mg")
    assert tpe == tpe_mg
    independent = trials("optuna-tpe:multivariate=false")
    assert independent[:10] == tpe[:10]  # the same random start-up trials
    assert independent[10:] != tpe[10:]  # and different model-based ones


def _conditional_problem() -> Problem:
    def evaluate(params: dict, previous: dict | None) -> tuple[float, float]:
        step = 0.0 if previous is None else abs(params["x"] - previous["x"])
        return params["x"] ** 2 + params.get("depth", 0), 1.0 + step

    return Problem(
        name="toy",
        group="test",
        budget=6.0,
        evaluator=evaluate,
        params=(
            Param("x", "float", -1.0, 1.0),
            Param("model", "cat", choices=("linear", "tree")),
            Param("depth", "int", 1, 5, condition=("model", ("tree",))),
        ),
        record_params=True,
    )


def test_conditional_params_and_moving_cost() -> None:
    problem = _conditional_problem()
    assert problem.decode(np.array([0.5, 1.0, 0.0, 0.9])) == {"x": 0.0, "model": "linear"}
    tree = problem.decode(np.array([1.0, 0.0, 1.0, 1.0]))
    assert tree == {"x": 1.0, "model": "tree", "depth": 5}
    np.testing.assert_allclose(problem.encode(tree), [1.0, 0.0, 1.0, 1.0])
    run = runner.run_one(problem, "random", 0)
    assert not run.error
    assert [("depth" in p) for p in run.params] == [p["model"] == "tree" for p in run.params]
    steps = [abs(b["x"] - a["x"]) for a, b in itertools.pairwise(run.params)]
    np.testing.assert_allclose(run.costs, [1.0, *(1.0 + s for s in steps)])
    assert sum(run.costs[:-1]) < problem.budget <= sum(run.costs)  # the budget rule


def test_fingerprint_changes_with_the_definition() -> None:
    problem = _conditional_problem()
    assert problem.fingerprint == _conditional_problem().fingerprint
    assert problem.variant("smoke", budget=2.0).fingerprint != problem.fingerprint
    assert problem.variant("x").name == "toy-x"
    other = Problem(**{**problem.__dict__, "settings": {"dataset": "a1a"}})
    assert other.fingerprint != problem.fingerprint


def test_an_f_star_a_few_ulps_away_is_the_same_definition() -> None:
    """A numerically computed f* (Hartmann's) differs by an ulp or two between numpy 1.26
    and 2.x: their cached runs must be read in either environment; a real change is not."""
    base = Problem(**{**_conditional_problem().__dict__, "f_star": -3.862779787332659})
    near = Problem(**{**base.__dict__, "f_star": -3.8627797873326593})  # numpy 1.26's
    assert near.fingerprint != base.fingerprint
    assert base.accepts(near.fingerprint) and near.accepts(base.fingerprint)
    five = base.f_star
    for _ in range(5):
        five = math.nextafter(five, 0.0)
    assert not base.accepts(Problem(**{**base.__dict__, "f_star": five}).fingerprint)
    assert not base.accepts(Problem(**{**base.__dict__, "f_star": -3.8627}).fingerprint)
    assert not base.accepts(base.variant("smoke", budget=2.0).fingerprint)
    unknown = Problem(**{**base.__dict__, "f_star": None})
    assert unknown.fingerprints == {unknown.fingerprint}


def test_hebo_is_a_peer_that_says_why_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.harness import peers

    hebo = methods.resolve("hebo")
    assert (hebo.family, hebo.kind, hebo.label) == ("peer", "hebo", "HEBO")
    assert methods.resolve("hebo+median").pruner == "median"
    assert methods.resolve("hebo@terminator").stopper == "terminator"

    def missing() -> None:
        raise ImportError("No module named 'hebo'")

    monkeypatch.setattr(peers, "_import_hebo", missing)
    why = methods.unavailable(hebo)
    assert why is not None
    assert why.startswith("HEBO is not installed") and "pip install --no-deps HEBO" in why
    with pytest.raises(ImportError):
        methods.make_sampler(hebo, 1.0, 0, {})


def test_smac_is_a_peer_that_says_why_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.harness import peers_smac

    smac = methods.resolve("smac")
    assert (smac.family, smac.kind) == ("peer", "smac")

    def missing() -> None:
        raise ImportError("No module named 'smac'")

    monkeypatch.setattr(peers_smac, "_import_smac", missing)
    why = methods.unavailable(smac)
    assert why is not None
    assert why.startswith("SMAC3 is not installed") and "apt-get install swig" in why
