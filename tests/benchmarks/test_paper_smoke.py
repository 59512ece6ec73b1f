"""Smoke runs of the benchmark scripts (benchmarks/) and unit tests of their data loaders.

The offline data (LIBSVM files, Colorado stations) is found through ``COSTBO_DATA_DIR``, else
``../shared/data`` beside the repository; tests that need it are skipped when it is absent.
Each smoke run is one replication with a tiny budget and two methods; it checks that the
script runs end to end and writes its files, not what it finds.
"""

from __future__ import annotations

import csv
import importlib
import os
from pathlib import Path
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

data = importlib.import_module("data")


def _data_dir() -> Path | None:
    env = os.environ.get("COSTBO_DATA_DIR", "")
    if env:
        return Path(env)
    shared = ROOT.parent / "shared" / "data"
    return shared if shared.is_dir() else None


DATA_DIR = _data_dir()
NO_DATA = "offline data not found: set COSTBO_DATA_DIR to shared/data"


def _need(*relative: str) -> Path:
    if DATA_DIR is None:
        pytest.skip(NO_DATA)
    for rel in relative:
        if not (DATA_DIR / rel).exists():
            pytest.skip(f"{DATA_DIR / rel} is absent ({NO_DATA})")
    return DATA_DIR


def _run(args: list[str], tmp_path: Path, data_dir: Path | None = None) -> str:
    env = dict(os.environ)
    if data_dir is not None:
        env["COSTBO_DATA_DIR"] = str(data_dir)
    proc = subprocess.run(
        [sys.executable, *args, "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _check_runs(prefix: Path, methods: set[str]) -> list[dict[str, Any]]:
    with open(f"{prefix}_run_summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["method"] for r in rows} == methods
    for r in rows:
        assert r["error"] == "", r
        assert int(r["n_trials"]) >= 1
        assert np.isfinite(float(r["final_best"]))
    assert Path(f"{prefix}_runs.csv").stat().st_size > 0
    assert "## Paired comparison" in Path(f"{prefix}_quality.md").read_text()
    return rows


# -- data loaders ------------------------------------------------------------------------


def test_libsvm_fallback_loads_a1a() -> None:
    root = _need("libsvm/a1a")
    X, y, where = data.load_xy("a1a", source="libsvm", data_dir=root)
    assert X.shape == (1605, 123)
    assert X.dtype == np.float64
    assert set(np.unique(X)) <= {0.0, 1.0}
    assert np.bincount(y).tolist() == [1210, 395]  # -1 -> 0, +1 -> 1
    assert "a1a" in where
    # the folder holding the files works as well as its parent
    X2, _, _ = data.load_xy("a1a", source="libsvm", data_dir=root / "libsvm")
    np.testing.assert_array_equal(X, X2)


def test_auto_falls_back_to_libsvm_via_env(monkeypatch: pytest.MonkeyPatch) -> None:
    root = _need("libsvm/a1a")
    monkeypatch.setenv("COSTBO_DATA_DIR", str(root))

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("no route to openml.org")

    monkeypatch.setattr(data, "load_openml", offline)
    ds = data.load_dataset("a1a", split_seed=3)
    assert "LIBSVM" in ds.source
    assert len(ds.y_train) + len(ds.y_valid) == 1605
    # stratified: both parts keep the class balance (395 / 1605 = 0.246)
    assert abs(np.mean(ds.y_valid) - 395 / 1605) < 0.01
    again = data.load_dataset("a1a", split_seed=3)
    np.testing.assert_array_equal(ds.X_valid, again.X_valid)  # reproducible


def test_missing_dataset_gives_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("COSTBO_DATA_DIR", raising=False)
    monkeypatch.delenv("COSTBO_OPENML_IDS", raising=False)
    with pytest.raises(data.DataUnavailableError, match="COSTBO_DATA_DIR"):
        data.load_xy("w2a", source="libsvm")
    with pytest.raises(data.DataUnavailableError) as info:
        data.load_xy("w2a", source="libsvm", data_dir=tmp_path)
    message = str(info.value)
    assert str(tmp_path) in message and "--data-dir" in message and "openml" in message
    with pytest.raises(ValueError, match="w2a=123"):
        data.parse_openml_ids("w2a:123")
    assert data.parse_openml_ids("w2a=1, a1a=2") == {"w2a": 1, "a1a": 2}


DESCRIPTION = """\
<oml:data_set_description xmlns:oml="http://openml.org/openml">
  <oml:id>{id}</oml:id>
  <oml:name>tiny-{id}</oml:name>
  <oml:version>1</oml:version>
  <oml:format>{format}</oml:format>
  <oml:url>https://invalid.invalid/data/{id}.arff</oml:url>{parquet}
  <oml:default_target_attribute>class</oml:default_target_attribute>
  <oml:status>active</oml:status>
</oml:data_set_description>
"""


def _fake_openml_cache(root: Path, dataset_id: int, kind: str) -> tuple[np.ndarray, list[str]]:
    """An openml cache holding one small dataset as openml stores it: description.xml plus
    dataset.arff (``kind`` "dense" or "sparse") or dataset_<ID>.pq ("parquet")."""
    rng = np.random.default_rng(dataset_id)
    X = (rng.random((20, 4)) < 0.4).astype(float)
    labels = ["neg" if row.sum() < 2 else "pos" for row in X]
    folder = root / "org" / "openml" / "www" / "datasets" / str(dataset_id)
    folder.mkdir(parents=True)
    parquet = ""
    if kind == "parquet":
        parquet = f"\n  <oml:parquet_url>https://invalid.invalid/{dataset_id}.pq</oml:parquet_url>"
    fmt = "Sparse_ARFF" if kind == "sparse" else "ARFF"
    (folder / "description.xml").write_text(
        DESCRIPTION.format(id=dataset_id, format=fmt, parquet=parquet)
    )
    if kind == "parquet":
        import pandas as pd

        frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(4)])
        frame["class"] = pd.Categorical(labels, categories=["neg", "pos"])
        frame.to_parquet(folder / f"dataset_{dataset_id}.pq")
        return X, labels
    lines = ["@RELATION tiny", *(f"@ATTRIBUTE f{j} NUMERIC" for j in range(4))]
    lines += ["@ATTRIBUTE class {neg,pos}", "@DATA"]
    for row, label in zip(X, labels, strict=True):
        if kind == "sparse":
            cells = [f"{j} {v:g}" for j, v in enumerate(row) if v]
            cells.append(f"4 {label}")
            lines.append("{" + ",".join(cells) + "}")
        else:
            lines.append(",".join([*(f"{v:g}" for v in row), label]))
    (folder / "dataset.arff").write_text("\n".join(lines) + "\n")
    return X, labels


def _snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*")}


@pytest.mark.parametrize("kind", ["dense", "sparse", "parquet"])
def test_openml_cache_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    openml = pytest.importorskip("openml", reason="the openml package is not installed")
    if kind == "parquet":
        pytest.importorskip("pyarrow", reason="pyarrow is needed to write the parquet file")
    cache = tmp_path / "data" / "openml"
    dataset_id = 990001 + ["dense", "sparse", "parquet"].index(kind)
    X, labels = _fake_openml_cache(cache, dataset_id, kind)
    before = _snapshot(cache)
    for p in cache.rglob("*"):  # read-only, as shared/ is in CI
        p.chmod(0o555 if p.is_dir() else 0o444)
    configured = openml.config.get_config_as_dict()["cachedir"]
    monkeypatch.setenv("COSTBO_OPENML_IDS", f"tiny={dataset_id}")
    monkeypatch.delenv("COSTBO_OPENML_CACHE", raising=False)
    try:
        # found as <data dir>/openml, with the id from COSTBO_OPENML_IDS; the description's
        # URLs cannot resolve, so this passes only if nothing is downloaded
        got_X, got_y, where = data.load_xy("tiny", source="openml", data_dir=tmp_path / "data")
    finally:
        for p in cache.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
    assert f"OpenML dataset {dataset_id}" in where
    np.testing.assert_array_equal(got_X, X)
    expected = np.array([1 if label == "pos" else 0 for label in labels])
    np.testing.assert_array_equal(got_y, expected)
    assert _snapshot(cache) == before  # openml wrote into a temporary copy only
    assert openml.config.get_config_as_dict()["cachedir"] == configured


def test_openml_failure_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openml", reason="the openml package is not installed")
    monkeypatch.delenv("COSTBO_DATA_DIR", raising=False)
    empty = tmp_path / "cache"
    empty.mkdir()
    # an id that is not in the (empty) cache: openml tries the server, which the test
    # points at an address that cannot resolve, so the error comes back at once
    import openml

    monkeypatch.setattr(openml.config, "server", "https://invalid.invalid/api/v1/xml")
    with pytest.raises(data.DataUnavailableError, match=r"OpenML \(id 990009\)"):
        data.load_xy("tiny", source="openml", openml_id=990009, openml_cache=empty)


# -- problem definitions -----------------------------------------------------------------


def test_hpo_models_evaluate_on_small_data() -> None:
    import optuna

    hpo = importlib.import_module("hpo")
    rng = np.random.default_rng(0)
    X = (rng.random((160, 30)) < 0.2).astype(float)
    y = (X[:, :3].sum(axis=1) > 0).astype(np.int64)
    ds = data.Dataset("toy", "test", X[:110], y[:110], X[110:], y[110:])
    assert hpo.split_kwargs(0.3, "fraction") == {"min_samples_split": 0.3}
    assert hpo.split_kwargs(1.0, "impurity") == {"min_impurity_decrease": pytest.approx(0.1)}
    for model in hpo.MODELS:
        problem = hpo.HpoProblem(model, ds)
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
        params = problem.suggest(study.ask())
        error, seconds = problem.evaluate(params, None)
        assert 0.0 <= error <= 1.0 and seconds > 0.0, model
        assert problem.evaluate(params, None)[0] == error  # deterministic objective


def test_sensor_cost_is_state_dependent() -> None:
    root = _need("sensors/colorado_monthly_met/stations.csv")
    sensors = importlib.import_module("sensors")
    problem = sensors.SensorProblem(sensors.load_network(root))
    assert problem.network.n == 189
    names = problem.names()
    a = dict.fromkeys(names, 0.5)
    b = {k: (0.9 if k == "u0" else v) for k, v in a.items()}
    stations = problem.snap(a)
    assert len(set(stations)) == sensors.N_SENSORS  # distinct stations, even when all overlap
    assert problem.cost(a, a) == pytest.approx(sensors.FIXED_COST)  # no move is free
    assert problem.cost(b, a) > problem.cost(a, a)
    assert problem.cost(b, a) == pytest.approx(problem.cost(a, b))
    first = problem.cost(a, None)  # from the initial configuration near Denver
    assert first == pytest.approx(sensors.FIXED_COST + problem.distance(a, None) / sensors.SPEED)
    value, cost = problem.evaluate(a, None)
    assert cost == first and 0.3 < value < 3.0
    assert problem.kriging.rmse(range(problem.network.n)) < value


def test_run_session_saves_and_resumes(tmp_path: Path) -> None:
    results_io = importlib.import_module("results_io")
    session = importlib.import_module("session")
    synthetic = importlib.import_module("synthetic_quality")
    prefix = tmp_path / "s"
    problem = synthetic.SyntheticProblem()
    settings = {"problem": "synthetic"}
    first, _ = session.run_session(
        [("random", 0)], 20.0, problem, prefix, settings=settings, jobs=1
    )
    assert [r.seed for r in first["random"]] == [0]
    tasks = [("random", 0), ("random", 1)]
    both, _ = session.run_session(
        tasks, 20.0, problem, prefix, settings=settings, jobs=0, resume=True
    )
    assert [r.seed for r in both["random"]] == [0, 1]
    assert both["random"][0].costs == first["random"][0].costs  # kept, not run again
    assert [r.seed for r in results_io.read_csvs(prefix)["random"]] == [0, 1]
    with pytest.raises(SystemExit, match="same settings"):
        session.run_session(tasks, 30.0, problem, prefix, settings=settings, jobs=0, resume=True)


# -- smoke runs --------------------------------------------------------------------------


def test_synthetic_smoke(tmp_path: Path) -> None:
    _run(
        ["benchmarks/synthetic_quality.py", "--smoke", "--methods", "rollout2", "random"], tmp_path
    )
    _check_runs(tmp_path / "synthetic_smoke", {"rollout2", "random"})
    # the saved CSVs summarize again
    synthetic = importlib.import_module("synthetic_quality")
    synthetic.main(["--smoke", "--report-only", "--out", str(tmp_path)])
    assert "rollout h=2" in (tmp_path / "synthetic_smoke_quality.md").read_text()


@pytest.mark.parametrize("problem", ["knn", "dt", "rf"])
def test_hpo_smoke(tmp_path: Path, problem: str) -> None:
    root = _need("libsvm/w2a.reconstructed")
    args = ["benchmarks/hpo.py", "--problem", problem, "--dataset", "w2a", "--smoke"]
    _run([*args, "--source", "libsvm", "--methods", "rollout2"], tmp_path, root)
    prefix = tmp_path / f"hpo_{problem}_w2a_smoke"
    _check_runs(prefix, {"rollout2", "random"})  # random: the same-session control
    text = Path(f"{prefix}_quality.md").read_text()
    assert "paper's format" in text
    assert Path(f"{prefix}_params.csv").stat().st_size > 0


def test_cheap_trials_smoke(tmp_path: Path) -> None:
    args = ["benchmarks/cheap_trials.py", "--smoke", "--problems", "tree-synth"]
    _run([*args, "--methods", "costbo", "random"], tmp_path)
    with open(tmp_path / "cheap_trials_smoke_runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["method"] for r in rows} == {"costbo", "random"}
    for r in rows:
        assert int(r["n_trials"]) >= 1 and 0.0 <= float(r["sampler_share"]) <= 1.0
    assert "| sampler share |" in (tmp_path / "cheap_trials_smoke.md").read_text()


def test_paper_table_format() -> None:
    hpo = importlib.import_module("hpo")
    runner = importlib.import_module("runner")
    runs = {
        m: [runner.Run(m, seed, costs=[1.0, 2.0], values=[0.2, v]) for seed, v in enumerate(vs)]
        for m, vs in (("ei", [0.15, 0.13]), ("rollout4", [0.12, 0.14]), ("random", [0.2, 0.2]))
    }
    text = hpo.paper_table(runs, 3.0, "knn", "a1a")
    assert "EI 0.140" in text  # the paper's numbers, for KNN on a1a
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines[0] == "|  | EI | R4 | Random |"
    assert lines[2] == "| mean | 0.140 | **0.130** | 0.200 |"
    assert lines[3].startswith("| std | 0.014 | 0.014 | 0.000 |")
    assert lines[5] == "| paper mean | 0.140 | 0.131 | - |"
    assert "paper mean" not in hpo.paper_table(runs, 3.0, "dt", "w2a")
    # a trial past the budget does not count
    late = {"ei": [runner.Run("ei", 0, costs=[1.0, 5.0], values=[0.3, 0.1])]}
    assert "| mean | **0.300** |" in hpo.paper_table(late, 3.0, "knn", "w2a")


def test_hpo_runtime_variation_smoke(tmp_path: Path) -> None:
    root = _need("libsvm/w2a.reconstructed")
    hpo = importlib.import_module("hpo")
    args = ["--runtime-variation", "--dataset", "w2a", "--smoke", "--models", "knn", "dt"]
    hpo.main([*args, "--source", "libsvm", "--data-dir", str(root), "--out", str(tmp_path)])
    with open(tmp_path / "hpo_runtime_w2a_smoke.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted({r["model"] for r in rows}) == ["dt", "knn"] and len(rows) == 6
    assert all(float(r["seconds"]) > 0 for r in rows)
    assert "| KNN |" in (tmp_path / "hpo_runtime_w2a_smoke.md").read_text()


def test_sensors_smoke(tmp_path: Path) -> None:
    root = _need("sensors/colorado_monthly_met/stations.csv")
    _run(["benchmarks/sensors.py", "--smoke", "--jobs", "1"], tmp_path, root)
    rows = _check_runs(tmp_path / "sensors_smoke", {"rollout2", "random"})
    assert all(float(r["cumcost"]) >= 1.9 for r in rows)  # ran until the budget was spent


def test_scripts_explain_missing_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COSTBO_DATA_DIR", raising=False)
    empty = str(tmp_path)
    sensors = importlib.import_module("sensors")
    with pytest.raises(SystemExit, match="COSTBO_DATA_DIR"):
        sensors.main(["--smoke", "--data-dir", empty, "--out", empty])
    with pytest.raises(SystemExit, match="COSTBO_DATA_DIR"):
        data.main(["a1a", "--source", "libsvm", "--data-dir", empty])
    env = {k: v for k, v in os.environ.items() if k != "COSTBO_DATA_DIR"}
    script = ["benchmarks/hpo.py", "--problem", "dt", "--smoke", "--source", "libsvm"]
    proc = subprocess.run(
        [sys.executable, *script, "--data-dir", empty, "--out", empty],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "COSTBO_DATA_DIR" in proc.stderr, textwrap.shorten(proc.stderr, 500)
    assert not list(tmp_path.iterdir())  # nothing written
