"""The suite report's verdicts and aggregates (benchmarks/harness/report.py) on constructed
runs, where the mean difference and the signed-rank statistic disagree."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from benchmarks.harness import report
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import Separate
from benchmarks.harness.runner import Run


def _problem(name: str, group: str) -> Problem:
    return Problem(
        name=name,
        group=group,
        budget=10.0,
        evaluator=Separate(lambda p: p["x"], lambda p: 1.0),
        params=(Param("x", "float"),),
        f_star=0.0,
    )


def test_the_verdict_follows_the_signed_rank_statistic(tmp_path: Path) -> None:
    """``ref`` is lower on 18 of 20 seeds by a little and higher on 2 by a lot: its mean regret
    is higher, yet the report counts the problem as one where it is significantly better."""
    problems = [_problem("p", "adversarial"), _problem("q", "control")]
    d = np.concatenate([-0.01 * np.arange(1, 19), [5.0, 6.0]])
    other = np.linspace(1.0, 2.0, 20)
    scored = {}
    for p in problems:
        sign = 1.0 if p.name == "p" else -1.0  # q: the mirror, ref significantly worse
        for s in range(20):
            for m, value in (("ref", other[s] + sign * d[s]), ("other", other[s])):
                run = Run(p.name, m, s, costs=[1.0] * 10, values=[value + 1.0] * 9 + [value])
                scored[(p.name, m, s)] = report.score(run, p)
    path = report.write_suite_report(
        tmp_path, scored, problems, ["ref", "other"], list(range(20)), "ref",
        skipped={}, command="test",
    )  # fmt: skip
    with open(tmp_path / "wilcoxon.csv", newline="") as fh:
        rows = {(r["problem"], r["point"]): r for r in csv.DictReader(fh)}
    end_p, end_q = rows[("p", "end")], rows[("q", "end")]
    assert float(end_p["mean_diff"]) > 0 and float(end_p["p_value"]) < 0.05
    assert end_p["verdict"] == "better" and end_q["verdict"] == "worse"
    text = path.read_text()
    assert "| ours other | 1/0/1 | 20/0/20 |" in text  # better on p, worse on q
    # the groups become the columns of the rank table
    assert "| method | all, end | all, half | adversarial, end | adversarial, half " in text
    assert "| controls, end | controls, half |" in text
