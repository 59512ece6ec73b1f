"""The cheap-trials problems on the paper's datasets (dt-w2a, knn-a1a): the paper's spaces
under the study's wall clock, their data loaded on first use, a clear error without them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import cheap_trials
from benchmarks.problems import hpo


def test_paper_problems_use_the_paper_spaces_and_the_wall_clock() -> None:
    problems = hpo.live_problems(scale=0.5)  # no data read yet
    for name, (model, dataset) in hpo.PAPER_LIVE.items():
        p = problems[name]
        assert p.params == hpo.MODELS[model].params
        assert p.clock == "wall" and p.group == "cheap"
        assert p.budget == pytest.approx(0.5 * hpo.LIVE_BUDGETS[name])
        assert p.settings["dataset"] == dataset


def test_paper_problem_evaluates_on_its_dataset(
    need_data: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COSTBO_DATA_DIR", str(need_data("libsvm/a1a")))
    p = hpo.live_problems()["knn-a1a"]
    params = {
        "reduction_fraction": 0.5,
        "projection": "sparse",
        "n_neighbors": 15,
        "weights": "distance",
        "metric": "euclidean",
    }
    error, seconds = p.evaluate(params, None)
    assert 0.0 < error < 0.5 and seconds > 0.0  # a1a: 24.6 % of the rows are positive
    loaded = hpo._paper_dataset("a1a")
    assert loaded.n_features == 123 and len(loaded.y_train) + len(loaded.y_valid) == 1605


def test_missing_data_stops_the_benchmark_with_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COSTBO_DATA_DIR", str(tmp_path))  # no LIBSVM files there
    monkeypatch.setattr(hpo, "load_dataset", _offline)
    hpo._paper_dataset.cache_clear()
    with pytest.raises(SystemExit, match="COSTBO_DATA_DIR"):
        cheap_trials.main(["--problems", "knn-a1a", "--seeds", "1", "--out", str(tmp_path)])
    assert not (tmp_path / "runs").exists()  # nothing ran
    hpo._paper_dataset.cache_clear()


def _offline(name: str) -> object:
    """``load_dataset`` with the LIBSVM files only (no network lookup in a test)."""
    from benchmarks.problems import data

    return data.load_dataset(name, source="libsvm")
