"""The conditional space of ``benchmarks/suggest_speed.py``: what its studies hold and ask."""

from __future__ import annotations

import optuna
import pytest

from benchmarks import suggest_speed
from optuna_costbo import CostRolloutSampler


@pytest.fixture
def conditional(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suggest_speed, "_CONDITIONAL", True)


@pytest.mark.usefixtures("conditional")
def test_conditional_studies_hold_tree_knobs_only_for_tree_kinds() -> None:
    study = suggest_speed.make_study(optuna.samplers.RandomSampler(0), 4, 30, seed=1)
    kinds = {t.params["kind"] for t in study.trials}
    assert kinds == set(suggest_speed._KINDS)
    for t in study.trials:
        expected = {"kind", "x0", "x1"} | (set() if t.params["kind"] == "linear" else {"x2", "x3"})
        assert set(t.params) == expected
        assert t.value == pytest.approx(suggest_speed._point(t.params, 4)[0])


@pytest.mark.usefixtures("conditional")
def test_the_sampler_models_the_conditional_space_it_is_timed_on() -> None:
    sampler = CostRolloutSampler(1e9, cost_attr="cost", acquisition="eipu", seed=0)
    study = suggest_speed.make_study(sampler, 4, 20, seed=2)
    times = suggest_speed.time_suggestions(study, 4, 3)
    assert len(times) == 3 and all(t > 0 for t in times)
    last = study.trials[-3:]
    for t in last:
        assert set(t.params) == {"kind", "x0", "x1"} | (
            set() if t.params["kind"] == "linear" else {"x2", "x3"}
        )
    # Every asked parameter came from the model (relative), none from the fallback.
    space = sampler.infer_relative_search_space(study, last[-1])
    assert {"kind", "x0", "x1", "x2", "x3"} <= set(space)


def test_the_spread_over_runs_gives_each_ratios_median_and_range() -> None:
    cell = [
        {"costbo EIpu": (0.010, 0.0, 0.0), "costbo rollout h=2": (t, 0.0, 0.0)}
        for t in (0.030, 0.015, 0.020)
    ]
    text = suggest_speed.run_spread({(5, 50): cell}, ["costbo EIpu", "costbo rollout h=2"])
    assert "## Ratios over 3 runs" in text
    assert "| 5 | 50 | 2.00 [1.50 - 3.00] |" in text
    assert suggest_speed.run_spread({(5, 50): cell}, ["costbo rollout h=2"]) == ""


def test_a_baseline_comparison_takes_each_time_as_the_median_over_its_rounds() -> None:
    rounds = [
        {"a": [1.0, 2.0, 9.0], "b": [5.0, 5.0, 5.0]},
        {"a": [3.0, 1.0, 8.0], "b": [4.0, 6.0, 1.0]},
        {"a": [2.0, 7.0, 7.0], "b": [6.0, 4.0, 3.0]},
    ]
    assert suggest_speed._median_of(rounds) == {"a": [2.0, 2.0, 8.0], "b": [5.0, 5.0, 3.0]}


def test_two_objective_studies_are_timed_on_the_models_suggestions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(suggest_speed, "_OBJECTIVES", 2)
    sampler = CostRolloutSampler(1e9, n_startup_trials=0, seed=0)
    study = suggest_speed.make_study(sampler, 3, 15, seed=3)
    assert len(study.directions) == 2
    times = suggest_speed.time_suggestions(study, 3, 2)
    assert len(times) == 2 and all(t > 0 for t in times)
    for t in study.trials:
        values, _ = suggest_speed._values(t.params, 3)
        assert t.values == pytest.approx(values)
    assert "costbo:proposed_params" in study.trials[-1].system_attrs  # the model's proposal
