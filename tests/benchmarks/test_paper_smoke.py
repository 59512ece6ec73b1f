"""Smoke runs of the paper reproductions (benchmarks/paper.py on benchmarks/harness) and the
problem definitions behind them.

Each smoke run is one seed with a tiny budget and two methods; it checks that the experiment
runs end to end through the harness, writes its cache and its report, and reports again from
the cache; not what it finds. Tests that need the offline data skip (with the reason) when it
is absent (conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
import optuna
import pytest

from benchmarks import paper
from benchmarks.harness import cache
from benchmarks.harness.runner import Run
from benchmarks.problems import data
from benchmarks.problems import hpo
from benchmarks.problems import sensors
from benchmarks.problems.synthetic import SUITE


ROOT = Path(__file__).resolve().parents[2]


def _check_cache(root: Path, problem: str, methods: set[str]) -> list[Run]:
    runs = [cache.read_run(p) for p in sorted((root / "runs" / problem).glob("*/seed000.csv"))]
    assert {r.method for r in runs if r is not None} == methods
    out = []
    for r in runs:
        assert r is not None and r.error == "", r
        assert r.n_trials >= 1 and np.isfinite(np.nanmin(r.values))
        assert r.meta["fingerprint"]
        out.append(r)
    return out


# -- problem definitions -----------------------------------------------------------------


def test_hpo_models_evaluate_on_small_data() -> None:
    rng = np.random.default_rng(0)
    X = (rng.random((160, 30)) < 0.2).astype(float)
    y = (X[:, :3].sum(axis=1) > 0).astype(np.int64)
    ds = data.Dataset("toy", "test", X[:110], y[:110], X[110:], y[110:])
    assert hpo.split_kwargs(0.3, "fraction") == {"min_samples_split": 0.3}
    assert hpo.split_kwargs(1.0, "impurity") == {"min_impurity_decrease": pytest.approx(0.1)}
    for model in hpo.MODELS:
        evaluate = hpo.HpoEvaluator(model, ds)
        trial = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1)).ask()
        params = {p.name: p.suggest(trial) for p in hpo.MODELS[model].params}
        error, seconds = evaluate(params, None)
        assert 0.0 <= error <= 1.0 and seconds > 0.0, model
        assert evaluate(params, None)[0] == error  # deterministic objective
    problem = hpo.paper_problem("knn", "toy", ds, budget=1.0)
    assert problem.name == "hpo-knn-toy" and problem.record_params
    # the definition, not the data, makes the fingerprint (so --report-only needs no data)
    assert problem.fingerprint == hpo.paper_problem("knn", "toy", None, budget=1.0).fingerprint
    assert problem.fingerprint != hpo.paper_problem("knn", "toy", ds, budget=2.0).fingerprint


def test_sensor_cost_is_state_dependent(need_data: Callable[..., Path]) -> None:
    root = need_data("sensors/colorado_monthly_met/stations.csv")
    placement = sensors.SensorPlacement(sensors.load_network(root))
    assert placement.network.n == 189
    names = placement.names()
    a = dict.fromkeys(names, 0.5)
    b = {k: (0.9 if k == "u0" else v) for k, v in a.items()}
    stations = placement.snap(a)
    assert len(set(stations)) == sensors.N_SENSORS  # distinct stations, even when all overlap
    assert placement.cost(a, a) == pytest.approx(sensors.FIXED_COST)  # no move is free
    assert placement.cost(b, a) > placement.cost(a, a)
    assert placement.cost(b, a) == pytest.approx(placement.cost(a, b))
    first = placement.cost(a, None)  # from the initial configuration near Denver
    assert first == pytest.approx(sensors.FIXED_COST + placement.distance(a, None) / sensors.SPEED)
    problem = sensors.sensor_problem(placement)
    value, cost = problem.evaluate(a, None)
    assert cost == first and 0.3 < value < 3.0
    assert problem.cost_fn(b, a) == placement.cost(b, a)  # handed to CostRolloutSampler
    assert placement.kriging.rmse(range(placement.network.n)) < value


def test_the_paper_synthetic_problem_is_the_suites() -> None:
    problem = SUITE["synth-printed"]
    r = 0.7819589
    value, cost = problem.evaluate({"x0": r, "x1": 0.0})
    assert value == pytest.approx(-7.6625, abs=1e-4) and cost == pytest.approx(10 - 5 * r)
    assert problem.f_star == pytest.approx(value)


# -- smoke runs --------------------------------------------------------------------------


def test_synthetic_smoke(tmp_path: Path) -> None:
    args = ["synthetic", "--smoke", "--jobs", "0", "--out", str(tmp_path)]
    assert paper.main(args) == 0
    runs = _check_cache(tmp_path, "synth-printed-smoke", {"rollout-paper", "random"})
    for r in runs:
        spent, budget = sum(r.costs), paper.SYNTHETIC_SMOKE_BUDGET
        if r.method == "random":
            assert sum(r.costs[:-1]) < budget <= spent
        else:  # reported costs: ours keeps the hard budget ("auto")
            assert spent <= budget < spent + max(r.costs)
    text = (tmp_path / "synthetic_smoke_quality.md").read_text()
    assert "## Paired comparison" in text and "| ours rollout (paper) | Random |" in text
    # the cache reports again, and a full-size report-only finds no smoke run in it
    (tmp_path / "synthetic_smoke_quality.md").unlink()
    assert paper.main([*args, "--report-only"]) == 0
    assert "ours rollout (paper)" in (tmp_path / "synthetic_smoke_quality.md").read_text()
    with pytest.raises(SystemExit, match="no cached runs of synth-printed"):
        paper.main(["synthetic", "--report-only", "--out", str(tmp_path)])


def test_hpo_smoke_in_fresh_processes(tmp_path: Path, need_data: Callable[..., Path]) -> None:
    """The command line, each run in a fresh process (as the wall-clock runs go)."""
    root = need_data("libsvm/w2a.reconstructed")
    env = {**os.environ, "COSTBO_DATA_DIR": str(root)}
    args = ["hpo", "--model", "dt", "--dataset", "w2a", "--smoke", "--source", "libsvm"]
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "paper", *args, "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = _check_cache(tmp_path, "hpo-dt-w2a-smoke", {"rollout-paper", "random"})
    for r in runs:
        assert len(r.params) == r.n_trials and set(r.params[0]) == {
            "max_depth",
            "split_threshold",
            "feature_fraction",
        }
        assert "LIBSVM" in r.meta["data"]
    text = (tmp_path / "hpo_dt_w2a_smoke_quality.md").read_text()
    assert "paper's format" in text and "Data: w2a from LIBSVM" in text


@pytest.mark.parametrize("model", ["knn", "rf"])
def test_hpo_smoke(tmp_path: Path, need_data: Callable[..., Path], model: str) -> None:
    root = need_data("libsvm/w2a.reconstructed")
    args = ["hpo", "--model", model, "--smoke", "--source", "libsvm", "--data-dir", str(root)]
    assert paper.main([*args, "--jobs", "0", "--out", str(tmp_path)]) == 0
    _check_cache(tmp_path, f"hpo-{model}-w2a-smoke", {"rollout-paper", "random"})
    assert (tmp_path / f"hpo_{model}_w2a_smoke_quality.md").is_file()


def test_sensors_smoke(tmp_path: Path, need_data: Callable[..., Path]) -> None:
    root = need_data("sensors/colorado_monthly_met/stations.csv")
    args = ["sensors", "--smoke", "--jobs", "0", "--data-dir", str(root), "--out", str(tmp_path)]
    assert paper.main(args) == 0
    runs = _check_cache(tmp_path, "sensors-smoke", {"rollout-paper", "random"})
    for r in runs:
        if r.method == "random":
            assert sum(r.costs) >= sensors.SMOKE_BUDGET  # ran until the budget was spent
        else:  # a known cost_fn: ours stops when no trial fits, the budget left < one move
            assert sensors.SMOKE_BUDGET - sensors.FIXED_COST < sum(r.costs) <= sensors.SMOKE_BUDGET
        assert r.costs[0] > sensors.FIXED_COST  # the first trial moved from the depot
    assert "moving cost" in (tmp_path / "sensors_smoke_quality.md").read_text()


def test_paper_table_format() -> None:
    runs = {
        m: [Run("p", m, seed, costs=[1.0, 2.0], values=[0.2, v]) for seed, v in enumerate(vs)]
        for m, vs in (
            ("ei", [0.15, 0.13]),
            ("rollout-paper-h4", [0.12, 0.14]),
            ("random", [0.2, 0.2]),
        )
    }
    text = paper.paper_table(runs, 3.0, "knn", "a1a")
    assert "EI 0.140" in text  # the paper's numbers, for KNN on a1a
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines[0] == "|  | EI | R4 | Random |"
    assert lines[2] == "| mean | 0.140 | **0.130** | 0.200 |"
    assert lines[3].startswith("| std | 0.014 | 0.014 | 0.000 |")
    assert lines[5] == "| paper mean | 0.140 | 0.131 | - |"
    assert "paper mean" not in paper.paper_table(runs, 3.0, "dt", "w2a")
    # a trial past the budget does not count
    late = {"ei": [Run("p", "ei", 0, costs=[1.0, 5.0], values=[0.3, 0.1])]}
    assert "| mean | **0.300** |" in paper.paper_table(late, 3.0, "knn", "w2a")


def test_runtime_variation_smoke(tmp_path: Path, need_data: Callable[..., Path]) -> None:
    import csv

    from benchmarks import runtime_variation

    root = need_data("libsvm/w2a.reconstructed")
    args = ["--dataset", "w2a", "--smoke", "--models", "knn", "dt", "--source", "libsvm"]
    runtime_variation.main([*args, "--data-dir", str(root), "--out", str(tmp_path)])
    with open(tmp_path / "hpo_runtime_w2a_smoke.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted({r["model"] for r in rows}) == ["dt", "knn"] and len(rows) == 6
    assert all(float(r["seconds"]) > 0 for r in rows)
    assert "| KNN |" in (tmp_path / "hpo_runtime_w2a_smoke.md").read_text()


def test_scripts_explain_missing_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COSTBO_DATA_DIR", raising=False)
    empty = str(tmp_path)
    with pytest.raises(SystemExit, match="COSTBO_DATA_DIR"):
        paper.main(["sensors", "--smoke", "--data-dir", empty, "--out", empty])
    with pytest.raises(SystemExit, match="COSTBO_DATA_DIR"):
        data.main(["a1a", "--source", "libsvm", "--data-dir", empty])
    args = ["hpo", "--model", "dt", "--smoke", "--source", "libsvm", "--data-dir", empty]
    with pytest.raises(SystemExit, match="COSTBO_DATA_DIR"):
        paper.main([*args, "--out", empty])
    assert not list(tmp_path.iterdir())  # nothing written


def test_cheap_trials_smoke(tmp_path: Path) -> None:
    from benchmarks import cheap_trials

    args = ["--smoke", "--problems", "tree-synth", "--methods", "costbo", "random"]
    assert cheap_trials.main([*args, "--out", str(tmp_path)]) == 0
    problem = cheap_trials.live_problems(0.1)["tree-synth"]
    root = tmp_path / "runs" / "cheap_trials_smoke"
    for method in ("rollout", "random"):  # "costbo" is the former name of "rollout"
        run = cache.load_valid(root, problem, method, 0)
        assert run is not None and run.n_trials >= 1
        assert len(run.elapsed) == run.n_trials
        assert 0.0 <= cheap_trials.sampler_share(run) <= 1.0
        if run.n_trials > 1:  # the last trial started before the budget had passed
            assert run.elapsed[-2] < problem.budget
    ours = cache.load_valid(root, problem, "rollout", 0)
    assert ours is not None and ours.meta["n_full"] >= 0  # the sampler's route counts
    assert "| sampler share |" in (tmp_path / "cheap_trials_smoke.md").read_text()


def test_scale_quality_plumbing(tmp_path: Path) -> None:
    from benchmarks import scale_quality
    from benchmarks.harness import package_probes

    shipped = package_probes.shipped_fit_schedule()
    args = ["--seeds", "1", "--trials", "16", "--problems", "hartmann6", "--model-points", "8"]
    assert scale_quality.main([*args, "--out", str(tmp_path)]) == 0
    assert package_probes.shipped_fit_schedule() == shipped  # set on its samplers only
    table = (tmp_path / "scale_quality_working_set.md").read_text()
    assert "| hartmann6 | working set |" in table and "| hartmann6 | all |" in table
    root = tmp_path / "runs" / "scale_quality_working_set" / "working-set"
    problem = scale_quality.make_problem("hartmann6", 16)
    run = cache.load_valid(root, problem, scale_quality.METHOD_FMT.format("eipu"), 0)
    assert run is not None and run.n_trials == 16
