"""benchmarks/stopping_equal_spend.py on constructed runs: the cut at equal spend and the
tally over a cache folder."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import stopping_equal_spend as eq
from benchmarks.harness.runner import Run


def _run(costs: list[float], values: list[float]) -> Run:
    run = Run("p", "m", 0)
    run.costs, run.values = list(costs), list(values)
    return run


def _write(path: Path, costs: list[float], values: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{i},{c},{v}\n" for i, (c, v) in enumerate(zip(costs, values, strict=True)))
    meta = {"problem": "p", "method": "m", "seed": 0}
    path.write_text(f"# {json.dumps(meta)}\ntrial,cost,value\n{rows}")


def test_a_trial_counts_if_it_started_before_the_spend() -> None:
    records = _run([1.0, 1.0, 1.0, 1.0], [5.0, 4.0, 1.0, 0.5])
    # the trials started at spends 0, 1, 2 and 3
    assert eq.best_at_spend(records, 2.0) == 4.0  # the third started at 2, not before
    assert eq.best_at_spend(records, 2.5) == 1.0
    assert eq.compare(_run([1.0, 1.5], [6.0, 3.0]), records) == -1  # 3 against 1: worse
    assert eq.compare(_run([1.0, 1.0], [6.0, 0.2]), records) == 1  # 0.2 against 4: better
    assert eq.compare(_run([1.0, 1.0], [6.0, 4.0]), records) == 0


def test_the_tally_pairs_each_fixed_run_with_the_records_run_of_its_seed(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    records = [1.0, 1.0, 1.0, 1.0], [5.0, 4.0, 1.0, 0.5]
    for seed in (0, 1, 2):
        _write(runs / "prob-cap3" / eq.RECORDS_DIR / f"seed{seed:03d}.csv", *records)
    _write(runs / "prob-b1" / "rollout" / "seed000.csv", [1.0, 1.0], [6.0, 0.2])  # better
    _write(runs / "prob-b1" / "rollout" / "seed001.csv", [1.0, 1.5], [6.0, 3.0])  # worse
    _write(runs / "prob-b1" / "rollout" / "seed002.csv", [1.0, 1.0], [6.0, 4.0])  # equal
    _write(runs / "prob-b1" / "rollout" / "seed003.csv", [1.0], [0.1])  # no records run
    assert eq.tally(runs, "1") == (1, 1, 1)
    assert eq.tally(runs, "2") == (0, 0, 0)
    assert eq.main(["--out", str(tmp_path), "--report", str(tmp_path / "r.md")]) == 0
    assert "| 1 B | 1 | 1 | 1 |" in (tmp_path / "r.md").read_text()
