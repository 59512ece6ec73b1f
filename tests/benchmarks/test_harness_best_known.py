"""benchmarks/harness/best_known.py: the best stored value of a problem, over a constructed
results tree, and the scoring problem it gives."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks.harness import best_known
from benchmarks.harness import report
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run


def _problem(f_star: float | None = 1.0) -> Problem:
    return Problem(
        name="toy",
        group="test",
        budget=10.0,
        evaluator=lambda params, previous: (params["x"] ** 2, 1.0),
        params=(Param("x", "float", -1.0, 1.0),),
        f_star=f_star,
    )


def _write(path: Path, values: list[float], fingerprint: str, error: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"problem": "toy", "method": "m", "seed": 0, "fingerprint": fingerprint}
    meta["error"] = error
    rows = "".join(f"{i},1.0,{v}\n" for i, v in enumerate(values))
    path.write_text(f"# {json.dumps(meta)}\ntrial,cost,value\n{rows}")


def test_scan_takes_the_lowest_value_of_the_runs_of_the_same_definition(tmp_path: Path) -> None:
    p = _problem()
    fp = p.fingerprint
    _write(tmp_path / "a" / "runs" / "toy" / "m" / "seed000.csv", [3.0, 0.8, math.nan], fp)
    _write(tmp_path / "b" / "runs" / "toy" / "n" / "seed001.csv", [0.6, 2.0], fp)
    _write(tmp_path / "b" / "runs" / "toy" / "n" / "seed002.csv", [0.1], "another definition")
    _write(tmp_path / "c" / "runs" / "toy" / "n" / "seed000.csv", [0.2], fp, error="boom")
    _write(tmp_path / "d" / "e" / "runs" / "toy" / "n" / "seed000.csv", [0.7], fp)  # deeper
    table = best_known.scan(tmp_path, [p, _problem(None)])
    assert table["toy"]["best"] == 0.6
    assert table["toy"]["runs"] == 3 and table["toy"]["f_star"] == 1.0
    assert table["toy"]["found_in"] == "b/runs/toy/n/seed001.csv"
    best_known.write(tmp_path / "t.json", table)
    assert best_known.load(tmp_path / "t.json") == table
    assert best_known.load(tmp_path / "missing.json") == {}


def test_no_run_below_f_star_keeps_f_star(tmp_path: Path) -> None:
    p = _problem()
    _write(tmp_path / "a" / "runs" / "toy" / "m" / "seed000.csv", [3.0, 1.5], p.fingerprint)
    entry = best_known.scan(tmp_path, [p])["toy"]
    assert entry["best"] == 1.0 and entry["found_in"] == "f*"
    # below f* by rounding only: f* stays (a regret of 0 must stay 0)
    _write(tmp_path / "a" / "runs" / "toy" / "m" / "seed001.csv", [1.0 - 1e-13], p.fingerprint)
    entry = best_known.scan(tmp_path, [p])["toy"]
    assert entry["best"] == 1.0 and entry["runs"] == 2


def test_rescored_problem_scores_against_the_better_value_and_stops_clamping() -> None:
    p = _problem()
    table = {"toy": {"best": 0.6, "f_star": 1.0, "runs": 2, "found_in": "x"}}
    q = best_known.rescored(p, table)
    assert q.f_star == 0.6 and p.f_star == 1.0
    assert best_known.rescored(p, {}) is p
    assert best_known.rescored(_problem(None), table).f_star is None
    run = Run("toy", "m", 0)
    run.costs, run.values = [1.0, 1.0], [0.8, 0.7]
    assert report.score(run, p).final == 0.0  # below f*: clamped, the difference lost
    assert math.isclose(report.score(run, q).final, 0.7 - 0.6)
    assert best_known.beats(run.values, p.f_star)
    assert not best_known.beats(run.values, q.f_star)
    assert not best_known.beats([math.nan], 0.0) and not best_known.beats([0.5], None)


def test_budget_variants_count_only_when_asked_and_of_the_same_function(tmp_path: Path) -> None:
    p = _problem()
    b2 = p.variant("b2", budget=2 * p.budget)
    _write(tmp_path / "s" / "runs" / "toy" / "m" / "seed000.csv", [0.9], p.fingerprint)
    path = tmp_path / "s" / "runs" / "toy-b2" / "m" / "seed000.csv"
    _write(path, [0.4], b2.fingerprint)
    text = path.read_text().replace('"seed": 0', f'"seed": 0, "budget": {2 * p.budget}')
    path.write_text(text)
    assert best_known.scan(tmp_path, [p])["toy"]["best"] == 0.9
    entry = best_known.scan(tmp_path, [p], variants=True)["toy"]
    assert entry["best"] == 0.4 and entry["runs"] == 2
    # another function under a variant's name (another fingerprint): not counted
    other = tmp_path / "s" / "runs" / "toy-epochs" / "m" / "seed000.csv"
    _write(other, [0.1], "something else")
    other.write_text(other.read_text().replace('"seed": 0', '"seed": 0, "budget": 10.0'))
    assert best_known.scan(tmp_path, [p], variants=True)["toy"]["best"] == 0.4


def test_update_writes_the_table_and_says_what_it_found(tmp_path: Path) -> None:
    p = _problem()
    _write(tmp_path / "a" / "runs" / "toy" / "m" / "seed000.csv", [0.5], p.fingerprint)
    lines = best_known.update(tmp_path / "t.json", tmp_path, [p])
    assert best_known.load(tmp_path / "t.json")["toy"]["best"] == 0.5
    assert lines[0].startswith("toy f* 1  best 0.5  (1 runs; a/runs/toy/m/seed000.csv)")
    assert lines[-1] == f"wrote {tmp_path / 't.json'}"
