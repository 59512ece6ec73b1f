"""Multi-objective benchmarks (issue 52): the hypervolume against a brute-force count, the
normalized hypervolume regret of a constructed run, the cache round-trip of a multi-objective
run (and an old single-objective run still read as it was), the fingerprint of the old
problems unchanged, the problems' calibration against its grid, and a short run of ours and
NSGA-II through the suite's command line."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run
from benchmarks.problems import multi
from benchmarks.problems.synthetic import SUITE


def _toy(**changes: object) -> Problem:
    options: dict = dict(
        name="toy2",
        group="test",
        budget=4.0,
        evaluator=lambda params, previous: ((params["x"], 1.0 - params["x"]), 1.0),
        params=(Param("x", "float", 0.0, 1.0),),
        reference_point=(1.0, 1.0),
        hv_star=0.5,
    )
    options.update(changes)
    return Problem(**options)


def test_hypervolume_matches_a_brute_force_count() -> None:
    rng = np.random.default_rng(3)
    for m in (2, 3, 4):
        points = rng.random((12, m))  # (12, m)
        ref = np.full(m, 1.1)
        grid = rng.random((200_000, m)) * 1.1  # (n, m), uniform in the box
        dominated = np.zeros(len(grid), dtype=bool)
        for p in points:
            dominated |= np.all(grid >= p, axis=1)
        expected = dominated.mean() * 1.1**m
        assert stats.hypervolume(points, ref) == pytest.approx(expected, abs=0.01)
    # points outside the box add nothing; a dominated point adds nothing
    assert stats.hypervolume(np.array([[0.5, 0.5], [1.5, 0.0]]), [1.0, 1.0]) == 0.25
    assert stats.hypervolume(np.array([[0.5, 0.5], [0.6, 0.7]]), [1.0, 1.0]) == 0.25
    assert stats.hypervolume(np.empty((0, 2)), [1.0, 1.0]) == 0.0


def test_hv_regret_of_a_constructed_run() -> None:
    # front x + y = 1 in [0, 1]^2: HV* = 0.5 against (1, 1)
    objectives = np.array(
        [
            [2.0, 2.0],  # outside the box: regret 1
            [0.5, 0.5],  # HV 0.25
            [np.nan, np.nan],  # failed: unchanged
            [0.6, 0.6],  # dominated: unchanged
            [0.0, 1.0 - 1e-12],  # on the edge: adds ~0
            [0.25, 0.5],  # dominates [0.5, 0.5]'s box: HV 0.75 * 0.5 = 0.375
        ]
    )
    trace = stats.hv_regret_trace(objectives, (1.0, 1.0), 0.5)
    expected_hv = [0.0, 0.25, 0.25, 0.25, 0.25, 0.375]
    np.testing.assert_allclose(trace, [(0.5 - h) / 0.5 for h in expected_hv], atol=1e-9)
    assert np.all(np.diff(trace) <= 0)

    problem = _toy()
    run = Run("toy2", "m", 0, costs=[1.0] * 6, values=[math.nan] * 6)
    run.objectives = objectives.tolist()
    scored = report.score(run, problem)
    assert scored.final == pytest.approx(trace[-1])
    assert scored.half == pytest.approx(trace[2])  # the trials within 3 of 6
    assert run.values[0] != run.values[0]  # the cached run itself is left as it was


def test_cache_round_trip_of_a_multi_objective_run(tmp_path: Path) -> None:
    problem = _toy()
    run = Run("toy2", "rollout", 0, costs=[1.0, 2.5, 0.5], values=[math.nan] * 3)
    run.objectives = [[0.1, 0.2], [math.nan, math.nan], [1.0 / 3.0, 0.7]]
    cache.write_run(tmp_path, problem, run)
    back = cache.load_valid(tmp_path, problem, "rollout", 0)
    assert back is not None
    assert back.costs == run.costs
    assert back.objectives[0] == [0.1, 0.2] and back.objectives[2] == [1.0 / 3.0, 0.7]
    assert all(math.isnan(v) for v in back.objectives[1])
    assert back.meta["reference_point"] == [1.0, 1.0]
    assert all(math.isnan(v) for v in back.values)
    cut = cache.read_run(cache.run_path(tmp_path, "toy2", "rollout", 0), max_trials=2)
    assert cut is not None and len(cut.objectives) == 2


def test_single_objective_runs_and_fingerprints_are_unchanged(tmp_path: Path) -> None:
    # a fingerprint of the committed suite (benchmarks/suite/results), computed before issue 52
    assert SUITE["branin-uniform"].fingerprint == _committed_fingerprint("branin-uniform")
    problem = SUITE["branin-uniform"]
    run = Run(problem.name, "random", 0, costs=[1.0, 1.0], values=[3.0, 1.0])
    cache.write_run(tmp_path, problem, run)
    path = cache.run_path(tmp_path, problem.name, "random", 0)
    header = path.read_text().splitlines()[1]
    assert header == "trial,cost,value"  # no objectives column
    back = cache.read_run(path)
    assert back is not None and back.values == [3.0, 1.0] and back.objectives == []
    assert "reference_point" not in back.meta
    # the multi-objective settings change the fingerprint
    assert _toy().fingerprint != _toy(hv_star=0.4).fingerprint
    assert _toy().fingerprint != _toy(reference_point=(1.0, 1.1)).fingerprint


def _committed_fingerprint(name: str) -> str:
    root = Path(__file__).resolve().parents[2] / "benchmarks" / "suite" / "results" / "runs"
    run = cache.read_run(cache.run_path(root, name, "random", 0))
    assert run is not None
    return str(run.meta["fingerprint"])


def test_problem_checks_multi_objective_settings() -> None:
    with pytest.raises(ValueError, match="hv_star"):
        _toy(hv_star=None)
    with pytest.raises(ValueError, match="no f_star"):
        _toy(f_star=0.0)
    with pytest.raises(ValueError, match="expected 2"):
        _toy(evaluator=lambda p, q: ((1.0,), 1.0)).evaluate_objectives({"x": 0.5})


def test_calibration_matches_the_grid_of_the_pareto_set() -> None:
    for family in ("zdt1", "zdt2"):
        ref, hv_star = multi.calibration(family)
        front = multi._front_2d(family)
        assert multi._hv_2d(front, np.asarray(ref)) == pytest.approx(hv_star, abs=1e-5)
        assert stats.hypervolume(front[::500], ref) == pytest.approx(hv_star, abs=2e-3)
    ref3, hv3 = multi.calibration("dtlz2")
    u = np.linspace(0.0, 1.0, 16)
    x = np.full((256, 5), 0.5)  # the Pareto set: x3.. = 0.5
    x[:, 0], x[:, 1] = np.repeat(u, 16), np.tile(u, 16)
    f = multi.dtlz2(x)
    np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0)  # the unit sphere
    assert hv3 - 0.06 < stats.hypervolume(f, ref3) < hv3
    for p in multi.multi_problems().values():
        assert p.group == "multi" and p.multi and p.f_star is None


def test_runner_records_every_objective_within_the_budget() -> None:
    problem = multi.multi_problems()["zdt1-x1"]
    small = problem.variant("smoke", budget=12.0, max_trials=8)
    for method in ("optuna-nsga2", "random"):
        run = runner.run_one(small, method, 0)
        assert not run.error, run.error
        assert sum(run.costs[:-1]) < small.budget  # the budget rule
        assert len(run.objectives) == len(run.costs) and len(run.objectives[0]) == 2
        assert all(math.isnan(v) for v in run.values)
        x1_first = run.objectives[0][0]
        assert 0.0 <= x1_first <= 1.0


def test_suite_command_line_runs_a_multi_objective_problem(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from benchmarks.suite import run as run_mod

    problem = multi.multi_problems()["zdt3-front"]
    args = ["--seeds", "1", "--methods", "ei", "random", "--problems", problem.name]
    args += ["--reference", "ei", "--out", str(tmp_path), "--groups", "multi"]
    assert run_mod.main(args) == 0
    ours = cache.load_valid(tmp_path / "runs", problem, "ei", 0)
    assert ours is not None and not ours.error and ours.objectives
    assert sum(ours.costs[:-1]) < problem.budget
    text = (tmp_path / "report.md").read_text()
    assert "zdt3-front" in text and "| ours EI |" in text


def test_yahpo_best_known_front_is_the_union_with_the_runs() -> None:
    from benchmarks.problems import yahpo_multi

    problems = yahpo_multi.multi_real_problems()  # definitions only: no yahpo-gym needed
    assert {p.group for p in problems.values()} == {"multi-real"}
    problem = problems["yahpo-glmnet-41146-mo"]
    front = yahpo_multi.calibration_front(problem.name)  # (k, 2)
    assert problem.hv_star == pytest.approx(stats.hypervolume(front, problem.reference_point))
    assert yahpo_multi.best_known_hv(problem, []) == pytest.approx(problem.hv_star)
    run = Run(problem.name, "m", 0, costs=[1.0, 1.0], values=[math.nan] * 2)
    run.objectives = [[float(front[0, 0]) * 0.5, float(front[0, 1])], [math.nan, math.nan]]
    assert yahpo_multi.best_known_hv(problem, [run]) > problem.hv_star  # a better point counts


def test_summary_ranks_and_verdicts_on_constructed_halves(tmp_path: Path) -> None:
    import csv

    from benchmarks import multi_objective_summary as summary

    methods = ["rollout", "optuna-gp", "optuna-tpe", "optuna-nsga2", "random"]
    half = tmp_path / "tuning"
    half.mkdir()
    with (half / "runs_summary.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        columns = "problem method seed final_regret half_regret n_trials spent capped"
        writer.writerow(columns.split())
        for p in ("a", "b"):
            for k, m in enumerate(methods):
                for s in range(6):  # the default lowest at the end on every seed
                    writer.writerow([p, m, s, 0.1 * k + 0.01 * s, 0.5 - 0.1 * k, 20, 9.0, 0])
    assert summary.main(["--dir", str(tmp_path)]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "- best average rank at the end: yes" in text
    assert "- best average rank at half budget: **no**" in text  # the highest at half budget
    assert "- not significantly worse than any peer on any problem: **no**" in text
    assert "**better** (p 0.031, 6/0/0)" in text  # 6 seeds: the smallest two-sided p
    assert "| `a` | 20 / ? / 0 |" in text  # trials / share of an unknown budget / capped


def test_committed_multi_objective_runs_match_the_problem_definitions() -> None:
    from benchmarks.problems.yahpo_multi import multi_real_problems

    root = Path(__file__).resolve().parents[2] / "benchmarks/results/multi-objective/runs"
    files = cache.glob(root, "*/*/seed*.csv")  # packed: multi-objective/runs.tar.xz
    problems = {**multi.multi_problems(), **multi_real_problems()}
    assert {path.parts[-3] for path in files} == set(problems)
    for path in files:
        run = cache.read_run(path)
        assert run is not None and not run.error, path
        problem = problems[run.problem]
        assert problem.accepts(run.meta["fingerprint"]), path
        assert len(run.objectives) == run.n_trials and run.objectives
        assert sum(run.costs[:-1]) < problem.budget  # the budget rule
