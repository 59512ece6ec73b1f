"""The extreme-cost groups (issue 59): the log-linear cost against a plain reference, where
each optimum sits, the budgets, the cost ranges, the frozen halves, the live MLPs' seed noise
and the YAHPO instances' definitions."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from benchmarks.harness.problem import split
from benchmarks.problems import extreme
from benchmarks.problems import hpo
from benchmarks.problems import noisy
from benchmarks.problems import yahpo
from benchmarks.problems.synthetic import FUNCTIONS
from benchmarks.suite import run as run_mod


PROBLEMS = extreme.extreme_problems()
TUNING = {
    "hartmann3-1e3-cheap",
    "hartmann6-1e4-cheap-noisy",
    "hartmann3-1e5-medium",
    "hartmann6-1e5-dear",
    "rosenbrock4-1e4-dear",
    "mlp-digits-extreme",
    "yahpo-xgb-gbtree-41168",
    "yahpo-xgb-gbtree-41162",
}
"""The tuning half frozen in benchmarks/results/extreme-costs/PREREG.md."""


def _corner(problem_name: str, top: bool) -> dict[str, float]:
    """The point whose cost coordinates all sit at their cheap (top=False) or dear end."""
    key, _, weights, _ = extreme.SPECS[problem_name]
    tf = FUNCTIONS[key]
    u = np.full(tf.dim, 0.5)
    for j, w in weights.items():
        u[j] = 1.0 if (w > 0) == top else 0.0
    return {f"x{i}": float(tf.low[i] + u[i] * (tf.high[i] - tf.low[i])) for i in range(tf.dim)}


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_cost_runs_from_1_to_the_span_and_its_mean_is_exact(name: str) -> None:
    p = PROBLEMS[name]
    _, span, _, _ = extreme.SPECS[name]
    assert p.evaluate(_corner(name, top=False))[1] == pytest.approx(1.0)
    assert p.evaluate(_corner(name, top=True))[1] == pytest.approx(span)
    costs = extreme.uniform_costs(p, n=40_000, seed=1)  # (n,) plain Monte Carlo
    mean = p.budget / extreme.BUDGET_MULTIPLE
    se = costs.std() / math.sqrt(len(costs))
    assert abs(costs.mean() - mean) < 4 * se + 0.002 * mean  # the budget's 3 digits
    assert p.group == "extreme" and p.max_trials == extreme.MAX_TRIALS
    assert pickle.loads(pickle.dumps(p)).evaluate(_corner(name, True)) == p.evaluate(
        _corner(name, True)
    )


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_the_optimum_sits_where_the_name_says(name: str) -> None:
    p = PROBLEMS[name]
    key, span, _, _ = extreme.SPECS[name]
    tf = FUNCTIONS[key]
    costs = [p.evaluate({f"x{i}": v for i, v in enumerate(x)})[1] for x in tf.argmins]
    s_star = math.log(min(costs)) / math.log(span)  # the cheapest global minimizer
    where = {"cheap": (0.0, 0.3), "medium": (0.4, 0.6), "dear": (0.7, 1.0)}
    low, high = next(v for k, v in where.items() if f"-{k}" in name)
    assert low <= s_star <= high
    values = [p.true_value({f"x{i}": v for i, v in enumerate(x)}) for x in tf.argmins]
    assert min(values) == pytest.approx(p.f_star, abs=1e-4)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_costs_span_far_more_than_100x(name: str) -> None:
    assert extreme.cost_range(extreme.uniform_costs(PROBLEMS[name])) > 300


def test_noise_is_a_tenth_of_the_median_random_gap() -> None:
    noisy_ones = [p for p in PROBLEMS.values() if p.noisy]
    assert {p.name for p in noisy_ones} == {n for n in PROBLEMS if n.endswith("-noisy")}
    for p in noisy_ones:
        gap = extreme.SPECS[p.name][3]
        assert gap is not None
        assert gap == pytest.approx(noisy.median_gap(p), rel=1e-3)
        params = p.decode(np.full(p.encoded_dim, 0.3))
        draws = [p.observe(params, None, 0, t)[0] - p.true_value(params) for t in range(400)]
        assert np.std(draws) == pytest.approx(extreme.NOISE_LEVEL * gap, rel=0.15)


def test_cost_range_is_the_95_to_5_percentile_ratio() -> None:
    assert extreme.cost_range(np.arange(1.0, 102.0)) == pytest.approx(96.0 / 6.0)


def test_halves_are_frozen_and_each_holds_a_cheap_a_medium_and_a_dear_optimum() -> None:
    groups = list(run_mod.EXTREME_GROUPS)
    problems = list(PROBLEMS.values())
    problems += list(hpo.extreme_live_problems().values())
    problems += list(yahpo.extreme_real_problems().values())  # definitions only
    assert {p.group for p in problems} == set(groups)
    assert {p.name for p in split(problems, "tuning")} == TUNING
    for half in ("tuning", "confirmation"):
        names = [p.name for p in split(problems, half) if p.group == "extreme"]
        for where in ("cheap", "medium", "dear"):
            assert any(f"-{where}" in n for n in names), (half, where)
    assert set(run_mod.all_problems(["extreme"])) == set(PROBLEMS)


def test_extreme_real_instances_are_calibrated_and_kept_out_of_the_real_group() -> None:
    problems = yahpo.extreme_real_problems()
    assert set(problems) == {f"yahpo-xgb-gbtree-{i}" for i in yahpo.EXTREME_IDS}
    assert not set(problems) & set(yahpo.real_problems())
    entries = yahpo.load_calibration()["instances"]
    for name, p in problems.items():
        assert p.group == "extreme-real" and p.f_star == entries[name]["f_star"]
        assert p.budget == pytest.approx(yahpo.EXTREME_MULTIPLE * entries[name]["cost_mean"])
        assert entries[name]["cost_max"] / entries[name]["cost_min"] > 300


def test_live_mlp_draws_one_of_five_seeds_and_scores_their_mean() -> None:
    p = hpo.extreme_live_problems()["mlp-digits-extreme"]
    assert p.group == "extreme-live" and p.noisy and p.f_star is None
    cheap = {"batch_size": 512, "width": 8, "depth": 1, "epochs": 2, "lr": 0.01, "alpha": 1e-4}
    seeds = p.noisy_evaluator
    assert isinstance(seeds, hpo.SeedEvaluator)
    errors = [seeds.at(cheap, s)[0] for s in range(hpo.N_RECORDED_SEEDS)]
    assert len(set(errors)) > 1  # the seed matters: run-to-run noise
    assert p.true_value(cheap) == pytest.approx(np.mean(errors))
    observed = {p.observe(cheap, None, 0, t)[0] for t in range(20)}
    assert observed <= set(errors)
    assert p.observe(cheap, None, 3, 7)[0] == p.observe(cheap, None, 3, 7)[0]
