"""Smoke test of the benchmark suite (benchmarks/suite): one tiny problem, one seed, two cheap
methods (our "ei" and Optuna's Random), the whole pipeline from runs to report."""

from __future__ import annotations

import csv
from pathlib import Path
import sys

import pytest


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

run_mod = pytest.importorskip("benchmarks.suite.run")
from benchmarks.suite import cache  # noqa: E402
from benchmarks.suite.problems import PROBLEMS  # noqa: E402


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_suite_runs_and_reports(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    args = ["--seeds", "1", "--methods", "ei", "random", "--problems", "branin-uniform"]
    args += ["--reference", "ei", "--out", str(tmp_path)]
    assert run_mod.main(args) == 0

    problem = PROBLEMS["branin-uniform"]
    for method in ("ei", "random"):
        run = cache.load_valid(tmp_path, problem, method, 0)
        assert run is not None and not run.error
        spent_before_last = sum(run.costs[:-1])
        assert spent_before_last < problem.budget <= sum(run.costs)  # the budget rule
    for name in ("report.md", "runs_summary.csv", "ranks.csv", "wilcoxon.csv", "curves.csv"):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / "regret_vs_cost.png").stat().st_size > 1000

    runs = _rows(tmp_path / "runs_summary.csv")
    assert {r["method"] for r in runs} == {"ei", "random"}
    for r in runs:
        assert float(r["final_regret"]) >= 0.0
        assert float(r["half_regret"]) >= float(r["final_regret"])

    summary = _rows(tmp_path / "problem_summary.csv")
    ranks = sorted(float(r["rank_end"]) for r in summary)
    assert ranks in ([1.0, 2.0], [1.5, 1.5])  # a permutation of 1..2 (or a tie)
    grouped = [r for r in _rows(tmp_path / "ranks.csv") if r["scope"] == "all"]
    assert sorted(float(r["avg_rank"]) for r in grouped if r["point"] == "end") == ranks

    tests = _rows(tmp_path / "wilcoxon.csv")
    assert {r["method"] for r in tests} == {"random"}
    assert all(0.0 <= float(r["p_value"]) <= 1.0 for r in tests)

    # --resume finds both runs cached and runs nothing.
    mtime = cache.run_path(tmp_path, problem.name, "ei", 0).stat().st_mtime_ns
    assert run_mod.main([*args, "--resume"]) == 0
    assert cache.run_path(tmp_path, problem.name, "ei", 0).stat().st_mtime_ns == mtime
    assert "| ours EI |" in (tmp_path / "report.md").read_text()


def test_unknown_acquisition_is_skipped(tmp_path: Path) -> None:
    from benchmarks.suite import methods

    method = methods.resolve("no-such-acquisition-h3")
    assert (method.family, method.acquisition, method.horizon) == (
        "costbo",
        "no-such-acquisition",
        3,
    )
    assert "rejects" in (methods.unavailable(method) or "")
