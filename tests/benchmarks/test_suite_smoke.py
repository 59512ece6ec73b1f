"""Smoke test of the cost-aware suite (benchmarks/suite/run.py on benchmarks/harness): one
tiny problem, one seed, two cheap methods (our "ei" and Optuna's Random), the whole pipeline
from runs to report; and the committed cache, read as it is."""

from __future__ import annotations

import csv
from pathlib import Path
import sys

import pytest


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import cache  # noqa: E402
from benchmarks.harness import methods  # noqa: E402
from benchmarks.problems.synthetic import SUITE  # noqa: E402
from benchmarks.suite import run as run_mod  # noqa: E402


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_suite_runs_and_reports(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    args = ["--seeds", "1", "--methods", "ei", "random", "--problems", "branin-uniform"]
    args += ["--reference", "ei", "--out", str(tmp_path)]
    assert run_mod.main(args) == 0

    problem = SUITE["branin-uniform"]
    root = tmp_path / "runs"
    for method in ("ei", "random"):
        run = cache.load_valid(root, problem, method, 0)
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
    mtime = cache.run_path(root, problem.name, "ei", 0).stat().st_mtime_ns
    assert run_mod.main([*args, "--resume"]) == 0
    assert cache.run_path(root, problem.name, "ei", 0).stat().st_mtime_ns == mtime
    assert "| ours EI |" in (tmp_path / "report.md").read_text()


def test_unknown_acquisition_is_skipped() -> None:
    method = methods.resolve("no-such-acquisition-h3")
    assert (method.family, method.kwargs["acquisition"], method.kwargs["horizon"]) == (
        "ours",
        "no-such-acquisition",
        3,
    )
    assert "rejects" in (methods.unavailable(method) or "")


def test_committed_cache_matches_the_problem_definitions() -> None:
    """Every run committed for benchmarks/suite/results/runs is of the current definition
    of its problem (same fingerprint), so --report-only and --resume use it as it is."""
    from benchmarks.problems.yahpo import real_problems  # definitions only: no yahpo-gym

    root = ROOT / "benchmarks" / "suite" / "results" / "runs"
    files = cache.glob(root, "*/*/seed*.csv")  # packed: benchmarks/suite/results/runs.tar.xz
    assert len(files) > 1000
    problems = {**SUITE, **real_problems()}
    assert any(path.parts[-3] in real_problems() for path in files)  # the real group's runs
    stale = []
    for path in files:
        run = cache.read_run(path)
        assert run is not None, path
        if not problems[run.problem].accepts(run.meta["fingerprint"]):
            stale.append(path)
    assert not stale, stale[:5]
    some = cache.load_valid(root, SUITE["hartmann3-cheap"], "optuna-gp", 0)
    assert some is not None and some.n_trials > 0


def test_split_is_stratified_and_deterministic() -> None:
    from benchmarks.harness.problem import split

    problems = list(SUITE.values())
    tuning = split(problems, "tuning")
    confirmation = split(problems, "confirmation")
    assert {p.name for p in tuning}.isdisjoint(p.name for p in confirmation)
    assert len(tuning) + len(confirmation) == len(problems)
    for group in ("adversarial", "control"):
        n = sum(p.group == group for p in problems)
        got = sum(p.group == group for p in tuning)
        assert got == (n + 1) // 2, group
    # the same halves from another order of the same problems
    assert {p.name for p in split(problems[::-1], "tuning")} == {p.name for p in tuning}
    assert split(problems, "all") == problems
    with pytest.raises(ValueError, match="split must be one of"):
        split(problems, "test")
